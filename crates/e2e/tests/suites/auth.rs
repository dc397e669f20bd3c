//! Authentication and ownership: every listener identifies its caller, and a principal
//! sees only its own sandboxes and executions (admins see all). Real servers on real
//! sockets; other local users are real uids (`setpriv`), TLS is real rustls with a CA
//! generated per test.

use cleanroom_client::api::*;
use cleanroom_client::endpoint::Endpoint;
use cleanroom_client::{ApiError, Client};
use cleanroom_e2e::*;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const ALICE: &str = "alice-token-7f3c9a1e5b2d4f6a8c0e1b3d5f7a9c2e";
const BOB: &str = "bob-token-2e4a6c8e0b1d3f5a7c9e1b2d4f6a8c0e";
const OPS: &str = "ops-token-9c7a5e3b1d2f4a6c8e0b2d4f6a8c1e3b";

/// `cleanroom serve` with these arguments must refuse to start; returns its stderr.
fn serve_refused(listen: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Command::new(BIN);
    c.args(["serve", "--listen", listen, "--state-dir"])
        .arg(dir.path().join("state"))
        .args(extra)
        .env_remove("CLEANROOM_TOKENS_FILE");
    // A server that starts never exits on its own: the bounded wait fails the test.
    let o = output_with_timeout(c, Duration::from_secs(30));
    assert_eq!(
        o.status.code(),
        Some(125),
        "{listen} {extra:?}: {}",
        stderr(&o)
    );
    stderr(&o)
}

#[test]
fn tcp_listener_refuses_to_start_without_authentication() {
    // No credentials: refused, on any address.
    for listen in [
        "http://127.0.0.1:0",
        "http://localhost:0",
        "http://0.0.0.0:0",
    ] {
        let err = serve_refused(listen, &[]);
        assert!(
            err.contains("[auth_config_invalid]") && err.contains("--insecure-no-auth"),
            "{err}"
        );
    }
    // --insecure-no-auth only on loopback.
    let err = serve_refused("http://0.0.0.0:0", &["--insecure-no-auth"]);
    assert!(err.contains("loopback"), "{err}");
    // Token files that others can read, that are not ours, or that hold plaintext.
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(dir.path(), &[(ALICE, "alice", "user")]);
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    let t = tokens.display().to_string();
    let err = serve_refused("http://127.0.0.1:0", &["--tokens-file", &t]);
    assert!(err.contains("chmod 600"), "{err}");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&tokens, Some(65534), None).unwrap();
    let err = serve_refused("http://127.0.0.1:0", &["--tokens-file", &t]);
    assert!(err.contains("owned by uid 65534"), "{err}");
    std::os::unix::fs::chown(&tokens, Some(0), None).unwrap();
    for bad in [
        format!("{ALICE} alice user\n"),
        format!("sha256:{} uid:1000 user\n", token_hash(ALICE)),
        format!("sha256:{} alice root\n", token_hash(ALICE)),
        "# only a comment\n".to_string(),
    ] {
        std::fs::write(&tokens, bad).unwrap();
        let err = serve_refused("http://127.0.0.1:0", &["--tokens-file", &t]);
        assert!(err.contains("[auth_config_invalid]"), "{err}");
    }
    // https:// needs a certificate; --client-ca needs https://.
    serve_refused("https://127.0.0.1:0", &["--insecure-no-auth"]);
    let pki = write_test_pki(dir.path(), "carol");
    let ca = pki[0].display().to_string();
    let err = serve_refused("http://127.0.0.1:0", &["--client-ca", &ca]);
    assert!(err.contains("https"), "{err}");

    // The explicit escape hatch on loopback works (development only).
    let s = TcpServer::start("http", &["--insecure-no-auth"]);
    let o = s.run(None, &["exec", "-n", "--", "echo", "open"]);
    assert_eq!(stdout(&o), "open\n", "{}", stderr(&o));
}

