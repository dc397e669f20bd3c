//! Live egress rules end to end (`cleanroom sandbox network`, docs/network.md): a real
//! server, real sandboxes behind the real gateway, loopback upstreams reached only through
//! `serve --egress-resolve` overrides. A live allow lets the very next connection through;
//! a live deny with `--cut` ends running downloads (transparent and through the proxy);
//! `--reset` goes back to the policy; another principal is refused like a missing sandbox;
//! inspect, the `network.rules` event and a freshly signed attestation name the effective
//! rules' hash while the policy hash stays the policy's.

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A server whose gateway resolves each of `names` to loopback.
fn server(names: &[&str]) -> Server {
    let mut args: Vec<String> = Vec::new();
    for n in names {
        args.push("--egress-resolve".into());
        args.push(format!("{n}=127.0.0.1"));
    }
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

/// `curl URL` in the sandbox, transparent (`--noproxy '*'`) or through the gateway's proxy.
fn curl(s: &Server, sbx: &str, url: &str, proxy: bool) -> std::process::Output {
    let mut c = s.cli();
    c.args(["exec", "-n", "--in", sbx, "--", "curl", "-fsS", "-m", "20"]);
    if !proxy {
        c.args(["--noproxy", "*"]);
    }
    c.arg(url);
    output_with_timeout(c, Duration::from_secs(60))
}

fn network(s: &Server, sbx: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["sandbox", "network", sbx];
    all.extend_from_slice(args);
    s.run(&all)
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}{}", stdout(o), stderr(o));
    stdout(o)
}

