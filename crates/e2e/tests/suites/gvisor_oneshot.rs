//! The one-shot gVisor `exec` (`crates/backend/src/gvisor/oneshot.rs`): a sandbox made for
//! one command starts its container with that command — one `runsc run` instead of
//! `run --detach` plus `exec` — and must behave exactly as one started the usual way.
//! Each test compares with the usual path (`exec --in` a created sandbox) where a
//! behaviour is observable, and checks that nothing is left behind. Skipped (with a
//! message) without `runsc`.

use cleanroom_client::api::*;
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_e2e::*;
use std::time::{Duration, Instant};

fn have_runsc() -> bool {
    Runtime::Gvisor.available()
}

/// `exec --runtime gvisor` (one-shot) of `script`, with stdin.
fn one_shot(s: &Server, extra: &[&str], script: &str, stdin: &str) -> std::process::Output {
    let mut c = s.cli();
    c.args(["exec", "--runtime", "gvisor"])
        .args(extra)
        .args(["--", "sh", "-c", script]);
    with_stdin(c, stdin)
}

/// The same through the usual path: `exec --in` a sandbox started with the idle init.
fn usual(s: &Server, id: &str, extra: &[&str], script: &str, stdin: &str) -> std::process::Output {
    let mut c = s.cli();
    c.args(["exec", "--in", id])
        .args(extra)
        .args(["--", "sh", "-c", script]);
    with_stdin(c, stdin)
}

fn with_stdin(mut c: std::process::Command, input: &str) -> std::process::Output {
    use std::io::Write;
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("cli");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    child.wait_with_output().expect("cli output")
}

fn runsc_root(s: &Server) -> std::path::PathBuf {
    s.state_dir().join("gvisor").join("runsc")
}

/// No container state in the server's runsc root and no runsc process using it.
fn assert_no_runsc_left(s: &Server) {
    let needle = runsc_root(s).to_string_lossy().into_owned();
    assert!(
        eventually(Duration::from_secs(20), || processes_mentioning(&needle)
            .is_empty()),
        "runsc processes left: {:?}",
        processes_mentioning(&needle)
    );
    let left = || -> Vec<_> {
        std::fs::read_dir(runsc_root(s))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default()
    };
    assert!(
        eventually(Duration::from_secs(20), || left().is_empty()),
        "runsc state left: {:?}",
        left()
    );
}

/// The sandbox a one-shot exec made (`--print-sandbox-id` puts it first on stderr).
fn sandbox_of(o: &std::process::Output) -> String {
    stderr(o)
        .split_whitespace()
        .find(|w| w.starts_with("sbx_"))
        .unwrap_or_else(|| panic!("no sandbox id in: {}", stderr(o)))
        .to_string()
}

/// Output, errors, exit codes (a signal's too), stdin, environment, working directory and
/// limits read the same as through `exec --in`; pid 1 is the one-shot init (so the path
/// under test is the one taken) with the idle init's environment; nothing is left.
#[test]
fn a_one_shot_exec_behaves_as_the_usual_start_and_leaves_nothing() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let id = s.create_on(Runtime::Gvisor, &[]);
    let cases: &[(&[&str], &str, &str)] = &[
        (&[], "echo out; echo err >&2; exit 7", ""),
        (&[], "kill -TERM $$", ""),
        (&[], "exit 143", ""),
        (&[], "read a; echo got:$a; cat", "line1\nrest\n"),
        (
            &["-e", "FOO=bar", "--cwd", "/tmp"],
            "echo $FOO; pwd; echo $HOME; ulimit -u; id -u; cat /sys/fs/cgroup/pids/pids.max",
            "",
        ),
        (&[], "exec /no/such/command", ""),
        (&[], "sleep 2 & echo bg", ""),
    ];
    for (extra, script, input) in cases {
        let (a, b) = (
            one_shot(&s, extra, script, input),
            usual(&s, &id, extra, script, input),
        );
        assert_eq!(
            (a.status.code(), stdout(&a)),
            (b.status.code(), stdout(&b)),
            "{script}: one-shot stderr {} / usual stderr {}",
            stderr(&a),
            stderr(&b)
        );
        assert_eq!(stderr(&a).is_empty(), stderr(&b).is_empty(), "{script}");
    }
    // The path under test is taken: pid 1 is the one-shot init, with no more of the
    // command's environment than the idle init has.
    let o = one_shot(
        &s,
        &["--print-sandbox-id", "-e", "SECRETISH=1"],
        "tr '\\0' ' ' < /proc/1/cmdline; echo; tr '\\0' '\\n' < /proc/1/environ",
        "",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("__gvisor-init first"), "{out}");
    assert!(!out.contains("SECRETISH"), "{out}");
    let made = sandbox_of(&o);
    assert_no_leftovers(&s.state_dir(), &made);
    s.run(&["sandbox", "rm", &id]);
    assert_no_leftovers(&s.state_dir(), &id);
    assert_no_runsc_left(&s);
}