/// Hex sha256 of raw bytes.
fn token_hash_bytes(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// POST a JSON body over raw HTTP/1.1 with an optional Authorization header.
fn raw_post(addr: &str, method: &str, body: &str, authorization: Option<&str>) -> String {
    let mut st = std::net::TcpStream::connect(addr).unwrap();
    st.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "POST /cleanroom.v1.{method} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    st.write_all(head.as_bytes()).unwrap();
    let mut resp = String::new();
    let _ = st.read_to_string(&mut resp);
    resp
}

fn inspect_json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("json")
}

#[test]
fn bearer_tokens_authenticate_and_principals_see_only_their_own() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        tmp.path(),
        &[
            (ALICE, "alice", "user"),
            (BOB, "bob", "user"),
            (OPS, "ops", "admin"),
        ],
    );
    let s = TcpServer::start("http", &["--tokens-file", &tokens.display().to_string()]);

    // No token, a wrong token, the stored hash instead of the token: unauthenticated.
    for token in [None, Some("not-a-token"), Some(token_hash(ALICE).as_str())] {
        assert_code(&s.run(token, &["sandbox", "ls"]), "unauthenticated");
        assert_code(
            &s.run(token, &["exec", "-n", "--", "true"]),
            "unauthenticated",
        );
    }
    // Any HTTP client: missing, malformed or non-Bearer credentials get 401.
    for auth in [
        None,
        Some("Basic YWxpY2U6eA=="),
        Some("Bearer"),
        Some("bearer x"),
        Some("Bearer not-a-token"),
    ] {
        let resp = raw_post(&s.addr, "SandboxService/ListSandboxes", "{}", auth);
        assert!(resp.starts_with("HTTP/1.1 401"), "{auth:?}: {resp}");
        assert!(resp.contains("unauthenticated"), "{resp}");
    }
    let ok = raw_post(
        &s.addr,
        "SandboxService/ListSandboxes",
        "{}",
        Some(&format!("Bearer {ALICE}")),
    );
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");

    // Alice's sandbox, with a file and an execution.
    let o = s.run(Some(ALICE), &["sandbox", "create"]);
    let a = stdout(&o).trim().to_string();
    assert!(a.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(
        Some(ALICE),
        &[
            "exec",
            "-n",
            "--in",
            &a,
            "--",
            "sh",
            "-c",
            "echo alice-data > /workspace/f; echo hi",
        ],
    );
    assert_eq!(stdout(&o), "hi\n", "{}", stderr(&o));
    let exe = inspect_json(&s.run(Some(ALICE), &["sandbox", "inspect", "--json", &a]))
        ["lastExecutionId"]
        .as_str()
        .unwrap()
        .to_string();

    // Bob: every way of naming Alice's sandbox answers exactly like a missing one.
    for args in [
        vec!["sandbox", "inspect", a.as_str()],
        vec!["sandbox", "events", a.as_str()],
        vec!["sandbox", "rm", a.as_str()],
        vec![
            "exec",
            "-n",
            "--in",
            a.as_str(),
            "--",
            "cat",
            "/workspace/f",
        ],
        vec!["execution", "inspect", "--sandbox-id", a.as_str(), "--last"],
    ] {
        assert_code(&s.run(Some(BOB), &args), "sandbox_not_found");
    }
    assert_code(
        &s.run(Some(BOB), &["execution", "inspect", &exe]),
        "execution_not_found",
    );
    let ls = s.run(Some(BOB), &["sandbox", "ls", "--all", "--json"]);
    assert!(!stdout(&ls).contains(&a), "{}", stdout(&ls));
    // Naming his own sandbox with Alice's execution answers like a made-up execution id.
    let o = s.run(Some(BOB), &["sandbox", "create"]);
    let b = stdout(&o).trim().to_string();
    assert!(b.starts_with("sbx_"), "{}", stderr(&o));
    let made_up = format!("exe_{}", "0".repeat(32));
    let body_of = |id: &str| {
        let resp = raw_post(
            &s.addr,
            "ExecutionService/GetExecution",
            &format!(r#"{{"sandboxId":"{b}","executionId":"{id}"}}"#),
            Some(&format!("Bearer {BOB}")),
        );
        let body = resp.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        // The binary detail embeds the id too: compare its size, which any extra detail
        // (such as which sandbox the execution really belongs to) would change.
        let body = body.replace(id, "ID");
        match body.split_once("\"value\":\"") {
            Some((head, rest)) => {
                let (value, tail) = rest.split_once('"').unwrap_or((rest, ""));
                format!("{head}<{} bytes>{tail}", value.len())
            }
            None => body,
        }
    };
    let (mine, fake) = (body_of(&exe), body_of(&made_up));
    assert!(mine.contains("execution_not_found"), "{mine}");
    assert_eq!(mine, fake, "the answers must not differ");

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // Streaming RPCs are authenticated too.
        let anonymous = Client::connect(&Endpoint::Http(s.addr.clone()))
            .await
            .expect("connect");
        let events = async {
            let mut st = anonymous
                .sandboxes
                .stream_sandbox_events(StreamSandboxEventsRequest {
                    sandbox_id: a.clone(),
                    ..Default::default()
                })
                .await?;
            while st.message().await?.is_some() {}
            Ok::<(), ApiError>(())
        };
        assert_eq!(
            events.await.err().map(|e| e.code).as_deref(),
            Some("unauthenticated")
        );
        let alice = client_as(&s.addr, ALICE).await;
        let bob = client_as(&s.addr, BOB).await;
        // A running execution of Alice's, with stdin attached.
        let running = alice
            .executions
            .create_execution(CreateExecutionRequest {
                sandbox_id: a.clone(),
                command: vec!["sleep".into(), "60".into()],
                attach_stdin: true,
                ..Default::default()
            })
            .await
            .expect("alice exec")
            .into_owned()
            .execution
            .as_option()
            .unwrap()
            .execution_id
            .clone();
        let code = |r: Result<(), ApiError>| r.err().map(|e| e.code).unwrap_or_default();
        let download = bob
            .sandboxes
            .download_sandbox_file(DownloadSandboxFileRequest {
                sandbox_id: a.clone(),
                path: "/workspace/f".into(),
                ..Default::default()
            })
            .await;
        assert_eq!(
            code(download.map(drop).map_err(ApiError::from)),
            "sandbox_not_found"
        );
        let events = async {
            let mut st = bob
                .sandboxes
                .stream_sandbox_events(StreamSandboxEventsRequest {
                    sandbox_id: a.clone(),
                    ..Default::default()
                })
                .await?;
            while st.message().await?.is_some() {}
            Ok::<(), ApiError>(())
        };
        assert_eq!(code(events.await), "sandbox_not_found");
        for (sandbox_id, exec_id) in [
            (a.clone(), running.clone()),
            (String::new(), running.clone()),
        ] {
            let stream = async {
                let mut st = bob
                    .executions
                    .stream_execution(StreamExecutionRequest {
                        sandbox_id: sandbox_id.clone(),
                        execution_id: exec_id.clone(),
                        ..Default::default()
                    })
                    .await?;
                while st.message().await?.is_some() {}
                Ok::<(), ApiError>(())
            };
            assert_eq!(code(stream.await), "execution_not_found");
            let r = bob
                .executions
                .get_execution(GetExecutionRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: exec_id.clone(),
                    ..Default::default()
                })
                .await;
            assert_eq!(
                code(r.map(drop).map_err(ApiError::from)),
                "execution_not_found"
            );
            let r = bob
                .executions
                .write_execution_stdin(WriteExecutionStdinRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: exec_id.clone(),
                    data: b"injected\n".to_vec(),
                    ..Default::default()
                })
                .await;
            assert_eq!(
                code(r.map(drop).map_err(ApiError::from)),
                "execution_not_found"
            );
            let r = bob
                .executions
                .close_execution_stdin(CloseExecutionStdinRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: exec_id.clone(),
                    ..Default::default()
                })
                .await;
            assert_eq!(
                code(r.map(drop).map_err(ApiError::from)),
                "execution_not_found"
            );
            let r = bob
                .executions
                .cancel_execution(CancelExecutionRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: exec_id.clone(),
                    ..Default::default()
                })
                .await;
            assert_eq!(
                code(r.map(drop).map_err(ApiError::from)),
                "execution_not_found"
            );
        }
        let r = bob
            .sandboxes
            .terminate_sandbox(TerminateSandboxRequest {
                sandbox_id: a.clone(),
                ..Default::default()
            })
            .await;
        assert_eq!(
            code(r.map(drop).map_err(ApiError::from)),
            "sandbox_not_found"
        );
        // Bob's attempts changed nothing: Alice's execution still runs, her sandbox is READY.
        let e = alice
            .executions
            .get_execution(GetExecutionRequest {
                execution_id: running.clone(),
                ..Default::default()
            })
            .await
            .expect("alice sees her execution")
            .into_owned();
        assert_eq!(
            e.execution.as_option().unwrap().status,
            ExecutionStatus::EXECUTION_STATUS_RUNNING
        );
        alice
            .executions
            .cancel_execution(CancelExecutionRequest {
                execution_id: running.clone(),
                grace_seconds: 1,
                ..Default::default()
            })
            .await
            .expect("alice cancels");
    });

    let v = inspect_json(&s.run(Some(ALICE), &["sandbox", "inspect", "--json", &a]));
    assert_eq!(v["status"], "SANDBOX_STATUS_READY");
    // The admin sees and uses everything.
    let ls = s.run(Some(OPS), &["sandbox", "ls", "--json"]);
    assert!(stdout(&ls).contains(&a), "{}", stdout(&ls));
    let o = s.run(
        Some(OPS),
        &["exec", "-n", "--in", &a, "--", "cat", "/workspace/f"],
    );
    assert_eq!(stdout(&o), "alice-data\n", "{}", stderr(&o));
    // And what the admin creates is not Alice's.
    let o = s.run(Some(OPS), &["sandbox", "create"]);
    let adm = stdout(&o).trim().to_string();
    assert!(adm.starts_with("sbx_"), "{}", stderr(&o));
    let ls = s.run(Some(ALICE), &["sandbox", "ls", "--json"]);
    assert!(
        stdout(&ls).contains(&a) && !stdout(&ls).contains(&adm),
        "{}",
        stdout(&ls)
    );
    assert_code(
        &s.run(Some(ALICE), &["sandbox", "rm", &adm]),
        "sandbox_not_found",
    );
    let o = s.run(Some(OPS), &["sandbox", "rm", &a, &adm]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn unix_socket_is_private_and_each_uid_is_its_own_principal() {
    let s = Server::start();
    let mode = std::fs::metadata(s.socket()).unwrap().permissions().mode() & 0o777;
    // 0660 only where a `cleanroom` group exists (then the socket belongs to it).
    let group = std::fs::read_to_string("/etc/group")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("cleanroom:"));
    assert_eq!(
        mode,
        if group { 0o660 } else { 0o600 },
        "socket mode {mode:o}"
    );
    let root_sbx = s.create();
    // Even with the directory open, the 0600 socket keeps other users out.
    std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_code(&as_uid(&s, 65534, &["sandbox", "ls"]), "server_unreachable");

    open_socket_to_all(&s);
    // Another uid sees nothing of root's, under any name.
    let ls = as_uid(&s, 65534, &["sandbox", "ls", "--all", "--json"]);
    assert_eq!(ls.status.code(), Some(0), "{}", stderr(&ls));
    assert!(!stdout(&ls).contains(&root_sbx), "{}", stdout(&ls));
    for args in [
        vec!["sandbox", "inspect", root_sbx.as_str()],
        vec!["sandbox", "rm", root_sbx.as_str()],
        vec!["exec", "-n", "--in", root_sbx.as_str(), "--", "true"],
    ] {
        assert_code(&as_uid(&s, 65534, &args), "sandbox_not_found");
    }
    // Its own sandbox is its own.
    let o = as_uid(&s, 65534, &["sandbox", "create"]);
    let nobody_sbx = stdout(&o).trim().to_string();
    assert!(nobody_sbx.starts_with("sbx_"), "{}", stderr(&o));
    let o = as_uid(
        &s,
        65534,
        &["exec", "-n", "--in", &nobody_sbx, "--", "echo", "mine"],
    );
    assert_eq!(stdout(&o), "mine\n", "{}", stderr(&o));
    // A third uid sees neither.
    let ls = as_uid(&s, 65533, &["sandbox", "ls", "--all", "--json"]);
    assert_eq!(ls.status.code(), Some(0), "{}", stderr(&ls));
    assert!(
        !stdout(&ls).contains(&nobody_sbx) && !stdout(&ls).contains(&root_sbx),
        "{}",
        stdout(&ls)
    );
    assert_code(
        &as_uid(&s, 65533, &["sandbox", "inspect", &nobody_sbx]),
        "sandbox_not_found",
    );
    // Root (the server's own uid) is admin: it sees both.
    let ls = s.run(&["sandbox", "ls", "--json"]);
    assert!(
        stdout(&ls).contains(&nobody_sbx) && stdout(&ls).contains(&root_sbx),
        "{}",
        stdout(&ls)
    );
    let v = inspect_json(&s.run(&["sandbox", "inspect", "--json", &root_sbx]));
    assert_eq!(v["status"], "SANDBOX_STATUS_READY");
}

