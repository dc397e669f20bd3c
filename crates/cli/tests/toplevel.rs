//! Seed 000's top-level verbs: `cleanroom create` (keeps the sandbox, prints its id),
//! `cleanroom inspect <typeid>` (dispatch on the prefix), `-o json` on read commands.

use cleanroom_e2e::*;

fn json(o: &std::process::Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

#[test]
fn create_inspect_and_output_json() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    // No repository policy here: the built-in one; the sandbox stays READY.
    let mut c = s.cli();
    c.current_dir(dir.path()).args(["create"]);
    let o = output_with_timeout(c, std::time::Duration::from_secs(60));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));

    let o = s.run(&["inspect", &sbx, "-o", "json"]);
    let v = json(&o);
    assert_eq!(v["sandboxId"], sbx.as_str());
    assert_eq!(v["status"], "SANDBOX_STATUS_READY");
    let o = s.run(&["inspect", &sbx]);
    assert!(stdout(&o).contains(&sbx), "{}", stdout(&o));

    let o = s.sh_in(&sbx, "echo typed");
    assert_eq!(stdout(&o), "typed\n");
    let o = s.run(&["-o", "json", "sandbox", "inspect", &sbx]);
    let exe = json(&o)["lastExecutionId"].as_str().unwrap().to_string();
    let v = json(&s.run(&["inspect", &exe, "-o", "json"]));
    assert_eq!(v["execution"]["executionId"], exe.as_str());
    assert_eq!(v["stdout"], "typed\n");
    let o = s.run(&["inspect", &exe]);
    assert!(stdout(&o).contains("typed"), "{}", stdout(&o));

    // -o json on the list commands too.
    let v = json(&s.run(&["sandbox", "ls", "-o", "json"]));
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["sandboxId"] == sbx.as_str()));
    assert!(json(&s.run(&["image", "ls", "-o", "json"])).is_array());

    // Unknown prefixes and unknown ids: stable codes.
    let o = s.run(&["inspect", "snap_123"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    let o = s.run(&["inspect", "sbx_0000"]);
    assert!(stderr(&o).contains("[sandbox_not_found]"), "{}", stderr(&o));
    let o = s.run(&["inspect", "exe_0000"]);
    assert!(
        stderr(&o).contains("[execution_not_found]"),
        "{}",
        stderr(&o)
    );
    s.run(&["sandbox", "rm", &sbx]);
}

#[test]
fn status_browses_what_exec_retained() {
    let s = Server::start();
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = s.cli();
        c.env("XDG_STATE_HOME", state.path()).args(args);
        output_with_timeout(c, std::time::Duration::from_secs(60))
    };
    let o = run(&["status", "--last"]);
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    let o = run(&[
        "exec",
        "-n",
        "--",
        "sh",
        "-c",
        "echo out-$((1+1)); echo err >&2; exit 3",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let o = run(&["status", "--last"]);
    let text = stdout(&o);
    assert!(
        text.contains("status:       EXECUTION_STATUS_FAILED"),
        "{text}"
    );
    assert!(
        text.contains("exit_code:    3") && text.contains("out-2"),
        "{text}"
    );
    assert!(text.contains("trace_id:"), "{text}");
    assert!(text.contains("--- stderr (tail) ---\nerr\n"), "{text}");
    let v = json(&run(&["status", "--last", "-o", "json"]));
    let exe = v["execution"]["executionId"].as_str().unwrap().to_string();
    assert_eq!(v["execution"]["exitCode"], 3);
    let dir = state.path().join("cleanroom/executions").join(&exe);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    assert_eq!(
        std::fs::read_to_string(dir.join("stdout.txt")).unwrap(),
        "out-2\n"
    );
    // By id, and the list; hostile ids are refused.
    let o = run(&["status", "--execution-id", &exe]);
    assert!(stdout(&o).contains(&exe));
    assert!(stdout(&run(&["status"])).contains(&exe));
    for bad in ["exe_../../etc", "../x", "exe_nope"] {
        let o = run(&["status", "--execution-id", bad]);
        assert_eq!(o.status.code(), Some(125), "{bad}");
    }
    // A run whose client dies while the command runs keeps a record that says so (the
    // record is written when the command starts).
    let mut c = s.cli();
    c.env("XDG_STATE_HOME", state.path())
        .args(["exec", "-n", "--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut client = c.spawn().unwrap();
    let runs = state.path().join("cleanroom/executions");
    // Started: its directory holds execution.json (which appears whole, renamed into
    // place — the directory alone exists a moment earlier).
    let started = || {
        std::fs::read_dir(&runs)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|n| *n != exe && runs.join(n).join("execution.json").exists())
    };
    assert!(
        eventually(std::time::Duration::from_secs(30), || started().is_some()),
        "no record while the command runs"
    );
    client.kill().unwrap();
    client.wait().unwrap();
    let killed = started().unwrap();
    let o = run(&["status", "--execution-id", &killed]);
    let text = stdout(&o);
    assert!(
        text.contains("status:       EXECUTION_STATUS_RUNNING") && text.contains("sleep"),
        "{text}{}",
        stderr(&o)
    );
}

#[test]
fn sandbox_create_allow_all_and_docker() {
    let s = Server::start();
    // --docker: refused before anything is created, with the capability named.
    let o = s.run(&["sandbox", "create", "--docker"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[backend_capability_mismatch]"),
        "{}",
        stderr(&o)
    );
    assert!(json(&s.run(&["sandbox", "ls", "-o", "json"]))
        .as_array()
        .unwrap()
        .is_empty());
    // --dangerously-allow-all: the sandbox's policy is exactly the allow-all one.
    let o = s.run(&["sandbox", "create", "--dangerously-allow-all"]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "allow.yaml",
        "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n",
    );
    let expected = stdout(&s.run(&["policy", "check", &file]))
        .trim()
        .to_string();
    let v = json(&s.run(&["inspect", &sbx, "-o", "json"]));
    assert!(
        expected.contains(v["policyHash"].as_str().unwrap()),
        "{expected} vs {v}"
    );
    // It cannot be combined with --policy.
    let o = s.run(&[
        "sandbox",
        "create",
        "--dangerously-allow-all",
        "--policy",
        &file,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    s.run(&["sandbox", "rm", &sbx]);
}

/// Every command that prints ends quietly when its reader goes away (`cleanroom status |
/// head`): exit 141 like a filter killed by SIGPIPE, never a panic with a backtrace. The
/// pipe's read end is closed before the command starts, so its first write fails.
#[test]
fn commands_end_quietly_on_a_closed_pipe() {
    let s = Server::start();
    let sbx = s.create();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("cleanroom.yaml"),
        "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com}]\n",
    )
    .unwrap();
    let mut c = s.cli();
    c.args(["exec", "-n", "--in", &sbx, "--", "echo", "retained"])
        .env("XDG_STATE_HOME", home.path());
    let o = output_with_timeout(c, std::time::Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = {
        let o = s.run(&["snapshot", "create", &sbx]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    let cases: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["status", "--last"],
        vec!["--help"],
        vec!["sandbox", "ls", "-a"],
        vec!["-o", "json", "sandbox", "ls", "-a"],
        vec!["sandbox", "inspect", &sbx],
        vec!["sandbox", "events", &sbx],
        vec!["inspect", &sbx],
        vec!["snapshot", "ls"],
        vec!["snapshot", "inspect", &snap],
        vec!["image", "ls"],
        vec!["pool", "ls"],
        vec!["policy", "show"],
        vec!["execution", "inspect", "--sandbox-id", &sbx, "--last"],
    ];
    for args in cases {
        let (r, w) = nix::unistd::pipe().unwrap();
        drop(r);
        let mut c = s.cli();
        c.args(&args)
            .current_dir(home.path())
            .env("XDG_STATE_HOME", home.path())
            .stdout(std::process::Stdio::from(w))
            .stderr(std::process::Stdio::piped());
        // Not `output_with_timeout`: it would replace stdout with a pipe it reads.
        let o = c.spawn().unwrap().wait_with_output().unwrap();
        let err = stderr(&o);
        assert!(
            !err.contains("panicked") && o.status.code() != Some(101),
            "{args:?}: {:?} {err}",
            o.status
        );
        assert!(
            matches!(o.status.code(), Some(141) | Some(0)),
            "{args:?}: {:?} {err}",
            o.status
        );
    }
}

/// The server's log written to a file is plain text: no terminal colour codes.
#[test]
fn server_log_to_a_file_has_no_colour_codes() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let log = s.log();
    assert!(log.contains("INFO"), "{log}");
    assert!(!log.contains('\x1b'), "{log}");
}

/// Issue 31 item 13: retained runs are per user, servers are many. `status --last` is the
/// newest run of the server the CLI talks to, a run of another server says so, and a run
/// recorded as RUNNING is never shown as running from the record alone.
#[test]
fn status_tells_servers_apart_and_never_trusts_a_stale_running() {
    let a = Server::start();
    let mut b = Server::start();
    let state = tempfile::tempdir().unwrap();
    let run = |s: &Server, args: &[&str]| {
        let mut c = s.cli();
        c.env("XDG_STATE_HOME", state.path()).args(args);
        output_with_timeout(c, std::time::Duration::from_secs(60))
    };
    let o = run(&a, &["exec", "-n", "--", "echo", "from-a"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a_run = json(&run(&a, &["status", "--last", "-o", "json"]))["execution"]["executionId"]
        .as_str()
        .unwrap()
        .to_string();
    // A run on B whose client dies while it runs, then B dies too: its record says RUNNING.
    let mut c = b.cli();
    c.env("XDG_STATE_HOME", state.path())
        .args(["exec", "-n", "--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut client = c.spawn().unwrap();
    let runs = state.path().join("cleanroom/executions");
    // A record is complete once both files are in place: the `server` file is written
    // first, then execution.json is renamed in (retained.rs::write_record). Waiting for
    // only one of them raced the client's kill (seen once in CI: an empty `status`).
    let b_started = || {
        std::fs::read_dir(&runs)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.path().join("server").exists() && e.path().join("execution.json").exists()
            })
            .map(|e| e.file_name().to_string_lossy().to_string())
            .find(|n| *n != a_run)
    };
    assert!(
        eventually(std::time::Duration::from_secs(30), || b_started().is_some()),
        "no record while the command runs"
    );
    client.kill().unwrap();
    client.wait().unwrap();
    let b_run = b_started().unwrap();
    // While B lives, asking B shows what B says.
    let o = run(&b, &["status", "--last"]);
    assert!(stdout(&o).contains(&b_run), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("(asked the server now)"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    b.kill9();

    // A's newest run, not B's newer one.
    let o = run(&a, &["status", "--last"]);
    let text = stdout(&o);
    assert!(text.contains(&a_run) && text.contains("from-a"), "{text}");
    assert!(
        text.contains(&format!("server:       {}", a.host())),
        "{text}"
    );
    let v = json(&run(&a, &["status", "--last", "-o", "json"]));
    assert_eq!(v["server"], a.host().as_str());
    // B's run through A: unknown, naming B.
    let o = run(&a, &["status", "--execution-id", &b_run]);
    let text = stdout(&o);
    assert!(!text.contains("EXECUTION_STATUS_RUNNING\n"), "{text}");
    assert!(
        text.contains(&format!(
            "status:       unknown — recorded EXECUTION_STATUS_RUNNING on the server at {}",
            b.host()
        )),
        "{text}"
    );
    // Through B's own (dead) address: unknown, it cannot say.
    let o = run(&b, &["status", "--execution-id", &b_run]);
    assert!(
        stdout(&o).contains("which cannot say now"),
        "{}",
        stdout(&o)
    );
    let v = json(&run(
        &b,
        &["status", "--execution-id", &b_run, "-o", "json"],
    ));
    assert_eq!(v["execution"]["status"], "EXECUTION_STATUS_UNSPECIFIED");
    assert!(v["statusUnknown"].as_str().unwrap().contains("unknown"));
    // The list marks other servers' runs.
    let o = run(&a, &["status"]);
    assert!(
        stdout(&o).contains(&format!("{b_run}  (server {})", b.host())),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).lines().any(|l| l == a_run), "{}", stdout(&o));
}