/// `exec --timeout` on a one-shot: the signals reach the command's whole process group
/// (a shell ignoring TERM and its background children), the exec returns at the timeout
/// with the usual path's code, and the sandbox goes with nothing left.
#[test]
fn a_timed_out_one_shot_loses_its_whole_group_and_leaves_nothing() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let id = s.create_on(Runtime::Gvisor, &[]);
    let script = "trap '' TERM; sleep 300 & sleep 301 & wait";
    let t = Instant::now();
    let a = one_shot(&s, &["--print-sandbox-id", "--timeout", "2"], script, "");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    let b = usual(&s, &id, &["--timeout", "2"], script, "");
    assert_ne!(a.status.code(), Some(0), "{}", stderr(&a));
    assert_eq!(
        a.status.code(),
        b.status.code(),
        "{} / {}",
        stderr(&a),
        stderr(&b)
    );
    assert_no_leftovers(&s.state_dir(), &sandbox_of(&a));
    s.run(&["sandbox", "rm", &id]);
    assert_no_runsc_left(&s);
}

async fn drain(output: &mut ExecutionOutput<'_>) -> (Vec<u8>, i32) {
    let mut out = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), output.next())
            .await
            .expect("bounded")
            .expect("stream")
            .expect("an exit before the end");
        match ev {
            OutputEvent::Stdout(d) => out.extend(d),
            OutputEvent::Exit(x) => return (out, x.exit_code),
            _ => {}
        }
    }
}

fn run_request(script: &str, terminate_on_exit: bool) -> RunExecutionRequest {
    RunExecutionRequest {
        execution: CreateExecutionRequest {
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..Default::default()
        }
        .into(),
        create: CreateSandboxRequest {
            no_pool: true,
            runtime: "gvisor".into(),
            ..Default::default()
        }
        .into(),
        terminate_on_exit,
        ..Default::default()
    }
}

