//! Shared tables a tenant can fill (issue 30, class 5): every server-wide table and cap
//! has per-principal shares, and unauthenticated work is bounded per peer and in total
//! and never starves authenticated callers. Each test floods one table as one principal
//! (or as nobody) and shows that another principal is still served while the flood is
//! held. Real servers, real sandboxes, real sockets. The console's QUIC endpoint has its
//! own file (console::flood).

use cleanroom_client::api::*;
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use std::time::Duration;

const ALICE: &str = "alice-tables-token-4c6e8a0b2d4f6a8c0e1b3d5f";
const BOB: &str = "bob-tables-token-7e9a1c3e5b7d9f1a3c5e7b9d";

async fn sandbox(c: &Client) -> String {
    let r = api(c
        .sandboxes
        .create_sandbox(CreateSandboxRequest::default())
        .await)
    .expect("create sandbox")
    .into_owned();
    r.sandbox.as_option().expect("sandbox").sandbox_id.clone()
}

/// Start an upload (first chunk, not finished); its id.
async fn start_upload(c: &Client, sbx: &str, name: &str) -> Result<String, ApiError> {
    let req = WriteSandboxFileRequest {
        sandbox_id: sbx.into(),
        path: format!("/workspace/{name}"),
        data: b"x".to_vec(),
        ..Default::default()
    };
    api(c.files.write_sandbox_file(req).await).map(|r| r.into_owned().upload_id)
}

async fn cancel(c: &Client, sbx: &str, upload_id: &str) -> Result<(), ApiError> {
    let req = CancelSandboxUploadRequest {
        sandbox_id: sbx.into(),
        upload_id: upload_id.into(),
        ..Default::default()
    };
    api(c.files.cancel_sandbox_upload(req).await).map(|_| ())
}

fn tokens_server(dir: &tempfile::TempDir, extra: &[&str]) -> TcpServer {
    let tokens = write_tokens(
        dir.path(),
        &[(ALICE, "alice", "user"), (BOB, "bob", "user")],
    );
    let mut args = vec!["--tokens-file", tokens.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    TcpServer::start("http", &args)
}

/// Alice opens uploads in every sandbox she may have until the server says no; Bob can
/// still start one, while all of Alice's are held. On the pre-fix server Alice's flood is
/// only bounded by the server-wide table (1,024 = her 64 sandboxes × 16): here she is
/// refused at her share long before, with the table's other shares left to others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_principal_cannot_fill_the_upload_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir, &[]);
    let alice = client_as(&s.addr, ALICE).await;
    let bob = client_as(&s.addr, BOB).await;
    // 16 uploads per sandbox; 6 sandboxes hold 96, more than a share (64) and far less
    // than the table (1,024).
    let mut mine = Vec::new();
    for _ in 0..6 {
        mine.push(sandbox(&alice).await);
    }
    let mut held = Vec::new();
    let mut refused = None;
    'flood: for sbx in &mine {
        for n in 0..16 {
            match start_upload(&alice, sbx, &format!("f{n}")).await {
                Ok(id) => held.push((sbx.clone(), id)),
                Err(e) => {
                    refused = Some(e);
                    break 'flood;
                }
            }
        }
    }
    let e = refused.unwrap_or_else(|| {
        panic!(
            "alice opened {} uploads and was never refused: one principal can fill the table",
            held.len()
        )
    });
    assert_eq!(e.code, "resource_exhausted", "{e:?}");
    assert!(e.message.contains("per principal"), "{e:?}");
    assert_eq!(held.len(), 64, "alice's share");

    // While every one of Alice's uploads is held, Bob starts one and finishes it.
    let theirs = sandbox(&bob).await;
    let t0 = std::time::Instant::now();
    let id = start_upload(&bob, &theirs, "bob")
        .await
        .expect("bob is served");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let req = WriteSandboxFileRequest {
        sandbox_id: theirs.clone(),
        upload_id: id.clone(),
        offset: 1,
        finish: true,
        ..Default::default()
    };
    let done = api(bob.files.write_sandbox_file(req).await).expect("finish");
    assert!(done.into_owned().finished);

    // Alice's share frees as her uploads end.
    let (sbx, first) = held.remove(0);
    cancel(&alice, &sbx, &first).await.expect("cancel");
    start_upload(&alice, &mine[5], "again")
        .await
        .expect("a freed slot of the share is usable again");
}

/// `CancelSandboxUpload` with an upload id that is not the caller's (through the
/// caller's own sandbox), unknown or already finished is `upload_not_found`, and the
/// owner's upload is untouched. Before the fix, another principal's id answered ok.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_of_another_principals_upload_is_not_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir, &[]);
    let alice = client_as(&s.addr, ALICE).await;
    let bob = client_as(&s.addr, BOB).await;
    let theirs = sandbox(&alice).await;
    let mine = sandbox(&bob).await;
    let id = start_upload(&alice, &theirs, "partial")
        .await
        .expect("upload");
    for (sbx, upload) in [
        (mine.as_str(), id.as_str()),
        (mine.as_str(), "upl_0000000000000000000000000000000a"),
        (mine.as_str(), "not-an-id"),
    ] {
        let e = cancel(&bob, sbx, upload)
            .await
            .expect_err("must be refused");
        assert_eq!(e.code, "upload_not_found", "{upload}: {e:?}");
    }
    // Alice's own: her cancel works once, then the id is gone for her too.
    cancel(&alice, &theirs, &id).await.expect("owner cancels");
    let e = cancel(&alice, &theirs, &id)
        .await
        .expect_err("already gone");
    assert_eq!(e.code, "upload_not_found", "{e:?}");
}

