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