#[test]
fn sandbox_caps_return_resource_exhausted() {
    let s = Server::start_with(&["--max-sandboxes-per-principal", "2", "--max-sandboxes", "3"]);
    open_socket_to_all(&s);
    let r1 = s.create();
    let _r2 = s.create();
    assert_code(&s.run(&["sandbox", "create"]), "resource_exhausted");
    assert_code(&s.run(&["exec", "-n", "--", "true"]), "resource_exhausted");
    // Another principal still has room until the server-wide cap.
    let o = as_uid(&s, 65534, &["sandbox", "create"]);
    assert!(stdout(&o).starts_with("sbx_"), "{}", stderr(&o));
    let o = as_uid(&s, 65534, &["sandbox", "create"]);
    assert_code(&o, "resource_exhausted");
    // Stopped sandboxes do not count.
    let o = s.run(&["sandbox", "rm", &r1]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    s.create();
}

/// Read until the peer closes; `true` if it did within the bound (not a read timeout).
fn closed_by_server(st: &mut std::net::TcpStream) -> bool {
    st.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match st.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn idle_and_slow_connections_are_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write_tokens(tmp.path(), &[(ALICE, "alice", "user")]);
    let s = TcpServer::start(
        "http",
        &[
            "--tokens-file",
            &tokens.display().to_string(),
            "--api-idle-timeout",
            "1",
            "--api-header-timeout",
            "1",
        ],
    );
    // Never sends a byte.
    let mut silent = std::net::TcpStream::connect(&s.addr).unwrap();
    // Half a request header, then nothing (slowloris).
    let mut slow = std::net::TcpStream::connect(&s.addr).unwrap();
    slow.write_all(b"POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // The HTTP/2 preface and nothing else.
    let mut h2 = std::net::TcpStream::connect(&s.addr).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    // A complete request on a kept-alive connection, then idle.
    let mut kept = std::net::TcpStream::connect(&s.addr).unwrap();
    let body = "{}";
    kept.write_all(
        format!(
            "POST /cleanroom.v1.SandboxService/ListSandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer {ALICE}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    for (name, st) in [
        ("silent", &mut silent),
        ("slow headers", &mut slow),
        ("h2 preface", &mut h2),
        ("kept alive", &mut kept),
    ] {
        assert!(closed_by_server(st), "{name} connection was not closed");
    }
    // A response that streams for longer than the idle timeout is not cut.
    let o = s.run(
        Some(ALICE),
        &["exec", "-n", "--", "sh", "-c", "sleep 4; echo done"],
    );
    assert_eq!(stdout(&o), "done\n", "{}", stderr(&o));
}

#[test]
fn https_listener_with_ca_cert_token_and_config_file() {
    let tmp = tempfile::tempdir().unwrap();
    let [ca, cert, key, _, _] = write_test_pki(tmp.path(), "carol");
    let tokens = write_tokens(tmp.path(), &[(ALICE, "alice", "user")]);
    let p = |p: &Path| p.display().to_string();
    let s = TcpServer::start(
        "https",
        &[
            "--tls-cert",
            &p(&cert),
            "--tls-key",
            &p(&key),
            "--tokens-file",
            &p(&tokens),
        ],
    );
    // Flags.
    let mut c = s.cli(Some(ALICE));
    c.args(["--ca-cert", &p(&ca), "exec", "-n", "--", "echo", "over-tls"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o), "over-tls\n", "{}", stderr(&o));
    // Environment.
    let mut c = s.cli(Some(ALICE));
    c.env("CLEANROOM_CA_CERT", &ca).args(["sandbox", "ls"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Config file.
    let cfg = tmp.path().join("cfg");
    std::fs::create_dir_all(cfg.join("cleanroom")).unwrap();
    std::fs::write(
        cfg.join("cleanroom/config.json"),
        serde_json::json!({"control_host": s.host(), "token": ALICE, "ca_cert": p(&ca)})
            .to_string(),
    )
    .unwrap();
    let mut c = Command::new(BIN);
    c.env_remove("CLEANROOM_HOST")
        .env_remove("CLEANROOM_TOKEN")
        .env_remove("CLEANROOM_CA_CERT")
        .env("XDG_CONFIG_HOME", &cfg)
        .args(["exec", "-n", "--", "echo", "from-config"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o), "from-config\n", "{}", stderr(&o));
    // The server is verified: without our CA the system roots refuse it.
    assert_code(
        &s.run(Some(ALICE), &["sandbox", "ls"]),
        "server_unreachable",
    );
    // Or pinned: exactly this certificate, by the sha256 of its DER.
    let der = {
        use rustls::pki_types::pem::PemObject;
        rustls::pki_types::CertificateDer::from_pem_file(&cert).unwrap()
    };
    let pin = token_hash_bytes(der.as_ref());
    let mut c = s.cli(Some(ALICE));
    c.args([
        "--server-cert-sha256",
        &pin,
        "exec",
        "-n",
        "--",
        "echo",
        "pinned",
    ]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(stdout(&o), "pinned\n", "{}", stderr(&o));
    let other_pin = token_hash_bytes(b"some other certificate");
    let mut c = s.cli(Some(ALICE));
    c.env("CLEANROOM_SERVER_CERT_SHA256", &other_pin)
        .args(["sandbox", "ls"]);
    assert_code(
        &output_with_timeout(c, Duration::from_secs(60)),
        "server_unreachable",
    );
    // TLS does not replace authentication.
    let mut c = s.cli(None);
    c.args(["--ca-cert", &p(&ca), "sandbox", "ls"]);
    assert_code(
        &output_with_timeout(c, Duration::from_secs(60)),
        "unauthenticated",
    );
    // Plaintext HTTP to the TLS port gets nothing.
    let mut c = Command::new(BIN);
    c.env("CLEANROOM_HOST", format!("http://{}", s.addr))
        .env("CLEANROOM_TOKEN", ALICE)
        .args(["sandbox", "ls"]);
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
}
