//! The gateway against the host itself: upstream addresses that are this host's own or
//! special-purpose (not globally reachable) are refused whatever name leads to them, the
//! operator's escape hatches are name-based, and no sandbox can stall the server by what it
//! does with its gateway connections.
//!
//! Real DNS answers without the internet: the server under test runs in a private mount
//! namespace where this test's own hosts file is bind-mounted over `/etc/hosts`, so the
//! server's ordinary resolver (getaddrinfo, `hosts: files dns`) returns the addresses the
//! test chose. Nothing in the server knows about it. Addresses this host must own are put
//! on `lo` by the test and removed after.

use cleanroom_e2e::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `cleanroom sandbox create --policy` with this policy text; returns the sandbox id.
fn create_with_policy(s: &Server, yaml: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let policy = write(&d, "cleanroom.yaml", yaml);
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    sbx
}

fn allow(host: &str, port: u16) -> String {
    format!("version: 1\nsandbox:\n  network:\n    allow:\n      - host: {host}\n        ports: [{port}]\n")
}

/// Every `egress.deny` event of the sandbox as (host, reason).
fn denies(s: &Server, sbx: &str) -> Vec<(String, String)> {
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
                a["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Answer one HTTP request (or whatever arrives first) with `hello`.
fn serve_hello(mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
}

/// An HTTP server answering `hello` on every address of this host (it binds `0.0.0.0`);
/// counts connections.
struct Hello {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Hello {
    fn start() -> Hello {
        let l = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let c = connections.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve_hello(s));
            }
        });
        Hello { port, connections }
    }
}

fn sh_ok(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One global-looking address added to `lo`, so it is this host's own without being
/// loopback (127/8) or special-purpose. Removed on drop. (A dummy interface would do as
/// well; not every kernel this runs on has the dummy driver.)
struct HostAddress {
    cidr: String,
}

impl HostAddress {
    fn add(ip: &str) -> HostAddress {
        let cidr = format!("{ip}/32");
        let _ = Command::new("ip")
            .args(["addr", "del", &cidr, "dev", "lo"])
            .output();
        sh_ok(&format!("ip addr add {cidr} dev lo"));
        HostAddress { cidr }
    }
}

impl Drop for HostAddress {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["addr", "del", &self.cidr, "dev", "lo"])
            .output();
    }
}

