//! Warm pools stay bounded: a sandbox a caller gets from a pool runs under the same
//! lifetime clocks as any other, one whose command could not start is not left running
//! unseen, and a principal's pools are capped. Real server, real warm sandboxes.

use cleanroom_e2e::pools::*;
use cleanroom_e2e::*;
use std::time::Duration;

/// `pool claim` starts the server's (or the policy's) TTL like any create: a claimed
/// sandbox used to get no clocks at all, and lived — charged to its owner — for ever.
#[test]
fn a_claimed_sandbox_runs_under_the_lifetime_clocks() {
    let s = Server::start_with(&["--sandbox-ttl", "3"]);
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1"]);
    wait_ready(&s, &pool, 1);
    let id = claim(&s, &pool);
    let v = inspect(&s, &id);
    assert_eq!(v["ttlSeconds"], "3", "{v}");
    assert!(v["expiresAt"].is_string(), "{v}");
    assert_eq!(stopped(&s, &id)["stopReason"], "ttl_expired");
}

/// A pooled `exec` whose command cannot be started after the claim was committed (here:
/// the server cannot create the run's output log) does not leave the claimed sandbox
/// READY and unknown to its caller: `exec`'s sandbox is torn down, and a kept one runs
/// under the lifetime clocks.
#[test]
fn a_pooled_exec_that_cannot_start_leaves_no_unbounded_sandbox() {
    let s = Server::start_with(&["--sandbox-ttl", "3"]);
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1"]);
    for keep in [false, true] {
        wait_ready(&s, &pool, 1);
        let warm = sandbox_inits(&s);
        assert_eq!(warm.len(), 1, "{warm:?}");
        let taken = warm[0].0.clone();
        // The directory of output logs becomes a file: no log can be created.
        let logs = s.state_dir().join("executions");
        let _ = std::fs::remove_dir_all(&logs);
        std::fs::write(&logs, b"").expect("block the log directory");
        let mut args = vec!["exec", "-n"];
        if keep {
            args.push("--keep");
        }
        args.extend(["--", "true"]);
        let o = s.run(&args);
        std::fs::remove_file(&logs).expect("unblock");
        std::fs::create_dir(&logs).expect("unblock");
        assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&taken),
            "names the sandbox: {}",
            stderr(&o)
        );
        if keep {
            let v = inspect(&s, &taken);
            assert_eq!(
                v["ttlSeconds"], "3",
                "a kept sandbox runs under the clocks: {v}"
            );
            assert_eq!(stopped(&s, &taken)["stopReason"], "ttl_expired");
        } else {
            let v = stopped(&s, &taken);
            assert_ne!(v["stopReason"], "ttl_expired", "torn down at once: {v}");
        }
        assert!(
            eventually(Duration::from_secs(30), || !sandbox_inits(&s)
                .iter()
                .any(|(id, _)| *id == taken)),
            "the claimed sandbox's processes are still running"
        );
    }
}

/// A principal's pools are capped (each is a stored definition, a warming task and a
/// candidate every create compares its template with); removing one makes room.
#[test]
fn a_principals_pools_are_capped() {
    let s = Server::start();
    let mut pools = Vec::new();
    for _ in 0..64 {
        pools.push(pool_create(&s, &["--min-ready", "0"]));
    }
    let o = s.run(&["pool", "create", "--min-ready", "0"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("[resource_exhausted]") && stderr(&o).contains("64 pools"),
        "{}",
        stderr(&o)
    );
    let o = s.run(&["pool", "rm", &pools[0]]);
    assert!(o.status.success(), "{}", stderr(&o));
    pool_create(&s, &["--min-ready", "0"]);
}
