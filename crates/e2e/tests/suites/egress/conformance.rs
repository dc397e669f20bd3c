//! Egress conformance: real sandboxes behind the real gateway, upstream servers on this
//! machine's loopback (reached only through `--egress-resolve` overrides), and every
//! decision checked in the sandbox's event stream by its reason code.
//!
//! The bypass attempts (direct IPs, the host's own services, IPv6, raw sockets, other
//! resolvers, UDP, names resolving to internal addresses) and the allow/deny decisions run
//! under both runtimes ([`both_runtimes!`]): under gvisor the same gateway sits behind
//! gVisor's netstack, so the same decisions must come out. The flood and keep-alive tests
//! exercise the gateway alone and run under the linux runtime.
//!
//! Addresses the sandbox tries to reach directly are documentation ranges (TEST-NET) or
//! this host's own: nothing ever leaves the machine, even if the gateway were broken.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A plain HTTP/1.1 server on loopback answering `hello:<path>`; records request paths.
struct Upstream {
    port: u16,
    paths: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
}

impl Upstream {
    fn start(bind: &str) -> Upstream {
        let l = TcpListener::bind((bind, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let paths = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (p, c) = (paths.clone(), connections.clone());
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let p = p.clone();
                std::thread::spawn(move || serve_one(s, p));
            }
        });
        Upstream {
            port,
            paths,
            connections,
        }
    }
}

