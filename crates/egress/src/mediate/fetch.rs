//! What every mediated registry's serving shares: its events and refusals, answers built
//! from a whole (verified) body, and fetching from the registry's upstream over verified
//! TLS, bounded in size and time. npm (`mod.rs`), pypi (`pypi.rs`) and git
//! (`git.rs`) all build on this; it builds on none of them.

use crate::body::{empty, text, Body};
use crate::ctx::{denied, resp_for, Ctx};
use crate::event::{EgressEvent, Notice};
use crate::registry::budget::Held;
use crate::registry::BoundRegistry;
use bytes::Bytes;
use cleanroom_policy::DenyReason;
use cleanroom_vocab::FailReason;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::time::Duration;

/// Largest artifact accepted from the upstream (verified in memory before any byte is sent).
pub(super) const MAX_ARTIFACT_BYTES: usize = 256 << 20;
/// How long one upstream exchange (connect, request, whole body) may take.
const UPSTREAM_WAIT: Duration = Duration::from_secs(120);
pub(super) const PROTO: &str = "https";

pub(super) fn deny(ctx: &Ctx, reg: &BoundRegistry, r: DenyReason, msg: String) -> Response<Body> {
    denied(ctx, &reg.host, reg.port, PROTO, r, msg)
}

/// Allowed, but outside the lockfile: warn mode's event (a warning on `exec` too).
pub(super) fn warned(ctx: &Ctx, reg: &BoundRegistry, msg: String) {
    let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
    ev.reason = DenyReason::LockfileViolation.as_str();
    ev.message = format!("warn mode, let through: {msg}");
    ev.notice = Notice::Warn;
    ctx.events.emit(ev);
}

pub(super) fn origin(reg: &BoundRegistry) -> String {
    if reg.port == 443 {
        format!("https://{}", reg.host)
    } else {
        format!("https://{}:{}", reg.host, reg.port)
    }
}

pub(super) fn respond(
    status: StatusCode,
    content_type: &str,
    body: Bytes,
    held: Held,
) -> Response<Body> {
    // The buffer's budget permits are released when the body is dropped (sent or not).
    let len = body.len();
    let body = Full::new(body)
        .map_err(|n| match n {})
        .map_frame(move |f| {
            let _keep = &held;
            f
        })
        .boxed();
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-length", len)
        .body(body)
        .unwrap_or_else(|_| Response::new(empty()))
}

/// Warn mode: what the lockfile does not cover goes through unchanged.
pub(super) async fn passthrough(
    ctx: &Ctx,
    reg: &BoundRegistry,
    path: &str,
    accept: Option<hyper::header::HeaderValue>,
) -> Response<Body> {
    match fetch(ctx, reg, path, accept, MAX_ARTIFACT_BYTES).await {
        Ok((status, ctype, body, held)) => respond(status, &ctype, body, held),
        Err(resp) => resp,
    }
}

pub(super) fn upstream_bad(ctx: &Ctx, host: &str, port: u16, msg: String) -> Response<Body> {
    ctx.events
        .emit(EgressEvent::error(host, port, PROTO, msg.clone()));
    text(
        StatusCode::BAD_GATEWAY,
        None,
        format!("cleanroom: registry upstream: {msg}\n"),
    )
}

/// GET `path` from the registry's upstream over verified TLS; the whole body, bounded.
pub(super) async fn fetch(
    ctx: &Ctx,
    reg: &BoundRegistry,
    path: &str,
    accept: Option<hyper::header::HeaderValue>,
    max: usize,
) -> Result<(StatusCode, String, Bytes, Held), Response<Body>> {
    let f = fetch_at(ctx, &reg.host, reg.port, path, accept, max).await?;
    Ok((f.status, f.ctype, f.body, f.held))
}

/// One whole upstream answer.
pub(super) struct Fetched {
    pub status: StatusCode,
    pub ctype: String,
    /// A redirect's target, as sent.
    pub location: Option<String>,
    pub body: Bytes,
    pub held: Held,
}

/// GET `path` from `host:port` over verified TLS; the whole body, bounded.
/// Credentials are never forwarded; compression is refused (bodies are checked).
pub(super) async fn fetch_at(
    ctx: &Ctx,
    host: &str,
    port: u16,
    path: &str,
    accept: Option<hyper::header::HeaderValue>,
    max: usize,
) -> Result<Fetched, Response<Body>> {
    let exchange = async {
        let mut sender = open_upstream(ctx, host, port).await?;
        let authority = if port == 443 {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        let mut b = Request::get(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::ACCEPT_ENCODING, "identity")
            .header(hyper::header::USER_AGENT, "cleanroom-gateway");
        if let Some(a) = accept {
            b = b.header(hyper::header::ACCEPT, a);
        }
        let req = b
            .body(empty())
            .map_err(|e| upstream_bad(ctx, host, port, e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| upstream_bad(ctx, host, port, e.to_string()))?;
        let status = resp.status();
        if resp
            .headers()
            .get(hyper::header::CONTENT_ENCODING)
            .is_some_and(|v| v != "identity")
        {
            return Err(upstream_bad(
                ctx,
                host,
                port,
                "the upstream sent a compressed body".into(),
            ));
        }
        let ctype = resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_string();
        let location = resp
            .headers()
            .get(hyper::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (body, held) = ctx
            .registries
            .budget()
            .collect(resp.into_body(), max)
            .await
            .map_err(|e| {
                upstream_bad(
                    ctx,
                    host,
                    port,
                    format!("{path}: body: {e} (limit {max} bytes)"),
                )
            })?;
        Ok(Fetched {
            status,
            ctype,
            location,
            body,
            held,
        })
    };
    match tokio::time::timeout(UPSTREAM_WAIT, exchange).await {
        Ok(r) => r,
        Err(_) => Err(upstream_bad(
            ctx,
            host,
            port,
            format!("{path}: no complete answer in time"),
        )),
    }
}

/// A new verified TLS + HTTP/1 connection to a mediated host's upstream.
pub(super) async fn open_upstream(
    ctx: &Ctx,
    host: &str,
    port: u16,
) -> Result<hyper::client::conn::http1::SendRequest<Body>, Response<Body>> {
    let tcp = ctx
        .upstream_connect(host, port)
        .await
        .map_err(|e| resp_for(ctx, host, port, PROTO, e))?;
    let tls_failed = |e: String| {
        ctx.events.emit(EgressEvent::failed(
            host,
            port,
            PROTO,
            FailReason::UpstreamTlsFailed,
            e.clone(),
        ));
        text(
            StatusCode::BAD_GATEWAY,
            None,
            format!("cleanroom: [{}] {e}\n", FailReason::UpstreamTlsFailed),
        )
    };
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| tls_failed(e.to_string()))?;
    let config = ctx
        .upstream
        .client_tls()
        .map_err(|e| tls_failed(e.to_string()))?;
    let io = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| tls_failed(e.to_string()))?;
    let (sender, conn) = crate::upstream::http1_client()
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| upstream_bad(ctx, host, port, format!("handshake: {e}")))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}
