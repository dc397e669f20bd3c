//! Warm pools end to end: real server, real warm sandboxes. Claim/release, reuse without
//! leaks (a first claimer tries to leave state behind, a second looks for it), ownership,
//! exhaustion (`no_ready_sandboxes`), autoscaling refills, transparent use by
//! `CreateSandbox`/`exec`, restart.

use cleanroom_e2e::pools::*;
use cleanroom_e2e::*;
use std::time::Duration;

/// The first claimer leaves files in every writable dir, a daemonized process, a SysV shm
/// segment, a held connection to the gateway and a marked environment; after a reusable
/// release the second claimer finds none of it.
#[test]
fn claim_release_reuse_without_leaks() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1", "--reusable"]);
    wait_ready(&s, &pool, 1);
    let a = claim(&s, &pool);
    assert!(a.starts_with("sbx_"), "{a}");
    let o = s.run(&["sandbox", "inspect", &a]);
    assert!(
        stdout(&o).contains(&format!("pool_id:             {pool}")),
        "{}",
        stdout(&o)
    );

    let plant = r#"
        set -e
        mkdir -p /dev/shm
        for d in /tmp /workspace /root /dev/shm /dev; do echo leak > "$d/leak-marker"; done
        ipcmk -M 4096 >/dev/null
        setsid sleep 31337 </dev/null >/dev/null 2>&1 &
        setsid bash -c 'exec 3<>/dev/tcp/100.96.0.1/3128; sleep 31338' </dev/null >/dev/null 2>&1 &
        sleep 0.5
        grep -c . /proc/sysvipc/shm
        ps -eo args | grep -c '^sleep 3133'
    "#;
    let o = s.run(&[
        "exec",
        "-n",
        "--env",
        "LEAK_ENV_MARKER=1",
        "--in",
        &a,
        "--",
        "sh",
        "-c",
        plant,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The plant worked: one shm segment (plus the header line) and both daemons alive.
    assert_eq!(stdout(&o), "2\n2\n", "{}", stderr(&o));
    let o = s.sh_in(
        &a,
        "ps -eo args | grep -c '^sleep 3133'; grep -c ' 01 ' /proc/net/tcp || true",
    );
    assert_eq!(
        stdout(&o).lines().next(),
        Some("2"),
        "daemons did not survive: {}",
        stdout(&o)
    );

    let o = s.run(&["pool", "release", &a]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(status_of(&s, &a), "SANDBOX_STATUS_STOPPED");
    assert_no_leftovers(&s.state_dir(), &a);

    wait_ready(&s, &pool, 1);
    let b = claim(&s, &pool);
    assert_ne!(a, b, "a released sandbox is never handed out again");
    let look = r#"
        for d in /tmp /workspace /root /dev/shm /dev; do ls -a "$d"; done | grep leak-marker || true
        echo shm=$(grep -vc '^ *key' /proc/sysvipc/shm)
        echo procs=$(ps -eo args | grep -c '^sleep 3133')
        echo tcp=$(tail -n +2 /proc/net/tcp | wc -l)
        echo env=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c LEAK_ENV_MARKER)
    "#;
    let o = s.sh_in(&b, look);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "shm=0\nprocs=0\ntcp=0\nenv=0\n",
        "{}",
        stderr(&o)
    );

    // Claim and release are events of the sandbox.
    let o = s.run(&["sandbox", "events", &a]);
    let ev = stdout(&o);
    assert!(
        ev.contains("\"pool.claim\"") && ev.contains("\"pool.release\""),
        "{ev}"
    );
    let st = stats(&s, &pool);
    assert_eq!(num(&st, "claimsTotal"), 2, "{st}");
    assert_eq!(num(&st, "claimed"), 1, "{st}");
    assert!(num(&st, "p99ClaimLatencyUs") > 0, "{st}");
    let o = s.run(&["pool", "rm", &pool]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The claimed sandbox stays its claimer's.
    assert_eq!(status_of(&s, &b), "SANDBOX_STATUS_READY");
}

/// An empty pool answers `no_ready_sandboxes`; with autoscaling the pool grows towards
/// claims × headroom and refills.
#[test]
fn exhaustion_and_autoscaling_refill() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1"]);
    wait_ready(&s, &pool, 1);
    let _a = claim(&s, &pool);
    // Right after a claim the refill is still warming: claims fail cleanly meanwhile. A
    // refill can win the race against the next CLI claim, so claim until one meets the
    // empty pool (each success takes the only ready sandbox again; bounded).
    let mut saw_exhausted = false;
    for _ in 0..50 {
        let o = s.run(&["pool", "claim", &pool]);
        if o.status.code() == Some(125) {
            assert!(
                stderr(&o).contains("[no_ready_sandboxes]"),
                "{}",
                stderr(&o)
            );
            saw_exhausted = true;
            break;
        }
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(saw_exhausted, "50 claims never met an empty pool of one");
    let o = s.run(&["pool", "claim", "pool_0123456789abcdef0123456789abcdef"]);
    assert!(stderr(&o).contains("[pool_not_found]"), "{}", stderr(&o));

    // Autoscaling: 1..4 ready, headroom 2 over a 30 s window.
    let auto = pool_create(
        &s,
        &[
            "--min-ready",
            "1",
            "--max-ready",
            "4",
            "--autoscale",
            "--headroom",
            "2",
            "--interval",
            "30",
        ],
    );
    wait_ready(&s, &auto, 1);
    let _c1 = claim(&s, &auto);
    wait_ready(&s, &auto, 1);
    let _c2 = claim(&s, &auto);
    // Two claims in the window × 2 = 4 (the cap): the pool refills to 4.
    assert!(
        eventually(Duration::from_secs(60), || {
            let st = stats(&s, &auto);
            num(&st, "targetReady") == 4 && num(&st, "ready") == 4
        }),
        "{}",
        stats(&s, &auto)
    );
}

/// Pools are owned: another principal neither sees nor claims nor destroys them, and a
/// matching `CreateSandbox` of theirs does not take from them.
#[test]
fn pools_are_owned_and_used_transparently_by_exec() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "2"]);
    wait_ready(&s, &pool, 2);
    // Nobody sees or touches a pool's unclaimed sandboxes, admins included (root is an
    // admin here): they stay pristine until one claim hands them over.
    let o = s.run(&["sandbox", "ls", "--all", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
    let warm = sandbox_inits(&s);
    assert_eq!(warm.len(), 2, "{warm:?}");
    for (id, _) in &warm {
        for args in [
            vec!["sandbox", "inspect", id],
            vec!["exec", "-n", "--in", id, "--", "true"],
            vec!["sandbox", "rm", id],
        ] {
            let o = s.run(&args);
            assert!(
                stderr(&o).contains("[sandbox_not_found]"),
                "{args:?}: {}",
                stderr(&o)
            );
        }
    }
    assert_eq!(num(&stats(&s, &pool), "ready"), 2);
    open_socket_to_all(&s);
    for args in [
        vec!["pool", "stats", &pool],
        vec!["pool", "claim", &pool],
        vec!["pool", "rm", &pool],
    ] {
        let o = as_uid(&s, 65534, &args);
        assert!(
            stderr(&o).contains("[pool_not_found]"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    let o = as_uid(&s, 65534, &["pool", "ls"]);
    assert!(!stdout(&o).contains(&pool), "{}", stdout(&o));
    // Another principal's create with the same template gets a fresh sandbox.
    let o = as_uid(&s, 65534, &["sandbox", "create"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 0);
    // The warm sandboxes are invisible to other users.
    let o = as_uid(&s, 65534, &["sandbox", "ls", "--all"]);
    assert_eq!(stdout(&o).lines().count(), 2, "{}", stdout(&o));

    // The owner's `exec` with the same (default) template is served from the pool.
    let o = s.run(&["exec", "-n", "--", "sh", "-c", "echo hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "hi\n");
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 1);
    // Different limits: no match, a fresh sandbox.
    let o = s.run(&["exec", "-n", "--memory-mb", "300", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 1);
    // Claimed sandboxes carry a claim-time attestation bound to the claimer.
    let id = claim(&s, &pool);
    let o = s.run(&["sandbox", "attest", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let env: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let st: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(st["pool_id"], pool.as_str());
    assert_eq!(st["owner"], "uid:0");
    assert_eq!(st["sandbox_id"], id.as_str());
}

/// Pool definitions survive a restart; the warm sandboxes are rebuilt.
#[test]
fn pools_are_rebuilt_after_restart() {
    let mut s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "2", "--name", "persist"]);
    wait_ready(&s, &pool, 2);
    let before: Vec<String> = sandbox_inits(&s).into_iter().map(|(id, _)| id).collect();
    assert_eq!(before.len(), 2, "{before:?}");
    s.kill9();
    s.spawn();
    wait_ready(&s, &pool, 2);
    let o = s.run(&["pool", "ls"]);
    assert!(stdout(&o).contains("persist"), "{}", stdout(&o));
    let id = claim(&s, &pool);
    assert!(
        !before.contains(&id),
        "a pre-restart sandbox was handed out"
    );
    let o = s.sh_in(&id, "echo ok");
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    for old in &before {
        assert_no_leftovers(&s.state_dir(), old);
    }
}

/// A warm sandbox whose pid 1 died while it waited is never handed out: the claim skips
/// it (the pool replaces it and terminates the remains), and the next claim gets a live,
/// fresh one.
#[test]
fn dead_warm_sandboxes_are_skipped_and_replaced() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "2", "--max-ready", "2"]);
    wait_ready(&s, &pool, 2);
    let warm = sandbox_inits(&s);
    assert_eq!(warm.len(), 2, "{warm:?}");
    for (_, pid) in &warm {
        // SAFETY: kill(2) on a pid we just found; no memory is involved.
        assert_eq!(unsafe { libc::kill(*pid, libc::SIGKILL) }, 0);
    }
    // Wait until both are really dead (gone or zombie) before claiming.
    let dead = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|t| {
                t[t.rfind(')').unwrap_or(0) + 1..]
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true)
    };
    assert!(eventually(Duration::from_secs(10), || warm
        .iter()
        .all(|(_, p)| dead(*p))));
    let killed: Vec<&str> = warm.iter().map(|(id, _)| id.as_str()).collect();
    // Claims now get either a replacement or `no_ready_sandboxes`: never a dead one.
    let mut got = None;
    assert!(
        eventually(Duration::from_secs(60), || {
            let o = s.run(&["pool", "claim", &pool]);
            if o.status.success() {
                got = Some(stdout(&o).trim().to_string());
                true
            } else {
                assert!(
                    stderr(&o).contains("[no_ready_sandboxes]"),
                    "{}",
                    stderr(&o)
                );
                false
            }
        }),
        "no replacement was ever claimable: {}",
        stats(&s, &pool)
    );
    let id = got.unwrap();
    assert!(
        !killed.contains(&id.as_str()),
        "a dead sandbox was handed out: {id}"
    );
    let o = s.sh_in(&id, "echo alive");
    assert_eq!(stdout(&o), "alive\n", "{}", stderr(&o));
    let st = stats(&s, &pool);
    assert_eq!(num(&st, "replacedDeadTotal"), 2, "{st}");
    for k in &killed {
        assert_no_leftovers(&s.state_dir(), k);
    }
    // The pool is whole again.
    wait_ready(&s, &pool, 2);
}

/// Caps hold across pools under concurrency: creates of the owner and of another
/// principal, claims from two pools and both pools' warming all race; the owner never
/// holds more than `--max-sandboxes-per-principal` (own + pools' READY + warming) and
/// the server never more than `--max-sandboxes`.
#[test]
fn caps_are_atomic_across_pools_under_concurrency() {
    let s = Server::start_with(&["--max-sandboxes-per-principal", "6", "--max-sandboxes", "9"]);
    open_socket_to_all(&s);
    let p1 = pool_create(&s, &["--min-ready", "4", "--max-ready", "4"]);
    let p2 = pool_create(
        &s,
        &["--min-ready", "4", "--max-ready", "4", "--memory-mb", "300"],
    );
    std::thread::scope(|sc| {
        for i in 0..6 {
            let (s, p1, p2) = (&s, &p1, &p2);
            sc.spawn(move || {
                for _ in 0..3 {
                    let _ = s.run(&["sandbox", "create", "--no-pool"]);
                    let _ = s.run(&["pool", "claim", if i % 2 == 0 { p1 } else { p2 }]);
                }
            });
        }
        for _ in 0..3 {
            let s = &s;
            sc.spawn(move || {
                for _ in 0..3 {
                    let _ = as_uid(s, 65534, &["sandbox", "create"]);
                }
            });
        }
    });
    // Let the pools finish whatever they were warming.
    let settled = || {
        let (a, b) = (stats(&s, &p1), stats(&s, &p2));
        num(&a, "warming") + num(&b, "warming") == 0
    };
    assert!(eventually(Duration::from_secs(60), settled));
    std::thread::sleep(Duration::from_secs(2));
    let live = |out: std::process::Output| {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        v.as_array().map(|a| a.len() as u64).unwrap_or(0)
    };
    // Root is an admin: its list holds every principal's (claimed or created) sandboxes.
    let all = live(s.run(&["sandbox", "ls", "--json"]));
    let other = live(as_uid(&s, 65534, &["sandbox", "ls", "--json"]));
    let own = all - other;
    let (a, b) = (stats(&s, &p1), stats(&s, &p2));
    let pooled = num(&a, "ready") + num(&b, "ready") + num(&a, "warming") + num(&b, "warming");
    assert!(
        own + pooled <= 6,
        "owner holds {own} + {pooled} pooled > 6: {a} {b}"
    );
    assert!(
        own + pooled + other <= 9,
        "server holds {} > 9",
        own + pooled + other
    );
    // The caps were really contended (the test is not vacuous).
    assert!(
        own + pooled == 6 || own + pooled + other == 9,
        "{own} {pooled} {other}"
    );
}

/// A pool cannot be used to get around the per-principal cap: its READY sandboxes count
/// against its owner's cap, however large min_ready is.
#[test]
fn pool_sandboxes_count_against_the_owners_cap() {
    let s = Server::start_with(&["--max-sandboxes-per-principal", "3"]);
    let pool = pool_create(&s, &["--min-ready", "10", "--max-ready", "10"]);
    wait_ready(&s, &pool, 3);
    std::thread::sleep(Duration::from_secs(3));
    let st = stats(&s, &pool);
    assert_eq!(num(&st, "ready"), 3, "{st}");
    assert_eq!(num(&st, "warming"), 0, "{st}");
    // A claim moves one to the owner; the pool may not refill past the cap.
    let _a = claim(&s, &pool);
    std::thread::sleep(Duration::from_secs(3));
    let st = stats(&s, &pool);
    assert_eq!(num(&st, "ready") + num(&st, "claimed"), 3, "{st}");
}

/// `exec` takes a pool's sandbox before the spawn and claims it in the command's start
/// commit (engine::pools::pending): the claim is recorded before the execution's events,
/// and a request refused after the sandbox was taken (here: the complete environment, with
/// what the server adds, is too large) gives the same pristine sandbox back to the pool —
/// not claimed, not replaced, still the one ready.
#[test]
fn exec_claims_with_its_start_and_a_refused_start_gives_the_sandbox_back() {
    let s = Server::start();
    let pool = pool_create(&s, &["--min-ready", "1", "--max-ready", "1"]);
    wait_ready(&s, &pool, 1);
    let warm = sandbox_inits(&s);
    assert_eq!(warm.len(), 1, "{warm:?}");
    // The request's own share is exactly the limit (accepted before anything is taken);
    // the sandbox's and execution's ids the server adds push it over (refused after).
    let big = format!("X={}", "a".repeat(64 * 1024 - 8 - 1));
    let o = s.run(&["exec", "-n", "-e", &big, "--", "true"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("[invalid_argument]") && stderr(&o).contains("too large"),
        "{}",
        stderr(&o)
    );
    let st = stats(&s, &pool);
    assert_eq!((num(&st, "ready"), num(&st, "claimsTotal")), (1, 0), "{st}");
    assert_eq!(
        sandbox_inits(&s),
        warm,
        "the taken sandbox was not given back"
    );
    // Nor does one refused up front.
    let o = s.run(&["exec", "-n", "-e", "1X=y", "--", "true"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert_eq!(sandbox_inits(&s), warm);
    // Now a real one: served by that sandbox, claimed, then the command.
    let o = s.run(&["exec", "-n", "--keep", "--print-sandbox-id", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = stderr(&o)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    assert_eq!(id, warm[0].0);
    assert_eq!(num(&stats(&s, &pool), "claimsTotal"), 1);
    let o = s.run(&["sandbox", "events", &id]);
    assert!(o.status.success(), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["type"].as_str().unwrap_or_default().to_string())
        .collect();
    let claim = kinds.iter().position(|k| k == "pool.claim");
    let first_exec = kinds.iter().position(|k| k.starts_with("execution."));
    assert!(
        claim.is_some() && claim < first_exec,
        "claim then execution: {kinds:?}"
    );
}
