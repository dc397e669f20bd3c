use super::*;

fn row(id: &str, owner: &str, status: i32) -> SandboxRow {
    SandboxRow {
        id: id.into(),
        status,
        backend: "linux".into(),
        policy_hash: String::new(),
        compiled_policy: String::new(),
        created_at: 1,
        updated_at: 1,
        last_execution_id: String::new(),
        active_execution_id: String::new(),
        message: String::new(),
        provisioned: String::new(),
        image_ref: String::new(),
        image_digest: String::new(),
        owner: owner.into(),
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
}

#[test]
fn caps_count_live_sandboxes_only() {
    use crate::status::sandbox as ss;
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
    use crate::status::sandbox as ss;
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
fn the_reaper_reads_only_ready_sandboxes_that_can_expire() {
    use crate::status::sandbox as ss;
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
    let mut got = s.lifetimes_to_check(ss::READY).unwrap();
    got.sort_by(|a, b| a.sandbox_id.cmp(&b.sandbox_id));
    assert_eq!(
        got,
        vec![
            LifetimeCheck {
                sandbox_id: "idle".into(),
                created_at: 1,
                lifetime: idle,
            },
            LifetimeCheck {
                sandbox_id: "ttl".into(),
                created_at: 1,
                lifetime: ttl,
            },
        ]
    );
}
