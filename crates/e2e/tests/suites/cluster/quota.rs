//! A principal's sandbox limit across the cluster (issue 34, docs/cluster.md "Quota"), and
//! a restarted host taking its `LOST` sandboxes back — on three hosts, each in a network
//! namespace of its own (`cluster_hosts::Lab`), every one with
//! `--max-sandboxes-per-principal`. The count lives in etcd, in the transactions that
//! write and delete bindings: a principal at its limit on some hosts cannot create on
//! another through any front door (the same `resource_exhausted` as one host), another
//! principal can; an `rm` frees a slot, once (the host's own reconciliation neither counts
//! a placed sandbox twice nor counts an ended one down twice). A host SIGKILLed and
//! restarted on the same state dir: its sandboxes stop being `LOST`, show their real status
//! with a `host_returned` event through another member, and those gone free their slots.

use super::hosts::host_of_blocking;
use cleanroom_e2e::cluster_hosts::{Host, Lab, ALICE, MALLORY, OPS};
use cleanroom_e2e::*;
use std::time::Duration;

/// Longer than the host's reconciliation needs to look at a sandbox twice (a tick every
/// 2 s, a grace of 4 s): whatever it would count (or count down) again, it has.
const RECONCILED: Duration = Duration::from_secs(9);

fn ok(o: &std::process::Output) {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
}

fn status_of(h: &Host, id: &str) -> String {
    let o = h.run(ALICE, &["inspect", id, "-o", "json"]);
    stdout(&o)
}

#[test]
fn a_principal_at_its_limit_creates_nowhere_until_an_rm_frees_a_slot() {
    let lab = Lab::start_with(&["a", "b", "c"], &["--max-sandboxes-per-principal", "2"]);
    let e = &lab.etcd;
    let (a, b, c) = (lab.host("a"), lab.host("b"), lab.host("c"));
    let first = a.create();
    let second = b.create();
    let held: Vec<String> = [&first, &second]
        .iter()
        .map(|id| host_of_blocking(e, id).expect("bound"))
        .collect();
    // Whatever holds alice's sandboxes takes nothing new: every create is placed on a host
    // where alice has none (its own count would let it through).
    for h in &held {
        ok(&a.run(OPS, &["node", "drain", h]));
    }
    for front in [a, b, c] {
        let o = front.run(ALICE, &["sandbox", "create"]);
        assert_code(&o, "resource_exhausted");
        assert!(stderr(&o).contains("across the cluster"), "{}", stderr(&o));
        // `exec` without `--in` (RunExecution's create) is placed and counted the same.
        assert_code(
            &front.run(ALICE, &["exec", "-n", "--", "true"]),
            "resource_exhausted",
        );
    }
    // Another principal has room.
    let o = c.run(MALLORY, &["sandbox", "create"]);
    let theirs = stdout(&o).trim().to_string();
    assert!(theirs.starts_with("sbx_"), "{}", stderr(&o));
    ok(&a.run(MALLORY, &["sandbox", "rm", &theirs]));

    // The hosts' reconciliation has looked at both sandboxes: still two, not four.
    std::thread::sleep(RECONCILED);
    assert_code(&c.run(ALICE, &["sandbox", "create"]), "resource_exhausted");
    // An rm through a member that may not hold it frees exactly one slot.
    ok(&c.run(ALICE, &["sandbox", "rm", &first]));
    let third = a.create();
    for front in [a, b, c] {
        assert_code(
            &front.run(ALICE, &["sandbox", "create"]),
            "resource_exhausted",
        );
    }
    // Ended and looked at again by its host: counted down once, not twice.
    ok(&b.run(ALICE, &["sandbox", "rm", &third]));
    std::thread::sleep(RECONCILED);
    let fourth = c.create();
    assert_code(&a.run(ALICE, &["sandbox", "create"]), "resource_exhausted");
    assert!(host_of_blocking(e, &fourth).is_some_and(|h| !held.contains(&h)));
    for h in &held {
        ok(&a.run(OPS, &["node", "undrain", h]));
    }
}

#[test]
fn a_restarted_host_takes_its_lost_sandboxes_back_and_frees_their_slots() {
    let mut lab = Lab::start_with(&["a", "b", "c"], &["--max-sandboxes-per-principal", "1"]);
    let id = lab.host("a").create();
    let owner = host_of_blocking(&lab.etcd, &id).expect("bound");
    let front = ["a", "b", "c"]
        .into_iter()
        .find(|n| *n != owner)
        .expect("a non-owner")
        .to_string();
    lab.host_mut(&owner).kill9();
    let f = lab.host(&front);
    let lost = eventually(Duration::from_secs(20), || {
        status_of(f, &id).contains("LOST")
    });
    assert!(lost, "{}", status_of(f, &id));
    // A LOST sandbox still counts: its host may come back with it.
    assert_code(&f.run(ALICE, &["sandbox", "create"]), "resource_exhausted");

    lab.host_mut(&owner).spawn();
    lab.wait_members(&["a", "b", "c"]);
    let f = lab.host(&front);
    // Through another member: its real status (this server's recovery ended it), not LOST.
    let back = eventually(Duration::from_secs(20), || {
        let s = status_of(f, &id);
        s.contains("FAILED") && s.contains("server restarted")
    });
    assert!(back, "{}", status_of(f, &id));
    let events = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            use cleanroom_client::api::*;
            let c = f.client(ALICE).await;
            let mut s = c
                .sandboxes
                .stream_sandbox_events(StreamSandboxEventsRequest {
                    sandbox_id: id.clone(),
                    ..Default::default()
                })
                .await
                .expect("events through a non-owner");
            let mut seen = Vec::new();
            while let Some(m) = tokio::time::timeout(Duration::from_secs(20), s.message())
                .await
                .expect("bounded")
                .expect("a message")
            {
                let ev: SandboxEvent = m.to_owned_message();
                seen.push((ev.r#type.clone(), ev.message.clone()));
            }
            seen
        });
    assert!(
        events
            .iter()
            .any(|(t, m)| t == "host_returned" && m.contains("FAILED")),
        "{events:?}"
    );
    // Gone: unbound, and its slot is free again (through any front door).
    let freed = eventually(Duration::from_secs(20), || {
        host_of_blocking(&lab.etcd, &id).is_none()
    });
    assert!(freed, "{id} still bound after its host came back");
    let made = lab.host(&front).create();
    assert!(host_of_blocking(&lab.etcd, &made).is_some());
    assert_code(
        &lab.host(&owner).run(ALICE, &["sandbox", "create"]),
        "resource_exhausted",
    );
}
