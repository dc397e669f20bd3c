//! Suspend on idle releases a gVisor sandbox's memory (docs/api.md "Suspend on idle"): the
//! idle sandbox is saved to the server's disk and its sentry exits, and its next use
//! restores it in place — same sandbox, its files as they were. A sandbox running a
//! process that a gVisor restore would not bring back (started by an execution: gVisor
//! issue 11544), or a TCP connection runsc cannot save, is frozen with its memory kept
//! instead, and the event says why — the process still runs after the resume. The linux runtime always keeps the memory. Real
//! server, real runsc.

use cleanroom_e2e::*;
use std::time::Duration;

fn create(s: &Server, rt: Runtime) -> String {
    let o = s.run(&rt.args(2, &["sandbox", "create", "--suspend-after", "1"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn exec_ok(s: &Server, id: &str, script: &str) -> String {
    let o = s.run(&["exec", "--in", id, "--", "sh", "-c", script]);
    assert_eq!(o.status.code(), Some(0), "{script}: {}", stderr(&o));
    stdout(&o)
}

/// Wait (bounded) for the reaper's suspension of `id`; its `sandbox.suspended` event.
fn suspended_event(s: &Server, id: &str) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let ok = eventually(Duration::from_secs(40), || {
        last = inspect(s, id);
        last["status"] == "SANDBOX_STATUS_PAUSED"
    });
    assert!(ok, "the idle sandbox was not suspended: {last}");
    let o = s.run(&["sandbox", "events", id]);
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|e| e["type"] == "sandbox.suspended")
        .expect("a sandbox.suspended event")
}

/// Whether runsc still has a container of that id under the server's root.
fn runsc_has(s: &Server, id: &str) -> bool {
    let root = s.state_dir().join("gvisor/runsc");
    std::process::Command::new("runsc")
        .arg("--root")
        .arg(&root)
        .args(["state", id])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_idle_gvisor_sandbox_is_saved_to_disk_and_restored_in_place_by_its_next_use() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let id = create(&s, Runtime::Gvisor);
    // 32 MiB of file data (it lives in the sentry's memory) and a small state file.
    let sum = exec_ok(
        &s,
        &id,
        "head -c 33554432 /dev/urandom > /tmp/blob && echo 41 > /tmp/state && sha256sum /tmp/blob",
    );

    let e = suspended_event(&s, &id);
    assert_eq!(e["attributes"]["memory_released"], true, "{e}");
    let image = e["attributes"]["image_bytes"].as_u64().unwrap_or(0);
    assert!(image >= 32 << 20, "the image holds the files: {e}");
    // The sentry is gone: nothing of the sandbox runs on the host.
    assert!(!runsc_has(&s, &id), "runsc still has the container");

    // The next exec restores it in place, transparently, with its files as they were.
    assert_eq!(exec_ok(&s, &id, "cat /tmp/state"), "41\n");
    assert_eq!(exec_ok(&s, &id, "sha256sum /tmp/blob"), sum);
    assert!(runsc_has(&s, &id));
    // Its network came back with it: the gateway still judges (a refusal with a reason,
    // not a connection that finds no interface).
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--",
        "curl",
        "-sS",
        "-m",
        "5",
        "http://denied.test/",
    ]);
    assert!(stderr(&o).contains("host_not_allowed"), "{}", stderr(&o));
    let v = inspect(&s, &id);
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");

    // Idle again, but its network stack still holds the connection the exec just closed
    // (TIME-WAIT, 60 s), which runsc cannot save: frozen with its memory kept, saying why.
    let e = suspended_event(&s, &id);
    assert_eq!(e["attributes"]["memory_released"], false, "{e}");
    let why = e["attributes"]["memory_kept"].as_str().unwrap_or_default();
    assert!(
        why.contains("connected state"),
        "runsc's reason, without its dump: {e}"
    );
    assert!(!why.contains("goroutine"), "{e}");
    assert_eq!(exec_ok(&s, &id, "cat /tmp/state"), "41\n");

    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert!(!runsc_has(&s, &id));
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn a_process_a_restore_would_lose_keeps_the_memory_and_still_runs_after_the_resume() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let id = create(&s, Runtime::Gvisor);
    exec_ok(&s, &id, "sleep 1000 > /dev/null 2>&1 & echo started");

    let e = suspended_event(&s, &id);
    assert_eq!(e["attributes"]["memory_released"], false, "{e}");
    let why = e["attributes"]["memory_kept"].as_str().unwrap_or_default();
    assert!(why.contains("11544"), "the event says why: {e}");
    assert!(runsc_has(&s, &id), "frozen, not saved");

    let ps = exec_ok(&s, &id, "ps -eo comm");
    assert!(ps.lines().any(|l| l.trim() == "sleep"), "{ps}");
    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn the_linux_runtime_keeps_the_memory_and_says_so() {
    let s = Server::start();
    let id = create(&s, Runtime::Linux);
    let e = suspended_event(&s, &id);
    assert_eq!(e["attributes"]["memory_released"], false, "{e}");
    assert!(e["attributes"]["memory_kept"].is_string(), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or_default()
            .contains("memory kept"),
        "{e}"
    );
}