fn serve_one(s: std::net::TcpStream, paths: Arc<Mutex<Vec<String>>>) {
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    let path = line.split(' ').nth(1).unwrap_or("").to_string();
    paths.lock().unwrap().push(path.clone());
    let body = format!("hello:{path}");
    let mut s = s;
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// `openssl s_server -www` with a throwaway self-signed certificate.
struct TlsUpstream {
    port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl TlsUpstream {
    fn start() -> TlsUpstream {
        let dir = tempfile::tempdir().unwrap();
        let (key, cert) = (dir.path().join("k.pem"), dir.path().join("c.pem"));
        let ok = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args(["-subj", "/CN=ok.test", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success());
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("openssl")
            .args(["s_server", "-www", "-quiet", "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-key")
            .arg(&key)
            .arg("-cert")
            .arg(&cert)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(eventually(std::time::Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }));
        TlsUpstream {
            port,
            child,
            _dir: dir,
        }
    }
}

impl Drop for TlsUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cleanroom sandbox create --policy` with this policy text; returns the sandbox id.
fn create_with_policy(s: &Server, rt: Runtime, yaml: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let policy = write(&d, "cleanroom.yaml", yaml);
    let o = s.run(&rt.args(2, &["sandbox", "create", "--policy", &policy]));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    sbx
}

/// Every `egress.deny` event of the sandbox as (host, port, protocol, reason).
fn denies(s: &Server, sbx: &str) -> Vec<(String, u64, String, String)> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "egress.deny")
        .map(|v| {
            let a = &v["attributes"];
            (
                a["host"].as_str().unwrap_or("").to_string(),
                a["port"].as_f64().unwrap_or(0.0) as u64,
                a["protocol"].as_str().unwrap_or("").to_string(),
                a["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn has(d: &[(String, u64, String, String)], host: &str, port: u64, reason: &str) -> bool {
    d.iter()
        .any(|(h, p, _, r)| h == host && (port == 0 || *p == port) && r == reason)
}

/// A non-loopback IPv4 address of this host, if it has one.
fn host_ip() -> Option<String> {
    let o = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .skip_while(|w| *w != "inet")
        .nth(1)
        .and_then(|a| a.split('/').next().map(str::to_string))
}

const PROBES: &str = r#"
udp_probe() { python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
q = bytes.fromhex("abcd01000001000000000000076578616d706c6503636f6d0000010001")
try:
    s.sendto(q, (sys.argv[1], int(sys.argv[2])))
    s.recvfrom(512)
    print("UDP_LEAK", sys.argv[1])
except OSError:
    pass
PY
}
"#;

/// `tcp_dns NAME`: an A query over TCP (length-prefixed) to the gateway's resolver.
const TCP_DNS: &str = r#"
tcp_dns() { python3 - "$1" <<'PY'
import socket, struct, sys
name = sys.argv[1]
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.create_connection(("100.96.0.1", 53), timeout=5)
s.sendall(struct.pack(">H", len(q)) + q)
def read(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("short read")
        b += c
    return b
(n,) = struct.unpack(">H", read(2))
r = read(n)
print("tcp-dns %s rcode=%d answers=%d" % (name, r[3] & 15, struct.unpack(">H", r[6:8])[0]))
PY
}
"#;

fn default_policy_denies_every_protocol_with_reason_codes(rt: Runtime) {
    let s = Server::start();
    // A service of the host itself, on all interfaces: the sandbox must not reach it.
    let host_svc = Upstream::start("0.0.0.0");
    let sbx = s.create_on(rt, &[]);
    let host_ip = host_ip();
    let script = format!(
        r#"{PROBES}
getent hosts example.com && echo DNS_LEAK
curl -sS -m 5 --noproxy '*' http://203.0.113.7/ && echo TCP_LEAK
{host_probe}
curl -sS -m 5 --noproxy '*' http://100.96.0.1:22/ && echo GATEWAY_LEAK
curl -fsS -m 5 http://example.com/ && echo PROXY_LEAK
udp_probe 192.0.2.53 53
udp_probe 198.51.100.9 9999
python3 -c '
import socket
try:
    s = socket.create_connection(("2001:db8::1", 80), timeout=3); print("V6_LEAK")
except OSError as e:
    print("v6 refused:", e)
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("ICMP_LEAK")
except OSError as e:
    print("icmp refused:", e)
'
echo finished"#,
        host_probe = match &host_ip {
            Some(ip) => format!(
                "curl -sS -m 5 --noproxy '*' http://{ip}:{}/ && echo HOST_LEAK",
                host_svc.port
            ),
            None => String::new(),
        }
    );
    let o = s.sh_in(&sbx, &script);
    let out = stdout(&o);
    assert!(out.contains("finished"), "{out}\n{}", stderr(&o));
    assert!(!out.contains("LEAK"), "{out}");
    assert!(
        out.contains("v6 refused") && out.contains("icmp refused"),
        "{out}"
    );
    assert_eq!(host_svc.connections.load(Ordering::SeqCst), 0);
    // `exec` renders denies as warnings with their code.
    assert!(
        stderr(&o).contains("warning [ip_literal_not_allowed]"),
        "{}",
        stderr(&o)
    );

    let d = denies(&s, &sbx);
    assert!(has(&d, "example.com", 53, "host_not_allowed"), "{d:?}");
    assert!(
        has(&d, "203.0.113.7", 80, "ip_literal_not_allowed"),
        "{d:?}"
    );
    if let Some(ip) = &host_ip {
        assert!(
            has(&d, ip, u64::from(host_svc.port), "ip_literal_not_allowed"),
            "{d:?}"
        );
    }
    assert!(has(&d, "100.96.0.1", 22, "ip_literal_not_allowed"), "{d:?}");
    assert!(
        d.iter()
            .any(|(h, _, p, r)| h == "example.com" && p == "http-proxy" && r == "host_not_allowed"),
        "{d:?}"
    );
    assert!(has(&d, "192.0.2.53", 53, "resolver_not_allowed"), "{d:?}");
    assert!(
        has(&d, "198.51.100.9", 9999, "protocol_not_allowed"),
        "{d:?}"
    );
    // Every event names the sandbox's policy.
    let ev = stdout(&s.run(&["sandbox", "events", &sbx]));
    let hash = stdout(&s.run(&["sandbox", "inspect", &sbx, "--json"]));
    let hash: serde_json::Value = serde_json::from_str(&hash).unwrap();
    let hash = hash["policyHash"].as_str().unwrap().to_string();
    for l in ev.lines().filter(|l| l.contains("egress.")) {
        assert!(l.contains(&hash), "{l}");
    }
}
both_runtimes!(
    default_policy_denies_every_protocol_with_reason_codes,
    default_policy_denies_every_protocol_with_reason_codes
);

fn allowed_hosts_and_ports_work_and_deny_wins(rt: Runtime) {
    let web = Upstream::start("127.0.0.1");
    let other = Upstream::start("127.0.0.1");
    let tls = TlsUpstream::start();
    let resolve = |h: &str| vec!["--egress-resolve".to_string(), format!("{h}=127.0.0.1")];
    let args: Vec<String> = [
        "ok.test",
        "a.wild.test",
        "bad.wild.test",
        "doh.unlisted.test",
    ]
    .iter()
    .flat_map(|h| resolve(h))
    .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = Server::start_with(&args);
    let (p1, p2, ps) = (web.port, other.port, tls.port);
    let sbx = create_with_policy(
        &s,
        rt,
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.test\n        ports: [{p1}, {ps}]\n      - host: \"*.wild.test\"\n        ports: [{p1}]\n    deny:\n      - host: bad.wild.test\n"
        ),
    );
    let script = format!(
        r#"
curl -sS -m 10 --noproxy '*' http://ok.test:{p1}/direct; echo
curl -sS -m 10 http://ok.test:{p1}/proxied; echo
curl -sSk -m 10 --noproxy '*' https://ok.test:{ps}/ -o /dev/null -w 'tls-direct=%{{http_code}}\n'
curl -sSk -m 10 https://ok.test:{ps}/ -o /dev/null -w 'tls-proxied=%{{http_code}}\n'
curl -sS -m 10 --noproxy '*' http://a.wild.test:{p1}/wild; echo
curl -sS -m 5 --noproxy '*' http://ok.test:{p2}/ && echo PORT_LEAK
curl -sS -m 5 --noproxy '*' http://bad.wild.test:{p1}/ && echo DENY_LEAK
curl -sS -m 5 http://bad.wild.test:{p1}/ | grep -q hello && echo DENY_PROXY_LEAK
curl -sS -m 5 --noproxy '*' -H 'Host: other.test' http://ok.test:{p1}/front -o /dev/null -w 'front=%{{http_code}}\n'
echo | timeout 10 openssl s_client -connect ok.test:{ps} -servername evil.test 2>&1 | grep -q 'BEGIN CERTIFICATE' && echo SNI_LEAK
curl -sSk -m 5 'https://doh.unlisted.test/dns-query?dns=AAABAAABAAAAAAAAB2V4YW1wbGUDY29tAAABAAE' && echo DOH_LEAK
tcp_dns ok.test; tcp_dns unlisted.test
echo finished"#
    );
    let script = format!("{TCP_DNS}{script}");
    let o = s.sh_in(&sbx, &script);
    let out = stdout(&o);
    assert!(out.contains("finished"), "{out}\n{}", stderr(&o));
    // DNS over TCP to the gateway: same answers as UDP.
    assert!(
        out.contains("tcp-dns ok.test rcode=0 answers=1\n"),
        "{out}\n{}",
        stderr(&o)
    );
    assert!(
        out.contains("tcp-dns unlisted.test rcode=3 answers=0\n"),
        "{out}\n{}",
        stderr(&o)
    );
    assert!(out.contains("hello:/direct\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("hello:/proxied\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("tls-direct=200\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("tls-proxied=200\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("hello:/wild\n"), "{out}\n{}", stderr(&o));
    assert!(out.contains("front=403\n"), "{out}\n{}", stderr(&o));
    assert!(!out.contains("LEAK"), "{out}");
    // The upstreams saw exactly the allowed requests.
    let mut seen = web.paths.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, ["/direct", "/proxied", "/wild"]);
    assert_eq!(other.connections.load(Ordering::SeqCst), 0);

    let d = denies(&s, &sbx);
    assert!(
        has(&d, "ok.test", u64::from(p2), "port_not_allowed"),
        "{d:?}"
    );
    assert!(has(&d, "bad.wild.test", 0, "host_denied"), "{d:?}");
    assert!(has(&d, "ok.test", u64::from(p1), "host_mismatch"), "{d:?}");
    assert!(
        d.iter().any(|(h, p, proto, r)| h == "ok.test"
            && *p == u64::from(ps)
            && proto == "tls"
            && r == "host_mismatch"),
        "{d:?}"
    );
    assert!(has(&d, "doh.unlisted.test", 0, "host_not_allowed"), "{d:?}");
}
both_runtimes!(
    allowed_hosts_and_ports_work_and_deny_wins,
    allowed_hosts_and_ports_work_and_deny_wins
);

fn upstream_names_resolving_to_internal_addresses_are_refused(rt: Runtime) {
    // `localhost` is allowed by policy but resolves (through the host's resolver, not an
    // operator override) to loopback: the gateway must not open the host's own services.
    // (Inside the sandbox `localhost` is its own loopback, so ask the proxy explicitly.)
    let web = Upstream::start("127.0.0.1");
    let s = Server::start();
    let policy = format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: localhost\n        ports: [{}]\n",
            web.port
        );
    let sbx = create_with_policy(&s, rt, &policy);
    let o = s.sh_in(
        &sbx,
        &format!(
            "curl -fsS -m 5 --noproxy '' --proxy http://100.96.0.1:3128 http://localhost:{0}/ && echo LEAK; echo finished",
            web.port
        ),
    );
    let out = stdout(&o);
    assert!(out.contains("finished") && !out.contains("LEAK"), "{out}");
    assert_eq!(web.connections.load(Ordering::SeqCst), 0);
    let d = denies(&s, &sbx);
    assert!(
        has(&d, "localhost", 0, "upstream_address_not_allowed"),
        "{d:?}"
    );
}
both_runtimes!(
    upstream_names_resolving_to_internal_addresses_are_refused,
    upstream_names_resolving_to_internal_addresses_are_refused
);

#[test]
fn a_connection_flood_is_capped_per_sandbox() {
    let web = Upstream::start("127.0.0.1");
    let s = Server::start_with(&["--egress-resolve", "ok.test=127.0.0.1"]);
    let policy = format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.test\n        ports: [{}]\n",
            web.port
        );
    let sbx = create_with_policy(&s, Runtime::Linux, &policy);
    // Hold 1100 connections open at once: the gateway serves at most 1024 per sandbox.
    let script = format!(
        r#"python3 - <<'PY'
import resource, socket, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
addr = socket.gethostbyname("ok.test")
socks = []
for _ in range(1100):
    try:
        socks.append(socket.create_connection((addr, {port}), timeout=5))
    except OSError:
        pass
time.sleep(1)
print("opened", len(socks))
PY
echo flood-done"#,
        port = web.port
    );
    let o = s.sh_in(&sbx, &script);
    let out = stdout(&o);
    assert!(out.contains("flood-done"), "{out}\n{}", stderr(&o));
    // The cap is per sandbox: another sandbox is served at once, and the server is healthy.
    let other = create_with_policy(&s, Runtime::Linux, &policy);
    let o = s.sh_in(
        &other,
        &format!(
            "curl -sS -m 20 --noproxy '*' http://ok.test:{}/other",
            web.port
        ),
    );
    assert_eq!(stdout(&o), "hello:/other", "{}", stderr(&o));
    let d = denies(&s, &sbx);
    assert!(
        d.iter().any(|(_, _, _, r)| r == "too_many_connections"),
        "{d:?}"
    );
}

/// An HTTP/1.1 server that keeps connections alive; counts connections and requests.
fn keep_alive_upstream() -> (u16, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (conns, reqs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (c, r) = (conns.clone(), reqs.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            c.fetch_add(1, Ordering::SeqCst);
            let r = r.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let mut rd = BufReader::new(s.try_clone().unwrap());
                let mut s = s;
                loop {
                    let mut line = String::new();
                    if rd.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if rd.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let n = r.fetch_add(1, Ordering::SeqCst) + 1;
                    let body = format!("request {n}\n");
                    if write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (port, conns, reqs)
}

/// A client that keeps its connection to an allowed host alive gets one upstream
/// connection for all its requests, each still judged on its own.
#[test]
fn keep_alive_clients_reuse_one_upstream_connection() {
    let (port, conns, reqs) = keep_alive_upstream();
    let s = Server::start_with(&["--egress-resolve", "ka.test=127.0.0.1"]);
    let sbx = create_with_policy(
        &s,
        Runtime::Linux,
        &format!("version: 1\nsandbox:\n  network:\n    allow:\n      - host: ka.test\n        ports: [{port}]\n"),
    );
    let o = s.sh_in(
        &sbx,
        &format!("curl -sS -m 10 --noproxy '*' http://ka.test:{port}/a http://ka.test:{port}/b http://ka.test:{port}/c"),
    );
    assert_eq!(
        stdout(&o),
        "request 1\nrequest 2\nrequest 3\n",
        "{}",
        stderr(&o)
    );
    assert_eq!(reqs.load(Ordering::SeqCst), 3);
    assert_eq!(conns.load(Ordering::SeqCst), 1);
}
