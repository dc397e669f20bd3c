//! Through a member that does not hold the sandbox (issue 34's "Must show"), on hosts each
//! in its own network namespace (`cluster_hosts::Lab`): files up (a multi-chunk upload)
//! and down, an interactive console whose ticket names the owning host's QUIC endpoint
//! (the owner's console is bound to all of its namespace's addresses, so the owner's own
//! ticket names none and the seam must name the owner's), and an execution's output
//! stream resumed by sequence on a third member after the front door was SIGKILLed, with
//! no output lost or repeated.

use super::hosts::host_of;
use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use cleanroom_client::console as remote;
use cleanroom_client::Client;
use cleanroom_console::{read_frame, write_frame, Frame, Mode};
use cleanroom_e2e::cluster_hosts::{Lab, ALICE, CONSOLE_PORT, MALLORY};
use cleanroom_e2e::*;
use std::time::Duration;
use tokio::sync::mpsc;

/// Sandboxes created through `front` until one lands on a host other than `not_on`:
/// (id, its host).
async fn sandbox_off(lab: &Lab, front: &str, not_on: &[&str]) -> (String, String) {
    for _ in 0..12 {
        let id = tokio::task::block_in_place(|| lab.host(front).create());
        let host = host_of(&lab.etcd, &id).await.expect("bound");
        if !not_on.contains(&host.as_str()) {
            return (id, host);
        }
    }
    panic!("12 creates through {front} all landed on {not_on:?}");
}

/// Start an execution through `c`; its id.
async fn execution(c: &Client, req: CreateExecutionRequest) -> String {
    c.executions
        .create_execution(req)
        .await
        .expect("create execution")
        .into_owned()
        .execution
        .as_option()
        .expect("execution")
        .execution_id
        .clone()
}

fn block<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_a_console_work_through_a_member_that_does_not_hold_the_sandbox() {
    let lab = block(|| Lab::start(&["a", "b", "c"]));
    let (id, owner) = sandbox_off(&lab, "a", &["a"]).await;
    let front = lab.host("a");
    let owner = lab.host(&owner);

    // Upload (three 2 MiB chunks, each a routed unary call) and download through a.
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("big.bin");
    let data: Vec<u8> = (0..5 * 1024 * 1024 + 123u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&local, &data).unwrap();
    let remote_path = format!("{id}:/tmp/big.bin");
    let o = block(|| front.run(ALICE, &["cp", local.to_str().unwrap(), &remote_path]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = block(|| {
        owner.run(
            ALICE,
            &["exec", "-n", "--in", &id, "--", "wc", "-c", "/tmp/big.bin"],
        )
    });
    assert_eq!(
        stdout(&o).split_whitespace().next(),
        Some(data.len().to_string().as_str()),
        "{}",
        stderr(&o)
    );
    let back = dir.path().join("back.bin");
    let o = block(|| front.run(ALICE, &["cp", &remote_path, back.to_str().unwrap()]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read(&back).unwrap() == data, "download differs");
    // Another principal through the same member: as if there were no such sandbox.
    let o = block(|| front.run(MALLORY, &["cp", local.to_str().unwrap(), &remote_path]));
    assert_code(&o, "sandbox_not_found");
    let o = block(|| front.run(MALLORY, &["cp", &remote_path, back.to_str().unwrap()]));
    assert_code(&o, "sandbox_not_found");

    // A console through a: the execution and the ticket come from the owner, and the
    // ticket names the owner's endpoint.
    let c = front.client(ALICE).await;
    let exe = execution(
        &c,
        CreateExecutionRequest {
            sandbox_id: id.clone(),
            command: vec!["sh".into()],
            tty: true,
            tty_cols: 100,
            tty_rows: 30,
            ..Default::default()
        },
    )
    .await;
    let t = remote::ticket(&c, &id, &exe, 100, 30)
        .await
        .expect("ticket");
    assert_eq!(t.quic_endpoint, format!("{}:{CONSOLE_PORT}", owner.ip));
    // The client resolves it as it would for any server (an unspecified address would be
    // the front door's host).
    let api_host: std::net::IpAddr = front.ip.parse().unwrap();
    let addr = remote::console_addr(&t, Some(api_host)).unwrap();
    let mut con = remote::connect(&t, &exe, addr, Mode::Driver, 100, 30)
        .await
        .expect("console on the owner");
    write_frame(&mut con.send, &Frame::Input(b"echo hi-$((6*7))\n".to_vec()))
        .await
        .unwrap();
    let mut seen = String::new();
    let got = tokio::time::timeout(Duration::from_secs(30), async {
        while !seen.contains("hi-42") {
            match read_frame(&mut con.recv).await {
                Ok(Some(Frame::Output(d))) => seen.push_str(&String::from_utf8_lossy(&d)),
                other => panic!("{other:?} before the answer; saw {seen:?}"),
            }
        }
    })
    .await;
    assert!(got.is_ok(), "no answer on the console: {seen:?}");
    write_frame(&mut con.send, &Frame::Input(b"exit 7\n".to_vec()))
        .await
        .unwrap();
    let code = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match read_frame(&mut con.recv).await {
                Ok(Some(Frame::Output(_))) => continue,
                Ok(Some(Frame::Exit { exit_code, .. })) => return exit_code,
                other => panic!("no exit: {other:?}"),
            }
        }
    })
    .await
    .expect("exit in time");
    assert_eq!(code, 7);
    // Another principal gets no ticket through a (as on the owner: no such execution).
    let m = front.client(MALLORY).await;
    let e = api(remote::ticket(&m, &id, &exe, 100, 30).await).unwrap_err();
    assert_eq!(e.code, "execution_not_found", "{e:?}");
}

