//! Filesystem snapshots and forks under both runtimes ([`both_runtimes!`]), from one body:
//! under linux a snapshot is taken and forked; the gvisor runtime does not declare
//! `filesystem_snapshots` (a gvisor sandbox's writes live in the sentry's overlay, whose
//! filestore only the sentry can read: docs/runtimes.md), so every way in is refused
//! precisely — `backend_capability_mismatch` naming the capability for a READY or PAUSED
//! sandbox, `invalid_argument` for a fork onto gvisor of a snapshot (which brings its own
//! runtime) — with nothing stored and the sandbox untouched.

use cleanroom_e2e::*;

/// Every snapshot the server stores (directories under `<state>/snapshots`).
fn stored_snapshots(s: &Server) -> Vec<String> {
    std::fs::read_dir(s.state_dir().join("snapshots"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("snap_"))
        .collect()
}

fn status_of(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sandbox_id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["status"].as_str().unwrap_or_default().to_string()
}

both_runtimes!(
    a_snapshot_and_its_fork_or_a_precise_refusal,
    snapshot_or_refusal
);
fn snapshot_or_refusal(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.sh_in(&sbx, "echo kept > /workspace/f && echo t > /tmp/t");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["snapshot", "create", &sbx]);
    if rt == Runtime::Linux {
        let snap = stdout(&o).trim().to_string();
        assert!(snap.starts_with("snap_"), "{}", stderr(&o));
        let o = s.run(&["sandbox", "create", "--from", &snap]);
        let fork = stdout(&o).trim().to_string();
        assert!(fork.starts_with("sbx_"), "{}", stderr(&o));
        let o = s.sh_in(&fork, "cat /workspace/f /tmp/t");
        assert_eq!(stdout(&o), "kept\nt\n", "{}", stderr(&o));
        return;
    }
    let refused = |o: &std::process::Output| {
        assert_code(o, "backend_capability_mismatch");
        assert!(stderr(o).contains("filesystem_snapshots"), "{}", stderr(o));
    };
    refused(&o);
    // Paused, the same refusal; the sandbox stays paused and resumes intact.
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));
    refused(&s.run(&["snapshot", "create", &sbx]));
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");
    assert_eq!(s.run(&["sandbox", "resume", &sbx]).status.code(), Some(0));
    assert!(
        stored_snapshots(&s).is_empty(),
        "{:?}",
        stored_snapshots(&s)
    );
    assert!(!stdout(&s.run(&["snapshot", "ls"])).contains("snap_"));
    let o = s.sh_in(&sbx, "cat /workspace/f /tmp/t");
    assert_eq!(stdout(&o), "kept\nt\n", "{}", stderr(&o));

    // A snapshot of a linux sandbox brings its runtime: forking it onto gvisor is refused
    // by name, and nothing is made.
    let linux = s.create_on(Runtime::Linux, &[]);
    let o = s.run(&["snapshot", "create", &linux]);
    let snap = stdout(&o).trim().to_string();
    assert!(snap.starts_with("snap_"), "{}", stderr(&o));
    let before = stdout(&s.run(&["sandbox", "ls", "--all"]));
    let o = s.run(&rt.args(2, &["sandbox", "create", "--from", &snap]));
    assert_code(&o, "invalid_argument");
    assert!(stderr(&o).contains("from_snapshot"), "{}", stderr(&o));
    assert_eq!(stdout(&s.run(&["sandbox", "ls", "--all"])), before);
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_no_leftovers(&s.state_dir(), &sbx);
}
