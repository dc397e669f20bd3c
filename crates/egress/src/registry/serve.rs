//! Serving a mediated registry on a TLS connection the gateway terminated: each request is
//! checked strictly, classified by the registry's URL scheme, judged against the lockfile's
//! pins, and answered from the shared cache or from the upstream over verified TLS.

use super::budget::Held;
use super::npm::{self, NpmRequest};
use super::BoundRegistry;
use crate::event::{EgressEvent, Notice};
use crate::http::{empty, text, Body};
use crate::Ctx;
use bytes::Bytes;
use cleanroom_policy::lockfile::Digest;
use cleanroom_policy::registries::{RegistryKind, RegistryMode};
use cleanroom_policy::{normalize_wire_host, DenyReason};
use cleanroom_vocab::FailReason;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How long the guest may take to complete its TLS handshake with the gateway.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(15);
/// Largest packument accepted from the upstream (filtered in memory).
const MAX_METADATA_BYTES: usize = 64 << 20;
/// Largest artifact accepted from the upstream (verified in memory before any byte is sent).
const MAX_ARTIFACT_BYTES: usize = 256 << 20;
/// How long one upstream exchange (connect, request, whole body) may take.
const UPSTREAM_WAIT: Duration = Duration::from_secs(120);
pub(super) const PROTO: &str = "https";

