use super::*;

pub(super) fn row(id: &str, owner: &str, status: SandboxStatus) -> SandboxRow {
    SandboxRow {
        id: id.into(),
        status,
        backend: "linux".into(),
        policy_hash: String::new(),
        policy: StoredPolicy::decode(""),
        created_at: 1,
        updated_at: 1,
        last_execution_id: String::new(),
        active_execution_id: String::new(),
        message: String::new(),
        provisioned: Default::default(),
        image_ref: String::new(),
        image_digest: String::new(),
        owner: owner.into(),
        labels: Default::default(),
    }
}

#[test]
fn rows_from_before_ownership_belong_to_legacy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        // The schema as it was before the owner columns.
        let c = Connection::open(&path).unwrap();
        c.execute_batch(SCHEMA).unwrap();
        c.execute(
            "INSERT INTO sandboxes (id, status, backend, policy_hash, compiled_policy, created_at, updated_at) VALUES ('sbx_old', 2, 'linux', '', '', 1, 1)",
            [],
        )
        .unwrap();
        c.execute(
            "INSERT INTO executions (id, sandbox_id, status, command, created_at) VALUES ('exe_old', 'sbx_old', 3, '[]', 1)",
            [],
        )
        .unwrap();
    }
    let s = Store::open(&path).unwrap();
    assert_eq!(
        s.get_sandbox("sbx_old").unwrap().unwrap().owner,
        LEGACY_OWNER
    );
    assert_eq!(
        s.get_execution("exe_old").unwrap().unwrap().owner,
        LEGACY_OWNER
    );
    // Rows from before labels have none; labels survive a reopen.
    assert!(s.get_sandbox("sbx_old").unwrap().unwrap().labels.is_empty());
    let labels: labels::Labels = [("team".to_string(), "search".to_string())].into();
    s.set_sandbox_labels("sbx_old", &labels).unwrap();
    drop(s);
    let s = Store::open(&path).unwrap();
    assert_eq!(s.get_sandbox("sbx_old").unwrap().unwrap().labels, labels);
    assert_eq!(s.list_sandboxes().unwrap()[0].labels, labels);
}

#[test]
fn labels_are_bounded() {
    let ok: labels::Labels = [("app.kubernetes.io/name".to_string(), "x".to_string())].into();
    assert!(labels::check(ok.iter()).is_ok());
    for (k, v, field) in [
        ("", "x", "labels: key"),
        ("a b", "x", "labels: key"),
        (&"k".repeat(64) as &str, "x", "labels: key"),
        ("k", &"v".repeat(257) as &str, "labels.k"),
        ("k", "a\nb", "labels.k"),
    ] {
        let one: labels::Labels = [(k.to_string(), v.to_string())].into();
        let e = labels::check(one.iter()).unwrap_err();
        assert!(e.starts_with(field), "{k:?}={v:?}: {e}");
    }
    let many: labels::Labels = (0..65).map(|i| (format!("k{i}"), String::new())).collect();
    assert!(labels::check(many.iter())
        .unwrap_err()
        .contains("at most 64"));
}

#[test]
fn caps_count_live_sandboxes_only() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let caps = SandboxCaps {
        per_owner: 2,
        total: 3,
    };
    assert_eq!(
        s.insert_sandbox(&row("a1", "a", ss::READY), caps).unwrap(),
        None
    );
    assert_eq!(
        s.insert_sandbox(&row("a2", "a", ss::PROVISIONING), caps)
            .unwrap(),
        None
    );
    assert_eq!(
        s.insert_sandbox(&row("a3", "a", ss::READY), caps).unwrap(),
        Some(CapHit::PerOwner(2))
    );
    assert_eq!(
        s.insert_sandbox(&row("b1", "b", ss::READY), caps).unwrap(),
        None
    );
    assert_eq!(
        s.insert_sandbox(&row("b2", "b", ss::READY), caps).unwrap(),
        Some(CapHit::Total(3))
    );
    s.set_sandbox_status("a1", ss::STOPPED, "").unwrap();
    assert_eq!(
        s.insert_sandbox(&row("b2", "b", ss::READY), caps).unwrap(),
        None
    );
    assert!(s.get_sandbox("a3").unwrap().is_none());
}

