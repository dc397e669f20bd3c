//! Egress verdicts that ask, end to end: a real server, real sandboxes behind the real
//! gateway, loopback upstreams reached only through `serve --egress-resolve` overrides, and
//! the answers given with the real CLI (`cleanroom sandbox approve`, `exec --on-ask`).
//! Every outcome is checked in the sandbox's event stream (`egress.pending`,
//! `egress.decision`, `egress.allow`/`egress.deny` with their reason codes) and on the
//! upstream (a refused connection never reaches it).

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A plain HTTP/1.1 server on loopback answering `hello:<path>`; counts connections.
struct Upstream {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Upstream {
    fn start() -> Upstream {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let c = connections.clone();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                c.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve_one(s));
            }
        });
        Upstream { port, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn serve_one(s: std::net::TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
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
    let body = format!("hello:{path}");
    let mut s = s;
    let _ = write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A server whose gateway resolves each of `names` to loopback.
fn server(names: &[&str], extra: &[&str]) -> Server {
    let mut args: Vec<String> = Vec::new();
    for n in names {
        args.push("--egress-resolve".into());
        args.push(format!("{n}=127.0.0.1"));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_with(&refs)
}

fn create_with_policy(s: &Server, yaml: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let policy = write(&d, "cleanroom.yaml", yaml);
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    sbx
}

fn ask_policy(timeout: u32) -> String {
    format!("version: 1\nsandbox:\n  network:\n    unknown: ask\n    approval_timeout_seconds: {timeout}\n")
}

/// The sandbox's events as JSON values.
fn events(s: &Server, sbx: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(ev: &'a [serde_json::Value], t: &str) -> Vec<&'a serde_json::Value> {
    ev.iter().filter(|v| v["type"] == t).collect()
}

/// `curl` in the sandbox (transparent: straight to the name our DNS hands out), as a
/// running child so the test can answer while it waits.
fn curl_in(s: &Server, sbx: &str, url: &str, on_ask: &str) -> Child {
    s.cli()
        .args(["exec", "-n", "--in", sbx, "--on-ask", on_ask, "--"])
        .args(["curl", "-sS", "-m", "100", "--noproxy", "*", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Read the child's stderr as it comes (a thread appends it to the returned buffer).
fn follow_stderr(mut child: Child) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    if let Some(mut err) = child.stderr.take() {
        let b = buf.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = std::io::Read::read(&mut err, &mut chunk) {
                if n == 0 {
                    break;
                }
                b.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
    }
    (child, buf)
}

/// Wait (bounded) for the child and return (exit code, stdout, stderr).
fn finish(child: Child) -> (Option<i32>, String, String) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let o = rx
        .recv_timeout(Duration::from_secs(150))
        .expect("exec did not finish")
        .unwrap();
    (o.status.code(), stdout(&o), stderr(&o))
}

/// The open requests of a sandbox (`sandbox requests --json`).
fn open_requests(s: &Server, sbx: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "requests", sbx, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["requests"].as_array().cloned().unwrap_or_default()
}

/// Wait (bounded) until `n` requests are open; returns them.
fn wait_open(s: &Server, sbx: &str, n: usize) -> Vec<serde_json::Value> {
    let mut last = Vec::new();
    let ok = eventually(Duration::from_secs(60), || {
        last = open_requests(s, sbx);
        last.len() >= n
    });
    assert!(ok, "{} open requests, want {n}", last.len());
    last
}

fn id_of(r: &serde_json::Value) -> String {
    r["requestId"]
        .as_str()
        .or(r["request_id"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn policy_hash(s: &Server, sbx: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sbx, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["policyHash"]
        .as_str()
        .or(v["policy_hash"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn ask_then_approve_lets_the_connection_through() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let hash = policy_hash(&s, &sbx);
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/x", up.port), "wait");
    let open = wait_open(&s, &sbx, 1);
    assert_eq!(open[0]["host"], "api.test", "{open:?}");
    assert_eq!(
        open[0]["port"].as_u64(),
        Some(u64::from(up.port)),
        "{open:?}"
    );
    // Held: nothing reached the upstream yet.
    assert_eq!(up.connections(), 0);
    let id = id_of(&open[0]);
    assert!(id.starts_with("apr_"), "{open:?}");
    // The waiting exec says how to answer while the request is open: wait for that before
    // answering (answered first, the hint would rightly never be printed).
    let (child, err_so_far) = follow_stderr(child);
    let hint = format!("cleanroom sandbox approve {sbx} {id}");
    let hinted = eventually(Duration::from_secs(30), || {
        err_so_far.lock().unwrap().contains(&hint)
    });
    assert!(hinted, "no hint: {}", err_so_far.lock().unwrap());
    let o = s.run(&["sandbox", "approve", &sbx, &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("allowed api.test:{}", up.port)));
    let (code, out, _) = finish(child); // bounded; its stderr is read by follow_stderr
    let err = err_so_far.lock().unwrap().clone();
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "hello:/x");
    let ev = events(&s, &sbx);
    let pending = of_type(&ev, "egress.pending");
    assert_eq!(pending.len(), 1, "{ev:?}");
    assert_eq!(pending[0]["attributes"]["request_id"], id.as_str());
    let decided = of_type(&ev, "egress.decision");
    assert_eq!(decided.len(), 1, "{ev:?}");
    assert_eq!(decided[0]["attributes"]["verdict"], "allow");
    assert_eq!(decided[0]["attributes"]["remember"], "once");
    assert!(decided[0]["attributes"]["principal"]
        .as_str()
        .is_some_and(|p| !p.is_empty()));
    assert!(of_type(&ev, "egress.allow")
        .iter()
        .any(|v| v["attributes"]["host"] == "api.test"));
    // Answered once: the next connection asks again; the answer is gone.
    assert!(open_requests(&s, &sbx).is_empty());
    let o = s.run(&["sandbox", "approve", &sbx, &id]);
    assert!(
        stderr(&o).contains("[approval_not_found]"),
        "{}",
        stderr(&o)
    );
    // The policy never changed.
    assert_eq!(policy_hash(&s, &sbx), hash);
}

#[test]
fn ask_then_deny_refuses_with_an_event() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/", up.port), "wait");
    let id = id_of(&wait_open(&s, &sbx, 1)[0]);
    let o = s.run(&["sandbox", "approve", &sbx, &id, "--deny"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, out, err) = finish(child);
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(!out.contains("hello"), "{out}");
    assert_eq!(
        up.connections(),
        0,
        "a denied connection reached the upstream"
    );
    let ev = events(&s, &sbx);
    let denies = of_type(&ev, "egress.deny");
    assert!(
        denies
            .iter()
            .any(|v| v["attributes"]["reason"] == "approval_denied"
                && v["attributes"]["host"] == "api.test"),
        "{ev:?}"
    );
    // The exec saw the deny as a warning with its code.
    assert!(err.contains("approval_denied"), "{err}");
}

#[test]
fn ask_times_out_with_approval_timeout() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(2));
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/", up.port), "wait");
    let id = id_of(&wait_open(&s, &sbx, 1)[0]);
    let (code, out, err) = finish(child);
    assert_ne!(code, Some(0), "{out}{err}");
    assert_eq!(up.connections(), 0);
    let ev = events(&s, &sbx);
    assert!(
        of_type(&ev, "egress.deny")
            .iter()
            .any(|v| v["attributes"]["reason"] == "approval_timeout"),
        "{ev:?}"
    );
    // Too late: the request is gone, and nothing was decided.
    let o = s.run(&["sandbox", "approve", &sbx, &id]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[approval_not_found]"),
        "{}",
        stderr(&o)
    );
    assert!(of_type(&ev, "egress.decision").is_empty());
}

#[test]
fn on_ask_deny_answers_at_once() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    // A long timeout: only the exec's own answer can end this quickly.
    let sbx = create_with_policy(&s, &ask_policy(3600));
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/", up.port), "deny");
    let (code, _, err) = finish(child);
    assert_ne!(code, Some(0));
    assert!(err.contains("denying api.test"), "{err}");
    let ev = events(&s, &sbx);
    assert!(of_type(&ev, "egress.deny")
        .iter()
        .any(|v| v["attributes"]["reason"] == "approval_denied"));
    assert_eq!(up.connections(), 0);
}

#[test]
fn remember_sandbox_is_not_asked_again_and_shows_in_inspect() {
    let up = Upstream::start();
    let s = server(&["api.test", "other.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let hash = policy_hash(&s, &sbx);
    let url = format!("http://api.test:{}/one", up.port);
    let child = curl_in(&s, &sbx, &url, "wait");
    let id = id_of(&wait_open(&s, &sbx, 1)[0]);
    let o = s.run(&["sandbox", "approve", &sbx, &id, "--remember", "sandbox"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(finish(child).1, "hello:/one");
    // Second connection: through at once, no new request (--on-ask deny would refuse one).
    let child = curl_in(
        &s,
        &sbx,
        &format!("http://api.test:{}/two", up.port),
        "deny",
    );
    let (code, out, err) = finish(child);
    assert_eq!((code, out.as_str()), (Some(0), "hello:/two"), "{err}");
    let ev = events(&s, &sbx);
    assert_eq!(of_type(&ev, "egress.pending").len(), 1, "{ev:?}");
    // Another destination still asks.
    let child = curl_in(&s, &sbx, &format!("http://other.test:{}/", up.port), "deny");
    assert_ne!(finish(child).0, Some(0));
    // Derived state, shown in inspect; the policy and its hash are unchanged.
    let o = s.run(&["sandbox", "inspect", &sbx]);
    assert!(
        stdout(&o).contains(&format!("egress_approved:     api.test:{}", up.port)),
        "{}",
        stdout(&o)
    );
    assert_eq!(policy_hash(&s, &sbx), hash);
    let o = s.run(&["sandbox", "inspect", &sbx, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let approved = if v["egressApproved"].is_null() {
        &v["egress_approved"]
    } else {
        &v["egressApproved"]
    };
    assert_eq!(
        approved,
        &serde_json::json!([format!("api.test:{}", up.port)])
    );
}

#[test]
fn another_principal_cannot_see_or_decide() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    open_socket_to_all(&s);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/", up.port), "wait");
    let id = id_of(&wait_open(&s, &sbx, 1)[0]);
    for args in [
        vec!["sandbox", "approve", sbx.as_str(), id.as_str()],
        vec![
            "sandbox",
            "approve",
            sbx.as_str(),
            id.as_str(),
            "--remember",
            "sandbox",
        ],
        vec!["sandbox", "requests", sbx.as_str()],
    ] {
        let o = as_uid(&s, 65534, &args);
        assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("[sandbox_not_found]"),
            "{args:?}: {}",
            stderr(&o)
        );
        // Nothing about the request leaks.
        assert!(!stderr(&o).contains("api.test"), "{}", stderr(&o));
    }
    // Still waiting, untouched; the owner answers.
    assert_eq!(open_requests(&s, &sbx).len(), 1);
    assert_eq!(up.connections(), 0);
    let o = s.run(&["sandbox", "approve", &sbx, &id, "--deny"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(finish(child).0, Some(0));
    let ev = events(&s, &sbx);
    let decided = of_type(&ev, "egress.decision");
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0]["attributes"]["verdict"], "deny");
}

#[test]
fn pending_requests_are_capped_and_fail_closed() {
    let up = Upstream::start();
    let names = ["a.test", "b.test", "c.test", "d.test"];
    let s = server(&names, &["--max-pending-approvals", "2"]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let script = names
        .iter()
        .map(|n| {
            format!(
                "(curl -sS -m 100 --noproxy '*' http://{n}:{}/ >/dev/null 2>&1; echo {n}=$?) &",
                up.port
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\nwait\n";
    let child = s
        .cli()
        .args([
            "exec", "-n", "--in", &sbx, "--on-ask", "wait", "--", "sh", "-c", &script,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let open = wait_open(&s, &sbx, 2);
    // Beyond the cap: refused at once with approval_queue_full, never asked.
    let full = eventually(Duration::from_secs(60), || {
        of_type(&events(&s, &sbx), "egress.deny")
            .iter()
            .filter(|v| v["attributes"]["reason"] == "approval_queue_full")
            .count()
            == 2
    });
    assert!(full, "{:?}", events(&s, &sbx));
    assert_eq!(open_requests(&s, &sbx).len(), 2);
    assert_eq!(of_type(&events(&s, &sbx), "egress.pending").len(), 2);
    for r in &open {
        let o = s.run(&["sandbox", "approve", &sbx, &id_of(r)]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (_, out, err) = finish(child);
    // Exactly the two asked ones went through.
    assert_eq!(out.matches("=0").count(), 2, "{out}{err}");
    assert_eq!(up.connections(), 2);
}

#[test]
fn the_proxy_asks_too() {
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    // Through HTTP_PROXY (absolute-form request to the gateway's proxy).
    let child = s
        .cli()
        .args(["exec", "-n", "--in", &sbx, "--on-ask", "wait", "--"])
        .args([
            "curl",
            "-sS",
            "-m",
            "100",
            &format!("http://api.test:{}/p", up.port),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let open = wait_open(&s, &sbx, 1);
    assert_eq!(open[0]["protocol"], "http-proxy", "{open:?}");
    let o = s.run(&["sandbox", "approve", &sbx, &id_of(&open[0])]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, out, err) = finish(child);
    assert_eq!((code, out.as_str()), (Some(0), "hello:/p"), "{err}");
    // Through a CONNECT tunnel: the tunnel is asked about, then its content is judged as
    // usual and data flows.
    let child = s
        .cli()
        .args(["exec", "-n", "--in", &sbx, "--on-ask", "wait", "--"])
        .args(["curl", "-sS", "-m", "100", "--proxytunnel"])
        .arg(format!("http://api.test:{}/t", up.port))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let open = wait_open(&s, &sbx, 1);
    assert_eq!(open[0]["protocol"], "connect", "{open:?}");
    let o = s.run(&["sandbox", "approve", &sbx, &id_of(&open[0])]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (code, out, err) = finish(child);
    assert_eq!((code, out.as_str()), (Some(0), "hello:/t"), "{err}");
}

#[test]
fn policies_that_ask_are_checked_strictly() {
    let s = Server::start();
    let d = tempfile::tempdir().unwrap();
    for (yaml, code) in [
        (
            "version: 1\nsandbox:\n  network:\n    unknown: sometimes\n",
            "policy_invalid",
        ),
        (
            "version: 1\nsandbox:\n  network:\n    unknown: ask\n    approval_timeout_seconds: 0\n",
            "policy_invalid",
        ),
        (
            "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n    unknown: ask\n",
            "policy_conflict",
        ),
    ] {
        let p = write(&d, "cleanroom.yaml", yaml);
        let o = s.run(&["sandbox", "create", "--policy", &p]);
        assert_eq!(o.status.code(), Some(125), "{yaml}");
        assert!(
            stderr(&o).contains(&format!("[{code}]")),
            "{yaml}: {}",
            stderr(&o)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_is_answered_only_in_its_own_sandbox_and_with_a_verdict() {
    use cleanroom_client::api::*;
    let up = Upstream::start();
    let s = server(&["api.test"], &[]);
    let sbx = create_with_policy(&s, &ask_policy(120));
    let other = create_with_policy(&s, &ask_policy(120));
    let child = curl_in(&s, &sbx, &format!("http://api.test:{}/", up.port), "wait");
    let id = id_of(&wait_open(&s, &sbx, 1)[0]);
    let c = s.client().await;
    let decide = |sandbox_id: &str, request_id: &str, verdict: EgressVerdict| DecideEgressRequest {
        sandbox_id: sandbox_id.to_string(),
        request_id: request_id.to_string(),
        verdict: verdict.into(),
        ..Default::default()
    };
    fn code<T, E: Into<cleanroom_client::ApiError>>(r: Result<T, E>) -> String {
        match r {
            Ok(_) => "ok".to_string(),
            Err(e) => e.into().code,
        }
    }
    // The same owner, the wrong sandbox: the id means nothing there.
    let r = c
        .approvals
        .decide_egress(decide(&other, &id, EgressVerdict::EGRESS_VERDICT_ALLOW))
        .await;
    assert_eq!(code(r.map(|_| ())), "approval_not_found");
    // Garbage ids, a missing sandbox, no verdict.
    for bad in ["", "apr_", "../x", "apr_00000000000000000000000000000000"] {
        let r = c
            .approvals
            .decide_egress(decide(&sbx, bad, EgressVerdict::EGRESS_VERDICT_ALLOW))
            .await;
        assert_eq!(code(r.map(|_| ())), "approval_not_found", "{bad:?}");
    }
    let r = c
        .approvals
        .decide_egress(decide("sbx_nope", &id, EgressVerdict::EGRESS_VERDICT_ALLOW))
        .await;
    assert_eq!(code(r.map(|_| ())), "sandbox_not_found");
    let r = c
        .approvals
        .decide_egress(decide(&sbx, &id, EgressVerdict::EGRESS_VERDICT_UNSPECIFIED))
        .await;
    assert_eq!(code(r.map(|_| ())), "invalid_argument");
    // None of that answered it.
    assert_eq!(open_requests(&s, &sbx).len(), 1);
    assert_eq!(up.connections(), 0);
    let r = c
        .approvals
        .decide_egress(decide(&sbx, &id, EgressVerdict::EGRESS_VERDICT_DENY))
        .await;
    assert_eq!(code(r.map(|_| ())), "ok");
    assert_ne!(
        tokio::task::spawn_blocking(move || finish(child).0)
            .await
            .unwrap(),
        Some(0)
    );
}
