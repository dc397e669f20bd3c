//! `RunExecution`: make (or take) a sandbox, run a command and stream it in one call — what
//! `cleanroom exec` uses. Real server, real sandboxes, the typed client.

use cleanroom_client::api::*;
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use std::time::Duration;

fn command(script: &str) -> CreateExecutionRequest {
    CreateExecutionRequest {
        command: vec!["sh".into(), "-c".into(), script.into()],
        ..Default::default()
    }
}

fn made_here(script: &str, terminate_on_exit: bool) -> RunExecutionRequest {
    RunExecutionRequest {
        execution: command(script).into(),
        create: CreateSandboxRequest {
            no_pool: true,
            ..Default::default()
        }
        .into(),
        terminate_on_exit,
        ..Default::default()
    }
}

async fn status(c: &Client, sandbox_id: &str) -> SandboxStatus {
    let req = GetSandboxRequest {
        sandbox_id: sandbox_id.into(),
        ..Default::default()
    };
    let r = c
        .sandboxes
        .get_sandbox(req)
        .await
        .expect("get")
        .into_owned();
    r.sandbox
        .as_option()
        .expect("sandbox")
        .status
        .as_known()
        .expect("known status")
}

async fn execution(c: &Client, id: &str) -> Execution {
    let req = GetExecutionRequest {
        execution_id: id.into(),
        ..Default::default()
    };
    let r = c
        .executions
        .get_execution(req)
        .await
        .expect("get")
        .into_owned();
    r.execution.as_option().expect("execution").clone()
}

/// Everything the output says up to the exit: (stdout, stderr, exit).
async fn drain(output: &mut ExecutionOutput<'_>) -> (Vec<u8>, Vec<u8>, ExecutionExit) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), output.next())
            .await
            .expect("bounded")
            .expect("stream")
            .expect("an exit before the end");
        match ev {
            OutputEvent::Stdout(d) => out.extend(d),
            OutputEvent::Stderr(d) => err.extend(d),
            OutputEvent::Warning { code, message } => panic!("{code}: {message}"),
            OutputEvent::Exit(x) => return (out, err, x),
        }
    }
}

