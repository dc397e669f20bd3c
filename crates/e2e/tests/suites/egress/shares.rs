//! The egress gateways' server-wide flow budget has per-principal shares (issue 30, class
//! 5): one principal's sandboxes flooding the budget leave another principal served.
//!
//! The server runs with a small descriptor limit (2,560: a budget of 1,536 flows, a share of
//! 1,024 per principal), so two sandboxes of one principal can reach the whole budget.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

const ALICE: u32 = 61_001;
const BOB: u32 = 61_002;

/// An upstream that reads nothing and answers nothing: every connection stays open.
fn sink() -> (u16, Arc<Mutex<Vec<TcpStream>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    let h = held.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            h.lock().unwrap().push(s);
        }
    });
    (port, held)
}

/// An upstream answering every request `hello`.
fn hello() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let mut s = s;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
                );
            });
        }
    });
    port
}

/// `cleanroom` as `uid` (like [`as_uid`]), not waited for, stdout piped.
fn spawn_as(s: &Server, uid: u32, args: &[&str]) -> Child {
    Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(BIN)
        .args(args)
        .env("CLEANROOM_HOST", s.host())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn create_as(s: &Server, uid: u32, policy: &str) -> String {
    let o = as_uid(s, uid, &["sandbox", "create", "--policy", policy]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    id
}

/// Open up to 1,000 connections to the sink, each sending a whole request head (so the
/// gateway connects upstream and holds both sides), then print how many still look open
/// (a refused flow may too: the count that matters is the sink's).
fn flood(port: u16) -> String {
    format!(
        r#"python3 - <<'PY'
import resource, socket, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
addr = socket.gethostbyname("ok.test")
socks = []
for _ in range(1000):
    try:
        s = socket.create_connection((addr, {port}), timeout=3)
        s.sendall(b"GET /hold HTTP/1.1\r\nHost: ok.test\r\n\r\n")
        socks.append(s)
    except OSError:
        pass
time.sleep(2)
alive = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1):
            alive += 1
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
print("alive", alive, flush=True)
time.sleep(120)
PY"#
    )
}

/// Wait for the flood's `alive N` line.
fn alive(child: &mut Child) -> usize {
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    line.trim()
        .strip_prefix("alive ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("flood said {line:?}"))
}

#[test]
fn one_principal_cannot_take_the_gateways_flow_budget() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The server under a descriptor limit of 2,560 (it cannot raise it).
    let wrapper = dir.path().join("serve.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nulimit -n 2560 || exit 1\nexec {BIN} \"$@\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Server::start_exe(&wrapper, &["--egress-resolve", "ok.test=127.0.0.1"]);
    open_socket_to_all(&s);
    let (hold, _held) = sink();
    let web = hello();
    let policy = write(
        &dir,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.test\n        ports: [{hold}, {web}]\n"
        ),
    );
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let a1 = create_as(&s, ALICE, &policy);
    let a2 = create_as(&s, ALICE, &policy);
    let b = create_as(&s, BOB, &policy);
    // Alice's first sandbox holds 1,000 flows, her second as many as it is given.
    let script = flood(hold);
    // (Counted at the upstream: a flow the gateway refused is never relayed there.)
    let relayed = || _held.lock().unwrap().len();
    let mut f1 = spawn_as(
        &s,
        ALICE,
        &["exec", "-n", "--in", &a1, "--", "sh", "-c", &script],
    );
    alive(&mut f1);
    let n1 = relayed();
    let mut f2 = spawn_as(
        &s,
        ALICE,
        &["exec", "-n", "--in", &a2, "--", "sh", "-c", &script],
    );
    alive(&mut f2);
    let n2 = relayed() - n1;
    // Bob is still served while Alice's flows are held.
    let o = as_uid(
        &s,
        BOB,
        &[
            "exec",
            "-n",
            "--in",
            &b,
            "--",
            "sh",
            "-c",
            &format!("curl -sS -m 20 --noproxy '*' http://ok.test:{web}/"),
        ],
    );
    let served = stdout(&o);
    let _ = (f1.kill(), f2.kill(), f1.wait(), f2.wait());
    assert_eq!(served, "hello", "Bob is refused: {}", stderr(&o));
    assert_eq!(n1, 1000, "alice's first sandbox holds its flows");
    assert!(
        n1 + n2 <= 1024,
        "alice holds at most her share: {n1} + {n2}"
    );
    // Alice's refused flows are reported with the cap's reason.
    let o = s.run(&["sandbox", "events", &a2]);
    assert!(
        stdout(&o).contains("too_many_connections"),
        "{}",
        stdout(&o)
    );
}
