//! Many hosts, one API, end to end: three real hosts, each in its own network namespace
//! with its own address, state directory and cgroup subtree (`cluster_hosts::Lab`), on a
//! real 3-member etcd; clients reach each host at its address with a token. Creates spread
//! over the hosts; a sandbox is reached through a member that does not hold it (inspect,
//! exec, list, rm) as its owner and refused to anyone else; a retried create with one
//! idempotency key makes one sandbox; a SIGKILLed host's sandboxes show LOST within the
//! lease TTL and new creates go elsewhere; one etcd member killed changes nothing; without
//! etcd's quorum creates fail closed while a reachable host's sandboxes keep working, and
//! creates work again once the quorum is back.

use super::hosts::host_of_blocking;
use cleanroom_e2e::cluster_hosts::{Host, Lab, ALICE, MALLORY};
use cleanroom_e2e::*;
use std::time::Duration;

fn inspect_json(s: &Host, id: &str) -> serde_json::Value {
    let o = s.run(ALICE, &["inspect", id, "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("json")
}

fn listed(s: &Host) -> Vec<(String, String)> {
    let o = s.run(ALICE, &["sandbox", "ls", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let items = v
        .get("sandboxes")
        .and_then(|s| s.as_array())
        .or_else(|| v.as_array())
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .map(|s| {
            let id = s["sandboxId"]
                .as_str()
                .or_else(|| s["sandbox_id"].as_str())
                .unwrap_or_default();
            (id.to_string(), s["status"].to_string())
        })
        .collect()
}

#[test]
fn creates_spread_and_any_member_reaches_any_sandbox_as_its_owner_only() {
    let lab = Lab::start(&["a", "b", "c"]);
    let (e, servers) = (&lab.etcd, &lab.hosts);
    let a = &servers["a"];
    // Six creates through one front door land on more than one host.
    let ids: Vec<String> = (0..6).map(|_| a.create()).collect();
    let hosts: Vec<String> = ids
        .iter()
        .map(|id| host_of_blocking(e, id).expect("every sandbox is bound"))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = hosts.iter().collect();
    assert!(distinct.len() >= 2, "all on one host: {hosts:?}");
    // One held by b or c, driven through a member that does not hold it.
    let (i, owner) = hosts
        .iter()
        .enumerate()
        .find(|(_, h)| h.as_str() != "a")
        .expect("one off a");
    let id = &ids[i];
    let other = ["a", "b", "c"]
        .into_iter()
        .find(|n| n != owner)
        .expect("a non-owner");
    let front = &servers[other];
    let v = inspect_json(front, id);
    assert!(v.to_string().contains("READY"), "{v}");
    let o = front.run(
        ALICE,
        &[
            "exec",
            "-n",
            "--in",
            id,
            "--",
            "sh",
            "-c",
            "echo routed; exit 3",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "routed");
    // The list through any member has every sandbox.
    let all: Vec<String> = listed(&servers["c"]).into_iter().map(|(i, _)| i).collect();
    for id in &ids {
        assert!(all.contains(id), "{id} missing from {all:?}");
    }
    // Another principal, through the same non-owner: refused like a missing sandbox.
    assert_code(&front.run(MALLORY, &["inspect", id]), "sandbox_not_found");
    assert_code(
        &front.run(MALLORY, &["exec", "-n", "--in", id, "--", "true"]),
        "sandbox_not_found",
    );
    // rm through the non-owner: gone everywhere.
    let o = front.run(ALICE, &["sandbox", "rm", id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(host_of_blocking(e, id).is_none(), "still bound");
    let all: Vec<String> = listed(a).into_iter().map(|(i, _)| i).collect();
    assert!(!all.contains(id), "{id} still listed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_create_with_one_key_makes_one_sandbox() {
    let lab = tokio::task::block_in_place(|| Lab::start(&["a", "b"]));
    let (a, b) = (lab.host("a"), lab.host("b"));
    let req = || cleanroom_client::api::CreateSandboxRequest {
        idempotency_key: "retry-7".into(),
        ..Default::default()
    };
    let first = a
        .client(ALICE)
        .await
        .sandboxes
        .create_sandbox(req())
        .await
        .expect("create")
        .into_owned();
    // The retry goes to another front door, as after a timeout.
    let again = b
        .client(ALICE)
        .await
        .sandboxes
        .create_sandbox(req())
        .await
        .expect("retry")
        .into_owned();
    let id = |r: &cleanroom_client::api::CreateSandboxResponse| {
        r.sandbox
            .as_option()
            .map(|s| s.sandbox_id.clone())
            .unwrap_or_default()
    };
    assert!(!id(&first).is_empty());
    assert_eq!(id(&first), id(&again));
    let o = tokio::task::block_in_place(|| a.run(ALICE, &["sandbox", "ls", "-o", "json"]));
    let n = stdout(&o).matches("sbx_").count();
    assert_eq!(n, 1, "{}", stdout(&o));
    // Another key: another sandbox.
    let other = a
        .client(ALICE)
        .await
        .sandboxes
        .create_sandbox(cleanroom_client::api::CreateSandboxRequest {
            idempotency_key: "retry-8".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_owned();
    assert_ne!(id(&other), id(&first));
}

#[test]
fn a_killed_host_s_sandboxes_are_lost_creates_go_elsewhere_and_quorum_loss_fails_closed() {
    let mut lab = Lab::start(&["a", "b", "c"]);
    // A sandbox on c and one on a (placement spreads: a few tries find them).
    let (mut on_c, mut on_a) = (None, None);
    for _ in 0..12 {
        let id = lab.host("a").create();
        match host_of_blocking(&lab.etcd, &id).as_deref() {
            Some("c") if on_c.is_none() => on_c = Some(id),
            Some("a") if on_a.is_none() => on_a = Some(id),
            _ => {}
        }
        if on_c.is_some() && on_a.is_some() {
            break;
        }
    }
    let (Some(on_c), Some(on_a)) = (on_c, on_a) else {
        panic!("no sandbox landed on c or on a in 12 creates");
    };
    lab.host_mut("c").kill9();
    let killed = std::time::Instant::now();
    let a = lab.host("a");
    // Until its lease expires calls for it fail `unavailable` (the member link is
    // refused); within the lease TTL (5 s, plus the time one inspect takes): LOST.
    let lost = eventually(Duration::from_secs(20), || {
        stdout(&a.run(ALICE, &["inspect", &on_c, "-o", "json"])).contains("LOST")
    });
    let after = killed.elapsed();
    assert!(lost, "{}", inspect_json(a, &on_c));
    eprintln!("c's sandbox LOST {after:?} after the SIGKILL");
    assert!(after < Duration::from_secs(7), "LOST only after {after:?}");
    assert!(inspect_json(a, &on_c).to_string().contains("host_lost"));
    assert!(
        listed(a)
            .iter()
            .any(|(i, s)| i == &on_c && s.contains("LOST")),
        "{:?}",
        listed(a)
    );
    assert_code(
        &a.run(ALICE, &["exec", "-n", "--in", &on_c, "--", "true"]),
        "host_lost",
    );
    // New creates go to the live members.
    for _ in 0..4 {
        let id = a.create();
        let h = host_of_blocking(&lab.etcd, &id);
        assert!(matches!(h.as_deref(), Some("a" | "b")), "{id} on {h:?}");
    }
    // One etcd member killed — its leader, the hard case (an election follows): nothing
    // visible (creates, routing, lists).
    let leader = lab.etcd.leader().expect("etcd has a leader");
    lab.etcd.kill(leader);
    let a = lab.host("a");
    for _ in 0..3 {
        let id = a.create();
        let o = lab
            .host("b")
            .run(ALICE, &["exec", "-n", "--in", &id, "--", "echo", "ok"]);
        assert_eq!(stdout(&o).trim(), "ok", "{}", stderr(&o));
    }
    assert!(listed(a).iter().any(|(i, _)| i == &on_a));
    // Quorum lost: creates fail closed; the sandbox on the front door's own host still
    // answers.
    let second = (leader + 1) % 3;
    lab.etcd.kill(second);
    let a = lab.host("a");
    assert_code(&a.run(ALICE, &["sandbox", "create"]), "cluster_unavailable");
    let o = a.run(ALICE, &["exec", "-n", "--in", &on_a, "--", "echo", "still"]);
    assert_eq!(stdout(&o).trim(), "still", "{}", stderr(&o));
    // The quorum back: creates work again, through any member, and are placed.
    lab.etcd.restart(leader);
    lab.etcd.restart(second);
    lab.etcd.wait_all_healthy();
    let a = lab.host("a");
    let made = eventually(Duration::from_secs(20), || {
        stdout(&a.run(ALICE, &["sandbox", "create"])).starts_with("sbx_")
    });
    assert!(made, "no create after the quorum came back: {}", a.log());
    let id = lab.host("b").create();
    assert!(matches!(
        host_of_blocking(&lab.etcd, &id).as_deref(),
        Some("a" | "b")
    ));
}
