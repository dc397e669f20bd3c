//! Plain HTTP on the kernel plane: heads checked, bodies moved socket to socket
//! (`crates/egress/src/pass`, docs/network.md "Data planes"). One keep-alive connection
//! from the sandbox carries a 3 MB download, a chunked response, a HEAD, a 2 MiB upload
//! and a response whose framing is ambiguous; a second connection pipelines an honest
//! request and a smuggling one. Everything arrives whole, one upstream connection serves
//! the keep-alive client, the ambiguous response is a 502, the smuggled request never
//! reaches the upstream, and the upstream's head reaches the sandbox as it was written
//! (header names as spelled: hyper would have lowercased them and added `date`).

use cleanroom_e2e::*;
use sha2::Digest;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIG: usize = 3_000_000;

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 % 251) as u8).collect()
}

fn sha256_hex(data: &[u8]) -> String {
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A keep-alive upstream: the connections it accepted and every request head it read.
struct Upstream {
    port: u16,
    conns: Arc<AtomicUsize>,
    heads: Arc<Mutex<String>>,
}

fn upstream() -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (conns, heads) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Mutex::new(String::new())),
    );
    let (c2, h2) = (conns.clone(), heads.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            c2.fetch_add(1, Ordering::SeqCst);
            let heads = h2.clone();
            std::thread::spawn(move || serve(s, &heads));
        }
    });
    Upstream { port, conns, heads }
}

fn serve(s: std::net::TcpStream, heads: &Mutex<String>) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut w = s;
    loop {
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        heads.lock().unwrap().push_str(&head);
        let mut body = vec![0u8; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let path = head.split(' ').nth(1).unwrap_or("").to_string();
        let out: Vec<u8> = if let Some(n) = path.strip_prefix("/len/") {
            let n: usize = n.parse().unwrap_or(0);
            let mut o =
                format!("HTTP/1.1 200 OK\r\nX-Upstream-Case: Kept\r\nContent-Length: {n}\r\n\r\n")
                    .into_bytes();
            if !head.starts_with("HEAD ") {
                o.extend_from_slice(&pattern(n));
            }
            o
        } else if path == "/chunked" {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: 1\r\n\r\n".to_vec()
        } else if path == "/upload" {
            let answer = format!("{} {}", body.len(), sha256_hex(&body));
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            )
            .into_bytes()
        } else {
            // Two framings at once: which one a reader picks decides where the next
            // response starts.
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                .to_vec()
        };
        if w.write_all(&out).is_err() {
            return;
        }
    }
}

const CLIENT: &str = r#"
import hashlib, http.client, socket, sys
port = int(sys.argv[1])
c = http.client.HTTPConnection("up.test", port, timeout=30)
c.request("GET", "/len/3000000"); r = c.getresponse(); b = r.read()
print("big", r.status, len(b), hashlib.sha256(b).hexdigest())
c.request("GET", "/chunked"); r = c.getresponse(); print("chunked", r.status, r.read().decode())
c.request("HEAD", "/len/10"); r = c.getresponse()
print("head", r.status, r.getheader("Content-Length"), len(r.read()))
data = bytes(range(256)) * 8192
c.request("POST", "/upload", body=data); r = c.getresponse()
print("upload", r.status, r.read().decode(), hashlib.sha256(data).hexdigest())
c.request("GET", "/ambiguous"); r = c.getresponse(); r.read(); print("ambiguous", r.status)
s = socket.create_connection(("up.test", port), timeout=30)
h = ("up.test:%d" % port).encode()
s.sendall(b"GET /len/5 HTTP/1.1\r\nHost: " + h + b"\r\n\r\n"
          b"POST /len/7 HTTP/1.1\r\nHost: " + h + b"\r\nContent-Length: 3\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
print("smuggle", got.count(b"HTTP/1.1 200"), b"request_malformed" in got,
      b"\r\nX-Upstream-Case: Kept\r\n" in got, b"\r\ndate:" in got.lower())
print("done")
"#;

fn plain_http_bodies_pass_through_after_every_check(rt: Runtime) {
    let up = upstream();
    let s = Server::start_with(&[
        "--egress-resolve",
        "up.test=127.0.0.1",
        "--egress-plane",
        "kernel",
    ]);
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        &d,
        "p.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: up.test\n        ports: [{}]\n",
            up.port
        ),
    );
    let o = s.run(&rt.args(2, &["sandbox", "create", "--policy", &policy]));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "inspect", &sbx]);
    assert!(stdout(&o).contains("kernel sockets"), "{}", stdout(&o));
    let script = write(&d, "client.py", CLIENT);
    let mut c = s.cli();
    c.args([
        "exec",
        "--in",
        &sbx,
        "--",
        "python3",
        "-",
        &up.port.to_string(),
    ])
    .stdin(std::fs::File::open(&script).unwrap());
    let o = output_with_timeout(c, Duration::from_secs(120));
    let out = format!("{}\n{}", stdout(&o), stderr(&o));
    assert!(out.contains("done"), "{out}");
    let big = format!("big 200 {BIG} {}\n", sha256_hex(&pattern(BIG)));
    assert!(out.contains(&big), "{out}");
    assert!(out.contains("chunked 200 hello world\n"), "{out}");
    assert!(out.contains("head 200 10 0\n"), "{out}");
    let line = out.lines().find(|l| l.starts_with("upload ")).unwrap_or("");
    let f: Vec<&str> = line.split(' ').collect();
    assert!(
        f.len() == 5 && f[1] == "200" && f[2] == "2097152" && f[3] == f[4],
        "{out}"
    );
    // Where the body ends is the gateway's decision only when the framing says one thing.
    assert!(out.contains("ambiguous 502\n"), "{out}");
    // The honest request is served; the smuggling one is refused at its head, and the
    // upstream's head arrives as written (not re-serialized by hyper).
    assert!(out.contains("smuggle 1 True True False\n"), "{out}");
    let heads = up.heads.lock().unwrap().clone();
    assert!(!heads.contains("/len/7"), "{heads}");
    // The keep-alive client's five requests used one upstream connection; the pipelining
    // client one more.
    assert_eq!(up.conns.load(Ordering::SeqCst), 2, "{heads}");
}
both_runtimes!(
    plain_http_bodies_pass_through_after_every_check,
    plain_http_bodies_pass_through_after_every_check
);
