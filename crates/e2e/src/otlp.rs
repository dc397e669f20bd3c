//! A real OTLP/HTTP trace receiver on loopback for the traces suite: a small Python HTTP
//! server (the test venv's) that decodes each `POST /v1/traces` body as an
//! `ExportTraceServiceRequest` with the OpenTelemetry project's own protobuf bindings
//! (`opentelemetry-proto`, crates/e2e/requirements.txt) and records every span it holds.
//! Nothing here interprets the exporter's bytes by hand: what the receiver parses is what
//! a collector would.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

const RECEIVER: &str = r#"
import sys, json, http.server
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

out = open(sys.argv[1], "a")

def value(v):
    k = v.WhichOneof("value")
    return getattr(v, k) if k else None

class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(415 if self.path == "/v1/traces" else 404)
            self.end_headers()
            return
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        for rs in req.resource_spans:
            res = {a.key: value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    out.write(json.dumps({
                        "service": res.get("service.name"),
                        "scope": ss.scope.name,
                        "name": s.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "kind": s.kind,
                        "attributes": {a.key: value(a.value) for a in s.attributes},
                        "links": [l.trace_id.hex() + "-" + l.span_id.hex() for l in s.links],
                    }) + "\n")
        out.flush()
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// One received span.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub service: String,
    pub scope: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attributes: serde_json::Value,
    pub links: Vec<String>,
}

/// The running receiver (stopped on drop).
pub struct OtlpReceiver {
    pub port: u16,
    _child: crate::server::ChildGuard,
    spans: PathBuf,
    _dir: tempfile::TempDir,
}

impl OtlpReceiver {
    pub fn start() -> OtlpReceiver {
        let dir = tempfile::tempdir().expect("tempdir");
        let spans = dir.path().join("spans.jsonl");
        let mut child = Command::new(crate::web::test_python())
            .args(["-c", RECEIVER])
            .arg(&spans)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("otlp receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("receiver port");
        let port = line.trim().parse().expect("receiver port");
        OtlpReceiver {
            port,
            _child: crate::server::ChildGuard(child),
            spans,
            _dir: dir,
        }
    }

    /// The collector base URL (`--otlp-endpoint`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let text = std::fs::read_to_string(&self.spans).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .map(|v| {
                let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
                ReceivedSpan {
                    service: s("service"),
                    scope: s("scope"),
                    name: s("name"),
                    trace_id: s("trace_id"),
                    span_id: s("span_id"),
                    parent_span_id: s("parent_span_id"),
                    attributes: v["attributes"].clone(),
                    links: v["links"]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(|x| x.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect()
    }
}
