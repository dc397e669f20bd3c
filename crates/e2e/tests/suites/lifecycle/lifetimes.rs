//! Sandbox lifetimes: TTL and idle timeout from the request, the policy or the server's
//! defaults; expiry terminates with the reason in the events and `sandbox inspect`;
//! `sandbox timeout` extends a TTL for a long job. Real server, real sandboxes.

use cleanroom_e2e::*;

fn create(s: &Server, args: &[&str]) -> String {
    let o = s.run(&[&["sandbox", "create"], args].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn expired_event(s: &Server, id: &str) -> serde_json::Value {
    let o = s.run(&["sandbox", "events", id]);
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "sandbox.expired")
        .unwrap_or_else(|| panic!("no sandbox.expired event: {}", stdout(&o)))
}

#[test]
fn ttl_expiry_terminates_with_the_reason() {
    let s = Server::start();
    let id = create(&s, &["--ttl", "2"]);
    let v = inspect(&s, &id);
    assert_eq!(v["ttlSeconds"], "2", "{v}");
    assert!(v["expiresAt"].is_string(), "{v}");
    let v = stopped(&s, &id);
    assert_eq!(v["stopReason"], "ttl_expired", "{v}");
    assert!(v["message"].as_str().unwrap().contains("TTL"), "{v}");
    let e = expired_event(&s, &id);
    assert_eq!(e["attributes"]["reason"], "ttl_expired", "{e}");
    // Human form too.
    let o = s.run(&["sandbox", "inspect", &id]);
    assert!(
        stdout(&o).contains("stop_reason:         ttl_expired"),
        "{}",
        stdout(&o)
    );
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn idle_expiry_waits_for_running_executions() {
    let s = Server::start();
    let id = create(&s, &["--idle-timeout", "2"]);
    // A running execution is activity: the sandbox outlives its idle timeout while it runs.
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "sleep 5; echo alive",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "alive\n");
    // Then, idle, it goes.
    let v = stopped(&s, &id);
    assert_eq!(v["stopReason"], "idle_timeout", "{v}");
    assert_eq!(
        expired_event(&s, &id)["attributes"]["reason"],
        "idle_timeout"
    );
    assert_no_leftovers(&s.state_dir(), &id);
}

#[test]
fn timeout_extension_keeps_a_sandbox_for_a_long_job() {
    let s = Server::start();
    let id = create(&s, &["--ttl", "6"]);
    let o = s.run(&["sandbox", "timeout", &id, "--ttl", "600"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("ttl:                 600s"),
        "{}",
        stdout(&o)
    );
    // Well past the original TTL the sandbox still runs work.
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &id,
        "--",
        "sh",
        "-c",
        "sleep 9; echo done",
    ]);
    assert_eq!(stdout(&o), "done\n", "{}", stderr(&o));
    assert_eq!(inspect(&s, &id)["status"], "SANDBOX_STATUS_READY");
    // Clearing the TTL, then shortening it again: it expires.
    let o = s.run(&["sandbox", "timeout", &id, "--clear-ttl", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["expiresAt"].is_null() && v["ttlSeconds"].is_null(), "{v}");
    let o = s.run(&["sandbox", "timeout", &id, "--ttl", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stopped(&s, &id)["stopReason"], "ttl_expired");
    // A stopped sandbox cannot be extended.
    let o = s.run(&["sandbox", "timeout", &id, "--ttl", "60"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("sandbox_not_ready"), "{}", stderr(&o));
}

#[test]
fn policy_and_server_defaults_and_request_precedence() {
    let s = Server::start_with(&["--sandbox-idle-timeout", "2"]);
    // The server default applies to a plain sandbox.
    let plain = create(&s, &[]);
    assert_eq!(inspect(&s, &plain)["idleTimeoutSeconds"], "2");
    // The policy's lifetime beats the server default; the request beats the policy.
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        &dir,
        "p.yaml",
        "version: 1\nsandbox:\n  lifetime:\n    ttl_seconds: 3600\n    idle_timeout_seconds: 600\n",
    );
    let from_policy = create(&s, &["--policy", &policy]);
    let v = inspect(&s, &from_policy);
    assert_eq!(
        (v["ttlSeconds"].as_str(), v["idleTimeoutSeconds"].as_str()),
        (Some("3600"), Some("600")),
        "{v}"
    );
    let from_request = create(&s, &["--policy", &policy, "--idle-timeout", "900"]);
    let v = inspect(&s, &from_request);
    assert_eq!(v["idleTimeoutSeconds"], "900", "{v}");
    assert_eq!(v["ttlSeconds"], "3600", "{v}");
    assert_eq!(stopped(&s, &plain)["stopReason"], "idle_timeout");
    assert_eq!(inspect(&s, &from_policy)["status"], "SANDBOX_STATUS_READY");
    s.run(&["sandbox", "rm", &from_policy, &from_request]);
}

#[test]
fn hostile_lifetime_requests_are_refused() {
    let s = Server::start();
    for args in [
        &["--ttl", "99999999999"][..],
        &["--idle-timeout", "99999999999"][..],
    ] {
        let o = s.run(&[&["sandbox", "create"], args].concat());
        assert_eq!(o.status.code(), Some(125), "{args:?}");
        assert!(stderr(&o).contains("invalid_argument"), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("_seconds"),
            "names the field: {}",
            stderr(&o)
        );
    }
    let id = create(&s, &[]);
    for args in [
        &["--ttl", "0"][..],
        &["--ttl", "99999999999"][..],
        &["--idle-timeout", "0"][..],
    ] {
        let o = s.run(&[&["sandbox", "timeout", &id], args].concat());
        assert_eq!(o.status.code(), Some(125), "{args:?}");
        assert!(stderr(&o).contains("invalid_argument"), "{}", stderr(&o));
    }
    // Another local user cannot touch it: not found, like every object not theirs.
    open_socket_to_all(&s);
    let o = as_uid(&s, 65534, &["sandbox", "timeout", &id, "--ttl", "1"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("sandbox_not_found"), "{}", stderr(&o));
    assert_eq!(inspect(&s, &id)["status"], "SANDBOX_STATUS_READY");
    s.run(&["sandbox", "rm", &id]);
}

/// Every lifetime rule applies in every state (docs/states.md): a paused sandbox's TTL
/// ends as a running one's does — the frozen processes are killed, nothing is left — and
/// its owner can move the clock while it is paused. (Expiry used to look at READY
/// sandboxes only, so a paused one outlived its TTL forever.)
#[test]
fn a_paused_sandbox_expires_and_its_clock_can_be_moved() {
    let s = Server::start();
    let id = create(&s, &["--ttl", "3"]);
    let o = s.run(&["sandbox", "pause", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v = stopped(&s, &id);
    assert_eq!(v["stopReason"], "ttl_expired", "{v}");
    let e = expired_event(&s, &id);
    assert_eq!(e["attributes"]["reason"], "ttl_expired", "{e}");
    assert_eq!(e["sandboxStatus"], "SANDBOX_STATUS_PAUSED", "{e}");
    assert_no_leftovers(&s.state_dir(), &id);

    // Paused with an idle timeout: the idle clock runs too.
    let idle = create(&s, &["--idle-timeout", "2"]);
    let o = s.run(&["sandbox", "pause", &idle]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stopped(&s, &idle)["stopReason"], "idle_timeout");
    assert_no_leftovers(&s.state_dir(), &idle);

    // The owner extends a paused sandbox's TTL; it is still paused (and alive) after the
    // original TTL, and resumes.
    let kept = create(&s, &["--ttl", "3"]);
    assert_eq!(s.run(&["sandbox", "pause", &kept]).status.code(), Some(0));
    let o = s.run(&["sandbox", "timeout", &kept, "--ttl", "600"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(inspect(&s, &kept)["status"], "SANDBOX_STATUS_PAUSED");
    assert_eq!(s.run(&["sandbox", "resume", &kept]).status.code(), Some(0));
    let o = s.run(&["exec", "-n", "--in", &kept, "--", "echo", "back"]);
    assert_eq!(stdout(&o), "back\n", "{}", stderr(&o));
}

/// The ownership and quota cells of the state × rule table (docs/states.md) for a paused
/// sandbox: another principal gets `sandbox_not_found` from every verb, and a paused
/// sandbox holds its owner's quota slot until it is removed.
#[test]
fn ownership_and_quota_hold_while_paused() {
    let s = Server::start_with(&["--max-sandboxes-per-principal", "1"]);
    open_socket_to_all(&s);
    let id = create(&s, &[]);
    assert_eq!(s.run(&["sandbox", "pause", &id]).status.code(), Some(0));
    for args in [
        &["sandbox", "inspect", &id][..],
        &["sandbox", "resume", &id],
        &["sandbox", "pause", &id],
        &["sandbox", "timeout", &id, "--ttl", "600"],
        &["sandbox", "events", &id],
        &["snapshot", "create", &id],
        &["sandbox", "rm", &id],
    ] {
        assert_code(&as_uid(&s, 65534, args), "sandbox_not_found");
    }
    assert_eq!(inspect(&s, &id)["status"], "SANDBOX_STATUS_PAUSED");
    // The paused sandbox is the owner's one allowed sandbox.
    assert_code(&s.run(&["sandbox", "create"]), "resource_exhausted");
    assert_eq!(s.run(&["sandbox", "rm", &id]).status.code(), Some(0));
    create(&s, &[]);
    assert_no_leftovers(&s.state_dir(), &id);
}

/// The warm and claimed cells: a warm sandbox has no TTL of its own (the pool keeps it),
/// and a claimed one gets the server's TTL from the claim on, like any created sandbox.
#[test]
fn a_claimed_sandbox_gets_its_clocks_at_the_claim() {
    let s = Server::start_with(&["--sandbox-ttl", "3"]);
    let pool = cleanroom_e2e::pools::pool_create(&s, &["--min-ready", "1"]);
    cleanroom_e2e::pools::wait_ready(&s, &pool, 1);
    // Older than the TTL while warm: not expired, because its clock has not started.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let id = cleanroom_e2e::pools::claim(&s, &pool);
    let v = inspect(&s, &id);
    assert_eq!(v["status"], "SANDBOX_STATUS_READY", "{v}");
    assert_eq!(v["ttlSeconds"], "3", "{v}");
    assert_eq!(stopped(&s, &id)["stopReason"], "ttl_expired");
    let o = s.run(&["pool", "rm", &pool]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Same condition, same code and the next step, whatever the verb: a paused sandbox is
/// `sandbox_paused` for `exec` and `cp` alike and says how to resume; an expired one says
/// why it stopped (its TTL) and what to do.
#[test]
fn refusals_name_the_state_its_reason_and_the_next_step() {
    let s = Server::start();
    let id = create(&s, &["--ttl", "30"]);
    assert_eq!(s.run(&["sandbox", "pause", &id]).status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("x").display().to_string();
    for args in [
        vec!["exec", "-n", "--in", &id, "--", "true"],
        vec!["cp", "-", &format!("{id}:/tmp/f")],
        vec!["cp", &format!("{id}:/etc/hostname"), &dest],
        vec!["snapshot", "create", &id],
    ] {
        let o = s.run(&args);
        let err = stderr(&o);
        if args[0] == "snapshot" {
            // A paused sandbox can be snapshotted (it stays paused).
            assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
            continue;
        }
        assert_code(&o, "sandbox_paused");
        assert!(err.contains("sandbox resume"), "{args:?}: {err}");
    }
    // Expired: the reason and the next step, not only "STOPPED".
    let gone = create(&s, &["--ttl", "2"]);
    stopped(&s, &gone);
    for args in [
        vec!["exec", "-n", "--in", &gone, "--", "true"],
        vec!["cp", &format!("{gone}:/etc/hostname"), &dest],
        vec!["sandbox", "timeout", &gone, "--ttl", "60"],
    ] {
        let o = s.run(&args);
        let err = stderr(&o);
        assert_code(&o, "sandbox_not_ready");
        assert!(
            err.contains("TTL") && err.contains("sandbox create"),
            "{args:?}: {err}"
        );
    }
}