#[test]
fn caps_count_paused_and_checkpointed_as_live_and_failed_as_not() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let caps = SandboxCaps {
        per_owner: 0,
        total: 3,
    };
    for (id, st) in [
        ("p", ss::PAUSED),
        ("c", ss::CHECKPOINTED),
        ("f", ss::FAILED),
        ("x", ss::STOPPED),
        ("s", ss::STOPPING),
    ] {
        assert_eq!(s.insert_sandbox(&row(id, "a", st), caps).unwrap(), None);
    }
    // paused, checkpointed and stopping count; failed and stopped do not.
    assert_eq!(
        s.insert_sandbox(&row("n", "a", ss::READY), caps).unwrap(),
        Some(CapHit::Total(3))
    );
}

#[test]
fn the_reaper_reads_only_live_sandboxes_that_can_expire() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let none = SandboxCaps {
        per_owner: 0,
        total: 0,
    };
    let ttl = LifetimeRow {
        ttl_seconds: 60,
        expires_at: 99,
        ..Default::default()
    };
    let idle = LifetimeRow {
        idle_timeout_seconds: 30,
        ..Default::default()
    };
    for (id, st) in [
        ("ttl", ss::READY),
        ("idle", ss::READY),
        ("plain", ss::READY),
        ("reason_only", ss::READY),
        ("stopped", ss::STOPPED),
        ("paused", ss::PAUSED),
    ] {
        s.insert_sandbox(&row(id, "a", st), none).unwrap();
    }
    s.set_lifetime("ttl", &ttl).unwrap();
    s.set_lifetime("idle", &idle).unwrap();
    s.set_lifetime("stopped", &ttl).unwrap();
    s.set_lifetime("paused", &idle).unwrap();
    s.set_stop_reason("reason_only", "ttl_expired").unwrap();
    let mut got = s.lifetimes_to_check(&[ss::READY, ss::PAUSED]).unwrap();
    got.sort_by(|a, b| a.sandbox_id.cmp(&b.sandbox_id));
    assert_eq!(
        got,
        vec![
            LifetimeCheck {
                sandbox_id: "idle".into(),
                status: ss::READY,
                created_at: 1,
                lifetime: idle.clone(),
            },
            LifetimeCheck {
                sandbox_id: "paused".into(),
                status: ss::PAUSED,
                created_at: 1,
                lifetime: idle,
            },
            LifetimeCheck {
                sandbox_id: "ttl".into(),
                status: ss::READY,
                created_at: 1,
                lifetime: ttl,
            },
        ]
    );
}

