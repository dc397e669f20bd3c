//! The console's session tickets against a real server (TCP with two token principals)
//! and its real QUIC endpoint: a ticket works once, only for its execution, only for a
//! short time, only for its principal's executions; driver and viewer attaches; terminal
//! output lands in the durable log.

use cleanroom_client::api::*;
use cleanroom_client::console as remote;
use cleanroom_client::{ApiError, Client};
use cleanroom_console::{read_frame, write_frame, Frame, Mode};
use cleanroom_e2e::*;
use std::time::Duration;

const ALICE: &str = "alice-token-5d1f3b7a9c2e4f6a8b0d1e3f5a7c9b2d";
const BOB: &str = "bob-token-8a6c4e2f0b9d7f5a3c1e2b4d6f8a0c9e";

async fn sandbox(c: &Client) -> String {
    let r = c
        .sandboxes
        .create_sandbox(CreateSandboxRequest::default())
        .await
        .expect("create sandbox")
        .into_owned();
    r.sandbox.as_option().expect("sandbox").sandbox_id.clone()
}

async fn start(c: &Client, sbx: &str, argv: &[&str], tty: bool) -> String {
    let req = CreateExecutionRequest {
        sandbox_id: sbx.to_string(),
        command: argv.iter().map(|s| s.to_string()).collect(),
        tty,
        tty_cols: 100,
        tty_rows: 30,
        ..Default::default()
    };
    let r = c
        .executions
        .create_execution(req)
        .await
        .expect("create execution");
    r.into_owned()
        .execution
        .as_option()
        .expect("execution")
        .execution_id
        .clone()
}

async fn attach(
    c: &Client,
    exe: &str,
    hello_exe: &str,
    mode: Mode,
) -> Result<remote::Console, ApiError> {
    let t = remote::ticket(c, "", exe, 100, 30).await?;
    let addr = remote::console_addr(&t, None)?;
    remote::connect(&t, hello_exe, addr, mode, 100, 30).await
}

/// Read frames until the accumulated output contains `needle` (bounded); returns it.
async fn until_output(con: &mut remote::Console, needle: &str) -> String {
    let mut seen = String::new();
    let r = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match read_frame(&mut con.recv).await {
                Ok(Some(Frame::Output(d))) => {
                    seen.push_str(&String::from_utf8_lossy(&d));
                    if seen.contains(needle) {
                        return;
                    }
                }
                other => panic!("no {needle:?} before {other:?}; saw {seen:?}"),
            }
        }
    })
    .await;
    assert!(r.is_ok(), "no {needle:?} in time; saw {seen:?}");
    seen
}

/// Read frames until the exit; returns the exit code.
async fn until_exit(con: &mut remote::Console) -> i32 {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match read_frame(&mut con.recv).await {
                Ok(Some(Frame::Output(_))) => continue,
                Ok(Some(Frame::Exit { exit_code, .. })) => return exit_code,
                other => panic!("no exit: {other:?}"),
            }
        }
    })
    .await
    .expect("exit in time")
}

async fn type_in(con: &mut remote::Console, text: &str) {
    write_frame(&mut con.send, &Frame::Input(text.as_bytes().to_vec()))
        .await
        .expect("input");
}

