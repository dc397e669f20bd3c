//! Streams through the inbound paths on a unix-socket server: a WebSocket echo and
//! server-sent events through `sandbox expose` (the first event arrives before the
//! response ends), the per-exposure connection cap, `port-forward` of a TCP echo bound to
//! the sandbox's loopback, a suspended sandbox resumed by an inbound request with its
//! state intact — each under both runtimes (gvisor through its in-sandbox relay) — and a
//! closed port's refusal.

use super::*;
use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn expose_path(s: &Server, sbx: &str, port: &str) -> String {
    let e = exposed(&s.run(&["sandbox", "expose", sbx, port, "--json"]));
    e["path"].as_str().unwrap().to_string()
}

/// `curl --unix-socket` to the server (as root: an admin).
fn ucurl(s: &Server, path: &str, extra: &[&str]) -> (u16, String) {
    let sock = s.socket();
    let url = format!("http://localhost{path}");
    let mut args = vec!["--unix-socket", sock.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(&url);
    hcurl(&args)
}

/// A WebSocket client (RFC 6455: handshake, masked text frames) over the server's unix
/// socket: sends each message and returns the echoes.
fn ws_echo(sock: &Path, path: &str, messages: &[&str]) -> Vec<String> {
    let mut c = UnixStream::connect(sock).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        assert_eq!(
            c.read(&mut b).unwrap(),
            1,
            "closed: {}",
            String::from_utf8_lossy(&head)
        );
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // The accept value RFC 6455 gives for this key: the app's answer came through intact.
    assert!(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{head}");
    let mask = [1u8, 2, 3, 4];
    let mut out = Vec::new();
    for m in messages {
        let mut frame = vec![0x81, 0x80 | m.len() as u8];
        frame.extend_from_slice(&mask);
        frame.extend(m.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        c.write_all(&frame).unwrap();
        let mut h = [0u8; 2];
        c.read_exact(&mut h).unwrap();
        assert_eq!(h[0], 0x81);
        let mut data = vec![0u8; (h[1] & 127) as usize];
        c.read_exact(&mut data).unwrap();
        out.push(String::from_utf8(data).unwrap());
    }
    out
}

both_runtimes!(
    websocket_and_server_sent_events_stream_through_an_exposure,
    websocket_and_sse
);
fn websocket_and_sse(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    start_app(|a| s.run(a), &sbx, 8000);
    let path = expose_path(&s, &sbx, "8000");
    let (base, query) = path.split_once('?').unwrap();

    // WebSocket: two round trips on one upgraded connection.
    let echoes = ws_echo(&s.socket(), &format!("{base}ws?{query}"), &["hi", "again"]);
    assert_eq!(echoes, ["echo:hi", "echo:again"]);

    // Server-sent events: the first event is read while the app still holds the response.
    let mut c = std::process::Command::new("curl");
    c.args([
        "-sN",
        "-m",
        "30",
        "--unix-socket",
        s.socket().to_str().unwrap(),
    ])
    .arg(format!("http://localhost{base}sse?{query}"))
    .stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = ChildGuard(c.spawn().unwrap());
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let first_at = start.elapsed();
    assert_eq!(first, "data: one");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let end_at = start.elapsed();
    assert!(rest.contains(&"data: two".to_string()), "{rest:?}");
    assert!(
        first_at < Duration::from_millis(1500) && end_at >= Duration::from_millis(1900),
        "first event at {first_at:?}, end at {end_at:?}: the stream was buffered"
    );
}

#[test]
fn the_connection_cap_of_an_exposure_is_enforced() {
    let s = Server::start_with(&["--inbound-max-connections", "2"]);
    let sbx = s.create();
    start_app(|a| s.run(a), &sbx, 8000);
    let path = expose_path(&s, &sbx, "8000");
    let (base, query) = path.split_once('?').unwrap();
    let hold = format!("{base}hold?{query}");
    let holders: Vec<_> = (0..2)
        .map(|_| {
            let (sock, hold) = (s.socket(), hold.clone());
            std::thread::spawn(move || {
                let url = format!("http://localhost{hold}");
                hcurl(&["--unix-socket", sock.to_str().unwrap(), &url])
            })
        })
        .collect();
    // Both held connections are open (two `inbound.open` events), then a third is refused.
    assert!(eventually(Duration::from_secs(20), || {
        events_of(&s.run(&["sandbox", "events", &sbx]), "inbound.open").len() >= 2
    }));
    let (status, body) = ucurl(&s, &path, &[]);
    assert_eq!(
        (status, code_of(&body)),
        (429, "resource_exhausted".into()),
        "{body}"
    );
    for h in holders {
        let (status, body) = h.join().unwrap();
        assert_eq!(status, 200, "{body}");
    }
    // Slots are given back when connections end.
    let free = || ucurl(&s, &path, &[]).0 == 200;
    assert!(eventually(Duration::from_secs(10), free));
    let refused = events_of(&s.run(&["sandbox", "events", &sbx]), "inbound.refused");
    assert!(
        refused
            .iter()
            .any(|e| e["attributes"]["reason"] == "connection cap"),
        "{refused:?}"
    );
}

const ECHO: &str = "import socketserver
class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line); self.wfile.flush()
class S(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True
S(('127.0.0.1', 7000), H).serve_forever()
";

both_runtimes!(
    port_forward_carries_a_tcp_echo_to_the_sandboxs_loopback,
    port_forward_echo
);
fn port_forward_echo(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let script = format!(
        "cat > /tmp/echo.py <<'EOF'\n{ECHO}EOF\nsetsid python3 /tmp/echo.py </dev/null >/tmp/echo.log 2>&1 &\n\
         for i in $(seq 100); do bash -c 'exec 3<>/dev/tcp/127.0.0.1/7000' 2>/dev/null && exit 0; sleep 0.1; done; cat /tmp/echo.log; exit 1"
    );
    let o = s.run(&["exec", "-n", "--in", &sbx, "--", "sh", "-c", &script]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));

    let mut c = s.cli();
    c.args(["port-forward", &sbx, ":7000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut pf = ChildGuard(c.spawn().unwrap());
    let mut first = String::new();
    BufReader::new(pf.0.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .strip_prefix("Forwarding from ")
        .and_then(|r| r.split(" -> ").next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    // Two connections at once, each its own tunnel.
    let mut conns: Vec<_> = (0..2)
        .map(|_| {
            let c = std::net::TcpStream::connect(&addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            c
        })
        .collect();
    for (i, c) in conns.iter_mut().enumerate() {
        writeln!(c, "ping {i}").unwrap();
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let mut line = String::new();
        BufReader::new(c.try_clone().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, format!("ping {i}\n"));
    }
    drop(conns);
    assert!(eventually(Duration::from_secs(10), || {
        let ev = s.run(&["sandbox", "events", &sbx]);
        events_of(&ev, "inbound.close")
            .iter()
            .filter(|e| e["attributes"]["target"] == "port-forward")
            .count()
            >= 2
    }));
    // Another local user is refused like a missing sandbox.
    open_socket_to_all(&s);
    assert_code(
        &as_uid(&s, 65534, &["port-forward", &sbx, ":7000"]),
        "sandbox_not_found",
    );
}

both_runtimes!(
    a_suspended_sandbox_is_resumed_by_an_inbound_request_with_its_state,
    resumed_by_a_request
);
fn resumed_by_a_request(rt: Runtime) {
    let s = Server::start();
    let o = s.run(&rt.args(2, &["sandbox", "create", "--suspend-after", "1"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sbx = stdout(&o).trim().to_string();
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "echo 41 > /tmp/state",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    start_app(|a| s.run(a), &sbx, 8000);
    let path = expose_path(&s, &sbx, "8000");
    let mut last = serde_json::Value::Null;
    assert!(
        eventually(Duration::from_secs(30), || {
            last = inspect(&s, &sbx);
            last["status"] == "SANDBOX_STATUS_PAUSED"
        }),
        "not suspended: {last}"
    );
    let t = Instant::now();
    let (status, body) = ucurl(&s, &path, &[]);
    eprintln!("resume on request: {:?}", t.elapsed());
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello / 41"), "{body}");
    assert_eq!(inspect(&s, &sbx)["status"], "SANDBOX_STATUS_READY");
    let ev = s.run(&["sandbox", "events", &sbx]);
    let resumed = events_of(&ev, "sandbox.resumed");
    assert_eq!(
        resumed[0]["attributes"]["reason"], "inbound request",
        "{resumed:?}"
    );
}

/// Under gvisor the connection is made by a relay inside the sandbox: a port nothing
/// listens on is `sandbox_port_closed` with the relay's reason, like under linux.
#[test]
fn a_closed_port_is_sandbox_port_closed_under_both_runtimes() {
    let s = Server::start();
    for rt in [Runtime::Linux, Runtime::Gvisor] {
        if !rt.available() {
            continue;
        }
        let sbx = s.create_on(rt, &[]);
        let path = expose_path(&s, &sbx, "8009");
        let (status, body) = ucurl(&s, &path, &[]);
        assert_eq!(
            (status, code_of(&body)),
            (503, "sandbox_port_closed".into()),
            "{rt:?}: {body}"
        );
        assert!(body.contains("8009"), "{body}");
    }
}
