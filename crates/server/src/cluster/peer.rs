//! The member link: how members call each other. Mutual TLS with the cluster identity
//! (`cleanroom_cluster::identity`) on a listener of its own (`serve --cluster-listen`),
//! HTTP/2, the same Connect services as the public API behind it.
//!
//! Server side: a peer that does not present a certificate from the cluster CA fails the
//! handshake. A request from a verified member carries the caller's principal, which the
//! front door authenticated (`cleanroom-forwarded-principal`, `-role`); it is put where a
//! web session's principal goes ([`SessionPrincipal`]), so the API's one authentication
//! step admits it, and every handler then checks ownership on this host as for a direct
//! call (rule 3: a forwarded call gets no more than the caller would here directly). The
//! request is marked [`Forwarded`] so that it is served here, never forwarded again.
//!
//! Client side: one HTTP/2 connection per member, dialled by its node name (the server's
//! certificate must name it), redialled once when it broke.

use crate::identity::auth::{Principal, Role, SessionPrincipal};
use crate::model::error::EngineError;
use bytes::Bytes;
use cleanroom_cluster::identity::NodeIdentity;
use cleanroom_cluster::NodeName;
use http::{HeaderValue, Request, Response};
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Mutex, Semaphore};

pub const PRINCIPAL_HEADER: &str = "cleanroom-forwarded-principal";
pub const ROLE_HEADER: &str = "cleanroom-forwarded-role";

/// Marks a request that arrived over the member link: serve it here.
#[derive(Debug, Clone)]
pub struct Forwarded {
    /// The member that forwarded it (from its verified certificate).
    pub from: String,
}

/// Member-link connections at most (each a multiplexed HTTP/2 connection).
const MAX_PEER_CONNECTIONS: usize = 256;
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A principal name as the API writes them: a token/certificate principal or `uid:<n>`.
fn principal_from(name: &str, role: &str) -> Option<Principal> {
    let unix = name
        .strip_prefix("uid:")
        .is_some_and(|n| !n.is_empty() && n.len() <= 10 && n.bytes().all(|b| b.is_ascii_digit()));
    if !unix && !crate::identity::auth::valid_name(name) {
        return None;
    }
    let role = match role {
        "admin" => Role::Admin,
        "user" => Role::User,
        _ => return None,
    };
    Some(Principal {
        name: name.to_string(),
        role,
    })
}

/// Serve the member link on `listener` until `stop`: `service` is the API's Connect service.
pub async fn serve<S, B>(
    listener: tokio::net::TcpListener,
    identity: NodeIdentity,
    service: S,
    mut stop: watch::Receiver<bool>,
) where
    S: tower::Service<Request<hyper::body::Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let config = match identity.server_config() {
        Ok(c) => Arc::new(c),
        Err(e) => {
            tracing::error!(error = %e, "member link not served");
            return;
        }
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let slots = Arc::new(Semaphore::new(MAX_PEER_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            _ = stop.wait_for(|s| *s) => None,
            p = slots.clone().acquire_owned() => p.ok(),
        };
        let Some(permit) = permit else { return };
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => None,
            a = listener.accept() => Some(a),
        };
        let (tcp, addr) = match accepted {
            None => return,
            Some(Ok(a)) => a,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "member link accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (acceptor, service, stop) = (acceptor.clone(), service.clone(), stop.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    tracing::info!(peer = %addr, error = %e, "member link refused: TLS handshake failed");
                    return;
                }
                Err(_) => return,
            };
            let from = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(cleanroom_cluster::identity::node_of);
            let Some(from) = from else {
                tracing::info!(peer = %addr, "member link refused: the certificate names no node");
                return;
            };
            serve_conn(tls, from, service, stop).await;
        });
    }
}

async fn serve_conn<I, S, B>(io: I, from: String, service: S, mut stop: watch::Receiver<bool>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<Request<hyper::body::Incoming>, Response = Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let svc = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        let mut service = service.clone();
        let from = from.clone();
        async move {
            let headers = req.headers_mut();
            // Only the forwarded principal counts here: no token, no session of its own.
            headers.remove(http::header::AUTHORIZATION);
            headers.remove(http::header::COOKIE);
            let name = headers.remove(PRINCIPAL_HEADER);
            let role = headers.remove(ROLE_HEADER);
            let principal = match (&name, &role) {
                (Some(n), Some(r)) => principal_from(
                    n.to_str().unwrap_or_default(),
                    r.to_str().unwrap_or_default(),
                ),
                _ => None,
            };
            // Without a principal the request carries no identity at all: the API's
            // authentication refuses it (`unauthenticated`).
            if let Some(p) = principal {
                req.extensions_mut().insert(SessionPrincipal(p));
            }
            req.extensions_mut().insert(Forwarded { from });
            tower::Service::call(&mut service, req).await
        }
    });
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(10)))
        .keep_alive_timeout(Duration::from_secs(10))
        .max_concurrent_streams(1024);
    let conn = builder.serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    let stopping = tokio::select! {
        _ = conn.as_mut() => false,
        r = stop.wait_for(|s| *s) => r.is_ok(),
    };
    if stopping {
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(2), conn).await;
    }
}

