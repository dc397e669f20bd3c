//! Terminating TLS for secret-bound hosts, and keeping secret values out of what comes back.
//!
//! Only connections to hosts a secret is bound to are terminated; all other TLS passes
//! through end to end (checked by SNI only). The guest talks TLS to the gateway with a
//! certificate from its sandbox CA; each request is then checked and rewritten by
//! [`crate::http`] (`Mode::Intercept`) and sent on over a verified TLS connection.

use crate::event::EgressEvent;
use crate::secrets::Redactor;
use crate::Ctx;
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::HeaderValue;
use hyper::Response;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How long the guest may take to complete its TLS handshake with the gateway.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(15);

/// Reason code of an interception that failed (the guest rejected the sandbox CA, or the
/// handshake broke). The connection is closed; nothing reached the upstream.
pub const TLS_INTERCEPTION_FAILED: &str = "tls_interception_failed";

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
            TLS_INTERCEPTION_FAILED,
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
                TLS_INTERCEPTION_FAILED,
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
            TLS_INTERCEPTION_FAILED,
            format!("TLS handshake with the sandbox failed (does it trust its sandbox CA?): {e}"),
        )),
        Err(_) => ctx.events.emit(EgressEvent::failed(
            &host,
            port,
            "https",
            TLS_INTERCEPTION_FAILED,
            "the sandbox did not complete its TLS handshake",
        )),
    }
}

/// A response from a bound host, with every secret value masked in headers and body.
/// `None` when the body is content-encoded (compressed bytes cannot be searched): the
/// caller refuses it rather than pass on what it cannot check.
pub(crate) fn redact_response(
    resp: Response<Incoming>,
    redactor: Redactor,
) -> Option<Response<crate::http::Body>> {
    let encoded = resp
        .headers()
        .get_all(hyper::header::CONTENT_ENCODING)
        .iter()
        .any(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"));
    if encoded {
        return None;
    }
    let (mut parts, body) = resp.into_parts();
    for value in parts.headers.values_mut() {
        if let Some(masked) = redactor.mask_whole(value.as_bytes()) {
            if let Ok(v) = HeaderValue::from_bytes(&masked) {
                *value = v;
            }
        }
    }
    let body = Redacted {
        inner: body,
        redactor,
        pending: None,
        done: false,
    };
    Some(Response::from_parts(parts, body.boxed()))
}

/// A body stream passed through a [`Redactor`].
struct Redacted {
    inner: Incoming,
    redactor: Redactor,
    /// A trailers frame that arrived while held-back bytes still had to go out first.
    pending: Option<Frame<Bytes>>,
    done: bool,
}

impl Body for Redacted {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        if let Some(f) = self.pending.take() {
            return Poll::Ready(Some(Ok(f)));
        }
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let out = self.redactor.push(&data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                        }
                    }
                    Err(other) => {
                        let rest = self.redactor.finish();
                        if rest.is_empty() {
                            return Poll::Ready(Some(Ok(other)));
                        }
                        self.pending = Some(other);
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                },
                Poll::Ready(None) => {
                    self.done = true;
                    let rest = self.redactor.finish();
                    if !rest.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(rest)))));
                    }
                }
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        // Masking keeps lengths, so the upstream's exact length is still exact.
        self.inner.size_hint()
    }
}