fn refused(r: Result<remote::Console, ApiError>) -> ApiError {
    match r {
        Ok(_) => panic!("attach was accepted"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_tickets_are_single_use_bound_and_short_lived() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[(ALICE, "alice", "user"), (BOB, "bob", "user")],
    );
    let s = TcpServer::start(
        "http",
        &[
            "--tokens-file",
            tokens.to_str().unwrap(),
            "--console-token-ttl-secs",
            "2",
        ],
    );
    let alice = client_as(&s.addr, ALICE).await;
    let bob = client_as(&s.addr, BOB).await;
    let sbx = sandbox(&alice).await;
    let exe = start(&alice, &sbx, &["sh"], true).await;
    let other = start(&alice, &sbx, &["sh"], true).await;

    // A good ticket: a driver types, the guest's shell answers on its terminal.
    let t = remote::ticket(&alice, "", &exe, 100, 30).await.unwrap();
    assert!(t.session_token.len() >= 64 && t.expires_at.is_set());
    assert_eq!(t.alpn, cleanroom_console::ALPN);
    assert_eq!(t.server_cert_pin_sha256.len(), 64);
    let addr = remote::console_addr(&t, None).unwrap();
    let mut driver = remote::connect(&t, &exe, addr, Mode::Driver, 100, 30)
        .await
        .unwrap();
    type_in(
        &mut driver,
        "echo $((6*7)); [ -t 0 ] && echo TTY-$((1+1))\r",
    )
    .await;
    until_output(&mut driver, "TTY-2").await;

    // Reused: the ticket was consumed by the first hello.
    let e = refused(remote::connect(&t, &exe, addr, Mode::Driver, 100, 30).await);
    assert_eq!(e.code, "unauthenticated", "{e:?}");
    assert!(e.message.contains("already used"), "{e:?}");

    // Wrong execution: a ticket for `exe` naming `other` (and then burned).
    let t2 = remote::ticket(&alice, "", &exe, 100, 30).await.unwrap();
    let e = refused(remote::connect(&t2, &other, addr, Mode::Driver, 100, 30).await);
    assert_eq!(e.code, "unauthenticated");
    assert!(e.message.contains("another execution"), "{e:?}");
    let e = refused(remote::connect(&t2, &exe, addr, Mode::Driver, 100, 30).await);
    assert!(e.message.contains("already used"), "{e:?}");

    // A wrong token for a real session: refused, and the session is gone.
    let mut t3 = remote::ticket(&alice, "", &exe, 100, 30).await.unwrap();
    let good = t3.session_token.clone();
    let flipped = if good.starts_with('0') { "1" } else { "0" };
    t3.session_token = format!("{flipped}{}", &good[1..]);
    let e = refused(remote::connect(&t3, &exe, addr, Mode::Driver, 100, 30).await);
    assert!(e.message.contains("wrong session token"), "{e:?}");
    t3.session_token = good;
    let e = refused(remote::connect(&t3, &exe, addr, Mode::Driver, 100, 30).await);
    assert!(e.message.contains("already used"), "{e:?}");

    // Expired: the server was told tickets live 2 s.
    let t4 = remote::ticket(&alice, "", &exe, 100, 30).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let e = refused(remote::connect(&t4, &exe, addr, Mode::Driver, 100, 30).await);
    assert!(e.message.contains("expired"), "{e:?}");

    // Another principal: Bob cannot get a ticket for Alice's execution (no existence
    // oracle), and Bob's ticket for his own execution does not open Alice's.
    let e = remote::ticket(&bob, "", &exe, 100, 30).await.unwrap_err();
    assert_eq!(e.code, "execution_not_found", "{e:?}");
    let e = remote::ticket(&bob, &sbx, &exe, 100, 30).await.unwrap_err();
    assert_eq!(e.code, "execution_not_found", "{e:?}");
    let bob_sbx = sandbox(&bob).await;
    let bob_exe = start(&bob, &bob_sbx, &["sh"], true).await;
    let tb = remote::ticket(&bob, "", &bob_exe, 100, 30).await.unwrap();
    let e = refused(remote::connect(&tb, &exe, addr, Mode::Driver, 100, 30).await);
    assert_eq!(e.code, "unauthenticated");
    // A forged session id or garbage hello.
    let mut forged = remote::ticket(&bob, "", &bob_exe, 100, 30).await.unwrap();
    forged.session_id = "ses_0000".into();
    let e = refused(remote::connect(&forged, &bob_exe, addr, Mode::Driver, 100, 30).await);
    assert_eq!(e.code, "unauthenticated");

    // A batch execution has no terminal.
    let batch = start(&alice, &sbx, &["sleep", "30"], false).await;
    let e = remote::ticket(&alice, "", &batch, 100, 30)
        .await
        .unwrap_err();
    assert_eq!(e.code, "execution_not_interactive", "{e:?}");

    // A viewer sees the same terminal (the replayed screen included) but cannot type.
    let mut viewer = attach(&alice, &exe, &exe, Mode::Viewer).await.unwrap();
    until_output(&mut viewer, "TTY-2").await;
    type_in(&mut viewer, "touch /tmp/viewer-typed\r").await;
    type_in(
        &mut driver,
        "stty size; ls /tmp/viewer-typed || echo NOT-$((2+3))-TYPED\r",
    )
    .await;
    let seen = until_output(&mut driver, "NOT-5-TYPED").await;
    assert!(seen.contains("30 100"), "{seen:?}");
    // Resize from the driver: the guest sees the new size.
    write_frame(&mut driver.send, &Frame::Resize { cols: 91, rows: 17 })
        .await
        .unwrap();
    type_in(&mut driver, "stty size\r").await;
    until_output(&mut driver, "17 91").await;
    until_output(&mut viewer, "17 91").await;

    // Re-attach after a dropped client: the replay shows what happened before.
    drop(driver);
    let mut again = attach(&alice, &exe, &exe, Mode::Driver).await.unwrap();
    until_output(&mut again, "17 91").await;
    type_in(&mut again, "exit 7\r").await;
    assert_eq!(until_exit(&mut again).await, 7);
    assert_eq!(until_exit(&mut viewer).await, 7);

    // The terminal output is in the durable log.
    let r = alice
        .executions
        .inspect_execution(InspectExecutionRequest {
            execution_id: exe.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_owned();
    let out = &r.stdout;
    assert!(out.contains("42") && out.contains("TTY-2"), "{out:?}");
    let ex = r.execution.as_option().unwrap();
    assert_eq!((ex.exit_code, ex.tty), (7, true));
    assert_eq!(ex.kind, ExecutionKind::EXECUTION_KIND_INTERACTIVE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_signal_frames_and_endpoint_shutdown() {
    let mut s = Server::start();
    let c = s.client().await;
    let sbx = sandbox(&c).await;
    let exe = start(&c, &sbx, &["sleep", "100"], true).await;
    let mut con = attach(&c, &exe, &exe, Mode::Driver).await.unwrap();
    // Signals outside the allowed set are ignored; SIGTERM ends the process group.
    write_frame(&mut con.send, &Frame::Signal(libc::SIGSTOP as u8))
        .await
        .unwrap();
    write_frame(&mut con.send, &Frame::Signal(libc::SIGTERM as u8))
        .await
        .unwrap();
    assert_eq!(until_exit(&mut con).await, 128 + libc::SIGTERM);

    // The server stops within seconds with a console attached, and the client sees the
    // connection end.
    let exe = start(&c, &sbx, &["sh"], true).await;
    let mut con = attach(&c, &exe, &exe, Mode::Driver).await.unwrap();
    type_in(&mut con, "echo up\r").await;
    until_output(&mut con, "up").await;
    let t0 = std::time::Instant::now();
    s.stop();
    assert!(s.child.is_none());
    let r = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match read_frame(&mut con.recv).await {
                Ok(Some(Frame::Output(_))) => continue,
                other => {
                    return other.is_err()
                        || matches!(other, Ok(None) | Ok(Some(Frame::Exit { .. })))
                }
            }
        }
    })
    .await;
    assert_eq!(r.ok(), Some(true));
    eprintln!("server stopped in {:?}", t0.elapsed());
}
