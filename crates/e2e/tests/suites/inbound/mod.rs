//! Inbound traffic end to end (docs/network.md "Inbound"): a real server, real sandboxes
//! running real servers (Python's standard library), reached from the host through
//! `sandbox expose` URLs (curl as the client) and `cleanroom port-forward`.
//!
//! - [`expose`]: tokens, owners, other principals, expiry and revocation, HTTP/2,
//!   inspect and events;
//! - [`streams`]: WebSocket echo and server-sent events through an exposure, the
//!   connection cap, port-forward of a TCP echo, resume of a suspended sandbox by an
//!   inbound request, and the gvisor refusal;
//! - [`preview`]: host-based previews (`serve --preview-domain`) and the API's refusal of
//!   browser-made calls.

mod expose;
mod preview;
mod streams;

use cleanroom_e2e::*;
use std::time::Duration;

/// A server in the sandbox (python3, standard library only), on the port given as its
/// argument: `/ws` is a WebSocket echo (RFC 6455, text frames), `/sse` sends one event,
/// waits 2 s and sends another, `/hold` answers after 8 s, anything else answers
/// `hello <path> <contents of /tmp/state>` (with the request's `Authorization` and `Cookie`
/// headers echoed, so a test can see what reached the app).
pub const APP: &str = r#"
import base64, hashlib, http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith("/ws"):
            key = self.headers["Sec-WebSocket-Key"]
            acc = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.send_header("Sec-WebSocket-Accept", acc)
            self.end_headers()
            self.wfile.flush()
            r = self.rfile
            while True:
                h = r.read(2)
                if len(h) < 2: return
                op, n = h[0] & 15, h[1] & 127
                if n == 126: n = int.from_bytes(r.read(2), "big")
                elif n == 127: n = int.from_bytes(r.read(8), "big")
                mask = r.read(4) if h[1] & 128 else b"\0\0\0\0"
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(r.read(n)))
                if op == 8: return
                out = b"echo:" + data
                self.wfile.write(bytes([0x81, len(out)]) + out)
                self.wfile.flush()
        elif self.path.startswith("/sse"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"data: one\n\n"); self.wfile.flush()
            time.sleep(2)
            self.wfile.write(b"data: two\n\n"); self.wfile.flush()
            self.close_connection = True
        else:
            if self.path.startswith("/hold"): time.sleep(8)
            try: state = open("/tmp/state").read().strip()
            except OSError: state = "-"
            body = ("hello %s %s auth=%s cookie=%s\n" % (self.path, state,
                    self.headers.get("Authorization"), self.headers.get("Cookie"))).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
"#;

/// Start [`APP`] in `sbx` on `port`, in the background (its own session: it outlives the
/// exec, and no execution keeps the sandbox busy), and wait until it answers inside.
pub fn start_app(run: impl Fn(&[&str]) -> std::process::Output, sbx: &str, port: u16) {
    let script = format!(
        "cat > /tmp/app.py <<'EOF'\n{APP}\nEOF\nsetsid python3 /tmp/app.py {port} </dev/null >/tmp/app.log 2>&1 &\necho started"
    );
    let o = run(&["exec", "-n", "--in", sbx, "--", "sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let probe = format!(
        "for i in $(seq 100); do curl -fsS --noproxy '*' -m 2 http://127.0.0.1:{port}/ready >/dev/null 2>&1 && exit 0; sleep 0.1; done; cat /tmp/app.log; exit 1"
    );
    let o = run(&["exec", "-n", "--in", sbx, "--", "sh", "-c", &probe]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "app did not start: {}{}",
        stdout(&o),
        stderr(&o)
    );
}

/// `curl` on the host with `args` (bounded); (HTTP status, body).
pub fn hcurl(args: &[&str]) -> (u16, String) {
    let mut c = std::process::Command::new("curl");
    c.args(["-sS", "-m", "30", "-w", "\n%{http_code}"])
        .args(args);
    let o = output_with_timeout(c, Duration::from_secs(40));
    let text = stdout(&o);
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", &text));
    let status = status
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl {args:?}: {text} {}", stderr(&o)));
    (status, body.to_string())
}

/// The stable code of an error body (`{"error": {"code": …}}`).
pub fn code_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v["error"]["code"].as_str().unwrap_or_default().to_string()
}

/// The events of `kind` of a sandbox (`sandbox events` output).
pub fn events_of(out: &std::process::Output, kind: &str) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// `sandbox expose --json`'s answer.
pub fn exposed(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(o), stderr(o));
    serde_json::from_slice(&o.stdout).expect("expose json")
}
