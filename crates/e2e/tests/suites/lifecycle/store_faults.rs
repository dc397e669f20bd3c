//! A store write that fails at the edge of a create, a claim or a pool's removal leaves
//! no sandbox running unbounded or unseen. The faults are real SQLite errors: a trigger
//! added to the server's own database (by another connection, as any tool could) makes
//! one kind of write fail. Real server, real sandboxes.

use cleanroom_e2e::pools::*;
use cleanroom_e2e::*;
use std::time::Duration;

/// Make every `op` (`INSERT`, `DELETE`) on `table` of the server's store fail.
fn inject_fault(s: &Server, op: &str, table: &str) {
    let db = s.state_dir().join("state.db");
    let sql = format!(
        "CREATE TRIGGER test_fault BEFORE {op} ON {table} BEGIN SELECT RAISE(ABORT, 'injected fault'); END;"
    );
    let o = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); c.execute(sys.argv[2]); c.commit()",
        ])
        .arg(&db)
        .arg(&sql)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Wait (bounded) until no process of sandbox `id` runs.
fn gone(s: &Server, id: &str) -> bool {
    eventually(Duration::from_secs(30), || {
        !sandbox_inits(s).iter().any(|(sid, _)| sid == id)
    })
}

/// Wait (bounded) until no sandbox of this server runs; panics naming those left.
fn assert_none_run(s: &Server) {
    assert!(
        eventually(Duration::from_secs(30), || sandbox_inits(s).is_empty()),
        "sandboxes still run: {:?}",
        sandbox_inits(s)
    );
}

/// A claim whose lifetime clocks cannot be recorded fails, and the sandbox it took is
/// torn down rather than left the claimer's without a TTL.
#[test]
fn a_claim_whose_clocks_cannot_be_recorded_is_torn_down() {
    let s = Server::start_with(&["--sandbox-ttl", "60"]);
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1"]);
    wait_ready(&s, &pool, 1);
    let warm = sandbox_inits(&s)[0].0.clone();
    inject_fault(&s, "INSERT", "sandbox_lifetimes");
    let o = s.run(&["pool", "claim", &pool]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(gone(&s, &warm), "the claimed sandbox still runs");
}

/// A sandbox made for a create whose clocks cannot be recorded: the create fails, and the
/// sandbox — whose id the caller never got — is torn down.
#[test]
fn a_create_whose_clocks_cannot_be_recorded_leaves_no_sandbox() {
    let s = Server::start_with(&["--sandbox-ttl", "60"]);
    inject_fault(&s, "INSERT", "sandbox_lifetimes");
    let o = s.run(&["sandbox", "create"]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_none_run(&s);
}

/// A sandbox restored from a snapshot is READY before its identity binding is written:
/// if that write fails, the restore fails and the sandbox is torn down.
#[test]
fn a_restore_whose_binding_cannot_be_recorded_leaves_no_sandbox() {
    let s = Server::start();
    let id = s.create();
    let o = s.run(&["snapshot", "create", &id]);
    let snap = stdout(&o).trim().to_string();
    assert!(snap.starts_with("snap_"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "rm", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(gone(&s, &id));
    inject_fault(&s, "INSERT", "sandbox_claims");
    let o = s.run(&["sandbox", "create", "--from", &snap]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_none_run(&s);
}

/// `pool rm` whose stored definition cannot be deleted still stops the pool's sandboxes
/// (it used to delete first and return on the error, leaving them running, owned by a
/// pool nobody could see any more).
#[test]
fn a_pool_whose_definition_cannot_be_removed_still_stops_its_sandboxes() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "2", "--max-ready", "2"]);
    wait_ready(&s, &pool, 2);
    inject_fault(&s, "DELETE", "pools");
    let o = s.run(&["pool", "rm", &pool]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_none_run(&s);
}
