//! The API's accept loop: unix socket, TCP and TLS, with bounded connections.
//!
//! One loop for every transport so each gets the same guards:
//! - admission ([`crate::budgets::admission`]): a TCP connection is *pending* until a request on
//!   it authenticates, in a budget of its own (per peer address and in total, the oldest
//!   closed to admit a new one, closed `preauth_timeout` after accept); authenticated
//!   connections (a unix socket's at once, by its peer uid) count against
//!   `max_connections` and their principal's share of it. Accepting never pauses for
//!   connections that have not authenticated;
//! - TCP_NODELAY on every TCP connection (without it each streamed call pays ~40 ms of
//!   Nagle + delayed-ACK);
//! - a TLS handshake timeout; HTTP/1.1 header read timeout; HTTP/2 keep-alive pings;
//! - an idle timeout: a connection with no request in flight (a streamed response counts
//!   until its body ends) and no traffic for `idle_timeout` is shut down, including one
//!   that never sent a byte;
//! - the peer's identity ([`crate::identity::auth::Peer`]) in every request's extensions.

use crate::budgets::admission::{Admission, AdmitLimits, Gate};
use crate::identity::auth::Peer;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder as AutoBuilder;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Semaphore};
use tower::Service;

/// Connection guards (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    /// Authenticated connections at most; a principal's share is an eighth of it.
    pub max_connections: usize,
    pub tls_handshake_timeout: Duration,
    /// Connections not authenticated yet at most (an eighth of it per peer address).
    pub preauth_connections: usize,
    /// A connection that has not authenticated this long after accept is closed.
    pub preauth_timeout: Duration,
}

impl ConnLimits {
    /// The admission budgets these limits give ([`crate::budgets::admission`]).
    pub fn admission(&self) -> AdmitLimits {
        AdmitLimits::derived(
            self.max_connections.clamp(1, 1 << 16),
            self.preauth_connections.clamp(1, 1 << 14),
            self.preauth_timeout.max(Duration::from_millis(100)),
        )
    }
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits {
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            max_connections: 1024,
            tls_handshake_timeout: Duration::from_secs(10),
            preauth_connections: 256,
            preauth_timeout: Duration::from_secs(10),
        }
    }
}

/// A bound listener.
pub enum Transport {
    Unix(tokio::net::UnixListener),
    Tcp(tokio::net::TcpListener, Option<tokio_rustls::TlsAcceptor>),
}

type Svc = crate::serve::front::Front;