/// Terminate the guest's TLS to a registry host and serve its requests.
pub(crate) async fn terminate<S>(client: S, ctx: Arc<Ctx>, host: String, port: u16)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let failed = |msg: String| {
        ctx.events.emit(EgressEvent::failed(
            &host,
            port,
            PROTO,
            FailReason::TlsInterceptionFailed,
            msg,
        ))
    };
    let Some(ca) = ctx.ca.as_ref() else {
        return failed("the sandbox has no CA to terminate TLS with".into());
    };
    let config = match ca.server_config(&host) {
        Ok(c) => c,
        Err(e) => return failed(e.to_string()),
    };
    let tls = match tokio::time::timeout(
        HANDSHAKE_WAIT,
        tokio_rustls::TlsAcceptor::from(config).accept(client),
    )
    .await
    {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            return failed(format!(
                "TLS handshake with the sandbox failed (does it trust its sandbox CA?): {e}"
            ))
        }
        Err(_) => return failed("the sandbox did not complete its TLS handshake".into()),
    };
    let (svc_ctx, svc_host) = (ctx.clone(), host.clone());
    let svc = hyper::service::service_fn(move |req| {
        let (ctx, host) = (svc_ctx.clone(), svc_host.clone());
        async move { Ok::<_, Infallible>(handle(req, ctx, host, port).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(crate::sniff::HEAD_WAIT)
        .serve_connection(TokioIo::new(tls), svc);
    if let Err(e) = conn.await {
        if e.is_parse() || e.is_parse_too_large() {
            ctx.events.emit(EgressEvent::deny(
                &host,
                port,
                PROTO,
                DenyReason::RequestMalformed,
                format!("request head refused: {e}"),
            ));
        }
    }
}

pub(super) fn deny(ctx: &Ctx, reg: &BoundRegistry, r: DenyReason, msg: String) -> Response<Body> {
    crate::http::denied(ctx, &reg.host, reg.port, PROTO, r, msg)
}

/// Allowed, but outside the lockfile: warn mode's event (a warning on `exec` too).
pub(super) fn warned(ctx: &Ctx, reg: &BoundRegistry, msg: String) {
    let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
    ev.reason = DenyReason::LockfileViolation.as_str();
    ev.message = format!("warn mode, let through: {msg}");
    ev.notice = Notice::Warn;
    ctx.events.emit(ev);
}

/// A refusal npm expects and handles by itself (its audit, its update check): recorded as
/// a deny, but not a warning on `exec`.
fn deny_quietly(ctx: &Ctx, reg: &BoundRegistry, r: DenyReason, msg: String) -> Response<Body> {
    let mut ev = EgressEvent::deny(&reg.host, reg.port, PROTO, r, msg.clone());
    ev.notice = Notice::Quiet;
    ctx.events.emit(ev);
    text(
        StatusCode::FORBIDDEN,
        Some(r.as_str()),
        format!("cleanroom: egress denied [{r}]: {msg}\n"),
    )
}

async fn handle(req: Request<Incoming>, ctx: Arc<Ctx>, host: String, port: u16) -> Response<Body> {
    let refuse = |r: DenyReason, msg: String| crate::http::denied(&ctx, &host, port, PROTO, r, msg);
    if let Err(msg) = crate::strict::validate(&req) {
        return refuse(DenyReason::RequestMalformed, msg);
    }
    let named = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| crate::strict::split_authority(h, port))
        .and_then(|(h, _)| normalize_wire_host(&h));
    if named.as_deref() != Some(host.as_str()) {
        return refuse(
            DenyReason::HostMismatch,
            format!("request for {named:?} on a connection to {host}"),
        );
    }
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if ctx.registries.git_repos(&host, port).next().is_some() {
        if let Some(call) = super::git::classify(req.method(), &path) {
            return super::git::serve(req, call, &ctx, &host, port).await;
        }
    }
    let Some(reg) = ctx.registries.claims(&host).cloned() else {
        return refuse(
            DenyReason::RegistryNotAllowed,
            format!(
                "{} {path} is not a git smart-HTTP request the gateway serves",
                req.method()
            ),
        );
    };
    let enforce = reg.mode == RegistryMode::Enforce;
    let what = npm::classify(&path);
    if reg.kind == RegistryKind::Npm && enforce {
        if let Some(msg) = npm::housekeeping(req.method(), &path, &reg.pins) {
            return deny_quietly(&ctx, &reg, DenyReason::RegistryNotAllowed, msg);
        }
    }
    if req.method() != Method::GET {
        return deny(
            &ctx,
            &reg,
            DenyReason::RegistryNotAllowed,
            format!(
                "{} {path}: only package fetches (GET) go to a mediated registry",
                req.method()
            ),
        );
    }
    let accept = req.headers().get(hyper::header::ACCEPT).cloned();
    if reg.kind == RegistryKind::Pypi {
        return super::pypi_serve::handle(&ctx, &reg, &host, port, &path, enforce).await;
    }
    match what {
        NpmRequest::Packument { name } => {
            if reg.pins.versions(&name).is_none() {
                let msg = format!("package {name} is not in the lockfile");
                if enforce {
                    return deny(&ctx, &reg, DenyReason::LockfileViolation, msg);
                }
                warned(&ctx, &reg, msg);
            }
            packument(&ctx, &reg, &path, &name, accept, enforce).await
        }
        NpmRequest::Tarball { name, version } => match reg.pins.get(&name, &version) {
            Some(d) => artifact(&ctx, &reg, &path, &name, &version, d).await,
            None => {
                let msg = format!("{name}@{version} is not pinned by the lockfile");
                if enforce {
                    return deny(&ctx, &reg, DenyReason::LockfileViolation, msg);
                }
                warned(&ctx, &reg, msg);
                passthrough(&ctx, &reg, &path, accept).await
            }
        },
        NpmRequest::Other => {
            let msg = format!("GET {path} is not a package fetch the gateway serves");
            if enforce {
                return deny(&ctx, &reg, DenyReason::RegistryNotAllowed, msg);
            }
            warned(&ctx, &reg, msg);
            passthrough(&ctx, &reg, &path, accept).await
        }
    }
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

async fn packument(
    ctx: &Ctx,
    reg: &BoundRegistry,
    path: &str,
    name: &str,
    accept: Option<hyper::header::HeaderValue>,
    enforce: bool,
) -> Response<Body> {
    let (status, ctype, body, held) = match fetch(ctx, reg, path, accept, MAX_METADATA_BYTES).await
    {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    if status != StatusCode::OK {
        return respond(status, &ctype, body, held);
    }
    let mut doc: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(d) => d,
        Err(e) => {
            return upstream_bad(
                ctx,
                &reg.host,
                reg.port,
                format!("packument of {name} is not JSON: {e}"),
            )
        }
    };
    let pins = enforce.then_some(&reg.pins);
    let hidden = match npm::filter_packument(&mut doc, name, &origin(reg), pins) {
        Ok(h) => h,
        Err(e) => {
            return upstream_bad(
                ctx,
                &reg.host,
                reg.port,
                format!("packument of {name}: {e}"),
            )
        }
    };
    let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
    ev.message = format!("npm metadata {name}");
    if hidden > 0 {
        // npm reports a wanted version that was filtered out only as `notarget`: say why.
        let kept: Vec<&str> = reg
            .pins
            .versions(name)
            .map(|v| v.keys().map(String::as_str).collect())
            .unwrap_or_default();
        ev.reason = DenyReason::LockfileViolation.as_str();
        ev.notice = Notice::Warn;
        ev.message = format!(
            "npm metadata {name}: only the lockfile's version(s) {} offered, {hidden} other(s) \
             hidden (a version outside the lockfile is npm's `notarget`)",
            kept.join(", ")
        );
    }
    ctx.events.emit(ev);
    // The filtered document replaces the fetched one: same budget.
    respond(
        StatusCode::OK,
        "application/json",
        Bytes::from(doc.to_string()),
        held,
    )
}

async fn artifact(
    ctx: &Ctx,
    reg: &BoundRegistry,
    path: &str,
    name: &str,
    version: &str,
    d: &Digest,
) -> Response<Body> {
    let allowed = |source: &str| {
        let mut ev = EgressEvent::allow(&reg.host, reg.port, PROTO);
        ev.message = format!("npm artifact {name}@{version} ({source})");
        ctx.events.emit(ev);
    };
    if let Some(cache) = ctx.registries.cache() {
        if let Some(data) = cache.get(d).await {
            allowed("cache");
            let held = match ctx.registries.budget().hold(data.len()).await {
                Ok(h) => h,
                Err(e) => return upstream_bad(ctx, &reg.host, reg.port, e),
            };
            return respond(
                StatusCode::OK,
                "application/octet-stream",
                data.into(),
                held,
            );
        }
    }
    let (status, ctype, body, held) = match fetch(ctx, reg, path, None, MAX_ARTIFACT_BYTES).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    if status != StatusCode::OK {
        return respond(status, &ctype, body, held);
    }
    if !super::cache::verify(d, &body) {
        return deny(
            ctx,
            reg,
            DenyReason::IntegrityMismatch,
            format!(
                "{name}@{version}: the upstream's bytes do not match the lockfile's {} integrity",
                d.algo.as_str()
            ),
        );
    }
    if let Some(cache) = ctx.registries.cache() {
        cache.put(d, body.clone()).await;
    }
    allowed("upstream");
    respond(StatusCode::OK, "application/octet-stream", body, held)
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
        .map_err(|e| crate::http::resp_for(ctx, host, port, PROTO, e))?;
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
