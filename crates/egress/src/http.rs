//! HTTP through the gateway: the explicit proxy (`HTTP_PROXY`/`HTTPS_PROXY`, CONNECT and
//! absolute-form requests) and transparent plain-HTTP connections to an allowed name.
//!
//! Requests are parsed by hyper, one policy decision per request, so a keep-alive
//! connection cannot smuggle a second request to another host past the first check.

use crate::event::EgressEvent;
use crate::tcp::splice_checked;
use crate::upstream::UpstreamError;
use crate::Ctx;
use bytes::Bytes;
use cleanroom_policy::{normalize_wire_host, DenyReason};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

type Body = BoxBody<Bytes, hyper::Error>;

/// Who decides the destination of each request.
#[derive(Clone)]
pub enum Mode {
    /// The explicit proxy: CONNECT targets and absolute-form URIs.
    Proxy,
    /// A transparent connection the sandbox opened to `host:port` (a name from our DNS):
    /// every request's Host must name that host.
    Fixed { host: String, port: u16 },
}

/// Serve HTTP/1 on one client connection until it closes.
pub async fn serve<S>(io: S, ctx: Arc<Ctx>, mode: Mode)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req| {
        let ctx = ctx.clone();
        let mode = mode.clone();
        async move { Ok::<_, Infallible>(handle(req, ctx, mode).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .with_upgrades();
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "gateway http connection ended");
    }
}

fn text(status: StatusCode, reason: Option<&str>, msg: String) -> Response<Body> {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .header("connection", "close");
    if let Some(r) = reason {
        b = b.header("x-cleanroom-deny", r);
    }
    b.body(Full::new(Bytes::from(msg)).map_err(|n| match n {}).boxed())
        .unwrap_or_else(|_| Response::new(empty()))
}

fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|n| match n {}).boxed()
}

fn denied(
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    r: DenyReason,
    msg: String,
) -> Response<Body> {
    ctx.events
        .emit(EgressEvent::deny(host, port, proto, r, msg.clone()));
    text(
        StatusCode::FORBIDDEN,
        Some(r.code()),
        format!("cleanroom: egress denied [{}]: {msg}\n", r.code()),
    )
}

/// Split `host[:port]` (brackets for IPv6 literals) with a default port.
fn split_authority(auth: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = auth.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if tail.is_empty() => default_port,
            None => return None,
        };
        return Some((h.to_string(), port));
    }
    match auth.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
        None => Some((auth.to_string(), default_port)),
    }
}

/// Policy check for a named destination; the normalized host on success.
fn check(ctx: &Ctx, raw_host: &str, port: u16) -> Result<String, (String, DenyReason, String)> {
    let Some(host) = normalize_wire_host(raw_host) else {
        if raw_host.parse::<std::net::IpAddr>().is_ok() && ctx.policy.allows_ip_literals() {
            return Ok(raw_host.to_string());
        }
        return Err((
            raw_host.to_string(),
            DenyReason::IpLiteralNotAllowed,
            format!("{raw_host:?} is not a host name the policy can allow"),
        ));
    };
    ctx.policy.decide(&host, port).map_err(|r| {
        (
            host.clone(),
            r,
            format!("{host}:{port} is not allowed by the policy"),
        )
    })?;
    Ok(host)
}

async fn handle(req: Request<Incoming>, ctx: Arc<Ctx>, mode: Mode) -> Response<Body> {
    if req.method() == Method::CONNECT {
        return match mode {
            Mode::Proxy => connect(req, ctx).await,
            Mode::Fixed { .. } => text(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "CONNECT is only for the proxy\n".into(),
            ),
        };
    }
    let (host, port, proto) = match &mode {
        Mode::Proxy => {
            let uri = req.uri();
            if uri.scheme_str() != Some("http") {
                return text(
                    StatusCode::BAD_REQUEST,
                    None,
                    "cleanroom gateway: send absolute http:// URIs or use CONNECT\n".into(),
                );
            }
            let Some(auth) = uri.authority() else {
                return text(StatusCode::BAD_REQUEST, None, "missing host\n".into());
            };
            (
                auth.host().trim_matches(['[', ']']).to_string(),
                auth.port_u16().unwrap_or(80),
                "http-proxy",
            )
        }
        Mode::Fixed { host, port } => {
            let named = req
                .headers()
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| split_authority(h, *port))
                .and_then(|(h, _)| normalize_wire_host(&h));
            if named.as_deref() != Some(host.as_str()) {
                return denied(
                    &ctx,
                    host,
                    *port,
                    "http",
                    DenyReason::HostMismatch,
                    format!(
                        "request for {:?} on a connection to {host}",
                        named.unwrap_or_default()
                    ),
                );
            }
            (host.clone(), *port, "http")
        }
    };
    let host = match check(&ctx, &host, port) {
        Ok(h) => h,
        Err((h, r, msg)) => return denied(&ctx, &h, port, proto, r, msg),
    };
    if let Some(id) = ctx.secrets.placeholder_in_request(&req) {
        return denied(
            &ctx,
            &host,
            port,
            proto,
            DenyReason::SecretScopeViolation,
            format!("placeholder of secret {id} sent in plain HTTP to {host}"),
        );
    }
    forward(req, ctx, host, port, proto).await
}

