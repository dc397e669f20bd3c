//! A checkpoint runsc refuses to take leaves the sandbox as it was. gVisor cannot save a
//! TCP connection — even one its netstack still holds in TIME-WAIT for a minute after it
//! closed — and this runsc, asked to save without `--leave-running`, kills the sandbox after
//! such a refusal. So every save runs with `--leave-running` (a sandbox not to be left
//! running is frozen right after): the refusal is `checkpoint_refused` with runsc's reason
//! (not its goroutine dump), and the sandbox is READY with its files and processes. Real
//! server, real runsc; skipped with a message without it.

use cleanroom_e2e::*;

#[test]
fn a_refused_checkpoint_leaves_the_sandbox_running_and_says_why() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let o = s.run(&["sandbox", "create", "--runtime", "gvisor"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(&[
        "exec",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "echo kept > /tmp/state; curl -sS -m 5 http://denied.test/ || true",
    ]);
    assert!(
        stderr(&o).contains("host_not_allowed"),
        "a connection was made: {}",
        stderr(&o)
    );

    // Not left running, and refused: before the fix the sandbox was dead afterwards.
    let o = s.run(&["sandbox", "checkpoint", &id]);
    assert_code(&o, "checkpoint_refused");
    let err = stderr(&o);
    assert!(err.contains("connected state"), "runsc's reason: {err}");
    assert!(!err.contains("goroutine"), "no dump: {err}");

    let v = inspect(&s, &id);
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");
    let o = s.run(&["exec", "--in", &id, "--", "cat", "/tmp/state"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the sandbox runs on: {}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "kept\n");
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    assert!(
        !stdout(&o).contains("ckpt_"),
        "nothing half-stored: {}",
        stdout(&o)
    );

    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &id);
}