type Sender = hyper::client::conn::http2::SendRequest<Full<Bytes>>;

/// Calls to other members, one connection each.
pub struct PeerClient {
    tls: tokio_rustls::TlsConnector,
    conns: Mutex<HashMap<String, Sender>>,
}

impl PeerClient {
    pub fn new(identity: &NodeIdentity) -> Result<PeerClient, EngineError> {
        let config = identity
            .client_config()
            .map_err(crate::cluster::cluster_error)?;
        Ok(PeerClient {
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            conns: Mutex::new(HashMap::new()),
        })
    }

    async fn dial(&self, node: &str, peer: &str) -> Result<Sender, EngineError> {
        let unreachable =
            |m: String| crate::cluster::unreachable(format!("member {node} ({peer}): {m}"));
        let addr = peer
            .strip_prefix("https://")
            .map(|a| a.trim_end_matches('/'))
            .ok_or_else(|| unreachable("not an https:// member link".into()))?;
        let name = NodeName::parse(node)
            .and_then(|n| cleanroom_cluster::identity::server_name(&n))
            .map_err(|e| unreachable(e.to_string()))?;
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| unreachable("no answer".into()))?
            .map_err(|e| unreachable(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let tls = tokio::time::timeout(CONNECT_TIMEOUT, self.tls.connect(name, tcp))
            .await
            .map_err(|_| unreachable("TLS handshake timed out".into()))?
            .map_err(|e| unreachable(format!("TLS: {e}")))?;
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .keep_alive_interval(Some(Duration::from_secs(10)))
            .keep_alive_timeout(Duration::from_secs(10))
            .handshake(TokioIo::new(tls))
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "member link connection ended");
            }
        });
        Ok(sender)
    }

    /// Send `req` to member `node` at `peer` as `who`: the principal rides along.
    pub async fn send(
        &self,
        node: &str,
        peer: &str,
        who: &Principal,
        mut req: Request<Full<Bytes>>,
    ) -> Result<Response<hyper::body::Incoming>, EngineError> {
        let h = req.headers_mut();
        h.insert(
            PRINCIPAL_HEADER,
            HeaderValue::from_str(&who.name)
                .map_err(|e| EngineError::internal(format!("principal header: {e}")))?,
        );
        h.insert(
            ROLE_HEADER,
            HeaderValue::from_static(if who.is_admin() { "admin" } else { "user" }),
        );
        for attempt in 0..2 {
            let cached = self.conns.lock().await.get(node).cloned();
            let mut sender = match cached {
                Some(s) if !s.is_closed() => s,
                _ => {
                    let s = self.dial(node, peer).await?;
                    self.conns.lock().await.insert(node.to_string(), s.clone());
                    s
                }
            };
            let copy = clone_request(&req);
            match sender.send_request(copy).await {
                Ok(r) => return Ok(r),
                Err(e) if attempt == 0 => {
                    tracing::debug!(node, error = %e, "member link broke; redialling");
                    self.conns.lock().await.remove(node);
                }
                Err(e) => {
                    self.conns.lock().await.remove(node);
                    return Err(crate::cluster::unreachable(format!("member {node}: {e}")));
                }
            }
        }
        Err(crate::cluster::unreachable(format!(
            "member {node}: unreachable"
        )))
    }
}

fn clone_request(r: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(r.method().clone())
        .uri(r.uri().clone());
    if let Some(h) = b.headers_mut() {
        *h = r.headers().clone();
    }
    let body = r.body().clone();
    b.body(body)
        .unwrap_or_else(|_| Request::new(Full::new(Bytes::new())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_principal_names_the_api_writes_are_taken() {
        assert_eq!(principal_from("alice", "user").unwrap().role, Role::User);
        assert!(principal_from("uid:0", "admin").unwrap().is_admin());
        for (n, r) in [
            ("uid:", "user"),
            ("uid:x", "user"),
            ("pool:abc", "user"),
            ("a b", "user"),
            ("alice", "root"),
            ("", "user"),
        ] {
            assert!(principal_from(n, r).is_none(), "{n} {r}");
        }
    }
}
