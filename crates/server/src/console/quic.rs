//! The console's QUIC endpoint: a self-signed certificate made at startup (clients pin
//! its sha256, returned by `AttachExecution`), one attach per connection, bounded:
//! a cap on connections (more are refused at once), handshake and hello timeouts, an idle
//! timeout, one bidirectional stream per connection, small flow-control windows; it closes
//! every connection when the server stops.

use super::Broker;
use crate::engine::Engine;
use quinn::crypto::rustls::QuicServerConfig;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};

/// Time for the QUIC handshake, and then for the first stream and its hello.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings of the console endpoint (`cleanroom serve --console-*`).
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// UDP address to bind; `None`: the API listener's IP (loopback for a unix socket)
    /// on a free port.
    pub listen: Option<SocketAddr>,
    /// How long an `AttachExecution` ticket may wait to be used.
    pub token_ttl: Duration,
    /// Open console connections at most (more are refused).
    pub max_connections: usize,
    /// A connection with no traffic for this long is closed (clients send keep-alives).
    pub idle_timeout: Duration,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            listen: None,
            token_ttl: Duration::from_secs(30),
            max_connections: 256,
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// The running endpoint; [`Console::shutdown`] closes it.
pub struct Console {
    endpoint: quinn::Endpoint,
    task: tokio::task::JoinHandle<()>,
}

impl Console {
    /// Close every connection and wait (briefly) for the accept loop and the peers.
    pub async fn shutdown(self) {
        self.endpoint
            .close(quinn::VarInt::from_u32(0), b"server shutting down");
        let _ = tokio::time::timeout(Duration::from_secs(2), self.endpoint.wait_idle()).await;
        self.task.abort();
    }
}

fn server_config(cfg: &ConsoleConfig) -> Result<(quinn::ServerConfig, String), String> {
    let cert = rcgen::generate_simple_self_signed(vec!["cleanroom-console".to_string()])
        .map_err(|e| format!("console certificate: {e}"))?;
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
    .map_err(|e| format!("console tls: {e}"))?
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .map_err(|e| format!("console tls: {e}"))?;
    tls.alpn_protocols = vec![cleanroom_console::ALPN.as_bytes().to_vec()];
    let crypto = QuicServerConfig::try_from(tls).map_err(|e| format!("console tls: {e}"))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(quinn::VarInt::from_u32(1))
        .max_concurrent_uni_streams(quinn::VarInt::from_u32(0))
        .stream_receive_window(quinn::VarInt::from_u32(256 * 1024))
        .receive_window(quinn::VarInt::from_u32(512 * 1024))
        .send_window(1 << 20)
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(cfg.idle_timeout).map_err(|e| e.to_string())?,
        ));
    server.transport_config(Arc::new(transport));
    server.max_incoming(cfg.max_connections.max(1));
    Ok((server, pin))
}

/// Bind the endpoint, install its [`Broker`] in the engine and start accepting.
/// `api_ip` is the address the API listener is bound to (`None` for a unix socket).
pub fn start(
    engine: Arc<Engine>,
    cfg: &ConsoleConfig,
    api_ip: Option<IpAddr>,
    mut stop: watch::Receiver<bool>,
) -> Result<Console, String> {
    let (server, pin) = server_config(cfg)?;
    let addr = cfg
        .listen
        .unwrap_or_else(|| SocketAddr::new(api_ip.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)), 0));
    let endpoint = quinn::Endpoint::server(server, addr)
        .map_err(|e| format!("console endpoint {addr}: {e}"))?;
    let local = endpoint
        .local_addr()
        .map_err(|e| format!("console endpoint {addr}: {e}"))?;
    let broker = Arc::new(Broker::new(local, pin, cfg.token_ttl));
    engine.set_console(broker.clone());
    tracing::info!(endpoint = %local, "console endpoint ready");
    let ep = endpoint.clone();
    let slots = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let task = tokio::spawn(async move {
        loop {
            let incoming = tokio::select! {
                i = ep.accept() => match i { Some(i) => i, None => break },
                _ = stop.changed() => break,
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                incoming.refuse();
                continue;
            };
            let (engine, broker) = (engine.clone(), broker.clone());
            tokio::spawn(async move {
                serve_connection(engine, broker, incoming).await;
                drop(slot);
            });
        }
    });
    Ok(Console { endpoint, task })
}

async fn serve_connection(engine: Arc<Engine>, broker: Arc<Broker>, incoming: quinn::Incoming) {
    let conn = match tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming).await {
        Ok(Ok(c)) => c,
        _ => return,
    };
    let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, conn.accept_bi()).await;
    if let Ok(Ok((send, recv))) = stream {
        super::session::run(engine, broker, send, recv).await;
    }
    conn.close(quinn::VarInt::from_u32(0), b"done");
}
