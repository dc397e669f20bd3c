//! Fronting past the gateway's host checks (issue 8, class 4): a sandbox allowed to reach
//! `front.test` tries to make the upstream at that address serve `other.test` — with bytes
//! sent late or one at a time, leading empty lines, a lower-case method, a tab separator,
//! two Host headers, an absolute-form URI naming another host than Host, Transfer-Encoding
//! with Content-Length, a second request on a kept-alive or pipelined connection, and a
//! TLS ClientHello naming another server that arrives late, byte by byte, split across
//! records or stalls (directly and inside CONNECT).
//!
//! The upstreams are raw recorders on loopback: every byte that reached them is kept, and
//! none may mention `other.test`. Each attack must end in a deny with a stable reason code
//! in the sandbox's event stream. Positive controls show the same paths still work.

use cleanroom_e2e::*;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// A loopback TCP server that records every byte it receives. With `http`, it answers each
/// complete request head with `host=<Host>` (keep-alive): the server that would happily
/// serve `other.test` if a request for it got through.
struct Recorder {
    port: u16,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Recorder {
    fn start(http: bool) -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let all = bytes.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let all = all.clone();
                std::thread::spawn(move || record(s, &all, http));
            }
        });
        Recorder { port, bytes }
    }

    fn seen(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap()).into_owned()
    }
}

fn record(mut s: std::net::TcpStream, all: &Mutex<Vec<u8>>, http: bool) {
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(30)));
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        all.lock().unwrap().extend_from_slice(&buf[..n]);
        if !http {
            continue;
        }
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).into_owned();
            pending.drain(..end + 4);
            let host = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("host").then(|| v.trim().to_string())
                })
                .unwrap_or_default();
            let body = format!("host={host}");
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    }
}

/// The attacks, run concurrently inside the sandbox; each prints `name: <what came back>`.
const ATTACKS: &str = r#"
import socket, ssl, sys, threading, time
P, T = int(sys.argv[1]), int(sys.argv[2])
FRONT = socket.gethostbyname("front.test")
PROXY = ("100.96.0.1", 3128)
results = {}

def hello(sni):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    c = ctx.wrap_bio(i, o, server_hostname=sni)
    try:
        c.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return o.read()

def reframe(rec, size):
    body, out = rec[5:], b""
    for k in range(0, len(body), size):
        part = body[k:k + size]
        out += bytes([0x16, 3, 1, 0, len(part)]) + part
    return out

def connect_tunnel(port):
    s = socket.create_connection(PROXY, timeout=20)
    s.sendall(b"CONNECT front.test:%d HTTP/1.1\r\nHost: front.test:%d\r\n\r\n" % (port, port))
    r = b""
    while b"\r\n\r\n" not in r:
        c = s.recv(1)
        if not c:
            raise OSError("proxy closed")
        r += c
    if b" 200" not in r.split(b"\r\n")[0]:
        raise OSError("CONNECT refused: %r" % r[:40])
    return s

def attack(name, dest, parts, wait=3, first=18):
    """Send `parts` ([(delay_before, bytes)]), report what came back."""
    try:
        s = connect_tunnel(dest[1]) if dest[0] == "tunnel" else socket.create_connection(dest, timeout=20)
        for delay, data in parts:
            time.sleep(delay)
            s.sendall(data)
        s.settimeout(first)
        got = b""
        try:
            while True:
                c = s.recv(4096)
                if not c:
                    break
                got += c
                if b"host=" in got and name not in ("pipelined", "keepalive-second", "stalled-second"):
                    break
                s.settimeout(first if name.startswith("stalled") else wait)
        except socket.timeout:
            pass
        results[name] = got.replace(b"\r\n", b"|")[:300].decode("latin1") or "closed"
    except OSError as e:
        results[name] = "error %s" % e

def bytewise(data, first=0.0, gap=0.02):
    return [(first if k == 0 else gap, data[k:k + 1]) for k in range(len(data))]