/// A principal's cap counts their own sandboxes and every pool of theirs, whoever inserts
/// (the owner's create or a pool's warm create); a claim by the pool's owner moves a
/// sandbox within the account, a claim by someone else is checked against theirs, and a
/// refused or lost claim writes nothing.
#[test]
fn pool_sandboxes_are_charged_to_the_pool_owner_and_claims_commit_once() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    for (id, owner) in [("p1", "a"), ("p2", "a"), ("q1", "b")] {
        s.insert_pool(
            &PoolRow {
                id: id.into(),
                owner: owner.into(),
                created_at: 1,
                spec: "{}".into(),
            },
            64,
        )
        .unwrap();
    }
    let caps = SandboxCaps {
        per_owner: 3,
        total: 0,
    };
    let ins = |id: &str, owner: &str| s.insert_sandbox(&row(id, owner, ss::READY), caps).unwrap();
    assert_eq!(ins("w1", "pool:p1"), None);
    assert_eq!(ins("w2", "pool:p2"), None);
    assert_eq!(ins("a1", "a"), None);
    // a holds 3 across two pools and their own: neither a nor a's pools get more.
    assert_eq!(ins("a2", "a"), Some(CapHit::PerOwner(3)));
    assert_eq!(ins("w3", "pool:p1"), Some(CapHit::PerOwner(3)));
    // b's pool is b's account.
    assert_eq!(ins("v1", "pool:q1"), None);
    assert_eq!(s.account_live(&"a".into()).unwrap(), 3);
    assert_eq!(s.account_live(&"pool:p2".into()).unwrap(), 3);
    assert_eq!(s.account_live(&"b".into()).unwrap(), 1);

    let claim = |sid: &str, from: &str, to: &str, per_owner: u32| {
        let k = ClaimRow {
            sandbox_id: sid.into(),
            pool_id: from.trim_start_matches("pool:").into(),
            ..Default::default()
        };
        let e = EventRow {
            sandbox_id: sid.into(),
            kind: "pool.claim".into(),
            ..Default::default()
        };
        s.commit_claim(&ClaimCommit {
            sandbox_id: sid,
            from: &from.into(),
            to: &to.into(),
            per_owner,
            at: 2,
            claim: &k,
            event: &e,
            image_digest: "sha256:00",
        })
        .unwrap()
    };
    // The owner at their cap may still claim from their own pool (nothing is added).
    assert!(matches!(
        claim("w1", "pool:p1", "a", 3),
        ClaimOutcome::Committed { .. }
    ));
    assert_eq!(s.get_sandbox("w1").unwrap().unwrap().owner, "a");
    assert_eq!(s.get_claim("w1").unwrap().unwrap().pool_id, "p1");
    assert_eq!(s.account_live(&"a".into()).unwrap(), 3);
    // Taken already: a second claim of the same sandbox loses and writes nothing.
    let events = |sid: &str| s.events_after(sid, 0, 100).unwrap().len();
    assert_eq!(events("w1"), 1);
    assert_eq!(claim("w1", "pool:p1", "c", 0), ClaimOutcome::Gone);
    assert_eq!(events("w1"), 1);
    // Someone else (an admin) at cap 1 with one sandbox already: refused, unchanged.
    assert_eq!(ins("c1", "c"), None);
    assert_eq!(claim("w2", "pool:p2", "c", 1), ClaimOutcome::CapReached);
    assert_eq!(s.get_sandbox("w2").unwrap().unwrap().owner, "pool:p2");
    assert!(s.get_claim("w2").unwrap().is_none());
    assert_eq!(events("w2"), 0);
    // Not READY: gone.
    s.set_sandbox_status("w2", ss::FAILED, "").unwrap();
    assert_eq!(claim("w2", "pool:p2", "a", 0), ClaimOutcome::Gone);
    assert_eq!(s.image_owners("sha256:00").unwrap(), vec!["a".to_string()]);
}

#[test]
fn an_execution_moves_in_two_commits_each_with_its_events() {
    use crate::model::status::{execution as es, sandbox as ss};
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    s.insert_sandbox(&row("sbx_a", "u", ss::READY), SandboxCaps::default())
        .unwrap();
    let exe = |id: &str| {
        execution_row_for_test(id, "sbx_a", "u", crate::model::status::execution::RUNNING)
    };
    let ev = |id: &str, st: i32| EventRow {
        sandbox_id: "sbx_a".into(),
        execution_id: id.into(),
        kind: "execution.status".into(),
        execution_status: st,
        ..Default::default()
    };
    let r = s
        .start_execution(
            &exe("exe_1"),
            &[&ev("exe_1", es::QUEUED), &ev("exe_1", es::RUNNING)],
        )
        .unwrap();
    let sbx = s.get_sandbox("sbx_a").unwrap().unwrap();
    assert_eq!(
        (
            sbx.last_execution_id.as_str(),
            sbx.active_execution_id.as_str()
        ),
        ("exe_1", "exe_1")
    );
    assert_eq!(
        s.get_execution("exe_1").unwrap().unwrap().status,
        es::RUNNING
    );
    // A second execution became the active one: the first one's end leaves it.
    s.start_execution(
        &exe("exe_2"),
        &[&ev("exe_2", es::QUEUED), &ev("exe_2", es::RUNNING)],
    )
    .unwrap();
    let e = s
        .execution_ended(
            "exe_1",
            "sbx_a",
            (es::FAILED, 3, "exited with code 3"),
            7,
            &ev("exe_1", es::FAILED),
        )
        .unwrap();
    let done = s.get_execution("exe_1").unwrap().unwrap();
    assert_eq!((done.status, done.exit_code), (es::FAILED, 3));
    assert_eq!(done.finished_at, 7, "the caller's end time");
    assert_eq!(
        s.get_sandbox("sbx_a").unwrap().unwrap().active_execution_id,
        "exe_2"
    );
    s.execution_ended(
        "exe_2",
        "sbx_a",
        (es::SUCCEEDED, 0, ""),
        8,
        &ev("exe_2", es::SUCCEEDED),
    )
    .unwrap();
    assert_eq!(
        s.get_sandbox("sbx_a").unwrap().unwrap().active_execution_id,
        ""
    );
    let kinds: Vec<(String, i32)> = s
        .events_after("sbx_a", 0, 100)
        .unwrap()
        .into_iter()
        .map(|e| (e.execution_id, e.execution_status))
        .collect();
    assert_eq!(
        kinds[..2],
        [("exe_1".into(), es::QUEUED), ("exe_1".into(), es::RUNNING)],
        "QUEUED, then RUNNING: {kinds:?}"
    );
    assert_eq!(kinds.len(), 6, "one event per state: {kinds:?}");
    assert!(kinds.contains(&("exe_1".into(), es::FAILED)));
    assert!(e > r);
    // A step that cannot commit writes nothing: a duplicate id leaves no events.
    assert!(s
        .start_execution(
            &exe("exe_1"),
            &[&ev("exe_1", es::QUEUED), &ev("exe_1", es::RUNNING)]
        )
        .is_err());
    assert_eq!(s.events_after("sbx_a", 0, 100).unwrap().len(), 6);
}

