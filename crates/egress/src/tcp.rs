//! Transparent TCP: a connection the sandbox opened to an address our DNS handed out.
//!
//! The address names the host; the port comes from the SYN. Before anything reaches the
//! upstream, the first bytes are read: a TLS SNI or HTTP Host that names a different host
//! than the address stands for is a fronting attempt and is refused.

use crate::event::EgressEvent;
use crate::sniff::{peek, Opening, Prefixed};
use crate::Ctx;
use cleanroom_policy::{normalize_wire_host, DenyReason};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A client connection to `host:port` that policy already allowed: classify its opening,
/// then hand it to HTTP handling or splice it to the upstream.
pub(crate) async fn handle_named<S>(mut client: S, ctx: Arc<Ctx>, host: String, port: u16)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (opening, prefix) = match peek(&mut client).await {
        Ok(x) => x,
        Err(_) => return,
    };
    match opening {
        Opening::Http => {
            crate::http::serve(
                Prefixed::new(prefix, client),
                ctx,
                crate::http::Mode::Fixed { host, port },
            )
            .await
        }
        Opening::Tls { sni } => {
            if let Err(msg) = sni_matches(sni.as_deref(), &host) {
                ctx.events.emit(EgressEvent::deny(
                    &host,
                    port,
                    "tls",
                    DenyReason::HostMismatch,
                    msg,
                ));
                close_soon(&mut client).await;
                return;
            }
            if ctx.secrets.binds(&host) {
                crate::intercept::terminate(Prefixed::new(prefix, client), ctx, host, port).await;
                return;
            }
            match ctx.upstream_connect(&host, port).await {
                Ok(up) => {
                    ctx.events.emit(EgressEvent::allow(&host, port, "tls"));
                    splice(Prefixed::new(prefix, client), up).await
                }
                Err(e) => {
                    ctx.report_upstream_error(&host, port, "tls", e);
                    close_soon(&mut client).await;
                }
            }
        }
        Opening::Opaque => match ctx.upstream_connect(&host, port).await {
            Ok(up) => {
                ctx.events.emit(EgressEvent::allow(&host, port, "tcp"));
                splice(Prefixed::new(prefix, client), up).await
            }
            Err(e) => {
                ctx.report_upstream_error(&host, port, "tcp", e);
                close_soon(&mut client).await;
            }
        },
    }
}

/// A tunnel (CONNECT) already connected upstream: check the TLS SNI, if any, against the
/// tunnel's host, then splice.
pub(crate) async fn splice_checked<S>(
    mut client: S,
    upstream: TcpStream,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
    proto: &'static str,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (opening, prefix) = match peek(&mut client).await {
        Ok(x) => x,
        Err(_) => return,
    };
    if let Opening::Tls { sni } = &opening {
        if let Err(msg) = sni_matches(sni.as_deref(), &host) {
            ctx.events.emit(EgressEvent::deny(
                &host,
                port,
                proto,
                DenyReason::HostMismatch,
                msg,
            ));
            close_soon(&mut client).await;
            return;
        }
    }
    ctx.events.emit(EgressEvent::allow(&host, port, proto));
    splice(Prefixed::new(prefix, client), upstream).await
}

/// An SNI naming another host than the connection's is refused; no SNI is fine (the
/// connection can only reach `host` anyway).
fn sni_matches(sni: Option<&str>, host: &str) -> Result<(), String> {
    match sni {
        None => Ok(()),
        Some(s) if normalize_wire_host(s).as_deref() == Some(host) => Ok(()),
        Some(s) => Err(format!("TLS server name {s:?} on a connection to {host}")),
    }
}

/// Send FIN to the sandbox's side. The userspace stack only sends it once the handshake is
/// complete, which a connection refused right after its SYN may not be yet: retry for a
/// moment instead of waiting forever on a FIN that was never sent.
pub(crate) async fn close_soon<S: AsyncWrite + Unpin>(client: &mut S) {
    for _ in 0..40 {
        if tokio::time::timeout(Duration::from_millis(50), client.shutdown())
            .await
            .is_ok()
        {
            return;
        }
    }
}

/// Copy both ways until both sides are done.
pub(crate) async fn splice<A>(mut client: A, mut upstream: TcpStream)
where
    A: AsyncRead + AsyncWrite + Unpin,
{
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    let _ = upstream.shutdown().await;
    close_soon(&mut client).await;
}

#[cfg(test)]
mod tests {
    use super::sni_matches;

    #[test]
    fn sni_rules() {
        assert!(sni_matches(None, "a.test").is_ok());
        assert!(sni_matches(Some("A.test."), "a.test").is_ok());
        assert!(sni_matches(Some("b.test"), "a.test").is_err());
        assert!(sni_matches(Some("10.0.0.1"), "a.test").is_err());
    }
}
