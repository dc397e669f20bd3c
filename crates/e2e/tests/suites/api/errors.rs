//! Errors a generic client can read: every error — the framework's too (bad JSON, size
//! limits, unknown methods, unsupported content types) — carries the `ErrorDetail` with a
//! stable code, readable in the Connect JSON `debug` field; misspelled JSON fields are
//! refused naming the field; unknown methods are answered while the request body is still
//! open (a reflection-style bidi stream used to wait forever). Raw HTTP through `curl` and
//! a hyper HTTP/2 client: no Cleanroom client code in the way.

use cleanroom_e2e::*;
use std::process::Command;
use std::time::Duration;

/// POST `body` to `/procedure` over the server's socket with `curl`: (HTTP status, body).
fn post(s: &Server, procedure: &str, ctype: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body");
    std::fs::write(&file, body).unwrap();
    let mut c = Command::new("curl");
    c.args(["-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket"])
        .arg(s.socket())
        .args(["-H", &format!("content-type: {ctype}"), "--data-binary"])
        .arg(format!("@{}", file.display()))
        .arg(format!("http://localhost/{procedure}"));
    let o = output_with_timeout(c, Duration::from_secs(60));
    let text = stdout(&o);
    let (json, code) = text.rsplit_once('\n').expect("status line");
    let v = if json.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"))
    };
    (code.trim().parse().expect("status"), v)
}

/// The readable detail of a Connect error body.
fn detail(v: &serde_json::Value) -> &serde_json::Value {
    let d = v["details"]
        .as_array()
        .and_then(|a| a.iter().find(|d| d["type"] == "cleanroom.v1.ErrorDetail"))
        .unwrap_or_else(|| panic!("no ErrorDetail in {v}"));
    assert!(d["value"].is_string(), "binary form kept too: {v}");
    &d["debug"]
}

#[test]
fn misspelled_json_field_is_refused_naming_it() {
    let s = Server::start();
    let (status, v) = post(
        &s,
        "cleanroom.v1.SandboxService/GetSandbox",
        "application/json",
        br#"{"sandboxid":"sbx_x"}"#,
    );
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["code"], "invalid_argument");
    let d = detail(&v);
    assert_eq!(d["code"], "invalid_argument");
    assert!(
        d["message"].as_str().unwrap().contains("`sandboxid`"),
        "{v}"
    );
    // Hostile variants: nested unknown field, unknown field next to a valid one, a field
    // whose name differs only in case.
    for body in [
        &br#"{"limits":{"memoryByte":1}}"#[..],
        br#"{"policyYaml":"","imageref":"x"}"#,
        br#"{"PolicyYaml":""}"#,
    ] {
        let (status, v) = post(
            &s,
            "cleanroom.v1.SandboxService/CreateSandbox",
            "application/json",
            body,
        );
        assert_eq!(status, 400, "{v}");
        assert_eq!(detail(&v)["code"], "invalid_argument", "{v}");
    }
    // The correct spelling and the proto field name both still work.
    for body in [
        &br#"{"sandboxId":"sbx_x"}"#[..],
        br#"{"sandbox_id":"sbx_x"}"#,
    ] {
        let (status, v) = post(
            &s,
            "cleanroom.v1.SandboxService/GetSandbox",
            "application/json",
            body,
        );
        assert_eq!(status, 404, "{v}");
        assert_eq!(detail(&v)["code"], "sandbox_not_found");
        assert_eq!(detail(&v)["details"]["sandbox_id"], "sbx_x");
    }
}

#[test]
fn framework_errors_carry_the_detail() {
    let s = Server::start();
    let get = "cleanroom.v1.SandboxService/GetSandbox";
    // Bad JSON.
    let (status, v) = post(&s, get, "application/json", b"{\"sandboxId\":");
    assert_eq!(
        (status, detail(&v)["code"].as_str()),
        (400, Some("invalid_argument")),
        "{v}"
    );
    // Bad protobuf.
    let (status, v) = post(&s, get, "application/proto", b"\xff\xff\xff");
    assert_eq!(
        (status, detail(&v)["code"].as_str()),
        (400, Some("invalid_argument")),
        "{v}"
    );
    // Over the size limit.
    let mut big = b"{\"sandboxId\":\"".to_vec();
    big.extend(std::iter::repeat_n(b'a', 5 << 20));
    big.extend(b"\"}");
    let (status, v) = post(&s, get, "application/json", &big);
    assert_eq!(detail(&v)["code"], "resource_exhausted", "{status} {v}");
    // Unknown method and unknown service.
    for p in ["cleanroom.v1.SandboxService/Nope", "nope.v1.X/Y"] {
        let (status, v) = post(&s, p, "application/json", b"{}");
        assert_eq!(status, 404, "{v}");
        assert_eq!(v["code"], "unimplemented");
        assert_eq!(detail(&v)["code"], "unimplemented", "{v}");
    }
    // A content type no protocol uses (the framework answers 415 with no body).
    let (status, v) = post(&s, get, "text/plain", b"{}");
    assert_eq!(status, 415);
    assert_eq!(detail(&v)["code"], "unimplemented", "{v}");
}