fn events_of(s: &Server, sbx: &str, kind: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", sbx]);
    ok(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// The sandbox's attestation statement as verified offline with the server's key.
fn statement(s: &Server, sbx: &str) -> serde_json::Value {
    let d = tempfile::tempdir().unwrap();
    let (att, key) = (d.path().join("att.json"), d.path().join("key.pem"));
    ok(&s.run(&["sandbox", "attest", sbx, "--out", att.to_str().unwrap()]));
    ok(&s.run(&["attestation", "pubkey", "--out", key.to_str().unwrap()]));
    let mut c = s.cli();
    c.args(["attestation", "verify", "--json"])
        .arg(&att)
        .arg("--key")
        .arg(&key);
    let o = output_with_timeout(c, Duration::from_secs(30));
    serde_json::from_slice(&ok(&o).into_bytes()).expect("statement json")
}

#[test]
fn a_live_allow_lets_a_denied_host_through_and_is_recorded() {
    let port = upstream::hello_upstream();
    let s = server(&["live.test"]);
    let sbx = create_with_policy(&s, "version: 1\n");
    let url = format!("http://live.test:{port}/x");
    let before = inspect(&s, &sbx);
    let policy_hash = before["policyHash"].as_str().unwrap().to_string();
    let hash0 = before["effectiveRulesHash"].as_str().unwrap().to_string();
    assert!(hash0.starts_with("sha256:"), "{before}");
    assert!(
        statement(&s, &sbx).get("effective_rules_hash").is_none(),
        "no live change yet"
    );

    // Denied by the policy, both ways out.
    for proxy in [false, true] {
        let o = curl(&s, &sbx, &url, proxy);
        assert!(!o.status.success(), "proxy={proxy}: {}", stdout(&o));
    }

    let started = Instant::now();
    let out = ok(&network(
        &s,
        &sbx,
        &["--allow", &format!("LIVE.test.:{port}")],
    ));
    let rpc_returned = Instant::now();
    // The very next connection passes (no retry, no wait).
    let o = curl(&s, &sbx, &url, false);
    let first_pass = rpc_returned.elapsed();
    assert_eq!(ok(&o), "hello:/x");
    eprintln!(
        "live allow: RPC {:?}, first connection after it done in {first_pass:?}",
        rpc_returned - started
    );
    assert_eq!(ok(&curl(&s, &sbx, &url, true)), "hello:/x");
    // Another port of the host stays denied.
    assert!(
        !curl(&s, &sbx, &format!("http://live.test:{}/", port ^ 1), false)
            .status
            .success()
    );

    // Inspect: the policy hash is the policy's; the effective rules have their own.
    let after = inspect(&s, &sbx);
    let hash1 = after["effectiveRulesHash"].as_str().unwrap().to_string();
    assert_eq!(after["policyHash"], policy_hash.as_str());
    assert_ne!(hash1, hash0);
    assert!(out.contains(&hash1), "{out}");
    assert_eq!(after["liveAllow"][0], format!("live.test:{port}").as_str());
    let text = ok(&s.run(&["sandbox", "inspect", &sbx]));
    assert!(
        text.contains(&format!("effective_rules_hash: {hash1}")),
        "{text}"
    );

    // The event and a fresh attestation name it.
    let ev = events_of(&s, &sbx, "network.rules");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["attributes"]["effective_rules_hash"], hash1.as_str());
    assert_eq!(ev[0]["attributes"]["policy_hash"], policy_hash.as_str());
    let st = statement(&s, &sbx);
    assert_eq!(st["effective_rules_hash"], hash1.as_str());
    assert_eq!(st["policy_hash"], policy_hash.as_str());
    ok(&s.run(&["sandbox", "rm", &sbx]));
}

/// An upstream that answers with a huge body, slowly, until the connection breaks; counts
/// bytes sent and notes when a write failed (the gateway closed its side).
struct Slow {
    port: u16,
    sent: Arc<AtomicU64>,
    broken: Arc<AtomicBool>,
}

fn slow_upstream() -> Slow {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    let sent = Arc::new(AtomicU64::new(0));
    let broken = Arc::new(AtomicBool::new(false));
    let (s2, b2) = (sent.clone(), broken.clone());
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let (sent, broken) = (s2.clone(), b2.clone());
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let mut w = conn;
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n";
                if w.write_all(head.as_bytes()).is_err() {
                    return;
                }
                // ~20 KiB/s for at most 10 minutes: no download ends by itself in a test.
                let chunk = [b'x'; 1024];
                for _ in 0..12_000 {
                    if w.write_all(&chunk).is_err() {
                        broken.store(true, Ordering::SeqCst);
                        return;
                    }
                    sent.fetch_add(1024, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
    });
    Slow { port, sent, broken }
}

fn download(s: &Server, sbx: &str, url: &str, proxy: bool) -> Child {
    let mut c = s.cli();
    c.args([
        "exec",
        "-n",
        "--in",
        sbx,
        "--",
        "curl",
        "-sS",
        "-o",
        "/dev/null",
    ]);
    if !proxy {
        c.args(["--noproxy", "*"]);
    }
    c.arg(url)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (bounded) for a child to exit.
fn exit_within(c: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(st) = c.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop_child(c);
    None
}

#[test]
fn deny_with_cut_ends_running_downloads_and_reset_restores_the_policy() {
    let direct = slow_upstream();
    let proxied = slow_upstream();
    let hello = upstream::hello_upstream();
    let s = server(&["dl.test"]);
    let sbx = create_with_policy(
        &s,
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: dl.test\n        ports: [{}, {}, {}]\n",
            direct.port, proxied.port, hello
        ),
    );
    let policy_hash0 = inspect(&s, &sbx)["effectiveRulesHash"]
        .as_str()
        .unwrap()
        .to_string();
    let hello_url = format!("http://dl.test:{hello}/");
    assert_eq!(ok(&curl(&s, &sbx, &hello_url, false)), "hello:/");
    let mut a = download(&s, &sbx, &format!("http://dl.test:{}/", direct.port), false);
    let mut b = download(&s, &sbx, &format!("http://dl.test:{}/", proxied.port), true);
    assert!(
        eventually(Duration::from_secs(30), || {
            direct.sent.load(Ordering::SeqCst) > 0 && proxied.sent.load(Ordering::SeqCst) > 0
        }),
        "both downloads run"
    );
    // A deny without --cut leaves them running.
    ok(&network(&s, &sbx, &["--deny", "dl.test"]));
    std::thread::sleep(Duration::from_millis(500));
    assert!(a.try_wait().unwrap().is_none() && b.try_wait().unwrap().is_none());
    // ... but no new connection gets through.
    let o = curl(&s, &sbx, &hello_url, false);
    assert!(!o.status.success(), "{}", stdout(&o));
    // With --cut they end, and the upstreams see their connections close.
    ok(&network(&s, &sbx, &["--deny", "dl.test", "--cut"]));
    for (name, c) in [("direct", &mut a), ("proxied", &mut b)] {
        let st = exit_within(c, Duration::from_secs(30));
        assert!(st.is_some_and(|st| !st.success()), "{name}: {st:?}");
    }
    assert!(eventually(Duration::from_secs(30), || {
        direct.broken.load(Ordering::SeqCst) && proxied.broken.load(Ordering::SeqCst)
    }));
    let cut: Vec<_> = events_of(&s, &sbx, "egress.deny")
        .into_iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .unwrap_or("")
                .contains("connection cut")
        })
        .collect();
    assert!(cut.len() >= 2, "{cut:?}");
    assert!(cut
        .iter()
        .all(|e| e["attributes"]["reason"] == "host_denied"));

    // --reset: back to the policy (and its effective hash).
    let out = ok(&network(&s, &sbx, &["--reset"]));
    assert!(out.contains(&policy_hash0), "{out}");
    let mut c = download(&s, &sbx, &format!("http://dl.test:{}/", direct.port), false);
    let before = direct.sent.load(Ordering::SeqCst);
    assert!(eventually(Duration::from_secs(30), || direct
        .sent
        .load(Ordering::SeqCst)
        > before + 2048));
    stop_child(&mut c);
    let v = inspect(&s, &sbx);
    assert_eq!(v["effectiveRulesHash"], policy_hash0.as_str());
    assert!(v.get("liveDeny").is_none(), "{v}");
    assert_eq!(events_of(&s, &sbx, "network.rules").len(), 3);
    ok(&s.run(&["sandbox", "rm", &sbx]));
}