#[test]
fn a_sandbox_is_begun_and_made_ready_in_one_commit_each_and_a_cap_writes_nothing() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let ev = |id: &str, st: SandboxStatus| EventRow {
        sandbox_id: id.into(),
        kind: "sandbox.status".into(),
        sandbox_status: st.number(),
        ..Default::default()
    };
    let caps = SandboxCaps {
        per_owner: 1,
        total: 0,
    };
    let seq = s
        .begin_sandbox(
            &row("sbx_a", "u", ss::PROVISIONING),
            caps,
            ("snap_x", "{\"memory\":1}"),
            &ev("sbx_a", ss::PROVISIONING),
        )
        .unwrap()
        .unwrap();
    assert_eq!(s.sandbox_origin("sbx_a").unwrap(), "snap_x");
    assert_eq!(s.sandbox_limits("sbx_a").unwrap(), "{\"memory\":1}");
    // The owner's cap: refused, and nothing of it is written.
    let hit = s
        .begin_sandbox(
            &row("sbx_b", "u", ss::PROVISIONING),
            caps,
            ("", "{}"),
            &ev("sbx_b", ss::PROVISIONING),
        )
        .unwrap();
    assert_eq!(hit, Err(CapHit::PerOwner(1)));
    assert!(s.get_sandbox("sbx_b").unwrap().is_none());
    assert_eq!(s.sandbox_limits("sbx_b").unwrap(), "");
    assert!(s.events_after("sbx_b", 0, 10).unwrap().is_empty());
    let record = cleanroom_backend::ProvisionedSandbox {
        sandbox_id: "sbx_a".into(),
        state_dir: "/state/sbx_a".into(),
        init_pid: 1,
        init_start_time: 0,
        info: Default::default(),
        network_device: None,
    };
    let ready = s
        .sandbox_ready(
            "sbx_a",
            &record,
            &ev("sbx_a", ss::READY),
            Some(&ClaimRow {
                sandbox_id: "sbx_a".into(),
                agent: "ed25519:x".into(),
                envelope: "{}".into(),
                ..Default::default()
            }),
        )
        .unwrap();
    // The binding is written with READY.
    assert_eq!(s.get_claim("sbx_a").unwrap().unwrap().agent, "ed25519:x");
    assert!(ready > seq);
    let got = s.get_sandbox("sbx_a").unwrap().unwrap();
    assert_eq!(
        (
            got.status,
            got.provisioned.get("sbx_a").unwrap().map(|p| p.init_pid),
            got.message.as_str()
        ),
        (ss::READY, Some(1), "")
    );
    let kinds: Vec<i32> = s
        .events_after("sbx_a", 0, 10)
        .unwrap()
        .into_iter()
        .map(|e| e.sandbox_status)
        .collect();
    assert_eq!(kinds, [ss::PROVISIONING.number(), ss::READY.number()]);
}

