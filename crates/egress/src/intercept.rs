//! Terminating TLS for secret-bound hosts, and keeping secret values out of what comes back.
//!
//! Only connections to hosts a secret is bound to are terminated; all other TLS passes
//! through end to end (checked by SNI only). The guest talks TLS to the gateway with a
//! certificate from its sandbox CA; each request is then checked and rewritten by
//! [`crate::http`] (`Mode::Intercept`) and sent on over a verified TLS connection.

use crate::ctx::Ctx;
use crate::event::EgressEvent;
use cleanroom_vocab::FailReason;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How long the guest may take to complete its TLS handshake with the gateway.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(15);

/// Terminate the guest's TLS to `host:port` and serve its requests.
pub(crate) async fn terminate<S>(client: S, ctx: Arc<Ctx>, host: String, port: u16)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Some(ca) = ctx.ca.as_ref() else {
        ctx.events.emit(EgressEvent::failed(
            &host,
            port,
            "https",
            FailReason::TlsInterceptionFailed,
            "the sandbox has no CA to terminate TLS with",
        ));
        return;
    };
    let config = match ca.server_config(&host) {
        Ok(c) => c,
        Err(e) => {
            ctx.events.emit(EgressEvent::failed(
                &host,
                port,
                "https",
                FailReason::TlsInterceptionFailed,
                e.to_string(),
            ));
            return;
        }
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    match tokio::time::timeout(HANDSHAKE_WAIT, acceptor.accept(client)).await {
        Ok(Ok(tls)) => {
            crate::http::serve(tls, ctx, crate::http::Mode::Intercept { host, port }).await
        }
        Ok(Err(e)) => ctx.events.emit(EgressEvent::failed(
            &host,
            port,
            "https",
            FailReason::TlsInterceptionFailed,
            format!("TLS handshake with the sandbox failed (does it trust its sandbox CA?): {e}"),
        )),
        Err(_) => ctx.events.emit(EgressEvent::failed(
            &host,
            port,
            "https",
            FailReason::TlsInterceptionFailed,
            "the sandbox did not complete its TLS handshake",
        )),
    }
}
