//! TCP through the egress gateway's userspace stack, against the sandbox's own kernel: a
//! reader with a small receive window gets every byte and then the end of the stream; a
//! writer cannot make the gateway hold what the upstream does not read; a client that
//! half-closes after its request still gets the whole response; bulk transfers both ways
//! arrive intact under both runtimes (64 KiB segments on the tun). Real sandboxes, real
//! upstreams on loopback reached through `--egress-resolve`.
//!
//! Each of these failed against the stack as published (ipstack 1.0.1): segments sent past
//! the window were dropped and never resent (a stall), the FIN was never sent (no end of
//! stream), the receive side buffered without limit (300 MiB pushed grew the server by
//! 316 MB), and a half-close was answered with a FIN before the response.

use cleanroom_e2e::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

const BODY: usize = 2 << 20;

/// A server that greets (so the gateway splices without an HTTP opening) and then never
/// reads: whatever the sandbox sends piles up somewhere.
fn sink_upstream() -> u16 {
    serve(|mut s| {
        let _ = s.write_all(b"220 hello\r\n");
        std::thread::sleep(Duration::from_secs(120));
        drop(s);
    })
}

fn serve(handle: fn(TcpStream)) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || handle(s));
        }
    });
    port
}

/// A client with a receive buffer of `argv[2]` bytes that reads slowly at first, then
/// reads until the end of the stream; prints the byte count after the head. The socket timeout makes a
/// stall an error instead of a hang.
const SLOW_READER: &str = r#"
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(sys.argv[2]))
s.settimeout(20)
s.connect(("up.test", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.1\r\nHost: up.test\r\nConnection: close\r\n\r\n")
n = 0
head = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        n += len(b)
        if len(head) < 8192:
            head += b
        if n < 300000:
            time.sleep(0.001)
except Exception as e:
    print("stalled after", n, "bytes:", e)
    sys.exit(1)
print(n - head.index(b"\r\n\r\n") - 4)
"#;

/// Sends up to 256 MiB to a server that never reads; prints how many MiB the gateway took
/// before the send blocked for 5 s.
const PUSHER: &str = r#"
import socket, sys
s = socket.create_connection(("up.test", int(sys.argv[1])), timeout=20)
assert s.recv(100).startswith(b"220")
s.settimeout(5)
chunk = b"y" * 65536
n = 0
try:
    while n < (256 << 20):
        n += s.send(chunk)
except socket.timeout:
    pass
print(n >> 20)
"#;

/// An HTTP/1.0 client that shuts down its sending side after the request, then reads the
/// response to the end; prints the byte count after the head.
const HALF_CLOSER: &str = r#"
import socket, sys
s = socket.create_connection(("up.test", int(sys.argv[1])), timeout=20)
s.sendall(b"GET / HTTP/1.0\r\nHost: up.test\r\n\r\n")
s.shutdown(socket.SHUT_WR)
n = 0
head = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    n += len(b)
    if len(head) < 8192:
        head += b
print(n - head.index(b"\r\n\r\n") - 4)
"#;

#[test]
fn tcp_through_the_gateway_respects_windows_ends_streams_and_stays_bounded() {
    let (body, sink) = (body_upstream(BODY), sink_upstream());
    let s = Server::start_with(&["--egress-resolve", "up.test=127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        &dir,
        "p.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: up.test\n        ports: [{body}, {sink}]\n"
        ),
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    for (name, script) in [
        ("slow.py", SLOW_READER),
        ("push.py", PUSHER),
        ("half.py", HALF_CLOSER),
    ] {
        let local = write(&dir, name, script);
        let o = s.run(&["cp", &local, &format!("{id}:/tmp/{name}")]);
        assert_eq!(o.status.code(), Some(0), "cp {name}: {}", stderr(&o));
    }
    let py = |args: &[&str]| {
        let mut argv = vec!["exec", "-n", "--in", &id, "--", "python3"];
        argv.extend_from_slice(args);
        let o = s.run(&argv);
        (o.status.code(), stdout(&o).trim().to_string(), stderr(&o))
    };

    // The whole body must arrive after the head (whose length depends on the data plane:
    // hyper re-serializes it, the kernel plane's passthrough forwards it as written), then
    // the end.
    let whole = BODY.to_string();
    let body = body.to_string();
    for rcvbuf in ["2048", "4096", "16384", "65536"] {
        for _ in 0..2 {
            let (code, out, err) = py(&["/tmp/slow.py", &body, rcvbuf]);
            assert_eq!(
                (code, out.as_str()),
                (Some(0), whole.as_str()),
                "SO_RCVBUF {rcvbuf}: {err}"
            );
        }
    }

    let (code, out, err) = py(&["/tmp/half.py", &body]);
    assert_eq!(
        (code, out.as_str()),
        (Some(0), whole.as_str()),
        "half-close: {err}"
    );

    // What the gateway holds for one connection is its receive window (512 KiB, twice that
    // at most with out-of-order segments); the rest of what the sandbox got rid of sits in
    // the loopback socket buffers to the upstream (a few MiB).
    let (code, out, err) = py(&["/tmp/push.py", &sink.to_string()]);
    assert_eq!(code, Some(0), "{err}");
    let mib: u64 = out.parse().unwrap_or_else(|_| panic!("{out:?} {err}"));
    assert!(
        mib < 64,
        "the gateway took {mib} MiB an upstream never read"
    );
}

/// Bytes of the bulk transfers below, each way.
const BULK: usize = 16 << 20;

/// The `i`th byte of the bulk body: not a repetition of any short period, so a segment
/// delivered twice, out of place or cut short changes the hash.
fn bulk_byte(i: usize) -> u8 {
    ((i * 7 + i / 65_521) % 251) as u8
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An upstream that reads one request with a Content-Length body and answers the body's
/// length and SHA-256.
fn hashing_upstream() -> u16 {
    serve(|s| {
        use std::io::{BufRead, BufReader, Read};
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len];
        let _ = r.read_exact(&mut body);
        let answer = format!("{} {}", body.len(), sha256_hex(&body));
        let mut s = s;
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        );
    })
}

/// 16 MiB each way through the gateway's stack — full 64 KiB segments on the tun, from the
/// sandbox's kernel (linux) or gVisor's netstack (gvisor) — arrive whole and in order.
fn bulk_transfers_arrive_intact_both_ways(rt: Runtime) {
    let data: Vec<u8> = (0..BULK).map(bulk_byte).collect();
    let expected = sha256_hex(&data);
    let data = std::sync::Arc::new(data);
    let down = http_upstream(move |_| data.as_ref().clone());
    let up = hashing_upstream();
    let s = Server::start_with(&["--egress-resolve", "up.test=127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        &dir,
        "p.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: up.test\n        ports: [{down}, {up}]\n"
        ),
    );
    let o = s.run(&rt.args(2, &["sandbox", "create", "--policy", &policy]));
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let script = format!(
        "curl -sS -m 60 --noproxy '*' -o /tmp/blob http://up.test:{down}/ && \
         sha256sum /tmp/blob && \
         curl -sS -m 60 --noproxy '*' -H 'Expect:' --data-binary @/tmp/blob http://up.test:{up}/; echo"
    );
    let o = s.sh_in(&id, &script);
    let out = stdout(&o);
    assert!(
        out.contains(&format!("{expected}  /tmp/blob\n")),
        "download: {out}\n{}",
        stderr(&o)
    );
    assert!(
        out.contains(&format!("{BULK} {expected}\n")),
        "upload: {out}\n{}",
        stderr(&o)
    );
}
both_runtimes!(
    bulk_transfers_arrive_intact_both_ways,
    bulk_transfers_arrive_intact_both_ways
);