/// Another connection (as the checkpoint thread's) committing all the while: a create's
/// transaction, which counts live sandboxes before it inserts, must wait for the lock, not
/// fail with "database is locked" (a deferred transaction cannot upgrade a stale snapshot).
#[test]
fn a_create_waits_for_another_connections_commits_instead_of_failing() {
    use crate::model::status::sandbox as ss;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let s = Store::open(&path).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            let c = Connection::open(&path).unwrap();
            c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
            c.execute_batch("CREATE TABLE IF NOT EXISTS other (n INTEGER)")
                .unwrap();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                c.execute("INSERT INTO other (n) VALUES (1)", []).unwrap();
            }
        })
    };
    let caps = SandboxCaps {
        per_owner: 100_000,
        total: 100_000,
    };
    let ev = |id: &str| EventRow {
        sandbox_id: id.into(),
        kind: "sandbox.status".into(),
        sandbox_status: ss::PROVISIONING.number(),
        ..Default::default()
    };
    let mut failures = Vec::new();
    for i in 0..400 {
        let id = format!("sbx_{i}");
        if let Err(e) =
            s.begin_sandbox(&row(&id, "u", ss::PROVISIONING), caps, ("", "{}"), &ev(&id))
        {
            failures.push(e.to_string());
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} of 400 failed: {:?}",
        failures.len(),
        failures.first()
    );
}

#[test]
fn a_claimed_start_is_one_commit_and_a_refused_claim_starts_nothing() {
    use crate::model::status::{execution as es, sandbox as ss};
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    for id in ["w1", "w2"] {
        s.insert_sandbox(&row(id, "pool:p1", ss::READY), SandboxCaps::default())
            .unwrap();
    }
    let exe = |id: &str, sbx: &str| {
        execution_row_for_test(id, sbx, "a", crate::model::status::execution::RUNNING)
    };
    let ev = |sbx: &str, id: &str, kind: &str| EventRow {
        sandbox_id: sbx.into(),
        execution_id: id.into(),
        kind: kind.into(),
        ..Default::default()
    };
    let start = |sbx: &str, exe_id: &str| {
        let k = ClaimRow {
            sandbox_id: sbx.into(),
            pool_id: "p1".into(),
            envelope: "{}".into(),
            ..Default::default()
        };
        let claim_event = ev(sbx, "", "pool.claim");
        let (queued, running) = (
            ev(sbx, exe_id, "execution.status"),
            ev(sbx, exe_id, "execution.status"),
        );
        s.start_claimed_execution(
            &ClaimCommit {
                sandbox_id: sbx,
                from: &"pool:p1".into(),
                to: &"a".into(),
                per_owner: 0,
                at: 2,
                claim: &k,
                event: &claim_event,
                image_digest: "sha256:01",
            },
            &exe(exe_id, sbx),
            &[&queued, &running],
        )
        .unwrap()
    };
    let ClaimOutcome::Committed { event_seq } = start("w1", "exe_1") else {
        panic!("not committed")
    };
    // The claim and the start, together: owner, claim record, image hold, execution row,
    // the sandbox's active execution; the claim's event first, the last sequence returned.
    let sbx = s.get_sandbox("w1").unwrap().unwrap();
    assert_eq!(
        (
            sbx.owner.to_string().as_str(),
            sbx.active_execution_id.as_str()
        ),
        ("a", "exe_1")
    );
    assert_eq!(s.get_claim("w1").unwrap().unwrap().pool_id, "p1");
    assert_eq!(s.image_owners("sha256:01").unwrap(), vec!["a".to_string()]);
    assert_eq!(
        s.get_execution("exe_1").unwrap().unwrap().status,
        es::RUNNING
    );
    let events = s.events_after("w1", 0, 10).unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["pool.claim", "execution.status", "execution.status"]
    );
    // Numbered within the sandbox (the returned row number is the store's own).
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(event_seq >= 3);
    // A sandbox no longer the pool's READY one: refused, and nothing of the start is
    // written either.
    s.set_sandbox_status("w2", ss::STOPPING, "").unwrap();
    assert_eq!(start("w2", "exe_2"), ClaimOutcome::Gone);
    assert!(s.get_execution("exe_2").unwrap().is_none());
    assert!(s.get_claim("w2").unwrap().is_none());
    assert!(s.events_after("w2", 0, 10).unwrap().is_empty());
    let w2 = s.get_sandbox("w2").unwrap().unwrap();
    assert_eq!(
        (
            w2.owner.to_string().as_str(),
            w2.active_execution_id.as_str()
        ),
        ("pool:p1", "")
    );
}

