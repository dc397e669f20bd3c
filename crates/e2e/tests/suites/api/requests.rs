//! API-level behaviour through the typed client and raw HTTP: resume, restart recovery,
//! hostile requests, disconnecting clients.

use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use std::io::{Read, Write};
use std::time::Duration;

async fn create_sandbox(c: &Client) -> String {
    let r = c
        .sandboxes
        .create_sandbox(CreateSandboxRequest::default())
        .await
        .expect("create")
        .into_owned();
    r.sandbox.as_option().unwrap().sandbox_id.clone()
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

/// A fresh server with one sandbox running `script`: (server, client, sandbox, execution).
async fn running(script: &str) -> (Server, Client, String, String) {
    let s = Server::start();
    let c = s.client().await;
    let sbx = create_sandbox(&c).await;
    let exe = start(&c, &sbx, script).await;
    (s, c, sbx, exe)
}

/// Everything a StreamExecution call yields: (stdout, stderr, exit, last sequence).
async fn collect(
    c: &Client,
    exec_id: &str,
    after: u64,
    so: u64,
    se: u64,
) -> Result<(Vec<u8>, Vec<u8>, Option<ExecutionExit>, u64), ApiError> {
    let req = StreamExecutionRequest {
        execution_id: exec_id.into(),
        after_sequence: after,
        stdout_offset: so,
        stderr_offset: se,
        ..Default::default()
    };
    let mut s = c.executions.stream_execution(req).await?;
    let (mut out, mut err, mut exit, mut last) = (Vec::new(), Vec::new(), None, 0);
    let mut next_stdout_offset: Option<u64> = None;
    while let Some(m) = s.message().await? {
        let ev: ExecutionStreamEvent = m.to_owned_message();
        assert!(ev.sequence > last, "sequence must increase");
        last = ev.sequence;
        match ev.payload {
            Some(Payload::Output(o)) => {
                let buf = if o.stream == OutputStream::OUTPUT_STREAM_STDOUT {
                    &mut out
                } else {
                    &mut err
                };
                if o.stream == OutputStream::OUTPUT_STREAM_STDOUT {
                    if let Some(expected) = next_stdout_offset {
                        assert_eq!(o.offset, expected, "stdout offsets are contiguous");
                    } else if after == 0 {
                        assert_eq!(o.offset, so, "first chunk starts at the requested offset");
                    }
                    next_stdout_offset = Some(o.offset + o.data.len() as u64);
                }
                buf.extend_from_slice(&o.data);
            }
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    Ok((out, err, exit, last))
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_resumes_from_offset_and_sequence() {
    let (_s, c, _sbx, exe) =
        running("for i in $(seq 1 2000); do echo line-$i; done; echo tail >&2").await;
    let (out, err, exit, last) = collect(&c, &exe, 0, 0, 0).await.unwrap();
    let exit = exit.expect("exit event");
    assert_eq!(exit.status, ExecutionStatus::EXECUTION_STATUS_SUCCEEDED);
    assert_eq!(err, b"tail\n");
    let expected: String = (1..=2000).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(String::from_utf8(out.clone()).unwrap(), expected);

    // InspectExecution: retained tails and totals.
    let req = InspectExecutionRequest {
        execution_id: exe.clone(),
        ..Default::default()
    };
    let i = c
        .executions
        .inspect_execution(req)
        .await
        .unwrap()
        .into_owned();
    assert_eq!(i.stdout.as_bytes(), &out[..]);
    assert_eq!(
        (i.stderr.as_str(), i.stdout_bytes, i.stderr_bytes),
        ("tail\n", out.len() as u64, 5)
    );
    // From a byte offset in the middle of a chunk: exactly the remaining bytes.
    for off in [1u64, 7, 4096, out.len() as u64 - 3, out.len() as u64] {
        let (rest, _, exit2, _) = collect(&c, &exe, 0, off, 0).await.unwrap();
        assert_eq!(rest, out[off as usize..], "resume at {off}");
        assert!(exit2.is_some());
    }
    // From a sequence: nothing seen twice, nothing missed.
    let (tail_out, tail_err, exit3, last3) = collect(&c, &exe, last - 1, 0, 0).await.unwrap();
    assert!(tail_out.is_empty() && tail_err.is_empty());
    assert!(exit3.is_some());
    assert_eq!(last3, last);
    let (none, _, exit4, _) = collect(&c, &exe, last, 0, 0).await.unwrap();
    assert!(none.is_empty() && exit4.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn live_stream_then_reconnect_misses_nothing() {
    let (_s, c, _sbx, exe) = running("for i in $(seq 1 30); do echo n$i; sleep 0.02; done").await;
    // Read a few events live, drop the stream (disconnect), then resume.
    let req = StreamExecutionRequest {
        execution_id: exe.clone(),
        ..Default::default()
    };
    let mut st = c.executions.stream_execution(req).await.unwrap();
    let mut got = Vec::new();
    let mut last = 0;
    while got.len() < 5 {
        let ev: ExecutionStreamEvent = st.message().await.unwrap().unwrap().to_owned_message();
        last = ev.sequence;
        if let Some(Payload::Output(o)) = ev.payload {
            got.extend_from_slice(&o.data);
        }
    }
    drop(st);
    let (rest, _, exit, _) = collect(&c, &exe, last, 0, 0).await.unwrap();
    got.extend(rest);
    let expected: String = (1..=30).map(|i| format!("n{i}\n")).collect();
    assert_eq!(String::from_utf8(got).unwrap(), expected);
    assert!(exit.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn typed_errors_for_bad_requests() {
    let s = Server::start();
    let c = s.client().await;
    let e: ApiError = c
        .sandboxes
        .get_sandbox(GetSandboxRequest {
            sandbox_id: "sbx_nope".into(),
            ..Default::default()
        })
        .await
        .unwrap_err()
        .into();
    assert_eq!(
        (e.code.as_str(), e.connect_code.as_str()),
        ("sandbox_not_found", "not_found")
    );
    let e: ApiError = c
        .executions
        .get_execution(GetExecutionRequest {
            execution_id: "exe_00000000000000000000000000000000".into(),
            ..Default::default()
        })
        .await
        .unwrap_err()
        .into();
    assert_eq!(e.code, "execution_not_found");
    let sbx = create_sandbox(&c).await;
    for command in [vec![], vec![String::new()], vec!["a\0b".to_string()]] {
        let req = CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command,
            ..Default::default()
        };
        let e: ApiError = c.executions.create_execution(req).await.unwrap_err().into();
        assert_eq!(
            (e.code.as_str(), e.connect_code.as_str()),
            ("invalid_argument", "invalid_argument")
        );
    }
    // Oversized argv / env and bad cwd are refused before anything runs.
    for req in [
        CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["x".repeat(1024); 200],
            ..Default::default()
        },
        CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["true".into()],
            env: (0..2000).map(|i| (format!("K{i}"), "v".into())).collect(),
            ..Default::default()
        },
        CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["true".into()],
            cwd: "relative".into(),
            ..Default::default()
        },
    ] {
        let e: ApiError = c.executions.create_execution(req).await.unwrap_err().into();
        assert_eq!(e.code, "invalid_argument", "{e:?}");
    }
    let req = CreateSandboxRequest {
        policy_yaml: "version: 1\nsandbox: {bogus: 1}\n".into(),
        ..Default::default()
    };
    let e: ApiError = c.sandboxes.create_sandbox(req).await.unwrap_err().into();
    assert_eq!(e.code, "policy_invalid");
    // AttachExecution names an execution like every other execution RPC.
    let e: ApiError = c
        .executions
        .attach_execution(AttachExecutionRequest::default())
        .await
        .unwrap_err()
        .into();
    assert_eq!(
        (e.code.as_str(), e.connect_code.as_str()),
        ("execution_not_found", "not_found")
    );
    let e: ApiError = c
        .sandboxes
        .download_sandbox_file(DownloadSandboxFileRequest::default())
        .await
        .unwrap_err()
        .into();
    assert_eq!(e.code, "sandbox_not_found");
    // Writing stdin to an execution created without it.
    let exe = start(&c, &sbx, "sleep 0.2").await;
    let req = WriteExecutionStdinRequest {
        execution_id: exe,
        data: b"x".to_vec(),
        ..Default::default()
    };
    let e: ApiError = c
        .executions
        .write_execution_stdin(req)
        .await
        .unwrap_err()
        .into();
    assert_eq!(e.code, "stdin_not_attached");
    // Terminated sandbox refuses new executions.
    c.sandboxes
        .terminate_sandbox(TerminateSandboxRequest {
            sandbox_id: sbx.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let req = CreateExecutionRequest {
        sandbox_id: sbx,
        command: vec!["true".into()],
        ..Default::default()
    };
    let e: ApiError = c.executions.create_execution(req).await.unwrap_err().into();
    assert_eq!(e.code, "sandbox_not_ready");
}

/// Raw HTTP/1.1 over the unix socket: what any Connect client (or attacker) can send.
fn raw_http(sock: &std::path::Path, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let mut st = std::os::unix::net::UnixStream::connect(sock).unwrap();
    st.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nConnect-Protocol-Version: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    // The server may refuse (and close) before reading a hostile body: that is fine.
    let _ = st
        .write_all(head.as_bytes())
        .and_then(|_| st.write_all(body));
    let mut resp = Vec::new();
    let _ = st.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn malformed_bodies_get_errors_and_server_keeps_serving() {
    let s = Server::start();
    let sock = s.socket();
    let svc = "/cleanroom.v1.SandboxService/GetSandbox";
    let (code, text) = raw_http(&sock, svc, "application/json", b"{not json");
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("invalid_argument"), "{text}");
    let (code, text) = raw_http(&sock, svc, "application/json", b"{\"sandboxId\": 12}");
    assert!(code == 400, "{text}");
    let (code, text) = raw_http(
        &sock,
        svc,
        "application/proto",
        &[0xff, 0xff, 0xff, 0xff, 0x0f, 0x01],
    );
    assert!(code == 400, "{text}");
    let (code, text) = raw_http(
        &sock,
        "/cleanroom.v1.SandboxService/NoSuchMethod",
        "application/json",
        b"{}",
    );
    assert_eq!(code, 404, "{text}");
    // A valid JSON call still works and the unknown id gets a typed detail.
    let (code, text) = raw_http(
        &sock,
        svc,
        "application/json",
        b"{\"sandboxId\": \"sbx_x\"}",
    );
    assert_eq!(code, 404, "{text}");
    assert!(
        text.contains("not_found") && text.contains("cleanroom.v1.ErrorDetail"),
        "{text}"
    );
    // Huge body is refused, not buffered forever.
    let big = vec![b'a'; 8 << 20];
    let (code, _) = raw_http(&sock, svc, "application/json", &big);
    assert!(code >= 400, "oversized body accepted: {code}");
    let ok = s.sh("echo still-serving");
    assert_eq!(stdout(&ok), "still-serving\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_disconnect_mid_stream_does_not_hurt_the_server() {
    let (s, c, _sbx, exe) = running("head -c 200000000 /dev/zero").await;
    for _ in 0..3 {
        let c2 = s.client().await;
        let req = StreamExecutionRequest {
            execution_id: exe.clone(),
            ..Default::default()
        };
        let mut st = c2.executions.stream_execution(req).await.unwrap();
        let _ = st.message().await.unwrap();
        drop(st);
        drop(c2);
    }
    // The execution still completes with all its output retained.
    let (out, _, exit, _) = collect(&c, &exe, 0, 0, 0).await.unwrap();
    assert_eq!(out.len(), 200_000_000);
    // Inspect keeps only the last MiB of a huge stream, and knows the true total.
    let req = InspectExecutionRequest {
        execution_id: exe.clone(),
        ..Default::default()
    };
    let i = c
        .executions
        .inspect_execution(req)
        .await
        .unwrap()
        .into_owned();
    assert_eq!((i.stdout.len(), i.stdout_bytes), (1 << 20, 200_000_000));
    assert_eq!(
        exit.unwrap().status,
        ExecutionStatus::EXECUTION_STATUS_SUCCEEDED
    );
    let r = c
        .sandboxes
        .list_sandboxes(ListSandboxesRequest::default())
        .await
        .unwrap()
        .into_owned();
    assert_eq!(r.sandboxes.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_events_tail_lifecycle() {
    let s = Server::start();
    let c = s.client().await;
    let sbx = create_sandbox(&c).await;
    let req = StreamSandboxEventsRequest {
        sandbox_id: sbx.clone(),
        follow: true,
        ..Default::default()
    };
    let mut events = c.sandboxes.stream_sandbox_events(req).await.unwrap();
    let exe = start(&c, &sbx, "true").await;
    let _ = collect(&c, &exe, 0, 0, 0).await.unwrap();
    c.sandboxes
        .terminate_sandbox(TerminateSandboxRequest {
            sandbox_id: sbx.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut last = 0;
    while let Some(m) = tokio::time::timeout(Duration::from_secs(20), events.message())
        .await
        .unwrap()
        .unwrap()
    {
        let ev: SandboxEvent = m.to_owned_message();
        assert!(ev.sequence > last);
        last = ev.sequence;
        if ev.r#type == "sandbox.status" {
            seen.push(format!("sandbox:{}", ev.sandbox_status.to_i32()));
        } else {
            seen.push(format!("execution:{}", ev.execution_status.to_i32()));
        }
    }
    // PROVISIONING, READY, exec QUEUED/RUNNING/SUCCEEDED, STOPPING, STOPPED - in order.
    assert_eq!(
        seen,
        vec![
            "sandbox:1",
            "sandbox:2",
            "execution:1",
            "execution:2",
            "execution:3",
            "sandbox:3",
            "sandbox:4"
        ],
        "{seen:?}"
    );
}

/// Event numbers are a sandbox's own (1, 2, 3 … with no gaps): another sandbox's
/// activity — another principal's, on a shared server — never shows in them. (They used
/// to be one server-wide counter, so the gaps between your own events measured everyone
/// else's activity.)
#[tokio::test(flavor = "multi_thread")]
async fn event_sequences_are_per_sandbox() {
    let s = Server::start();
    let c = s.client().await;
    let mine = create_sandbox(&c).await;
    let other = create_sandbox(&c).await;
    for _ in 0..3 {
        let exe = start(&c, &other, "true").await;
        let _ = collect(&c, &exe, 0, 0, 0).await.unwrap();
    }
    let exe = start(&c, &mine, "true").await;
    let _ = collect(&c, &exe, 0, 0, 0).await.unwrap();
    let exe = start(&c, &other, "true").await;
    let _ = collect(&c, &exe, 0, 0, 0).await.unwrap();
    let sequences = |id: String| {
        let c = &c;
        async move {
            let req = StreamSandboxEventsRequest {
                sandbox_id: id,
                ..Default::default()
            };
            let mut events = c.sandboxes.stream_sandbox_events(req).await.unwrap();
            let mut seqs = Vec::new();
            while let Some(m) = events.message().await.unwrap() {
                seqs.push(m.to_owned_message().sequence);
            }
            seqs
        }
    };
    // PROVISIONING, READY, then QUEUED/RUNNING/SUCCEEDED of its one execution.
    assert_eq!(sequences(mine.clone()).await, [1, 2, 3, 4, 5]);
    assert_eq!(sequences(other).await, (1..=14).collect::<Vec<u64>>());
    // Resuming after a number gives the rest of this sandbox's events only.
    let req = StreamSandboxEventsRequest {
        sandbox_id: mine,
        after_sequence: 3,
        ..Default::default()
    };
    let mut events = c.sandboxes.stream_sandbox_events(req).await.unwrap();
    let mut rest = Vec::new();
    while let Some(m) = events.message().await.unwrap() {
        rest.push(m.to_owned_message().sequence);
    }
    assert_eq!(rest, [4, 5]);
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_server_restart_reclaims_and_keeps_output() {
    let mut s = Server::start();
    let (sbx, running, finished) = {
        let c = s.client().await;
        let sbx = create_sandbox(&c).await;
        let finished = start(&c, &sbx, "echo finished-output").await;
        let (out, _, _, _) = collect(&c, &finished, 0, 0, 0).await.unwrap();
        assert_eq!(out, b"finished-output\n");
        let running = start(
            &c,
            &sbx,
            "echo partial-output; echo partial-err >&2; exec sleep 1000",
        )
        .await;
        // Wait until both partial outputs are durable: a chunk the server never read from the
        // pipe before it was killed is legitimately lost, so the test must not race it.
        let req = StreamExecutionRequest {
            execution_id: running.clone(),
            ..Default::default()
        };
        let mut st = c.executions.stream_execution(req).await.unwrap();
        let (mut saw_out, mut saw_err) = (false, false);
        while !(saw_out && saw_err) {
            let ev: ExecutionStreamEvent = st.message().await.unwrap().unwrap().to_owned_message();
            if let Some(Payload::Output(o)) = ev.payload {
                if o.stream == OutputStream::OUTPUT_STREAM_STDOUT {
                    saw_out = true;
                } else {
                    saw_err = true;
                }
            }
        }
        (sbx, running, finished)
    };
    assert!(!processes_mentioning(&sbx).is_empty());
    s.kill9();
    // The sandbox dies with its server (pid 1 has a parent-death signal)...
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(&sbx)
            .is_empty()),
        "sandbox outlived its server"
    );
    // ...and a restart reconciles the rest and tells the truth about the interrupted run.
    s.spawn();
    assert_no_leftovers(&s.state_dir(), &sbx);
    let c = s.client().await;
    let sb = c
        .sandboxes
        .get_sandbox(GetSandboxRequest {
            sandbox_id: sbx.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_owned();
    assert_eq!(
        sb.sandbox.as_option().unwrap().status,
        SandboxStatus::SANDBOX_STATUS_FAILED
    );
    let ex = c
        .executions
        .get_execution(GetExecutionRequest {
            execution_id: running.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_owned();
    let ex = ex.execution.as_option().unwrap();
    assert_eq!(ex.status, ExecutionStatus::EXECUTION_STATUS_FAILED);
    assert!(ex.message.contains("server restarted"), "{}", ex.message);
    let (out, err, exit, _) = collect(&c, &running, 0, 0, 0).await.unwrap();
    assert_eq!(out, b"partial-output\n");
    assert_eq!(err, b"partial-err\n");
    assert_eq!(
        exit.unwrap().status,
        ExecutionStatus::EXECUTION_STATUS_FAILED
    );
    let (out, _, exit, _) = collect(&c, &finished, 0, 0, 0).await.unwrap();
    assert_eq!(out, b"finished-output\n");
    assert_eq!(
        exit.unwrap().status,
        ExecutionStatus::EXECUTION_STATUS_SUCCEEDED
    );
    // The server keeps working after recovery.
    let sbx2 = create_sandbox(&c).await;
    let exe = start(&c, &sbx2, "echo ok").await;
    assert_eq!(collect(&c, &exe, 0, 0, 0).await.unwrap().0, b"ok\n");
}

#[test]
fn serves_over_tcp_with_http1_json_and_h2c() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let server = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "http://127.0.0.1:0",
            "--insecure-no-auth",
        ])
        .arg("--state-dir")
        .arg(dir.path().join("state"))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    // Stopped when the test ends, passing or not.
    let server = ChildGuard(server);
    // The server prints the address it actually bound.
    let mut addr = String::new();
    assert!(eventually(Duration::from_secs(20), || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        match text
            .lines()
            .find_map(|l| l.strip_prefix("cleanroom: listening on http://"))
        {
            Some(a) => {
                addr = a.trim().to_string();
                true
            }
            None => false,
        }
    }));
    // Our client: HTTP/2 prior knowledge over TCP.
    let mut c = std::process::Command::new(BIN);
    c.env("CLEANROOM_HOST", format!("http://{addr}"))
        .args(["exec", "-n", "--", "echo", "over-tcp"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o), "over-tcp\n", "{}", stderr(&o));
    // Any HTTP/1.1 client with JSON. `exec` returned while its sandbox's teardown
    // finishes in the server (STOPPING, then STOPPED): ask until it is STOPPED.
    let list = || {
        let mut st = std::net::TcpStream::connect(&addr).unwrap();
        st.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let body = b"{\"includeStopped\": true}";
        let head = format!(
            "POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        st.write_all(head.as_bytes()).unwrap();
        st.write_all(body).unwrap();
        let mut resp = String::new();
        let _ = st.read_to_string(&mut resp);
        resp
    };
    let mut resp = list();
    for _ in 0..100 {
        if resp.contains("SANDBOX_STATUS_STOPPED") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        resp = list();
    }
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(
        resp.contains("\"sandboxes\"") && resp.contains("SANDBOX_STATUS_STOPPED"),
        "{resp}"
    );
    drop(server);
}

async fn download(
    c: &Client,
    sbx: &str,
    path: &str,
    max: u64,
) -> Result<DownloadSandboxFileResponse, ApiError> {
    let req = DownloadSandboxFileRequest {
        sandbox_id: sbx.into(),
        path: path.into(),
        max_bytes: max,
        ..Default::default()
    };
    Ok(c.sandboxes.download_sandbox_file(req).await?.into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn download_sandbox_file_stays_inside_the_sandbox() {
    let s = Server::start();
    let state_db = s.state_dir().join("state.db").display().to_string();
    let script = format!(
        "printf 'artifact\\000bytes' > /workspace/out.bin; head -c 300000 /dev/zero > /tmp/big; \
         ln -s {state_db} /tmp/host-link; ln -s ../../../../../etc/hostname /tmp/up-link; mkfifo /tmp/fifo; echo done"
    );
    let c = s.client().await;
    let sbx = create_sandbox(&c).await;
    let exe = start(&c, &sbx, &script).await;
    let (out, _, _, _) = collect(&c, &exe, 0, 0, 0).await.unwrap();
    assert_eq!(out, b"done\n");
    let f = download(&c, &sbx, "/workspace/out.bin", 0).await.unwrap();
    assert_eq!(f.content, b"artifact\0bytes");
    assert!(!f.truncated);
    let f = download(&c, &sbx, "/tmp/big", 1000).await.unwrap();
    assert_eq!((f.content.len(), f.size, f.truncated), (1000, 300000, true));
    // A symlink to a host path resolves inside the sandbox root: not found, never the host file.
    let e = download(&c, &sbx, "/tmp/host-link", 0).await.unwrap_err();
    assert_eq!(e.code, "file_not_found", "{e:?}");
    // `..` cannot climb out of the sandbox root: this is the sandbox's own /etc/hostname.
    let f = download(&c, &sbx, "/tmp/up-link", 0).await.unwrap();
    assert_eq!(
        f.size,
        std::fs::metadata("/etc/hostname")
            .map(|m| m.len())
            .unwrap_or(f.size)
    );
    for (path, code) in [
        ("/tmp/fifo", "invalid_argument"),
        ("/dev/zero", "invalid_argument"),
        ("/proc/1/root/etc/passwd", "invalid_argument"),
        ("relative", "invalid_argument"),
        ("/nope", "file_not_found"),
    ] {
        let e = download(&c, &sbx, path, 0).await.unwrap_err();
        assert_eq!(e.code, code, "{path}: {e:?}");
    }
}

/// `CreateSandbox` tells the client what the policy asks to do before the workload (the
/// CLI no longer compiles the policy for it); nothing when the policy asks for nothing.
#[tokio::test(flavor = "multi_thread")]
async fn create_sandbox_answers_the_bootstrap_plan() {
    let s = Server::start();
    let c = s.client().await;
    let create = |policy: &str| CreateSandboxRequest {
        policy_yaml: policy.into(),
        ..Default::default()
    };
    let plan = |r: CreateSandboxResponse| r.bootstrap.as_option().cloned();
    for policy in ["", "version: 1\n", "version: 1\nsandbox: {env: {A: '1'}}\n"] {
        let r = c
            .sandboxes
            .create_sandbox(create(policy))
            .await
            .expect("create");
        assert_eq!(plan(r.into_owned()), None, "{policy:?}");
    }
    let cases = [
        ("version: 1\nrepository: {}\n", "/workspace", vec![]),
        (
            "version: 1\nrepository: {path: /workspace//app/}\nsandbox:\n  dependencies:\n    command: [make, deps]\n",
            "/workspace/app",
            vec!["make", "deps"],
        ),
        (
            "version: 1\nsandbox:\n  dependencies:\n    command: [true]\n",
            "",
            vec!["true"],
        ),
    ];
    for (policy, path, argv) in cases {
        let r = c
            .sandboxes
            .create_sandbox(create(policy))
            .await
            .expect("create");
        let b = plan(r.into_owned()).expect("a bootstrap plan");
        assert_eq!(b.repository_path, path, "{policy}");
        assert_eq!(b.dependencies_command, argv, "{policy}");
    }
    // A refused policy names its code once, not again inside the message.
    for bad in ["version: 1\nsandbox: {bogus: 1}\n", "version: 7\n"] {
        let e: ApiError = c
            .sandboxes
            .create_sandbox(create(bad))
            .await
            .unwrap_err()
            .into();
        assert_eq!(e.code, "policy_invalid");
        assert!(!e.message.contains("policy_invalid"), "{}", e.message);
    }
}

/// The client crate's session: stdin pumped in, every output byte and the exit out, in
/// sequence order.
#[tokio::test(flavor = "multi_thread")]
async fn client_session_pumps_stdin_and_follows_output_to_the_exit() {
    use cleanroom_client::session::{self, ExecutionOutput, OutputEvent};
    let s = Server::start();
    let c = s.client().await;
    let sbx = create_sandbox(&c).await;
    let req = CreateExecutionRequest {
        sandbox_id: sbx.clone(),
        command: vec!["sh".into(), "-c".into(), "cat; echo err >&2; exit 3".into()],
        attach_stdin: true,
        ..Default::default()
    };
    let exe = session::create_execution(&c, req)
        .await
        .expect("create")
        .execution_id;
    let input: &[u8] = b"hello through stdin\n";
    let pump = tokio::spawn(session::pump_stdin(
        c.executions.clone(),
        sbx.clone(),
        exe.clone(),
        input,
    ));
    let mut output = ExecutionOutput::new(&c, &sbx, &exe);
    let (mut out, mut err, mut last) = (Vec::new(), Vec::new(), 0);
    let exit = loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), output.next())
            .await
            .expect("bounded")
            .expect("stream");
        assert!(output.last_sequence() > last, "sequence must grow");
        last = output.last_sequence();
        match ev.expect("an exit before the end") {
            OutputEvent::Stdout(d) => out.extend(d),
            OutputEvent::Stderr(d) => err.extend(d),
            OutputEvent::Warning { code, message } => panic!("{code}: {message}"),
            OutputEvent::Exit(x) => break x,
        }
    };
    assert!(pump.await.expect("pump"), "stdin fully taken");
    assert_eq!(out, input);
    assert_eq!(err, b"err\n");
    assert_eq!(exit.exit_code, 3);
    // Following again from the start replays the same retained output.
    let mut again = ExecutionOutput::new(&c, &sbx, &exe);
    let mut replay = Vec::new();
    while let Some(ev) = again.next().await.expect("replay") {
        match ev {
            OutputEvent::Stdout(d) => replay.extend(d),
            OutputEvent::Exit(_) => break,
            _ => {}
        }
    }
    assert_eq!(replay, input);
    // An unknown execution is refused at once, not retried.
    let e = ExecutionOutput::new(&c, &sbx, "exe_nope")
        .next()
        .await
        .expect_err("unknown execution");
    assert_eq!(e.code, "execution_not_found");
}