/// An HTTP server answering `hello` on a special-purpose address that is NOT this host's:
/// it lives in its own network namespace reached over a veth pair (`NET.1` on the host,
/// `NET.2` in the namespace, a /30) — like a package mirror on an internal network.
struct Elsewhere {
    ns: String,
    ip: String,
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Elsewhere {
    fn start(ns: &str, link: &str, net: &str) -> Elsewhere {
        let _ = Command::new("ip").args(["netns", "del", ns]).output();
        let _ = Command::new("ip").args(["link", "del", link]).output();
        sh_ok(&format!(
            "ip netns add {ns} && ip link add {link} type veth peer name up0 netns {ns} && \
             ip addr add {net}.1/30 dev {link} && ip link set {link} up && \
             ip -n {ns} addr add {net}.2/30 dev up0 && ip -n {ns} link set up0 up && \
             ip -n {ns} link set lo up"
        ));
        let ip = format!("{net}.2");
        let (tx, rx) = std::sync::mpsc::channel();
        let connections = Arc::new(AtomicUsize::new(0));
        let (c, path, bind) = (
            connections.clone(),
            format!("/var/run/netns/{ns}"),
            ip.clone(),
        );
        std::thread::spawn(move || {
            let f = std::fs::File::open(&path).unwrap();
            // SAFETY: setns on this thread only, with an fd we own; the thread does nothing
            // but serve from the namespace.
            assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
            let l = TcpListener::bind((bind.as_str(), 0)).unwrap();
            tx.send(l.local_addr().unwrap().port()).unwrap();
            for s in l.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve_hello(s));
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        Elsewhere {
            ns: ns.into(),
            ip,
            port,
            connections,
        }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth pair with it.
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

/// An upstream that accepts every connection and never says or reads anything; it holds
/// the connections until dropped.
struct Silent {
    port: u16,
    accepted: Arc<AtomicUsize>,
    _held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Silent {
    fn start() -> Silent {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let held = Arc::new(Mutex::new(Vec::new()));
        let (a, h) = (accepted.clone(), held.clone());
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                a.fetch_add(1, Ordering::SeqCst);
                h.lock().unwrap().push(s);
            }
        });
        Silent {
            port,
            accepted,
            _held: held,
        }
    }
}

/// What each held connection does before it goes quiet.
#[derive(Clone, Copy)]
enum Hold {
    /// Send one opaque byte, so the gateway connects upstream and splices.
    Opaque,
    /// Send the first bytes of a TLS record and stop: the gateway waits for the rest of the
    /// ClientHello.
    PartialTls,
    /// Open a CONNECT tunnel through the gateway's proxy to `host:port` and stay quiet.
    ProxyConnect,
}

/// `exec` in the sandbox: open `n` connections to `host:port` (see [`Hold`]), print
/// `holding N`, then hold them. The child's stdout is piped (see [`wait_holding`]).
fn hold_connections_as(
    s: &Server,
    sbx: &str,
    host: &str,
    port: u16,
    n: usize,
    how: Hold,
) -> std::process::Child {
    let open = match how {
        Hold::Opaque => format!(
            "c = socket.create_connection((socket.gethostbyname(\"{host}\"), {port}), timeout=5)\n        c.sendall(b\"\\x00\")"
        ),
        Hold::PartialTls => format!(
            "c = socket.create_connection((socket.gethostbyname(\"{host}\"), {port}), timeout=5)\n        c.sendall(b\"\\x16\\x03\\x01\")"
        ),
        Hold::ProxyConnect => format!(
            "c = socket.create_connection((\"100.96.0.1\", 3128), timeout=5)\n        c.sendall(b\"CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n\")"
        ),
    };
    let script = format!(
        r#"python3 - <<'PY'
import resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
socks = []
for _ in range({n}):
    try:
        {open}
        socks.append(c)
    except OSError:
        pass
print("holding", len(socks), flush=True)
time.sleep(600)
PY"#
    );
    s.cli()
        .args(["exec", "-n", "--in", sbx, "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn hold_connections(s: &Server, sbx: &str, host: &str, port: u16, n: usize) -> std::process::Child {
    hold_connections_as(s, sbx, host, port, n, Hold::Opaque)
}

/// Wait (bounded) for a holder to report how many connections it holds.
fn wait_holding(child: &mut std::process::Child) -> usize {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(120))
        .unwrap_or_default();
    line.trim()
        .strip_prefix("holding ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("holder said {line:?}"))
}

/// SIGTERM the server and report whether it exited on its own within a generous bound.
fn stops_on_sigterm(s: &mut Server) -> bool {
    let mut child = s.child.take().unwrap();
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let stopped = eventually(Duration::from_secs(30), || {
        matches!(child.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = child.kill();
        let _ = child.wait();
    }
    stopped
}

#[test]
fn a_sandbox_torn_down_holding_a_thousand_gateway_connections_does_not_stall_the_server() {
    let up = Silent::start();
    let mut s = Server::start_with(&["--egress-resolve", "stall.test=127.0.0.1"]);
    let sbx = create_with_policy(&s, &allow("stall.test", up.port));
    let mut holder = hold_connections(&s, &sbx, "stall.test", up.port, 1000);
    // Wait until most connections reached the upstream through the gateway.
    let held = eventually(Duration::from_secs(120), || {
        up.accepted.load(Ordering::SeqCst) >= 900
    });
    assert!(
        held,
        "only {} upstream connections",
        up.accepted.load(Ordering::SeqCst)
    );

    // Tear the sandbox down while every connection is open.
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = holder.kill();
    let _ = holder.wait();

    // The API still answers, and a new sandbox works (generous bounds: a wedged server
    // never answers at all).
    let mut c = s.cli();
    c.args(["exec", "-n", "--", "sh", "-c", "echo alive"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o).trim(), "alive", "{}", stderr(&o));

    // And a graceful stop completes on its own.
    let stopped = stops_on_sigterm(&mut s);
    assert!(stopped, "the server ignored SIGTERM: {}", s.log());
}

#[test]
fn a_graceful_stop_completes_while_sandboxes_hold_gateway_connections() {
    let up = Silent::start();
    let mut s = Server::start_with(&["--egress-resolve", "stall.test=127.0.0.1"]);
    let mut holders = Vec::new();
    for _ in 0..2 {
        let sbx = create_with_policy(&s, &allow("stall.test", up.port));
        holders.push(hold_connections(&s, &sbx, "stall.test", up.port, 1000));
    }
    assert!(eventually(Duration::from_secs(120), || {
        up.accepted.load(Ordering::SeqCst) >= 1800
    }));
    let stopped = stops_on_sigterm(&mut s);
    for mut h in holders {
        let _ = h.kill();
        let _ = h.wait();
    }
    assert!(stopped, "the server ignored SIGTERM: {}", s.log());
}

/// `gw NAME` in a sandbox: the address the gateway's DNS hands out for NAME. (The sandbox
/// sees the host's `/etc/hosts` — here the test's — so its own resolver would bypass the
/// gateway's names.)
const GW_RESOLVE: &str = r#"
gw() { python3 - "$1" <<'PY'
import socket, struct, sys
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in sys.argv[1].split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("100.96.0.1", 53))
r = s.recv(512)
print(".".join(str(b) for b in r[-4:]))
PY
}
"#;

/// `curl` `http://HOST:PORT/` from the sandbox (`how`: one of the paths below); prints
/// `GOT <body>` on success, then `finished`. Returns stdout and stderr.
fn curl(s: &Server, sbx: &str, how: &str, host: &str, port: u16) -> (String, String) {
    let how = if how == TRANSPARENT {
        format!("--noproxy '*' --resolve {host}:{port}:$(gw {host})")
    } else {
        how.to_string()
    };
    let o = s.sh_in(
        sbx,
        &format!(
            "{GW_RESOLVE}\nb=$(curl -fsS -m 10 {how} http://{host}:{port}/) && echo \"GOT $b\"; sleep 1; echo finished"
        ),
    );
    (stdout(&o), stderr(&o))
}

/// To the name's address from the gateway's DNS, no proxy.
const TRANSPARENT: &str = "transparent";
/// Straight to the URL's host, no proxy.
const DIRECT: &str = "--noproxy '*'";
const PROXY: &str = "--noproxy '' --proxy http://100.96.0.1:3128";
const CONNECT: &str = "--noproxy '' --proxytunnel --proxy http://100.96.0.1:3128";

#[test]
fn allowed_names_resolving_to_addresses_of_this_host_are_refused() {
    let _own = HostAddress::add("11.22.33.44");
    let web = Hello::start();
    // The address really is reachable on this host (so a refusal below is the gateway's).
    assert!(TcpStream::connect(("11.22.33.44", web.port)).is_ok());
    let hosts = "11.22.33.44 own.test\n11.22.33.44 trusted-own.test\n127.0.0.1 loop.test";
    let s = Server::start_with_hosts(hosts, &["--egress-trust-internal", "trusted-own.test"]);
    let policy = format!(
        "version: 1\nsandbox:\n  network:\n    allow:\n      - host: own.test\n        ports: [{p}]\n      - host: trusted-own.test\n        ports: [{p}]\n      - host: loop.test\n        ports: [{p}]\n",
        p = web.port
    );
    let sbx = create_with_policy(&s, &policy);
    for host in ["own.test", "trusted-own.test", "loop.test"] {
        for how in [TRANSPARENT, PROXY, CONNECT] {
            let (out, err) = curl(&s, &sbx, how, host, web.port);
            assert!(
                out.contains("finished") && !out.contains("GOT hello"),
                "{host} via {how}: {out}\n{err}"
            );
        }
    }
    // Opaque TCP too (no HTTP to parse).
    let o = s.sh_in(
        &sbx,
        &format!(
            "{GW_RESOLVE}\npython3 -c 'import socket, sys; c = socket.create_connection((sys.argv[1], {}), timeout=5); c.sendall(b\"\\0\\1\"); print(\"GOT\", c.recv(10))' $(gw own.test) 2>&1; echo finished",
            web.port
        ),
    );
    assert!(!stdout(&o).contains("hello"), "{}", stdout(&o));
    assert_eq!(
        web.connections.load(Ordering::SeqCst),
        1,
        "only the test's own probe"
    );
    let d = denies(&s, &sbx);
    for host in ["own.test", "trusted-own.test", "loop.test"] {
        assert!(
            d.contains(&(host.to_string(), "upstream_address_not_allowed".to_string())),
            "{host}: {d:?}"
        );
    }
    // Only an explicit pin reaches an address of this host.
    drop(s);
    let s = Server::start_with_hosts(hosts, &["--egress-resolve", "own.test=11.22.33.44"]);
    let sbx = create_with_policy(&s, &policy);
    let (out, err) = curl(&s, &sbx, TRANSPARENT, "own.test", web.port);
    assert!(out.contains("GOT hello"), "{out}\n{err}");
}

#[test]
fn dangerously_allow_all_cannot_reach_addresses_of_this_host() {
    let _own = HostAddress::add("11.22.33.45");
    let web = Hello::start();
    assert!(TcpStream::connect(("11.22.33.45", web.port)).is_ok());
    let s = Server::start();
    let sbx = create_with_policy(
        &s,
        "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n",
    );
    for how in [DIRECT, PROXY, CONNECT] {
        let (out, err) = curl(&s, &sbx, how, "11.22.33.45", web.port);
        assert!(
            out.contains("finished") && !out.contains("GOT hello"),
            "via {how}: {out}\n{err}"
        );
    }
    // The host's default-route address and special-purpose ones, directly.
    let mut targets = vec!["10.0.0.1".to_string(), "169.254.169.254".to_string()];
    if let Some(ip) = host_ip() {
        targets.push(ip);
    }
    for ip in &targets {
        let (out, _) = curl(&s, &sbx, DIRECT, ip, web.port);
        assert!(!out.contains("GOT hello"), "{ip}: {out}");
    }
    assert_eq!(
        web.connections.load(Ordering::SeqCst),
        1,
        "only the test's own probe"
    );
    let d = denies(&s, &sbx);
    assert!(
        d.contains(&(
            "11.22.33.45".to_string(),
            "upstream_address_not_allowed".to_string()
        )),
        "{d:?}"
    );
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

#[test]
fn special_purpose_answers_are_refused_unless_the_operator_trusts_the_name() {
    let up = Elsewhere::start("crh-mirror", "crh-v0", "198.51.100");
    let hosts = format!(
        "{ip} mirror.test\n{ip} pkg.corp.test\n{ip} other.test",
        ip = up.ip
    );
    let mut policy = "version: 1\nsandbox:\n  network:\n    allow:\n".to_string();
    for h in ["mirror.test", "pkg.corp.test", "other.test"] {
        policy += &format!("      - host: {h}\n        ports: [{}]\n", up.port);
    }

    // By default a special-purpose answer is refused, and the warning names the fix.
    let s = Server::start_with_hosts(&hosts, &[]);
    let sbx = create_with_policy(&s, &policy);
    let (out, err) = curl(&s, &sbx, TRANSPARENT, "mirror.test", up.port);
    assert!(
        out.contains("finished") && !out.contains("GOT hello"),
        "{out}\n{err}"
    );
    assert!(
        err.contains("upstream_address_not_allowed")
            && err.contains("cleanroom serve --egress-trust-internal mirror.test"),
        "{err}"
    );
    let (out, _) = curl(&s, &sbx, PROXY, "pkg.corp.test", up.port);
    assert!(!out.contains("GOT hello"), "{out}");
    assert!(
        denies(&s, &sbx).contains(&(
            "mirror.test".to_string(),
            "upstream_address_not_allowed".to_string()
        )),
        "{:?}",
        denies(&s, &sbx)
    );
    assert_eq!(up.connections.load(Ordering::SeqCst), 0);
    drop(s);

    // Trusted by exact name or suffix pattern: one flag each, every path works.
    let s = Server::start_with_hosts(
        &hosts,
        &[
            "--egress-trust-internal",
            "mirror.test",
            "--egress-trust-internal",
            "*.corp.test",
        ],
    );
    let sbx = create_with_policy(&s, &policy);
    for (host, how) in [
        ("mirror.test", TRANSPARENT),
        ("mirror.test", PROXY),
        ("mirror.test", CONNECT),
        ("pkg.corp.test", TRANSPARENT),
    ] {
        let (out, err) = curl(&s, &sbx, how, host, up.port);
        assert!(out.contains("GOT hello"), "{host} via {how}: {out}\n{err}");
    }
    // A name the operator did not trust stays refused.
    let (out, err) = curl(&s, &sbx, TRANSPARENT, "other.test", up.port);
    assert!(!out.contains("GOT hello"), "{out}\n{err}");
    assert!(err.contains("--egress-trust-internal other.test"), "{err}");
}

#[test]
fn a_bad_trust_pattern_stops_the_server() {
    for bad in ["10.0.0.1", "*", "a.*.test", "host:80"] {
        let d = tempfile::tempdir().unwrap();
        let sock = format!("unix://{}/s.sock", d.path().display());
        let mut c = Command::new(BIN);
        c.args(["serve", "--listen", &sock, "--state-dir"])
            .arg(d.path().join("state"))
            .args(["--egress-trust-internal", bad]);
        let o = output_with_timeout(c, Duration::from_secs(30));
        assert!(!o.status.success(), "{bad}");
        assert!(
            stderr(&o).contains("--egress-trust-internal"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn a_dns_flow_flood_is_capped_per_sandbox() {
    let s = Server::start_with(&["--egress-resolve", "ok.test=127.0.0.1"]);
    let policy = allow("ok.test", 80);
    let sbx = create_with_policy(&s, &policy);
    // 1200 DNS clients on distinct source ports, all at once: each is a UDP flow the
    // gateway holds for a moment; past the cap (1024) they are refused at once.
    let script = r#"python3 - <<'PY'
import resource, socket, struct, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x02ok\x04test\x00" + struct.pack(">HH", 1, 1)
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(1200)]
# Several quick rounds: a served client port stays busy, so the gateway holds its flow.
# Paced, so the tun queue does not drop queries before the gateway sees them.
for _ in range(3):
    for i, s in enumerate(socks):
        s.sendto(q, ("100.96.0.1", 53))
        if i % 50 == 49:
            time.sleep(0.005)
time.sleep(0.5)
answered = 0
for s in socks:
    s.setblocking(False)
    try:
        s.recv(512)
        answered += 1
    except OSError:
        pass
print("answered", answered)
PY"#;
    let o = s.sh_in(&sbx, script);
    let out = stdout(&o);
    let answered: usize = out
        .trim()
        .strip_prefix("answered ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}\n{}", stderr(&o)));
    assert!(
        answered < 1200,
        "all {answered} DNS clients were served at once"
    );
    assert!(
        denies(&s, &sbx)
            .iter()
            .any(|(_, r)| r == "too_many_connections"),
        "{:?}",
        denies(&s, &sbx)
    );
    // Another sandbox resolves at once.
    let other = create_with_policy(&s, &policy);
    let o = s.sh_in(
        &other,
        "python3 -c 'import socket; print(socket.gethostbyname(\"ok.test\"))'",
    );
    assert!(stdout(&o).starts_with("198.18."), "{}", stderr(&o));
}

#[test]
fn teardown_is_prompt_whatever_state_the_held_connections_are_in() {
    let silent = Silent::start();
    // Never accepts: past its backlog, the gateway's upstream connects stay pending.
    let unaccepting = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = unaccepting.local_addr().unwrap().port();
    let mut s = Server::start_with(&["--egress-resolve", "stall.test=127.0.0.1"]);
    let policy = format!(
        "version: 1\nsandbox:\n  network:\n    allow:\n      - host: stall.test\n        ports: [{}, {}]\n",
        silent.port, dead_port
    );
    let cases = [
        (silent.port, Hold::PartialTls),
        (dead_port, Hold::Opaque),
        (silent.port, Hold::ProxyConnect),
    ];
    let mut sandboxes = Vec::new();
    let mut holders = Vec::new();
    for (port, how) in cases {
        let sbx = create_with_policy(&s, &policy);
        let mut h = hold_connections_as(&s, &sbx, "stall.test", port, 1000, how);
        assert!(wait_holding(&mut h) >= 900);
        sandboxes.push(sbx);
        holders.push(h);
    }
    let mut rm = vec!["sandbox", "rm"];
    rm.extend(sandboxes.iter().map(String::as_str));
    let o = s.run(&rm);
    assert!(o.status.success(), "{}", stderr(&o));
    for mut h in holders {
        let _ = h.kill();
        let _ = h.wait();
    }
    let mut c = s.cli();
    c.args(["exec", "-n", "--", "sh", "-c", "echo alive"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o).trim(), "alive", "{}", stderr(&o));
    assert!(
        stops_on_sigterm(&mut s),
        "the server ignored SIGTERM: {}",
        s.log()
    );
    drop(unaccepting);
}