/// The sandbox outlives its one-shot command exactly as a usual one does: a caller that
/// went away before the end keeps a READY sandbox (no teardown behind its back), and
/// calls made while the command runs (files, another execution) reach it — each
/// waits for the container's start when it comes first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_sandbox_serves_other_calls_and_outlives_its_command() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let c = s.client().await;
    let started = ExecutionOutput::run(
        &c,
        run_request(
            "while [ ! -e /workspace/go ]; do sleep 0.1; done; cat /workspace/go; \
             while [ ! -e /workspace/go2 ]; do sleep 0.1; done; echo later > /tmp/later",
            true,
        ),
    )
    .await
    .expect("run");
    let sbx = started.sandbox.sandbox_id.clone();
    let (_, mut output) = started.execution.expect("started");
    // Right after `started`: the container may still be on its way.
    let tmp = tempfile::tempdir().unwrap();
    let up = tmp.path().join("go");
    std::fs::write(&up, "files reached it\n").unwrap();
    let o = s.run(&["cp", up.to_str().unwrap(), &format!("{sbx}:/workspace/go")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.sh_in(&sbx, "echo second");
    assert_eq!(stdout(&o), "second\n", "{}", stderr(&o));
    match tokio::time::timeout(Duration::from_secs(30), output.next()).await {
        Ok(Ok(Some(OutputEvent::Stdout(d)))) => assert_eq!(d, b"files reached it\n"),
        other => panic!("{other:?}"),
    }
    // Detach before the end: terminate_on_exit is not carried out.
    drop(output);
    let o = s.sh_in(&sbx, "touch /workspace/go2");
    assert!(o.status.success(), "{}", stderr(&o));
    let mut later = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        later = stdout(&s.sh_in(&sbx, "cat /tmp/later 2>/dev/null"));
        if later == "later\n" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let probe = s.sh_in(
        &sbx,
        "ls -la /workspace /tmp; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done",
    );
    assert_eq!(
        later,
        "later\n",
        "the command ran to its end, the sandbox lives on: {} {}",
        stdout(&probe),
        stderr(&probe)
    );
    let o = s.run(&["sandbox", "inspect", &sbx]);
    assert!(stdout(&o).contains("READY"), "{}", stdout(&o));
    s.run(&["sandbox", "rm", &sbx]);
    assert_no_leftovers(&s.state_dir(), &sbx);

    // Attached to the end: the exit, then the teardown the call asked for.
    let started = ExecutionOutput::run(&c, run_request("echo done; exit 3", true))
        .await
        .expect("run");
    let sbx = started.sandbox.sandbox_id.clone();
    let (_, mut output) = started.execution.expect("started");
    let (out, code) = drain(&mut output).await;
    assert_eq!((out.as_slice(), code), (&b"done\n"[..], 3));
    assert!(output.finished().await.is_some());
    assert_no_leftovers(&s.state_dir(), &sbx);
    assert_no_runsc_left(&s);
}

/// A `runsc` that fails to start a one-shot container (and only that): the exec fails,
/// the sandbox is torn down, and nothing of it is left — no runsc state or process, no
/// bundle, no mounts or cgroups.
#[test]
fn a_one_shot_that_fails_to_start_leaves_nothing() {
    if !have_runsc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("runsc"))
        .find(|p| p.is_file())
        .expect("runsc");
    let wrapper = dir.path().join("runsc");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n# Fails the one-shot start (the only run with --pass-fd).\n\
             case \"$*\" in *--pass-fd*) echo 'refused by the test' >&2; exit 1;; esac\n\
             exec {} \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Server::start_with(&["--runsc", wrapper.to_str().unwrap()]);
    let o = one_shot(&s, &["--print-sandbox-id"], "echo never", "");
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("never"), "{}", stdout(&o));
    assert_no_leftovers(&s.state_dir(), &sandbox_of(&o));
    assert_no_runsc_left(&s);
    // Only the one-shot start failed: the usual one goes through the same wrapper.
    let id = s.create_on(Runtime::Gvisor, &[]);
    assert_eq!(stdout(&s.sh_in(&id, "echo fine")), "fine\n");
    s.run(&["sandbox", "rm", &id]);
    assert_no_runsc_left(&s);
}

/// A server SIGKILLed while a one-shot command runs: the next start reclaims its sandbox
/// (runsc state, processes, bundle, cgroups, mounts).
#[test]
fn a_one_shot_survives_nothing_of_a_server_sigkill_and_restart() {
    if !have_runsc() {
        return;
    }
    let mut s = Server::start();
    let mut c = s.cli();
    c.args([
        "exec",
        "-n",
        "--print-sandbox-id",
        "--runtime",
        "gvisor",
        "--",
        "sh",
        "-c",
        "echo up; sleep 300",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let needle = runsc_root(&s).to_string_lossy().into_owned();
    assert!(
        eventually(Duration::from_secs(30), || {
            let o = s.run(&["sandbox", "ls", "-o", "json"]);
            stdout(&o).contains("sbx_") && !processes_mentioning(&needle).is_empty()
        }),
        "the one-shot never started"
    );
    let o = s.run(&["sandbox", "ls", "-o", "json"]);
    let id = stdout(&o)
        .split('"')
        .find(|w| w.starts_with("sbx_"))
        .expect("a sandbox")
        .to_string();
    s.kill9();
    let _ = child.kill();
    let _ = child.wait();
    s.spawn();
    assert_no_leftovers(&s.state_dir(), &id);
    assert_no_runsc_left(&s);
}
