//! The console's QUIC endpoint: a self-signed certificate made at startup (clients pin
//! its sha256, returned by `AttachExecution`), one attach per connection, bounded:
//! an idle timeout, one bidirectional stream per connection, small flow-control windows;
//! it closes every connection when the server stops.
//!
//! Admission ([`crate::budgets::admission`]): until its hello redeems a ticket, a connection is
//! *pending* in a budget of its own — a quarter of `max_connections` in all, an eighth of
//! that per peer address, the oldest of a peer (or of the heaviest peer) closed to admit
//! a new one — and must complete handshake, stream and hello within [`PREHELLO_TIMEOUT`].
//! While that budget is half full, peers whose address QUIC has not validated yet are
//! sent a Retry first (a spoofed source cannot hold a slot). An attached connection
//! counts against `max_connections` and its principal's share (an eighth). So
//! ticket-less connections never take an attached console's place.

use super::Broker;
use crate::budgets::admission::{Admission, AdmitLimits, Gate};
use crate::engine::Engine;
use quinn::crypto::rustls::QuicServerConfig;
use sha2::{Digest, Sha256};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Time for the QUIC handshake, the first stream and its hello, together.
pub const PREHELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings of the console endpoint (`cleanroom serve --console-*`).
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// UDP address to bind; `None`: the API listener's IP (loopback for a unix socket)
    /// on a free port.
    pub listen: Option<SocketAddr>,
    /// How long an `AttachExecution` ticket may wait to be used.
    pub token_ttl: Duration,
    /// Attached console connections at most (a principal may hold an eighth); a quarter
    /// of it more may be connecting without a hello yet.
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
    /// The ticket broker the API issues `AttachExecution` tickets from.
    pub broker: Arc<Broker>,
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
    server.max_incoming(admit_limits(cfg).preauth_total.max(64));
    Ok((server, pin))
}

/// The endpoint's admission budgets (module docs).
pub fn admit_limits(cfg: &ConsoleConfig) -> AdmitLimits {
    let max = cfg.max_connections.clamp(1, 1 << 16);
    AdmitLimits::derived(max, (max / 4).max(8), PREHELLO_TIMEOUT)
}

/// Bind the endpoint, make its [`Broker`] (handed to the API in [`Console::broker`]) and
/// start accepting.
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
    let kept = broker.clone();
    tracing::info!(endpoint = %local, "console endpoint ready");
    let ep = endpoint.clone();
    let admission = Admission::new(admit_limits(cfg));
    let task = tokio::spawn(async move {
        loop {
            let incoming = tokio::select! {
                i = ep.accept() => match i { Some(i) => i, None => break },
                _ = stop.changed() => break,
            };
            let pending = admission.counts().0;
            if !incoming.remote_address_validated()
                && incoming.may_retry()
                && pending * 2 >= admission.limits().preauth_total
            {
                // Under load, make the peer prove its address before it holds a slot.
                let _ = incoming.retry();
                continue;
            }
            let Some(gate) = admission.pending(incoming.remote_address().ip()) else {
                incoming.refuse();
                continue;
            };
            let (engine, broker) = (engine.clone(), broker.clone());
            tokio::spawn(async move {
                let serve = serve_connection(engine, broker, incoming, &gate);
                tokio::pin!(serve);
                tokio::select! {
                    _ = &mut serve => {}
                    _ = gate.must_close() => {
                        if gate.is_refused() {
                            // Its `resource_exhausted` frame goes out first (bounded).
                            let _ = tokio::time::timeout(PREHELLO_TIMEOUT, serve).await;
                        } else {
                            tracing::debug!("console connection closed before its hello");
                        }
                    }
                }
            });
        }
    });
    Ok(Console {
        broker: kept,
        endpoint,
        task,
    })
}

async fn serve_connection(
    engine: Arc<Engine>,
    broker: Arc<Broker>,
    incoming: quinn::Incoming,
    gate: &Gate,
) {
    // The gate's deadline bounds handshake, stream and hello together.
    let conn = match incoming.await {
        Ok(c) => c,
        Err(_) => return,
    };
    if let Ok((send, recv)) = conn.accept_bi().await {
        super::session::run(engine, broker, gate, send, recv).await;
    }
    conn.close(quinn::VarInt::from_u32(0), b"done");
}