/// A principal's pools are capped, counted and inserted under one lock.
#[test]
fn pools_are_capped_per_owner() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let pool = |id: &str, owner: &str| PoolRow {
        id: id.into(),
        owner: owner.into(),
        created_at: 1,
        spec: "{}".into(),
    };
    assert!(s.insert_pool(&pool("p1", "a"), 2).unwrap());
    assert!(s.insert_pool(&pool("p2", "a"), 2).unwrap());
    assert!(!s.insert_pool(&pool("p3", "a"), 2).unwrap(), "over the cap");
    assert!(
        s.insert_pool(&pool("q1", "b"), 2).unwrap(),
        "another owner's own cap"
    );
    assert_eq!(
        s.list_pools().unwrap().len(),
        3,
        "a refused pool is not written"
    );
    s.delete_pool("p1").unwrap();
    assert!(s.insert_pool(&pool("p3", "a"), 2).unwrap(), "room again");
}

/// Events are numbered within their sandbox, whatever other sandboxes write in between;
/// a database from before the numbering gets its old events numbered in order.
#[test]
fn events_are_numbered_per_sandbox_and_old_databases_are_numbered_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        // The table as it was: no per-sandbox number.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, sandbox_id TEXT NOT NULL,
               execution_id TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL, at INTEGER NOT NULL,
               sandbox_status INTEGER NOT NULL DEFAULT 0, execution_status INTEGER NOT NULL DEFAULT 0,
               message TEXT NOT NULL DEFAULT '', attributes TEXT NOT NULL DEFAULT '{}');
             INSERT INTO events (sandbox_id, kind, at) VALUES ('a','x',1),('b','x',1),('a','x',1),('b','x',1),('b','x',1);",
        )
        .unwrap();
    }
    let s = Store::open(&path).unwrap();
    let ev = |id: &str| EventRow {
        sandbox_id: id.into(),
        kind: "y".into(),
        ..Default::default()
    };
    s.append_event(&ev("b")).unwrap();
    s.append_event(&ev("a")).unwrap();
    s.append_event(&ev("c")).unwrap();
    let seqs = |id: &str| {
        s.events_after(id, 0, 100)
            .unwrap()
            .iter()
            .map(|e| (e.seq, e.kind.clone()))
            .collect::<Vec<_>>()
    };
    let x = |n: i64| (n, "x".to_string());
    let y = |n: i64| (n, "y".to_string());
    assert_eq!(seqs("a"), [x(1), x(2), y(3)]);
    assert_eq!(seqs("b"), [x(1), x(2), x(3), y(4)]);
    assert_eq!(seqs("c"), [y(1)]);
    assert_eq!(s.events_after("b", 2, 100).unwrap().len(), 2);
    drop(s);
    // Opening again numbers nothing twice.
    let s = Store::open(&path).unwrap();
    assert_eq!(s.events_after("b", 0, 100).unwrap().len(), 4);
}

/// A batch of events is numbered exactly as the same events appended one by one would be
/// (per sandbox, in the batch's order, after what each sandbox had), and a batch with one
/// bad row writes none of it.
#[test]
fn a_batch_of_events_is_numbered_in_order_and_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    let ev = |id: &str, kind: &str| EventRow {
        sandbox_id: id.into(),
        kind: kind.into(),
        ..Default::default()
    };
    s.append_event(&ev("a", "first")).unwrap();
    let last = s
        .append_events(&[ev("a", "k1"), ev("b", "k2"), ev("a", "k3")])
        .unwrap();
    let seqs = |id: &str| {
        s.events_after(id, 0, 100)
            .unwrap()
            .iter()
            .map(|e| (e.seq, e.kind.clone()))
            .collect::<Vec<_>>()
    };
    let p = |n: i64, k: &str| (n, k.to_string());
    assert_eq!(seqs("a"), [p(1, "first"), p(2, "k1"), p(3, "k3")]);
    assert_eq!(seqs("b"), [p(1, "k2")]);
    // The row number returned is the batch's last: a later single append comes after it.
    assert!(s.append_event(&ev("b", "later")).unwrap() > last);
    // A row the table refuses rolls the whole batch back.
    s.with(|c| c.execute_batch("CREATE TRIGGER no_bad BEFORE INSERT ON events WHEN NEW.kind = 'bad' BEGIN SELECT RAISE(ABORT, 'bad'); END;"))
        .unwrap();
    assert!(s.append_events(&[ev("c", "ok"), ev("c", "bad")]).is_err());
    assert!(seqs("c").is_empty(), "a failed batch leaves nothing behind");
}
