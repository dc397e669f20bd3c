//! Pause/resume, filesystem snapshots and fork, end to end: a real server, real sandboxes,
//! the real cgroup freezer and CPU accounting.

mod common;
use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use cleanroom_client::Client;
use common::*;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

fn assert_code(o: &Output, code: &str) {
    assert_eq!(o.status.code(), Some(125), "{}{}", stdout(o), stderr(o));
    assert!(
        stderr(o).contains(&format!("[{code}]")),
        "want {code}: {}",
        stderr(o)
    );
}

/// The sandbox's CPU time in ns, read from its own cgroup (v1 `cpuacct.usage` or v2
/// `cpu.stat usage_usec`).
fn cpu_usage(sandbox_id: &str) -> u64 {
    for dir in cgroups_named(sandbox_id) {
        if let Ok(s) = std::fs::read_to_string(dir.join("cpuacct.usage")) {
            return s.trim().parse().unwrap();
        }
        if let Ok(s) = std::fs::read_to_string(dir.join("cpu.stat")) {
            if let Some(v) = s.lines().find_map(|l| l.strip_prefix("usage_usec ")) {
                return v.trim().parse::<u64>().unwrap() * 1000;
            }
        }
    }
    panic!(
        "no CPU accounting cgroup for {sandbox_id}: {:?}",
        cgroups_named(sandbox_id)
    );
}

async fn start(c: &Client, sandbox_id: &str, script: &str) -> String {
    let req = CreateExecutionRequest {
        sandbox_id: sandbox_id.into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
        ..Default::default()
    };
    c.executions
        .create_execution(req)
        .await
        .expect("create execution")
        .into_owned()
        .execution
        .as_option()
        .unwrap()
        .execution_id
        .clone()
}

/// All stdout of a finished execution and its exit status.
async fn output_of(c: &Client, exec_id: &str) -> (String, Option<ExecutionExit>) {
    let req = StreamExecutionRequest {
        execution_id: exec_id.into(),
        ..Default::default()
    };
    let mut s = c.executions.stream_execution(req).await.expect("stream");
    let (mut out, mut exit) = (Vec::new(), None);
    while let Some(m) = s.message().await.expect("stream message") {
        let ev: ExecutionStreamEvent = m.to_owned_message();
        match ev.payload {
            Some(Payload::Output(o)) if o.stream == OutputStream::OUTPUT_STREAM_STDOUT => {
                out.extend_from_slice(&o.data)
            }
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    (String::from_utf8(out).unwrap(), exit)
}

fn status_of(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sandbox_id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["status"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_sandbox_uses_no_cpu_refuses_work_and_resumes_exactly() {
    let s = Server::start();
    let c = s.client().await;
    let sbx = s.create();
    // A busy counter: every number on stdout, until /tmp/stop exists.
    let exe = start(
        &c,
        &sbx,
        "i=0; while [ ! -e /tmp/stop ]; do i=$((i+1)); echo $i; done",
    )
    .await;
    let before = cpu_usage(&sbx);
    assert!(
        eventually(Duration::from_secs(30), || cpu_usage(&sbx)
            > before + 50_000_000),
        "the counter never ran"
    );

    let o = s.run(&["sandbox", "pause", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("PAUSED"), "{}", stdout(&o));
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");
    // Frozen: the CPU counter does not move at all.
    let frozen = cpu_usage(&sbx);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(cpu_usage(&sbx), frozen, "a paused sandbox used CPU");

    // Nothing new starts in it, and reading files is refused the same way.
    assert_code(&s.sh_in(&sbx, "touch /tmp/stop"), "sandbox_paused");
    let err = c
        .sandboxes
        .download_sandbox_file(DownloadSandboxFileRequest {
            sandbox_id: sbx.clone(),
            path: "/etc/hostname".into(),
            ..Default::default()
        })
        .await
        .expect_err("download from a paused sandbox");
    assert!(format!("{err:?}").contains("sandbox_paused"), "{err:?}");
    // Pausing again is a no-op.
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));

    // Another principal can neither pause nor resume it (nor learn that it exists).
    open_socket_to_all(&s);
    assert_code(
        &as_uid(&s, 65534, &["sandbox", "resume", &sbx]),
        "sandbox_not_found",
    );
    assert_code(
        &as_uid(&s, 65534, &["sandbox", "pause", &sbx]),
        "sandbox_not_found",
    );
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");

    let o = s.run(&["sandbox", "resume", &sbx, "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("SANDBOX_STATUS_READY"),
        "{}",
        stdout(&o)
    );
    assert!(
        eventually(Duration::from_secs(30), || cpu_usage(&sbx)
            > frozen + 50_000_000),
        "the counter did not continue after resume"
    );
    let o = s.sh_in(&sbx, "touch /tmp/stop");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, exit) = output_of(&c, &exe).await;
    assert_eq!(
        exit.expect("exit").status,
        ExecutionStatus::EXECUTION_STATUS_SUCCEEDED
    );
    // The same process continued its count: 1, 2, … with no gap and no restart.
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() > 1000, "{} lines", lines.len());
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, (i + 1).to_string(), "line {i}");
    }

    // The events show both transitions.
    let o = s.run(&["sandbox", "events", &sbx]);
    let ev = stdout(&o);
    assert!(ev.contains("SANDBOX_STATUS_PAUSED"), "{ev}");
    assert!(ev.contains("\"resumed\""), "{ev}");
}

#[test]
fn terminating_a_paused_sandbox_leaves_nothing_behind() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "sleep 1000 & echo ok",
    ]);
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_STOPPED");
    assert_no_leftovers(&s.state_dir(), &sbx);
}

#[test]
fn resume_of_a_sandbox_that_is_not_paused_is_refused_or_a_no_op() {
    let s = Server::start();
    let sbx = s.create();
    // READY: resume is a no-op.
    assert_eq!(s.run(&["sandbox", "resume", &sbx]).status.code(), Some(0));
    assert_eq!(s.run(&["sandbox", "rm", &sbx]).status.code(), Some(0));
    // STOPPED: neither can apply.
    assert_code(&s.run(&["sandbox", "pause", &sbx]), "sandbox_not_ready");
    assert_code(&s.run(&["sandbox", "resume", &sbx]), "sandbox_not_ready");
    // Garbage ids are not found.
    assert_code(
        &s.run(&["sandbox", "pause", "sbx_nope"]),
        "sandbox_not_found",
    );
    let _ = PathBuf::new();
}
