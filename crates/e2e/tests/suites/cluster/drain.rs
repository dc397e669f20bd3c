//! `cleanroom node drain|undrain` (issue 34, docs/cluster.md), end to end: three real
//! servers on a real 3-member etcd. A drained member takes no new sandboxes (every create,
//! through any front door, lands elsewhere) while the one it holds keeps working; the mark
//! shows in `cluster status` through every member and survives the member's restart;
//! `--wait` gives up at its deadline while the member holds a sandbox and returns once it is
//! gone; undrained, it takes sandboxes again. Only admins may drain (`permission_denied`), and
//! only a live member (`invalid_argument`).

use super::hosts::{host_of_blocking, member, Pki};
use cleanroom_e2e::*;

fn status(s: &Server) -> serde_json::Value {
    let o = s.run(&["cluster", "status", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("json")
}

/// `draining` of member `name` as `s` reports it.
fn draining(s: &Server, name: &str) -> bool {
    listed(s, name)["draining"].as_bool().unwrap_or(false)
}

fn listed(s: &Server, name: &str) -> serde_json::Value {
    let v = status(s);
    v["members"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("{name} not listed: {v}"))
}

/// A count as proto3 JSON gives it: a uint64 is a string, and a zero is left out.
fn count(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn a_drained_member_takes_no_new_sandboxes_until_undrained() {
    let e = etcd::Etcd::start();
    let pki = Pki::new();
    let a = member(&e, &pki, "a");
    let mut b = member(&e, &pki, "b");
    let c = member(&e, &pki, "c");
    // A sandbox on b (placement spreads: a few creates find one); the others go.
    let mut on_b = None;
    for _ in 0..15 {
        let id = a.create();
        if host_of_blocking(&e, &id).as_deref() == Some("b") {
            on_b = Some(id);
            break;
        }
        let o = a.run(&["sandbox", "rm", &id]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let on_b = on_b.expect("no create landed on b in 15");

    // Only admins drain, only live members, only well-formed names.
    open_socket_to_all(&a);
    assert_code(
        &as_uid(&a, 65534, &["node", "drain", "b"]),
        "permission_denied",
    );
    assert_code(
        &as_uid(&a, 65534, &["node", "undrain", "b"]),
        "permission_denied",
    );
    assert_code(&a.run(&["node", "drain", "nosuch"]), "invalid_argument");
    assert_code(&a.run(&["node", "drain", "Not_A_Name"]), "invalid_argument");
    assert!(!draining(&c, "b"), "drained by a refused call");

    let o = a.run(&["node", "drain", "b", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["name"], "b", "{v}");
    assert_eq!(v["draining"], true, "{v}");
    // Every member sees the mark (it is in etcd, not in a's memory).
    assert!(draining(&c, "b") && draining(&b, "b"));
    assert!(stdout(&a.run(&["cluster", "status"])).contains("draining"));

    // Creates through every front door land elsewhere.
    let mut made = Vec::new();
    for front in [&a, &b, &c, &a, &b, &c, &a, &b, &c] {
        let id = front.create();
        let host = host_of_blocking(&e, &id).expect("bound");
        assert_ne!(host, "b", "{id} was placed on the drained member");
        made.push(id);
    }
    // What b holds keeps working, through another member too.
    let o = c.run(&["exec", "-n", "--in", &on_b, "--", "sh", "-c", "echo still"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "still");

    // --wait: bounded while b holds a sandbox (once b reported it); done once it holds none.
    let reported = eventually(std::time::Duration::from_secs(20), || {
        count(&listed(&a, "b")["sandboxes"]) == 1
    });
    assert!(reported, "b never reported its sandbox: {}", status(&a));
    let o = a.run(&["node", "drain", "b", "--wait", "--timeout", "3"]);
    assert_code(&o, "deadline_exceeded");
    assert!(stderr(&o).contains("sandboxes left"), "{}", stderr(&o));
    let o = a.run(&["sandbox", "rm", &on_b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = a.run(&[
        "node",
        "drain",
        "b",
        "--wait",
        "--timeout",
        "60",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["draining"], true, "{v}");
    assert_eq!(count(&v["sandboxes"]), 0, "{v}");
    assert!(stderr(&o).contains("0 sandboxes left"), "{}", stderr(&o));

    // A restart of b does not undo the drain (the mark is the operator's, not b's record).
    b.stop();
    b.spawn();
    let back = eventually(std::time::Duration::from_secs(20), || {
        status(&a)["members"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["name"] == "b"))
    });
    assert!(back, "b did not rejoin: {}", status(&a));
    assert!(draining(&a, "b"), "the restart undrained b: {}", status(&a));

    // Undrained: it takes sandboxes again (it is the emptiest, so soon).
    let o = c.run(&["node", "undrain", "b"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("undrained"), "{}", stdout(&o));
    assert!(!draining(&a, "b"));
    let mut landed = false;
    for _ in 0..15 {
        let id = a.create();
        made.push(id.clone());
        if host_of_blocking(&e, &id).as_deref() == Some("b") {
            landed = true;
            break;
        }
    }
    assert!(landed, "no create landed on the undrained member in 15");
    // Undrain of a member that is not drained: nothing changes, said so.
    let o = a.run(&["node", "undrain", "b"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("was not drained"), "{}", stdout(&o));
    for id in &made {
        a.run(&["sandbox", "rm", id]);
    }
}