#[test]
fn refused_changes_have_stable_codes_and_change_nothing() {
    let s = server(&[]);
    open_socket_to_all(&s);
    let sbx = create_with_policy(
        &s,
        "version: 1\nsandbox:\n  network:\n    allow:\n      - host: \"*.ok.test\"\n    deny:\n      - host: bad.ok.test\n",
    );
    let hash = inspect(&s, &sbx)["effectiveRulesHash"].clone();
    // Another principal: exactly like a sandbox that does not exist.
    let o = as_uid(
        &s,
        65534,
        &["sandbox", "network", &sbx, "--allow", "x.test"],
    );
    assert_code(&o, "sandbox_not_found");
    let o = as_uid(
        &s,
        65534,
        &["sandbox", "network", "sbx_nope", "--allow", "x.test"],
    );
    assert_code(&o, "sandbox_not_found");
    for bad in [
        "10.0.0.1",
        "a.test:0",
        "a.test:99999",
        "https://a.test/",
        "a.*.test",
        "[::1]:80",
    ] {
        assert_code(&network(&s, &sbx, &["--allow", bad]), "policy_invalid");
    }
    assert_code(
        &network(&s, &sbx, &["--deny", "a.test:443"]),
        "policy_invalid",
    );
    // Deny wins: a live allow cannot override the policy's deny.
    assert_code(
        &network(&s, &sbx, &["--allow", "bad.ok.test"]),
        "policy_conflict",
    );
    // One bad entry refuses the whole request.
    assert_code(
        &network(&s, &sbx, &["--allow", "fine.test", "--allow", "1.2.3.4"]),
        "policy_invalid",
    );
    assert_code(&network(&s, &sbx, &[]), "invalid_argument");
    let v = inspect(&s, &sbx);
    assert_eq!(v["effectiveRulesHash"], hash);
    assert!(v.get("liveAllow").is_none(), "{v}");
    assert!(events_of(&s, &sbx, "network.rules").is_empty());
    // A stopped sandbox has no network to change.
    ok(&s.run(&["sandbox", "rm", &sbx]));
    assert_code(
        &network(&s, &sbx, &["--allow", "x.test"]),
        "sandbox_not_ready",
    );
}
