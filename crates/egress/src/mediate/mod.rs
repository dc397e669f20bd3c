//! Serving a mediated registry on a TLS connection the gateway terminated: each request is
//! checked strictly, classified by the registry's URL scheme, judged against the lockfile's
//! pins, and answered from the shared cache or from the upstream over verified TLS. npm is
//! served here; pypi in [`pypi`], git smart HTTP in [`git`], what they share in [`fetch`].

mod fetch;
mod git;
mod pypi;

use crate::body::{text, Body};
use crate::ctx::{denied, Ctx};
use crate::event::{EgressEvent, Notice};
use crate::registry::npm::{self, NpmRequest};
use crate::registry::BoundRegistry;
use bytes::Bytes;
use cleanroom_policy::lockfile::Digest;
use cleanroom_policy::registries::{RegistryKind, RegistryMode};
use cleanroom_policy::{normalize_wire_host, DenyReason};
use cleanroom_vocab::FailReason;
use fetch::{
    deny, fetch, origin, passthrough, respond, upstream_bad, warned, MAX_ARTIFACT_BYTES, PROTO,
};
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
    let refuse = |r: DenyReason, msg: String| denied(&ctx, &host, port, PROTO, r, msg);
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
        if let Some(call) = git::classify(req.method(), &path) {
            return git::serve(req, call, &ctx, &host, port).await;
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
        return pypi::handle(&ctx, &reg, &host, port, &path, enforce).await;
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
    if !crate::registry::cache::verify(d, &body) {
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