/// Raise this process's descriptor limit to its hard limit (a flood holds >1,000
/// sockets).
fn raise_nofile() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid, owned rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// `n` connections from `from` (another loopback address than the clients under test)
/// to `addr`, each sending the start of a request without a token and holding it; a
/// connection the server closes is opened again after `again`. Runs until `stop`;
/// returns how many connections were opened in all.
fn half_open_flood(
    addr: std::net::SocketAddr,
    from: std::net::IpAddr,
    n: usize,
    again: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<usize>> {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    (0..n)
        .map(|_| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut opened = 0;
                while !stop.load(Ordering::SeqCst) {
                    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
                    sock.bind(std::net::SocketAddr::new(from, 0)).expect("bind");
                    let conn =
                        tokio::time::timeout(Duration::from_secs(5), sock.connect(addr)).await;
                    if let Ok(Ok(mut s)) = conn {
                        opened += 1;
                        let head = format!(
                            "POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n"
                        );
                        if s.write_all(head.as_bytes()).await.is_ok() {
                            // Held until the server closes it (or the test ends).
                            let mut buf = [0u8; 256];
                            loop {
                                tokio::select! {
                                    r = s.read(&mut buf) => match r {
                                        Ok(0) | Err(_) => break,
                                        Ok(_) => continue,
                                    },
                                    _ = tokio::time::sleep(Duration::from_millis(200)) => {
                                        if stop.load(Ordering::SeqCst) {
                                            return opened;
                                        }
                                    }
                                }
                            }
                        }
                    }
                    tokio::time::sleep(again).await;
                }
                opened
            })
        })
        .collect()
}

/// ~1,150 half-open TCP requests without a token, held (and re-opened as soon as the
/// server closes them): an authenticated client on a fresh connection is still answered
/// at once, call after call, while the flood goes on. Before the fix the listener's one
/// semaphore (1,024, taken at accept) filled up and every caller waited for the flood's
/// header timeout (30 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn half_open_tcp_flood_does_not_stall_authenticated_callers() {
    raise_nofile();
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir, &[]);
    let addr: std::net::SocketAddr = s.addr.parse().expect("addr");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let from: std::net::IpAddr = "127.0.0.2".parse().expect("ip");
    let flood = half_open_flood(addr, from, 1150, Duration::from_millis(500), stop.clone());
    // Let the flood arrive and settle in.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for round in 0..5 {
        let t0 = std::time::Instant::now();
        let call = async {
            let bob = client_as(&s.addr, BOB).await;
            api(bob
                .sandboxes
                .list_sandboxes(ListSandboxesRequest::default())
                .await)
        };
        // Far less than the flood's own timeout (the 30 s header timeout).
        let r = tokio::time::timeout(Duration::from_secs(10), call).await;
        let took = t0.elapsed();
        assert!(
            matches!(r, Ok(Ok(_))),
            "round {round}: an authenticated caller was not answered during the flood ({took:?}): {:?}",
            r.map(|r| r.map(|_| ()))
        );
        eprintln!("round {round}: answered in {took:?} during the flood");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // A caller without a token on another address is still answered too (401), not
    // stalled: the flood only ever evicts the flooder's own connections.
    let addr_s = s.addr.clone();
    let unauth = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut st = std::net::TcpStream::connect(&addr_s).expect("connect");
        st.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let body = "{}";
        let head = format!(
            "POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: {addr_s}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        st.write_all(head.as_bytes()).expect("write");
        let mut resp = String::new();
        let _ = st.read_to_string(&mut resp);
        resp
    })
    .await
    .expect("join");
    assert!(unauth.starts_with("HTTP/1.1 401"), "{unauth}");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut opened = 0;
    for h in flood {
        opened += h.await.unwrap_or(0);
    }
    eprintln!("the flood opened {opened} connections");
    assert!(opened >= 1150, "the flood ran: {opened}");
}

/// One local user (uid 4242) opens 1,100 connections to the unix socket and holds them
/// without a request; another user (uid 4243) and root are still served at once. Before
/// the fix the listener's one cap (1,024) filled up and accepting paused until the
/// flood's idle timeout (120 s); now a uid holds at most its share (an eighth).
#[test]
fn one_local_user_cannot_fill_the_unix_socket() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    raise_nofile();
    let s = Server::start();
    open_socket_to_all(&s);
    let script = r#"
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect(sys.argv[1])
        held.append(c)
    except OSError:
        c.close()