/// `StreamExecution` through `c`, its events handed over a channel (closed when the
/// stream ends or breaks).
async fn open(c: &Client, req: StreamExecutionRequest) -> mpsc::Receiver<ExecutionStreamEvent> {
    let mut s = c.executions.stream_execution(req).await.expect("stream");
    let (tx, rx) = mpsc::channel(4096);
    tokio::spawn(async move {
        while let Ok(Some(m)) = s.message().await {
            if tx.send(m.to_owned_message()).await.is_err() {
                return;
            }
        }
    });
    rx
}

/// Read events into `out` (stdout) and `last` (the highest sequence) until `stop` says so
/// (`Ok(None)`), the execution exits (`Ok(Some(code))`) or the stream breaks or ends
/// (`Err(())`).
async fn read_into(
    s: &mut mpsc::Receiver<ExecutionStreamEvent>,
    out: &mut Vec<u8>,
    last: &mut u64,
    stop: impl Fn(&[u8]) -> bool,
) -> Result<Option<i32>, ()> {
    while let Some(ev) = s.recv().await {
        *last = (*last).max(ev.sequence);
        match ev.payload {
            Some(Payload::Output(o)) if o.stream == OutputStream::OUTPUT_STREAM_STDOUT => {
                out.extend_from_slice(&o.data)
            }
            Some(Payload::Exit(x)) => return Ok(Some(x.exit_code)),
            _ => {}
        }
        if stop(out) {
            return Ok(None);
        }
    }
    Err(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_stream_resumes_on_another_member_after_its_front_door_dies() {
    let mut lab = block(|| Lab::start(&["a", "b", "c"]));
    // The sandbox on a, made through b; b is the front door, c the one resumed on.
    let (id, owner) = sandbox_off(&lab, "b", &["b", "c"]).await;
    assert_eq!(owner, "a");
    let b = lab.host("b").client(ALICE).await;
    let script = "for i in $(seq 1 40); do echo line-$i; sleep 0.1; done; exit 5";
    let exe = execution(
        &b,
        CreateExecutionRequest {
            sandbox_id: id.clone(),
            command: vec!["sh".into(), "-c".into(), script.into()],
            ..Default::default()
        },
    )
    .await;
    let req = |after: u64| StreamExecutionRequest {
        sandbox_id: id.clone(),
        execution_id: exe.clone(),
        after_sequence: after,
        ..Default::default()
    };
    let (mut out, mut last) = (Vec::new(), 0u64);
    let mut through_b = open(&b, req(0)).await;
    let r = read_into(&mut through_b, &mut out, &mut last, |o| {
        String::from_utf8_lossy(o).contains("line-8\n")
    })
    .await;
    assert_eq!(r, Ok(None), "{}", String::from_utf8_lossy(&out));
    // The front door dies mid-stream: what it had relayed is all this stream gives.
    block(|| lab.host_mut("b").kill9());
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        read_into(&mut through_b, &mut out, &mut last, |_| false),
    )
    .await
    .expect("the broken stream ends");
    assert_eq!(r, Err(()), "the stream through b outlived b");
    let before = String::from_utf8_lossy(&out).into_owned();
    assert!(!before.contains("line-40"), "{before}");
    // Another member resumes after the last sequence seen.
    let c = lab.host("c").client(ALICE).await;
    let mut through_c = open(&c, req(last)).await;
    let r = read_into(&mut through_c, &mut out, &mut last, |_| false).await;
    assert_eq!(r, Ok(Some(5)), "{}", String::from_utf8_lossy(&out));
    let want: String = (1..=40).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(String::from_utf8_lossy(&out), want);
}