/// Serve until `stop` turns true; then let open connections finish for up to 2 s.
pub async fn serve(
    transport: Transport,
    service: Svc,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let admission = Admission::new(limits.admission());
    let budgets = admission.limits();
    // Every task holds a permit until it ends: the drain below waits for them. The
    // budgets bound what is open; the slack covers connections being refused right now.
    let max = budgets.max_connections + budgets.preauth_total + 64;
    let slots = Arc::new(Semaphore::new(max));
    loop {
        let permit = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            a = accept(&transport) => a,
        };
        let (io, peer_pending, gate) = match accepted {
            Ok((io, peer, addr)) => {
                let gate = match (&peer, addr) {
                    (Peer::Unix { uid }, _) => {
                        match admission.authenticated(&crate::identity::auth::unix_principal(*uid))
                        {
                            Ok(g) => g,
                            Err(r) => {
                                tracing::debug!(uid, reason = %r, "unix connection refused");
                                continue;
                            }
                        }
                    }
                    (_, Some(ip)) => match admission.pending(ip) {
                        Some(g) => g,
                        // This peer's pending connections are all young: closed at once.
                        None => continue,
                    },
                    (_, None) => continue,
                };
                (io, peer, gate)
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning; never exit the loop.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = service.clone();
        let stop = stop.clone();
        let acceptor = match &transport {
            Transport::Tcp(_, tls) => tls.clone(),
            Transport::Unix(_) => None,
        };
        tokio::spawn(async move {
            let _permit = permit;
            match (io, acceptor) {
                (Accepted::Unix(s), _) => {
                    serve_conn(s, peer_pending, gate, service, limits, stop).await
                }
                (Accepted::Tcp(s), None) => {
                    serve_conn(s, peer_pending, gate, service, limits, stop).await
                }
                (Accepted::Tcp(s), Some(acceptor)) => {
                    let handshake =
                        tokio::time::timeout(limits.tls_handshake_timeout, acceptor.accept(s));
                    let tls = tokio::select! {
                        r = handshake => match r {
                            Ok(Ok(t)) => t,
                            Ok(Err(e)) => {
                                tracing::debug!(error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!("TLS handshake timed out");
                                return;
                            }
                        },
                        _ = gate.must_close() => return,
                    };
                    let cert_principal = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|leaf| crate::identity::auth::cert_principal(leaf));
                    let peer = Peer::Tcp { cert_principal };
                    serve_conn(tls, peer, gate, service, limits, stop).await
                }
            }
        });
    }
    // Drain: every connection task holds a permit until it ends (max <= 2^17 fits u32).
    let _ = tokio::time::timeout(Duration::from_secs(2), slots.acquire_many(max as u32)).await;
    Ok(())
}

enum Accepted {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

async fn accept(t: &Transport) -> std::io::Result<(Accepted, Peer, Option<std::net::IpAddr>)> {
    match t {
        Transport::Unix(l) => {
            let (s, _) = l.accept().await?;
            // The kernel's record of who connected: not forgeable by the client.
            let uid = s.peer_cred()?.uid();
            Ok((Accepted::Unix(s), Peer::Unix { uid }, None))
        }
        Transport::Tcp(l, _) => {
            let (s, addr) = l.accept().await?;
            if let Err(e) = s.set_nodelay(true) {
                tracing::warn!(error = %e, "cannot set TCP_NODELAY");
            }
            Ok((
                Accepted::Tcp(s),
                Peer::Tcp {
                    cert_principal: None,
                },
                Some(addr.ip()),
            ))
        }
    }
}

/// Requests in flight and a counter bumped on every request start/end and response frame.
#[derive(Default)]
struct Activity {
    in_flight: AtomicUsize,
    epoch: AtomicU64,
}

struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(a: Arc<Activity>) -> Self {
        a.in_flight.fetch_add(1, Ordering::SeqCst);
        a.epoch.fetch_add(1, Ordering::SeqCst);
        InFlight(a)
    }
    fn touch(&self) {
        self.0.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

async fn serve_conn<I>(
    io: I,
    peer: Peer,
    gate: Arc<Gate>,
    service: Svc,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::default());
    let act = activity.clone();
    let conn_gate = gate.clone();
    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(peer.clone());
        // The authentication interceptor moves the connection into its principal's share.
        req.extensions_mut().insert(conn_gate.clone());
        let guard = InFlight::new(act.clone());
        let mut service = service.clone();
        async move {
            let resp = service.call(req).await?;
            // The request stays in flight until its (possibly streamed) body ends.
            Ok::<_, std::convert::Infallible>(resp.map(move |b| {
                b.map_frame(move |f| {
                    guard.touch();
                    f
                })
            }))
        }
    });
    let mut builder = AutoBuilder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(256);
    // With upgrades: a WebSocket through an exposure, a port-forward tunnel (crate::inbound).
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let idle = limits.idle_timeout.max(Duration::from_millis(100));
    let mut armed = activity.epoch.load(Ordering::SeqCst);
    let timer = tokio::time::sleep(idle);
    tokio::pin!(timer);
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = stop.wait_for(|s| *s) => break,
            _ = gate.must_close() => {
                if gate.is_refused() {
                    // Let the `resource_exhausted` answer out, then close.
                    break;
                }
                // Evicted or expired before authenticating: nothing of it is owed.
                tracing::debug!("closing unauthenticated API connection");
                return;
            }
            _ = &mut timer => {
                let epoch = activity.epoch.load(Ordering::SeqCst);
                if activity.in_flight.load(Ordering::SeqCst) == 0 && epoch == armed {
                    tracing::debug!("closing idle API connection");
                    break;
                }
                armed = epoch;
                timer.as_mut().reset(tokio::time::Instant::now() + idle);
            }
        }
    }
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
}

/// TLS server config from PEM files; with `client_ca`, client certificates signed by it
/// are verified (and optional: a client may authenticate with a token instead).
pub fn tls_acceptor(
    cert: &std::path::Path,
    key: &std::path::Path,
    client_ca: Option<&std::path::Path>,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<_, _>>())
        .map_err(|e| format!("--tls-cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("--tls-cert {}: no certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("--tls-key {}: {e}", key.display()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_file_iter(ca)
                .map_err(|e| format!("--client-ca {}: {e}", ca.display()))?
            {
                let c = c.map_err(|e| format!("--client-ca {}: {e}", ca.display()))?;
                roots
                    .add(c)
                    .map_err(|e| format!("--client-ca {}: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| format!("--client-ca {}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("--tls-cert/--tls-key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