print("held", len(held), flush=True)
sys.stdin.read()
"#;
    let mut flood = Command::new("setpriv");
    flood
        .args([
            "--reuid=4242",
            "--regid=4242",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
        ])
        .arg(script)
        .arg(s.socket())
        .arg("1100")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut flood = ChildGuard(flood.spawn().expect("python3 under setpriv"));
    let mut line = String::new();
    BufReader::new(flood.0.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("flood reports");
    assert!(line.starts_with("held "), "{line:?}");
    eprintln!("flood: {}", line.trim());
    // Another user, then root: answered far sooner than the flood's idle timeout.
    for round in 0..3 {
        let t0 = std::time::Instant::now();
        let mut c = Command::new("setpriv");
        c.args(["--reuid=4243", "--regid=4243", "--clear-groups"])
            .arg(BIN)
            .args(["sandbox", "ls"])
            .env("CLEANROOM_HOST", s.host())
            .env("HOME", "/nonexistent")
            .env_remove("XDG_CONFIG_HOME")
            .current_dir("/");
        let o = output_with_timeout(c, Duration::from_secs(20));
        assert_eq!(
            o.status.code(),
            Some(0),
            "round {round}: uid 4243 not served during the flood ({:?}): {}",
            t0.elapsed(),
            stderr(&o)
        );
        let o = s.run(&["sandbox", "ls"]);
        assert_eq!(o.status.code(), Some(0), "root: {}", stderr(&o));
        eprintln!(
            "round {round}: served in {:?} during the flood",
            t0.elapsed()
        );
    }
    // The flood is still held (its process is alive with its sockets open).
    assert!(flood.0.try_wait().expect("wait").is_none());
}

/// The pre-authentication deadline closes a connection that made no authenticated
/// request in time; a client that connected early and calls later simply reconnects,
/// and a connection that authenticated is not subject to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preauth_deadline_spares_authenticated_and_late_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir, &["--api-preauth-timeout", "1"]);
    let early = client_as(&s.addr, ALICE).await;
    let busy = client_as(&s.addr, BOB).await;
    api(busy
        .sandboxes
        .list_sandboxes(ListSandboxesRequest::default())
        .await)
    .expect("bob");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // Alice's connection was closed unauthenticated: her first call reconnects.
    let r = tokio::time::timeout(
        Duration::from_secs(10),
        early
            .sandboxes
            .list_sandboxes(ListSandboxesRequest::default()),
    )
    .await;
    assert!(matches!(r, Ok(Ok(_))), "{:?}", r.map(|r| r.map(|_| ())));
    // Bob's authenticated connection lives on past the deadline.
    api(busy
        .sandboxes
        .list_sandboxes(ListSandboxesRequest::default())
        .await)
    .expect("bob again");
    // A raw connection that never authenticates is closed at the deadline.
    let addr = s.addr.clone();
    let closed = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let mut st = std::net::TcpStream::connect(&addr).expect("connect");
        st.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let t0 = std::time::Instant::now();
        let mut buf = [0u8; 64];
        let n = st.read(&mut buf).unwrap_or(0);
        (n, t0.elapsed())
    })
    .await
    .expect("join");
    assert_eq!(closed.0, 0, "closed without an answer");
    assert!(closed.1 < Duration::from_secs(5), "{:?}", closed.1);
}

/// One authenticated request on a fresh keep-alive connection; the connection (held
/// open) and the start of the answer.
fn authenticated_keepalive(addr: &str, token: &str) -> (std::net::TcpStream, String) {
    use std::io::{Read, Write};
    let mut st = std::net::TcpStream::connect(addr).expect("connect");
    st.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let head = format!(
        "POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    st.write_all(head.as_bytes()).expect("write");
    let mut buf = vec![0u8; 4096];
    let n = st.read(&mut buf).unwrap_or(0);
    (st, String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Alice holds authenticated connections up to her share of `--api-max-connections`
/// (an eighth: 8 of 64 here); the next is refused with `resource_exhausted`, and Bob is
/// still served while hers are held. Before the fix one principal could hold them all.
#[test]
fn authenticated_connections_have_a_share_per_principal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir, &["--api-max-connections", "64"]);
    let mut held = Vec::new();
    let mut refused = None;
    for _ in 0..64 {
        let (st, resp) = authenticated_keepalive(&s.addr, ALICE);
        if resp.starts_with("HTTP/1.1 200") {
            held.push(st);
        } else {
            refused = Some(resp);
            break;
        }
    }
    let resp = refused.unwrap_or_else(|| {
        panic!(
            "alice held {} authenticated connections, never refused",
            held.len()
        )
    });
    assert_eq!(held.len(), 8, "alice's share");
    assert!(resp.starts_with("HTTP/1.1 429"), "{resp}");
    assert!(resp.contains("resource_exhausted"), "{resp}");
    let (_bob, resp) = authenticated_keepalive(&s.addr, BOB);
    assert!(
        resp.starts_with("HTTP/1.1 200"),
        "bob while alice's are held: {resp}"
    );
    // One of hers closed: her share has room again.
    held.pop();
    assert!(eventually(Duration::from_secs(5), || {
        authenticated_keepalive(&s.addr, ALICE)
            .1
            .starts_with("HTTP/1.1 200")
    }));
}