async fn forward(
    mut req: Request<Incoming>,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
    proto: &'static str,
) -> Response<Body> {
    let upstream = match ctx.upstream_connect(&host, port).await {
        Ok(s) => s,
        Err(resp) => return resp_for(&ctx, &host, port, proto, resp),
    };
    ctx.events.emit(EgressEvent::allow(&host, port, proto));
    // Origin-form towards the server; proxy-only headers never leave.
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if let Ok(uri) = path.parse() {
        *req.uri_mut() = uri;
    }
    for h in ["proxy-connection", "proxy-authorization", "keep-alive"] {
        req.headers_mut().remove(h);
    }
    if !req.headers().contains_key(hyper::header::HOST) {
        let value = if port == 80 {
            host.clone()
        } else {
            format!("{host}:{port}")
        };
        if let Ok(v) = value.parse() {
            req.headers_mut().insert(hyper::header::HOST, v);
        }
    }
    let (mut sender, conn) =
        match hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await {
            Ok(x) => x,
            Err(e) => {
                return text(
                    StatusCode::BAD_GATEWAY,
                    None,
                    format!("upstream handshake: {e}\n"),
                )
            }
        };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    match sender.send_request(req).await {
        Ok(resp) => resp.map(|b| b.boxed()),
        Err(e) => text(
            StatusCode::BAD_GATEWAY,
            None,
            format!("upstream request failed: {e}\n"),
        ),
    }
}

fn resp_for(
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    e: UpstreamError,
) -> Response<Body> {
    match e {
        UpstreamError::Denied(r, msg) => denied(ctx, host, port, proto, r, msg),
        UpstreamError::Unreachable(msg) => {
            ctx.events
                .emit(EgressEvent::error(host, port, proto, msg.clone()));
            text(
                StatusCode::BAD_GATEWAY,
                None,
                format!("cleanroom: upstream unreachable: {msg}\n"),
            )
        }
    }
}

async fn connect(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<Body> {
    let Some((raw, port)) = req
        .uri()
        .authority()
        .and_then(|a| split_authority(a.as_str(), 443))
    else {
        return text(
            StatusCode::BAD_REQUEST,
            None,
            "CONNECT needs host:port\n".into(),
        );
    };
    let host = match check(&ctx, &raw, port) {
        Ok(h) => h,
        Err((h, r, msg)) => return denied(&ctx, &h, port, "connect", r, msg),
    };
    let upstream = match ctx.upstream_connect(&host, port).await {
        Ok(s) => s,
        Err(e) => return resp_for(&ctx, &host, port, "connect", e),
    };
    tokio::spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => {
                splice_checked(TokioIo::new(upgraded), upstream, ctx, host, port, "connect").await
            }
            Err(e) => tracing::debug!(error = %e, "CONNECT upgrade failed"),
        }
    });
    Response::new(empty())
}

#[cfg(test)]
mod tests {
    use super::split_authority;

    #[test]
    fn authorities() {
        assert_eq!(
            split_authority("a.test:8443", 443),
            Some(("a.test".into(), 8443))
        );
        assert_eq!(split_authority("a.test", 443), Some(("a.test".into(), 443)));
        assert_eq!(split_authority("[::1]:80", 443), Some(("::1".into(), 80)));
        assert_eq!(split_authority("a.test:x", 443), None);
    }
}
