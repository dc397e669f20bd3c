//! Suspend on idle, resume on use (docs/api.md "Suspend on idle"): a sandbox idle for its
//! `--suspend-after` is frozen (PAUSED, marked suspended in inspect and events), and its
//! next exec or file call resumes it with its state intact. A running execution keeps it
//! awake; a user's pause is never resumed by use. Real server, real sandboxes, the real
//! cgroup freezer.

use cleanroom_e2e::*;
use std::time::Duration;

fn create(s: &Server, args: &[&str]) -> String {
    let o = s.run(&[&["sandbox", "create"], args].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn events_of(s: &Server, id: &str, kind: &str) -> Vec<serde_json::Value> {
    let o = s.run(&["sandbox", "events", id]);
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == kind)
        .collect()
}

/// Wait (bounded) until the reaper suspended `id`; its inspect JSON.
fn suspended(s: &Server, id: &str) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let ok = eventually(Duration::from_secs(30), || {
        last = inspect(s, id);
        last["status"] == "SANDBOX_STATUS_PAUSED"
    });
    assert!(ok, "the idle sandbox was not suspended: {last}");
    last
}

#[test]
fn an_idle_sandbox_is_suspended_and_its_next_use_resumes_it_with_its_state() {
    let s = Server::start();
    let id = create(&s, &["--suspend-after", "1"]);
    let v = inspect(&s, &id);
    assert_eq!(v["suspendAfterSeconds"], "1", "{v}");
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "echo 41 > /tmp/state",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let v = suspended(&s, &id);
    assert!(v["suspendedAt"].is_string(), "inspect says since when: {v}");
    let e = &events_of(&s, &id, "sandbox.suspended")[0];
    assert_eq!(e["attributes"]["reason"], "idle", "{e}");
    // Looking does not wake it.
    let human = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(human.contains("suspended_at:"), "{human}");
    assert_eq!(inspect(&s, &id)["status"], "SANDBOX_STATUS_PAUSED");

    // The next exec resumes it, transparently, with its files as they were.
    let o = s.run(&["exec", "--in", &id, "--", "cat", "/tmp/state"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "41\n");
    let v = inspect(&s, &id);
    assert!(v["suspendedAt"].is_null(), "{v}");
    let e = &events_of(&s, &id, "sandbox.resumed")[0];
    assert_eq!(e["attributes"]["reason"], "exec", "{e}");

    // Idle again, it is suspended again; a file read resumes it too.
    suspended(&s, &id);
    let dest = s.dir.join("state.out");
    let o = s.run(&["cp", &format!("{id}:/tmp/state"), dest.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&dest).unwrap(), "41\n");
    let resumed = events_of(&s, &id, "sandbox.resumed");
    assert_eq!(resumed.len(), 2, "{resumed:?}");
    assert_eq!(resumed[1]["attributes"]["reason"], "files");

    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn a_running_execution_keeps_it_awake_and_a_users_pause_is_not_resumed_by_use() {
    let s = Server::start();
    let id = create(&s, &["--suspend-after", "1"]);
    // Frozen mid-run, this would never print (nothing would resume it).
    let o = s.run(&["exec", "--in", &id, "--", "sh", "-c", "sleep 3; echo alive"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "alive\n");

    // Suspended, then paused by its owner: from now on it is the user's pause.
    suspended(&s, &id);
    assert_eq!(s.run(&["sandbox", "pause", &id]).status.code(), Some(0));
    assert!(inspect(&s, &id)["suspendedAt"].is_null());
    assert_code(
        &s.run(&["exec", "--in", &id, "--", "true"]),
        "sandbox_paused",
    );
    assert_eq!(s.run(&["sandbox", "resume", &id]).status.code(), Some(0));
    let o = s.run(&["exec", "--in", &id, "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn the_policy_sets_it_and_bad_values_are_refused() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("cleanroom.yaml");
    std::fs::write(
        &policy,
        "version: 1\nsandbox:\n  lifetime:\n    suspend_after_seconds: 1\n",
    )
    .unwrap();
    let id = create(&s, &["--policy", policy.to_str().unwrap()]);
    assert_eq!(inspect(&s, &id)["suspendAfterSeconds"], "1");
    suspended(&s, &id);

    assert_code(
        &s.run(&["sandbox", "create", "--suspend-after", "99999999999"]),
        "invalid_argument",
    );
    std::fs::write(
        &policy,
        "version: 1\nsandbox:\n  lifetime:\n    suspend_after_seconds: 0\n",
    )
    .unwrap();
    assert_code(
        &s.run(&["sandbox", "create", "--policy", policy.to_str().unwrap()]),
        "policy_invalid",
    );
}