/// An HTTP/2 request whose body never ends, and its response (bounded wait).
async fn h2_open_body(
    s: &Server,
    path: &str,
    ctype: &str,
) -> (http::response::Parts, bytes::Bytes) {
    use http_body_util::BodyExt;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    let io = tokio::net::UnixStream::connect(s.socket()).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(io),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let body = StreamBody::new(futures::stream::pending::<
        Result<Frame<bytes::Bytes>, std::convert::Infallible>,
    >());
    let req = http::Request::post(format!("http://localhost/{path}"))
        .header("content-type", ctype)
        .header("te", "trailers")
        .body(body)
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(30), send.send_request(req))
        .await
        .expect("an unknown method is answered while the request body is still open")
        .unwrap();
    let (head, body) = resp.into_parts();
    let body = tokio::time::timeout(Duration::from_secs(30), body.collect())
        .await
        .expect("the response ends while the request body is still open")
        .unwrap()
        .to_bytes();
    (head, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_are_answered_at_once() {
    let s = Server::start();
    // gRPC (what grpcurl uses for reflection): trailers-only response with the detail.
    let (head, _) = h2_open_body(
        &s,
        "grpc.reflection.v1.Nope/ServerReflectionInfo",
        "application/grpc",
    )
    .await;
    assert_eq!(head.headers["grpc-status"], "12");
    let bin = head.headers["grpc-status-details-bin"].to_str().unwrap();
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(bin.trim_end_matches('='))
        .unwrap();
    // google.rpc.Status.details[0].type_url, then the ErrorDetail with its code.
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.contains("type.googleapis.com/cleanroom.v1.ErrorDetail")
            && text.contains("unimplemented"),
        "{text}"
    );
    // Connect streaming: one end-of-stream envelope (flag 0x02) with the error.
    let (head, body) = h2_open_body(&s, "nope.v1.X/Y", "application/connect+json").await;
    assert_eq!(head.status, 200);
    assert_eq!(body[0], 0x02, "{body:?}");
    let v: serde_json::Value = serde_json::from_slice(&body[5..]).unwrap();
    assert_eq!(v["error"]["code"], "unimplemented", "{v}");
    assert_eq!(detail(&v["error"])["code"], "unimplemented", "{v}");
}

/// POST one gRPC-Web message (`application/grpc-web+proto`, HTTP/1.1 through `curl`) and
/// return the trailers of the response body's trailer frame (flag 0x80).
fn grpc_web(s: &Server, procedure: &str, message: &[u8]) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let (req, resp) = (dir.path().join("req"), dir.path().join("resp"));
    let mut body = vec![0u8];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    std::fs::write(&req, body).unwrap();
    let mut c = Command::new("curl");
    c.args(["-s", "--http1.1", "-o"])
        .arg(&resp)
        .arg("--unix-socket")
        .arg(s.socket())
        .args([
            "-H",
            "content-type: application/grpc-web+proto",
            "-H",
            "x-grpc-web: 1",
            "--data-binary",
        ])
        .arg(format!("@{}", req.display()))
        .arg(format!("http://localhost/{procedure}"));
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(o.status.success(), "{}", stderr(&o));
    let b = std::fs::read(&resp).unwrap();
    let mut at = 0;
    while at + 5 <= b.len() {
        let len = u32::from_be_bytes([b[at + 1], b[at + 2], b[at + 3], b[at + 4]]) as usize;
        let frame = &b[at + 5..at + 5 + len];
        if b[at] & 0x80 != 0 {
            return String::from_utf8_lossy(frame)
                .lines()
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
        }
        at += 5 + len;
    }
    panic!("no trailer frame in {b:?}");
}

/// The `ErrorDetail` (code, details) inside gRPC `grpc-status-details-bin`.
fn grpc_detail(trailers: &[(String, String)]) -> (String, Vec<(String, String)>) {
    use base64::Engine as _;
    use cleanroom_client::api::{ErrorDetail, GrpcStatus};
    let bin = trailers
        .iter()
        .find(|(k, _)| k == "grpc-status-details-bin")
        .unwrap_or_else(|| panic!("no grpc-status-details-bin in {trailers:?}"));
    let raw = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(bin.1.trim_end_matches('='))
        .unwrap();
    let st = <GrpcStatus as buffa::Message>::decode_from_slice(&raw).unwrap();
    let d = st
        .details
        .iter()
        .find(|d| d.type_url == "type.googleapis.com/cleanroom.v1.ErrorDetail")
        .unwrap_or_else(|| panic!("no ErrorDetail in {st:?}"));
    let d = <ErrorDetail as buffa::Message>::decode_from_slice(&d.value).unwrap();
    let mut details: Vec<_> = d.details.into_iter().collect();
    details.sort();
    (d.code, details)
}

#[test]
fn grpc_web_errors_carry_the_detail() {
    let s = Server::start();
    let status = |t: &[(String, String)]| {
        t.iter()
            .find(|(k, _)| k == "grpc-status")
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    // A handler's error: sandbox_not_found with its details (GetSandboxRequest field 1).
    let mut msg = vec![0x0a, 11];
    msg.extend_from_slice(b"sbx_missing");
    let t = grpc_web(&s, "cleanroom.v1.SandboxService/GetSandbox", &msg);
    assert_eq!(status(&t), "5", "{t:?}");
    let (code, details) = grpc_detail(&t);
    assert_eq!(code, "sandbox_not_found");
    assert!(
        details.contains(&("sandbox_id".into(), "sbx_missing".into())),
        "{details:?}"
    );
    // The framework's errors: an unknown method, an undecodable message.
    let t = grpc_web(&s, "cleanroom.v1.SandboxService/Nope", b"");
    assert_eq!(status(&t), "12", "{t:?}");
    assert_eq!(grpc_detail(&t).0, "unimplemented");
    let t = grpc_web(
        &s,
        "cleanroom.v1.SandboxService/GetSandbox",
        b"\xff\xff\xff",
    );
    assert_eq!(grpc_detail(&t).0, "invalid_argument", "{t:?}");
    // A server stream's error (StreamSandboxEvents of a sandbox that is not there).
    let t = grpc_web(&s, "cleanroom.v1.SandboxService/StreamSandboxEvents", &msg);
    assert_eq!(grpc_detail(&t).0, "sandbox_not_found", "{t:?}");
}
