//! `cleanroom serve --cluster`: real servers join a real 3-member etcd, each lists every
//! member (`cluster status`); a SIGKILLed member is gone within its lease's TTL; the
//! status is for admins only; a server without `--cluster` says so; a server whose etcd
//! cannot be reached does not start.

use super::hosts::{member, Pki};
use cleanroom_e2e::*;
use std::time::Duration;

fn names(s: &Server) -> Vec<String> {
    let o = s.run(&["cluster", "status", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v["members"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Both members list both, within a few seconds.
fn assert_both_listed(a: &Server, b: &Server) {
    let both = || names(a) == ["a", "b"] && names(b) == ["a", "b"];
    assert!(
        eventually(Duration::from_secs(10), both),
        "{:?} {:?}",
        names(a),
        names(b)
    );
}

#[test]
fn servers_join_list_each_other_and_a_killed_one_is_gone_within_the_ttl() {
    let e = etcd::Etcd::start();
    let pki = Pki::new();
    let a = member(&e, &pki, "a");
    let mut b = member(&e, &pki, "b");
    // Each member sees the others through its watch of etcd: b is listed by a once a's
    // watch has delivered b's key (under load, after b already answers).
    assert_both_listed(&a, &b);
    let human = stdout(&a.run(&["cluster", "status"]));
    assert!(human.contains("* a") && human.contains("linux"), "{human}");
    // Admins only.
    open_socket_to_all(&a);
    assert_code(
        &as_uid(&a, 65534, &["cluster", "status"]),
        "permission_denied",
    );
    // A crash: no leave, the lease expires.
    b.kill9();
    let gone = eventually(Duration::from_secs(30), || names(&a) == ["a"]);
    assert!(gone, "b is still listed: {:?}", names(&a));
    // It comes back under its name.
    b.spawn();
    assert_both_listed(&a, &b);
}

#[test]
fn without_cluster_or_without_etcd() {
    let s = Server::start();
    assert_code(&s.run(&["cluster", "status"]), "cluster_disabled");
    // etcd unreachable: the server does not start (fail closed), and says why.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    let mut c = std::process::Command::new(BIN);
    c.args(["serve", "--listen"])
        .arg(format!("unix://{}", dir.path().join("s.sock").display()))
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .args(["--cluster", &format!("etcd=http://127.0.0.1:{closed}")])
        .args([
            "--node-name",
            "lonely",
            "--advertise",
            "https://lonely.test:7443",
            "--cluster-listen",
            "127.0.0.1:0",
        ])
        .arg("--cluster-tls")
        .arg(pki.node("lonely"));
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("cluster_unavailable"), "{}", stderr(&o));
    // Bad settings are refused before anything starts.
    let mut c = std::process::Command::new(BIN);
    c.args(["serve", "--listen"])
        .arg(format!("unix://{}", dir.path().join("t.sock").display()))
        .args(["--cluster", "http://127.0.0.1:1"])
        .args(["--node-name", "x", "--advertise", "https://x.test:1"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert!(stderr(&o).contains("invalid_argument"), "{}", stderr(&o));
}
