//! How `connect` classifies a console server that goes away before answering hello: that
//! is the network (`server_unreachable`, worth a retry), never `internal` — a flood or a
//! restart sheds connections exactly so.

use super::*;
use sha2::{Digest, Sha256};

/// How the fake server treats the hello it reads.
#[derive(Clone, Copy)]
enum After {
    /// Close the whole connection (what a server shedding load does).
    CloseConnection,
    /// Finish its side of the stream without a frame.
    FinishStream,
    /// Answer with a frame that is not an answer to hello.
    WrongFrame,
}

/// A QUIC console endpoint on loopback that reads one hello and then does `after`.
fn fake_server(after: After) -> (SocketAddr, String, quinn::Endpoint) {
    let cert = rcgen::generate_simple_self_signed(vec!["cleanroom-console".to_string()]).unwrap();
    let der = cert.cert.der().clone();
    let pin: String = Sha256::digest(der.as_ref())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    tls.alpn_protocols = vec![cleanroom_console::ALPN.as_bytes().to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint = quinn::Endpoint::server(server, (Ipv4Addr::LOCALHOST, 0).into()).unwrap();
    let addr = endpoint.local_addr().unwrap();
    let ep = endpoint.clone();
    tokio::spawn(async move {
        let Some(incoming) = ep.accept().await else {
            return;
        };
        let Ok(conn) = incoming.await else { return };
        let Ok((mut send, mut recv)) = conn.accept_bi().await else {
            return;
        };
        let _ = read_frame(&mut recv).await;
        match after {
            After::CloseConnection => conn.close(quinn::VarInt::from_u32(1), b"shed"),
            After::FinishStream => {
                let _ = send.finish();
            }
            After::WrongFrame => {
                let _ = write_frame(
                    &mut send,
                    &Frame::Hello(Hello {
                        session_id: String::new(),
                        token: String::new(),
                        execution_id: String::new(),
                        mode: Mode::Driver,
                        cols: 1,
                        rows: 1,
                    }),
                )
                .await;
            }
        }
        // Keep the connection until the client has read what it was sent.
        tokio::time::sleep(Duration::from_secs(2)).await;
    });
    (addr, pin, endpoint)
}

async fn hello_to(after: After) -> Result<Console, ApiError> {
    let (addr, pin, _endpoint) = fake_server(after);
    let ticket = AttachExecutionResponse {
        session_id: "s".into(),
        session_token: "t".into(),
        server_cert_pin_sha256: pin,
        alpn: cleanroom_console::ALPN.into(),
        quic_endpoint: addr.to_string(),
        ..Default::default()
    };
    connect(&ticket, "exe_x", addr, Mode::Driver, 80, 24).await
}

#[tokio::test]
async fn a_connection_closed_before_the_answer_is_unreachable_not_internal() {
    let e = hello_to(After::CloseConnection).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::ServerUnreachable.as_str(), "{e:?}");
}

#[tokio::test]
async fn a_stream_finished_before_the_answer_is_unreachable_not_internal() {
    let e = hello_to(After::FinishStream).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::ServerUnreachable.as_str(), "{e:?}");
}

#[tokio::test]
async fn a_frame_that_is_no_answer_to_hello_is_internal() {
    let e = hello_to(After::WrongFrame).await.err().unwrap();
    assert_eq!(e.code, ErrorCode::Internal.as_str(), "{e:?}");
}