OTHER = b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n"
D = (FRONT, P)
ABS = b"http://front.test:%d/" % P
attacks = {
    "late": (D, [(1.5, OTHER)]),
    "bytewise": (D, bytewise(OTHER)),
    "bytewise-late": (D, bytewise(OTHER, first=1.5)),
    "crlf-crlf": (D, [(0, b"\r\n\r\n" + OTHER)]),
    "late-crlf": (D, [(1.5, b"\r\n\r\n" + OTHER)]),
    "lower-method": (D, [(0, b"get / HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "tab": (D, [(0, b"GET\t/ HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "two-hosts": (D, [(0, b"GET / HTTP/1.1\r\nHost: front.test\r\nHost: other.test\r\n\r\n")]),
    "two-hosts-rev": (D, [(0, b"GET / HTTP/1.1\r\nHost: other.test\r\nHost: front.test\r\n\r\n")]),
    "absolute-direct": (D, [(0, b"GET http://other.test/ HTTP/1.1\r\nHost: front.test\r\n\r\n")]),
    "te-cl": (D, [(0, b"POST / HTTP/1.1\r\nHost: front.test\r\nContent-Length: 41\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "dup-cl": (D, [(0, b"POST / HTTP/1.1\r\nHost: front.test\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n" + OTHER)]),
    "lf-heads": (D, [(0, b"GET / HTTP/1.1\r\nHost: front.test\n\n" + OTHER)]),
    "obs-fold": (D, [(0, b"GET / HTTP/1.1\r\nHost: front.test\r\nX-A: 1\r\n other.test\r\n\r\n")]),
    "pipelined": (D, [(0, b"GET /1 HTTP/1.1\r\nHost: front.test\r\n\r\n" + OTHER)]),
    "keepalive-second": (D, [(0, b"GET /1 HTTP/1.1\r\nHost: front.test\r\n\r\n"), (1.0, OTHER)]),
    "stalled-head": (D, [(0, b"GET / HTTP/1.1\r\nHost: other.te")]),
    "stalled-second": (D, [(0, b"GET /1 HTTP/1.1\r\nHost: front.test\r\n\r\n"), (0.5, b"GET / HTTP/1.1\r\nHost: other.te")]),
    "proxy-absolute": (PROXY, [(0, b"GET " + ABS + b" HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "proxy-two-hosts": (PROXY, [(0, b"GET " + ABS + b" HTTP/1.1\r\nHost: front.test:%d\r\nHost: other.test\r\n\r\n" % P)]),
    "proxy-lower": (PROXY, [(0, b"get " + ABS + b" HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "proxy-late": (PROXY, [(1.5, b"GET " + ABS + b" HTTP/1.1\r\nHost: other.test\r\n\r\n")]),
    "proxy-te-cl": (PROXY, [(0, b"POST " + ABS + b" HTTP/1.1\r\nHost: front.test:%d\r\nContent-Length: 41\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n" % P)]),
    "tunnel-http": (("tunnel", P), [(0, OTHER)]),
    "tunnel-http-late": (("tunnel", P), [(1.5, OTHER)]),
}
H = hello("other.test")
for via, dest in (("direct", (FRONT, T)), ("tunnel", ("tunnel", T))):
    attacks["tls-late-" + via] = (dest, [(1.5, H)])
    attacks["tls-bytewise-" + via] = (dest, bytewise(H, gap=0.002))
    attacks["tls-split-" + via] = (dest, [(0, reframe(H, 7))])
    attacks["tls-stalled-" + via] = (dest, [(0, H[: len(H) // 2])])
    attacks["tls-late-split-" + via] = (dest, [(1.5, reframe(H, 3))])
# Positive controls: the same paths, honest.
attacks["ok-direct"] = (D, [(0, b"GET /ok HTTP/1.1\r\nHost: front.test\r\n\r\n")])
attacks["ok-late"] = (D, [(1.5, b"GET /ok HTTP/1.1\r\nHost: front.test\r\n\r\n")])
attacks["ok-proxy"] = (PROXY, [(0, b"GET " + ABS + b" HTTP/1.1\r\nHost: front.test:%d\r\n\r\n" % P)])
threads = [threading.Thread(target=attack, args=(n, d, p)) for n, (d, p) in attacks.items()]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
# The honest ClientHello last, so its bytes at the TLS recorder prove the path is open.
attack("ok-tls", (FRONT, T), [(0, hello("front.test"))], wait=1, first=2)
for n in sorted(results):
    print("%s: %s" % (n, results[n]))
print("attacks-done")
"#;

fn events(s: &Server, sbx: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn deny_count(ev: &[serde_json::Value], reason: &str) -> usize {
    ev.iter()
        .filter(|e| e["type"] == "egress.deny" && e["attributes"]["reason"] == reason)
        .count()
}

#[test]
fn fronting_past_the_host_checks_is_refused_in_every_spelling() {
    let web = Recorder::start(true);
    let tls = Recorder::start(false);
    let s = Server::start_with(&["--egress-resolve", "front.test=127.0.0.1"]);
    let d = tempfile::tempdir().unwrap();
    let policy = write(
        &d,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: front.test\n        ports: [{}, {}]\n",
            web.port, tls.port
        ),
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let script = write(&d, "attacks.py", ATTACKS);
    let mut c = s.cli();
    c.args([
        "exec",
        "--in",
        &sbx,
        "--",
        "python3",
        "-",
        &web.port.to_string(),
    ])
    .arg(tls.port.to_string())
    .stdin(std::fs::File::open(&script).unwrap());
    let o = output_with_timeout(c, std::time::Duration::from_secs(150));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("attacks-done"), "{out}\n{err}");

    // Nothing about other.test ever reached an upstream.
    let (seen_http, seen_tls) = (web.seen(), tls.seen());
    assert!(
        !seen_http.to_ascii_lowercase().contains("other.test"),
        "HTTP upstream received: {seen_http:?}\n{out}"
    );
    assert!(
        !seen_tls.contains("other.test"),
        "TLS upstream received a ClientHello for other.test\n{out}"
    );
    assert!(!out.contains("host=other.test"), "{out}");
    // The honest requests went through, on the same paths the attacks used.
    for ok in ["ok-direct", "ok-late", "ok-proxy"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("{ok}: ")) && l.contains("host=front.test")),
            "{ok}: {out}"
        );
    }
    assert!(
        seen_tls.contains("front.test"),
        "honest ClientHello not seen\n{out}"
    );
    // The first request of a pipelined or kept-alive pair is served, the second refused.
    for p in ["pipelined", "keepalive-second"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{p}: ")))
            .unwrap_or_default();
        assert!(
            line.contains("host=front.test") && line.contains("403"),
            "{line}"
        );
    }

    // A head refused before hyper parsed it is answered with its reason too.
    for p in [
        "te-cl",
        "dup-cl",
        "obs-fold",
        "lf-heads",
        "proxy-te-cl",
        "tab",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{p}: ")))
            .unwrap_or_default();
        assert!(
            line.contains("400 Bad Request") && line.contains("request_malformed"),
            "{line}"
        );
    }

    // Every attack is a deny with a stable reason code.
    let ev = events(&s, &sbx);
    let dump = || {
        eprintln!("{out}");
        ev.iter()
            .filter(|e| e["type"] == "egress.deny")
            .map(|e| e["attributes"].to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    // lower-method, two-hosts(x2), absolute-direct, te-cl, dup-cl, obs-fold, lf-heads,
    // crlf-crlf, late-crlf, tab, proxy-absolute, proxy-two-hosts, proxy-lower, proxy-late,
    // proxy-te-cl
    assert!(deny_count(&ev, "request_malformed") >= 16, "{}", dump());
    // late, bytewise(x2), pipelined, keepalive-second, tunnel-http(x2), and the ClientHellos
    // naming other.test (late, bytewise, split, late-split; direct and in a tunnel).
    assert!(deny_count(&ev, "host_mismatch") >= 15, "{}", dump());
    // stalled request head (first and second on a connection), stalled ClientHello (direct
    // and tunnel).
    assert!(deny_count(&ev, "decision_timeout") >= 4, "{}", dump());
    for e in ev.iter().filter(|e| e["type"] == "egress.deny") {
        let host = e["attributes"]["host"].as_str().unwrap_or("");
        assert!(
            host == "front.test" || host == "100.96.0.1" || host == "other.test",
            "{e}"
        );
    }
}

/// A loopback HTTP server that answers the first request head of each connection with
/// `answer` (raw bytes, framed however they are) and then closes the connection.
fn raw_answerer(answer: &'static [u8]) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s.write_all(answer);
            });
        }
    });
    port
}

/// A TLS ClientHello without SNI, sent directly and through a CONNECT tunnel; prints
/// `nosni-<via>=closed` when the gateway refused it, `=open` when it reached the upstream
/// (a recorder that never answers).
const NO_SNI: &str = r#"
import socket, ssl, sys
T = int(sys.argv[1])
FRONT = socket.gethostbyname("front.test")
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
c = ctx.wrap_bio(i, o, server_hostname=None)
try:
    c.do_handshake()
except ssl.SSLWantReadError:
    pass
H = o.read()
def tunnel():
    s = socket.create_connection(("100.96.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT front.test:%d HTTP/1.1\r\nHost: front.test:%d\r\n\r\n" % (T, T))
    r = b""
    while b"\r\n\r\n" not in r:
        r += s.recv(1)
    return s
for via in ("direct", "tunnel"):
    s = socket.create_connection((FRONT, T), timeout=10) if via == "direct" else tunnel()
    s.sendall(H)
    s.settimeout(3)
    try:
        got = s.recv(100)
        print("nosni-%s=%s" % (via, "closed" if not got else "data"))
    except socket.timeout:
        print("nosni-%s=open" % via)
    except OSError as e:
        print("nosni-%s=closed %s" % (via, e))
"#;

fn sandbox_with(s: &Server, d: &tempfile::TempDir, allow: &str) -> String {
    let policy = write(
        d,
        "cleanroom.yaml",
        &format!("version: 1\nsandbox:\n  network:\n    allow:\n{allow}"),
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    sbx
}

#[test]
fn tls_without_a_name_is_refused_unless_the_rule_says_otherwise() {
    let (refused, allowed) = (Recorder::start(false), Recorder::start(false));
    let s = Server::start_with(&["--egress-resolve", "front.test=127.0.0.1"]);
    let d = tempfile::tempdir().unwrap();
    let script = write(&d, "nosni.py", NO_SNI);
    let run = |sbx: &str, port: u16| {
        let mut c = s.cli();
        c.args(["exec", "--in", sbx, "--", "python3", "-", &port.to_string()])
            .stdin(std::fs::File::open(&script).unwrap());
        let o = output_with_timeout(c, std::time::Duration::from_secs(60));
        format!("{}\n{}", stdout(&o), stderr(&o))
    };

    let strict = sandbox_with(
        &s,
        &d,
        &format!(
            "      - host: front.test\n        ports: [{}]\n",
            refused.port
        ),
    );
    let out = run(&strict, refused.port);
    assert!(out.contains("nosni-direct=closed"), "{out}");
    assert!(out.contains("nosni-tunnel=closed"), "{out}");
    assert!(
        refused.seen().is_empty(),
        "a nameless ClientHello got through\n{out}"
    );
    let ev = events(&s, &strict);
    assert!(deny_count(&ev, "sni_missing") >= 2, "{ev:?}");

    let lenient = sandbox_with(
        &s,
        &d,
        &format!(
            "      - host: front.test\n        ports: [{}]\n        allow_missing_sni: true\n",
            allowed.port
        ),
    );
    let out = run(&lenient, allowed.port);
    assert!(out.contains("nosni-direct=open"), "{out}");
    assert!(out.contains("nosni-tunnel=open"), "{out}");
    assert!(!allowed.seen().is_empty(), "{out}");
    assert_eq!(deny_count(&events(&s, &lenient), "sni_missing"), 0);
}

#[test]
fn close_delimited_and_folded_responses_reach_the_sandbox() {
    let close = raw_answerer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello world");
    let fold = raw_answerer(
        b"HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
    );
    let s = Server::start_with(&["--egress-resolve", "front.test=127.0.0.1"]);
    let d = tempfile::tempdir().unwrap();
    let sbx = sandbox_with(
        &s,
        &d,
        &format!("      - host: front.test\n        ports: [{close}, {fold}]\n"),
    );
    let script = format!(
        r#"
set -f
for via in direct proxied; do
  np=""; [ $via = direct ] && np="--noproxy *"
  echo "close-$via=$(curl -sS -m 10 $np http://front.test:{close}/)"
  curl -sS -m 10 $np -D /tmp/h -o /tmp/b -w "fold-$via-status=%{{http_code}}\n" http://front.test:{fold}/
  tr -d '\r' < /tmp/h | grep -i '^x-a:' | sed "s/^/fold-$via /"
  echo "fold-$via-body=$(cat /tmp/b)"
done
echo finished"#
    );
    let o = s.sh_in(&sbx, &script);
    let out = format!("{}\n{}", stdout(&o), stderr(&o));
    assert!(out.contains("finished"), "{out}");
    for via in ["direct", "proxied"] {
        assert!(out.contains(&format!("close-{via}=hello world\n")), "{out}");
        assert!(out.contains(&format!("fold-{via}-status=200\n")), "{out}");
        assert!(
            out.to_ascii_lowercase()
                .contains(&format!("fold-{via} x-a: a b\n")),
            "{out}"
        );
        assert!(out.contains(&format!("fold-{via}-body=ok\n")), "{out}");
    }
}
