//! The gateway against the host itself: upstream addresses that are this host's own or
//! special-purpose (not globally reachable) are refused whatever name leads to them, the
//! operator's escape hatches are name-based, and no sandbox can stall the server by what it
//! does with its gateway connections.
//!
//! Real DNS answers without the internet: the server under test runs in a private mount
//! namespace where this test's own hosts file is bind-mounted over `/etc/hosts`, so the
//! server's ordinary resolver (getaddrinfo, `hosts: files dns`) returns the addresses the
//! test chose. Nothing in the server knows about it. Addresses this host must own are put
//! on a dummy interface the test creates and removes.

mod common;
use common::*;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
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

/// A TCP server on `0.0.0.0` (so it answers on every address of this host) that answers
/// each connection with `hello` and counts connections.
struct Hello {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Hello {
    fn start(bind: &str) -> Hello {
        let l = TcpListener::bind((bind, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let c = connections.clone();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                );
            }
        });
        Hello { port, connections }
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

/// `exec` in the sandbox: open `n` connections to `host:port`, send one opaque byte on
/// each (so the gateway connects upstream), print how many it holds, then hold them.
fn hold_connections(s: &Server, sbx: &str, host: &str, port: u16, n: usize) -> std::process::Child {
    let script = format!(
        r#"python3 - <<'PY'
import resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
addr = socket.gethostbyname("{host}")
socks = []
for _ in range({n}):
    try:
        c = socket.create_connection((addr, {port}), timeout=5)
        c.sendall(b"\x00")
        socks.append(c)
    except OSError:
        pass
print("holding", len(socks), flush=True)
time.sleep(600)
PY"#
    );
    s.cli()
        .args(["exec", "-n", "--in", sbx, "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
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
    assert!(stopped, "the server ignored SIGTERM: {}", s.log());
}

#[test]
fn a_graceful_stop_completes_while_sandboxes_hold_gateway_connections() {
    let up = Silent::start();
    let mut s = Server::start_with(&["--egress-resolve", "stall.test=127.0.0.1"]);
    let mut holders = Vec::new();
    for _ in 0..2 {
        let sbx = create_with_policy(&s, &allow("stall.test", up.port));
        holders.push(hold_connections(&s, &sbx, "stall.test", up.port, 500));
    }
    assert!(eventually(Duration::from_secs(120), || {
        up.accepted.load(Ordering::SeqCst) >= 900
    }));
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
    for mut h in holders {
        let _ = h.kill();
        let _ = h.wait();
    }
    assert!(stopped, "the server ignored SIGTERM: {}", s.log());
}
