//! Shared tables a tenant can fill (issue 30, class 5), the console's QUIC endpoint:
//! connections without a ticket wait in a budget of their own (per peer address and in
//! total, short-lived), so a flood of them never locks another principal's console out.
//! Real server, real sandbox, real QUIC.

use cleanroom_client::api::*;
use cleanroom_client::Client;
use cleanroom_e2e::*;
use std::time::Duration;

const BOB: &str = "bob-console-flood-token-3a5c7e9b1d3f5a7c9e1b";

async fn sandbox(c: &Client) -> String {
    let r = api(c
        .sandboxes
        .create_sandbox(CreateSandboxRequest::default())
        .await)
    .expect("create sandbox")
    .into_owned();
    r.sandbox.as_option().expect("sandbox").sandbox_id.clone()
}

fn tokens_server(dir: &tempfile::TempDir) -> TcpServer {
    let tokens = write_tokens(dir.path(), &[(BOB, "bob", "user")]);
    TcpServer::start(
        "http",
        &["--tokens-file", tokens.to_str().expect("utf-8 path")],
    )
}

/// Accepts any server certificate (handshake signatures are still checked): the flood
/// does not care whom it talks to.
#[derive(Debug)]
struct AnyCert(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// QUIC client settings that complete the console's handshake and then say nothing.
fn flood_client_config() -> quinn::ClientConfig {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("tls13")
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(AnyCert(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![cleanroom_console::ALPN.as_bytes().to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).expect("quic tls");
    quinn::ClientConfig::new(std::sync::Arc::new(crypto))
}

/// `per_source` ticket-less QUIC connections from each of `sources` to `addr`: each
/// completes the handshake, never opens a stream or says hello, and is opened again
/// shortly after the server closes (or refuses) it. Returns the tasks (how many
/// connections each attempted).
fn ticketless_quic_flood(
    addr: std::net::SocketAddr,
    sources: &[std::net::IpAddr],
    per_source: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<usize>> {
    use std::sync::atomic::Ordering;
    let mut tasks = Vec::new();
    for ip in sources {
        let mut ep = quinn::Endpoint::client(std::net::SocketAddr::new(*ip, 0)).expect("bind");
        ep.set_default_client_config(flood_client_config());
        for _ in 0..per_source {
            let (ep, stop) = (ep.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut done = 0;
                while !stop.load(Ordering::SeqCst) {
                    if let Ok(connecting) = ep.connect(addr, "cleanroom-console") {
                        done += 1;
                        let r = tokio::time::timeout(Duration::from_secs(5), connecting).await;
                        if let Ok(Ok(conn)) = r {
                            // Held: no stream, no hello, until the server closes it.
                            tokio::select! {
                                _ = conn.closed() => {}
                                _ = async {
                                    while !stop.load(Ordering::SeqCst) {
                                        tokio::time::sleep(Duration::from_millis(200)).await;
                                    }
                                } => {}
                            }
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                done
            }));
        }
    }
    tasks
}

/// 300 ticket-less QUIC connections from ten other addresses, held and re-opened as
/// the server closes them: another principal's console still attaches, types and sees
/// its output, round after round, while the flood goes on. Before the fix the first
/// 256 held the endpoint's every slot through 20 s of handshake and hello timeouts, and
/// every attach was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ticketless_quic_flood_does_not_lock_consoles_out() {
    use cleanroom_client::console as remote;
    use cleanroom_console::{read_frame, write_frame, Frame, Mode};
    let dir = tempfile::tempdir().expect("tempdir");
    let s = tokens_server(&dir);
    let bob = client_as(&s.addr, BOB).await;
    let sbx = sandbox(&bob).await;
    let req = CreateExecutionRequest {
        sandbox_id: sbx.clone(),
        command: vec!["sh".into()],
        tty: true,
        tty_cols: 100,
        tty_rows: 30,
        ..Default::default()
    };
    let exe = api(bob.executions.create_execution(req).await)
        .expect("execution")
        .into_owned()
        .execution
        .as_option()
        .expect("execution")
        .execution_id
        .clone();
    let t = remote::ticket(&bob, "", &exe, 100, 30)
        .await
        .expect("ticket");
    let console = remote::console_addr(&t, None).expect("console address");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sources: Vec<std::net::IpAddr> = (2..12)
        .map(|i| format!("127.0.0.{i}").parse().expect("ip"))
        .collect();
    let flood = ticketless_quic_flood(console, &sources, 30, stop.clone());
    tokio::time::sleep(Duration::from_secs(3)).await;

    let mut ticket = Some(t);
    for round in 0..3 {
        let t0 = std::time::Instant::now();
        let t = match ticket.take() {
            Some(t) => t,
            None => remote::ticket(&bob, "", &exe, 100, 30)
                .await
                .expect("ticket"),
        };
        let attach = remote::connect(&t, &exe, console, Mode::Driver, 100, 30);
        // Far less than what the flood held a slot for before (20 s).
        let mut con = match tokio::time::timeout(Duration::from_secs(10), attach).await {
            Ok(Ok(c)) => c,
            other => panic!(
                "round {round}: console not attached during the flood ({:?}): {:?}",
                t0.elapsed(),
                other.map(|r| r.map(|_| ()))
            ),
        };
        eprintln!(
            "round {round}: attached in {:?} during the flood",
            t0.elapsed()
        );
        let marker = format!("ROUND-{}", round * 7 + 1);
        let line = format!("echo ROUND-$(({round}*7+1))\r");
        write_frame(&mut con.send, &Frame::Input(line.into_bytes()))
            .await
            .expect("input");
        let seen = tokio::time::timeout(Duration::from_secs(20), async {
            let mut seen = String::new();
            while !seen.contains(&marker) {
                match read_frame(&mut con.recv).await {
                    Ok(Some(Frame::Output(d))) => seen.push_str(&String::from_utf8_lossy(&d)),
                    other => panic!("round {round}: {other:?} before {marker}; saw {seen:?}"),
                }
            }
            seen
        })
        .await;
        assert!(seen.is_ok(), "round {round}: no output during the flood");
        drop(con);
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut held = 0;
    for h in flood {
        held += h.await.unwrap_or(0);
    }
    eprintln!("the flood attempted {held} connections");
    assert!(held >= 300, "the flood ran: {held}");
}