/// `finished` carries the server's own time for the call: at least the command's run, at
/// most what the caller waited for the record.
#[tokio::test(flavor = "multi_thread")]
async fn the_final_record_carries_the_servers_time_for_the_call() {
    let s = Server::start();
    let c = s.client().await;
    let t = std::time::Instant::now();
    let started = ExecutionOutput::run(&c, made_here("sleep 0.3", true))
        .await
        .expect("run");
    let (_, mut output) = started.execution.expect("the command was started");
    let (_, _, exit) = drain(&mut output).await;
    assert_eq!(exit.exit_code, 0);
    assert!(output.finished().await.is_some(), "finished record");
    let waited = t.elapsed().as_micros() as u64;
    let server = output
        .server_time_us()
        .expect("the finished event's server time");
    assert!(
        (300_000..=waited).contains(&server),
        "server time {server} µs: the command's 300 ms at least, the caller's {waited} µs at most"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn one_call_makes_runs_streams_records_and_tears_down() {
    let s = Server::start();
    let c = s.client().await;
    let req = made_here("echo out; echo err >&2; exit 7", true);
    let started = ExecutionOutput::run(&c, req).await.expect("run");
    assert!(started.created, "the call made the sandbox");
    assert!(started.bootstrap.is_none());
    let sbx = started.sandbox.sandbox_id.clone();
    assert!(sbx.starts_with("sbx_"), "{sbx:?}");
    let (exe, mut output) = started.execution.expect("the command was started");
    assert_eq!(exe.sandbox_id, sbx);
    let (out, err, exit) = drain(&mut output).await;
    assert_eq!(
        (out.as_slice(), err.as_slice()),
        (&b"out\n"[..], &b"err\n"[..])
    );
    assert_eq!(exit.exit_code, 7);
    // The final record comes after the exit, already final (no polling), without tails.
    let fin = output.finished().await.expect("finished record");
    let e = fin.execution.as_option().expect("execution");
    assert_eq!(e.execution_id, exe.execution_id);
    assert_eq!(e.exit_code, 7);
    assert_eq!(
        e.status.as_known(),
        Some(ExecutionStatus::EXECUTION_STATUS_FAILED)
    );
    assert!(e.finished_at.is_set(), "finished_at is in the final record");
    assert_eq!((fin.stdout.as_str(), fin.stderr.as_str()), ("", ""));
    assert_eq!((fin.stdout_bytes, fin.stderr_bytes), (4, 4));
    // The server tears the sandbox down by itself: no TerminateSandbox call.
    let mut stopped = false;
    for _ in 0..100 {
        let st = status(&c, &sbx).await;
        if st == SandboxStatus::SANDBOX_STATUS_STOPPED {
            stopped = true;
            break;
        }
        assert_eq!(
            st,
            SandboxStatus::SANDBOX_STATUS_STOPPING,
            "only going down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(stopped, "torn down after the exit");
    assert_no_leftovers(&s.state_dir(), &sbx);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_goes_away_leaves_sandbox_and_execution_running() {
    let s = Server::start();
    let c = s.client().await;
    // terminate_on_exit asked for, but the caller detaches before the end.
    let req = made_here("echo ready; sleep 1; echo done > /tmp/done", true);
    let started = ExecutionOutput::run(&c, req).await.expect("run");
    let sbx = started.sandbox.sandbox_id.clone();
    let (exe, mut output) = started.execution.expect("started");
    match output.next().await.expect("stream") {
        Some(OutputEvent::Stdout(d)) => assert_eq!(d, b"ready\n"),
        other => panic!("{other:?}"),
    }
    drop(output); // detach
    let exe_id = exe.execution_id.clone();
    let mut ended = false;
    for _ in 0..100 {
        if execution(&c, &exe_id).await.finished_at.is_set() {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ended, "the command ran to its end without the caller");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        status(&c, &sbx).await,
        SandboxStatus::SANDBOX_STATUS_READY,
        "a detached caller's sandbox is never torn down behind its back"
    );
    let o = s.sh_in(&sbx, "cat /tmp/done");
    assert_eq!(stdout(&o), "done\n", "{}", stderr(&o));
}

#[tokio::test(flavor = "multi_thread")]
async fn runs_in_an_existing_sandbox_and_refuses_what_it_cannot_do() {
    let s = Server::start();
    let c = s.client().await;
    let sbx = s.create();
    let mut exec = command("echo in-place");
    exec.sandbox_id = sbx.clone();
    let req = RunExecutionRequest {
        execution: exec.clone().into(),
        ..Default::default()
    };
    let started = ExecutionOutput::run(&c, req).await.expect("run in place");
    assert!(!started.created);
    assert_eq!(started.sandbox.sandbox_id, sbx);
    let (_, mut output) = started.execution.expect("started");
    let (out, _, exit) = drain(&mut output).await;
    assert_eq!((out.as_slice(), exit.exit_code), (&b"in-place\n"[..], 0));
    assert!(output.finished().await.is_some());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&c, &sbx).await, SandboxStatus::SANDBOX_STATUS_READY);

    let code = |r: Result<_, ApiError>| match r {
        Ok(_) => panic!("refused expected"),
        Err(e) => e.code,
    };
    // Tearing down (or making) a sandbox the call did not make is not its business.
    let req = RunExecutionRequest {
        execution: exec.clone().into(),
        terminate_on_exit: true,
        ..Default::default()
    };
    assert_eq!(
        code(ExecutionOutput::run(&c, req).await.map(|_| ())),
        "invalid_argument"
    );
    // Unknown sandbox: not found, nothing made.
    let mut ghost = exec.clone();
    ghost.sandbox_id = "sbx_00000000000000000000000000000000".into();
    let req = RunExecutionRequest {
        execution: ghost.into(),
        ..Default::default()
    };
    assert_eq!(
        code(ExecutionOutput::run(&c, req).await.map(|_| ())),
        "sandbox_not_found"
    );
    // A policy the server refuses: nothing made.
    let mut req = made_here("true", true);
    req.create = CreateSandboxRequest {
        policy_yaml: "sandbox: [not, a, mapping".into(),
        ..Default::default()
    }
    .into();
    assert_eq!(
        code(ExecutionOutput::run(&c, req).await.map(|_| ())),
        "policy_invalid"
    );
    // A command refused on its own (no command at all) is refused before anything is made.
    let listed = || {
        let o = s.run(&["sandbox", "ls", "--all", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v.as_array().map(Vec::len).unwrap_or_default()
    };
    let before = listed();
    let mut req = made_here("true", true);
    req.execution = CreateExecutionRequest::default().into(); // no command
    let e = match ExecutionOutput::run(&c, req).await {
        Ok(_) => panic!("an empty command is refused"),
        Err(e) => e,
    };
    assert_eq!(e.code, "invalid_argument", "{e:?}");
    assert!(!e.details.iter().any(|(k, _)| k == "sandbox_id"), "{e:?}");
    assert_eq!(
        listed(),
        before,
        "nothing made for a command refused up front"
    );
    // A command that cannot be accepted once the sandbox exists (its environment, with
    // what the server adds for that sandbox, is too large): the error names the sandbox,
    // and the sandbox made for it is torn down.
    let mut req = made_here("true", true);
    let mut big = command("true");
    big.env.insert("X".into(), "a".repeat(64 * 1024 - 8 - 1)); // the request's share: the limit
    req.execution = big.into();
    let e = match ExecutionOutput::run(&c, req).await {
        Ok(_) => panic!("a too large environment is refused"),
        Err(e) => e,
    };
    assert_eq!(e.code, "invalid_argument", "{e:?}");
    let made = e
        .details
        .iter()
        .find(|(k, _)| k == "sandbox_id")
        .map(|(_, v)| v.clone())
        .expect("the error names the sandbox it made");
    assert!(
        eventually(Duration::from_secs(10), || {
            let o = s.run(&["sandbox", "inspect", &made, "-o", "json"]);
            stdout(&o).contains("STOPPED")
        }),
        "the sandbox made for a refused command is torn down"
    );
    assert_no_leftovers(&s.state_dir(), &made);
}
