//! CONNECT through the gateway's proxy: the target is checked like any destination, then
//! the tunnel's opening is judged like a transparent connection's (`tcp::splice_checked`),
//! or, for a secret-bound host, its TLS is terminated (`tcp::handle_named`).

use crate::body::{empty, text, Body};
use crate::ctx::{denied, resp_for, Ctx};
use crate::http::{check, Mode};
use crate::strict::{same_authority, split_authority};
use crate::tcp::splice_checked;
use cleanroom_policy::DenyReason;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serve the explicit proxy (`HTTP_PROXY`/`HTTPS_PROXY`) on one client connection: HTTP
/// ([`crate::http`]) whose CONNECT requests are answered here.
pub(crate) async fn serve_proxy<S>(io: S, ctx: Arc<Ctx>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    crate::http::serve(io, ctx, Mode::Proxy(connect_boxed)).await
}

/// [`connect`] as the proxy's [`crate::http::ConnectHandler`].
fn connect_boxed(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>> {
    Box::pin(connect(req, ctx))
}

/// Answer a CONNECT request and serve its tunnel.
pub(crate) async fn connect(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<Body> {
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
    let host = match check(&ctx, &raw, port, "connect", true).await {
        Ok(h) => h,
        Err((h, r, msg)) => return denied(&ctx, &h, port, "connect", r, msg),
    };
    if let Some(named) = req.headers().get(hyper::header::HOST) {
        let named = named.to_str().unwrap_or_default();
        if !same_authority(named, &format!("{raw}:{port}"), port) {
            return denied(
                &ctx,
                &host,
                port,
                "connect",
                DenyReason::HostMismatch,
                format!("CONNECT to {host}:{port} with Host {named:?}"),
            );
        }
    }
    if ctx.secrets.binds(&host) {
        // A secret-bound host: the tunnel's TLS is terminated here, and every request in it
        // goes upstream on its own (see `intercept`).
        tokio::spawn(async move {
            match hyper::upgrade::on(req).await {
                Ok(upgraded) => tunnel_to_bound_host(upgraded, ctx, host, port).await,
                Err(e) => tracing::debug!(error = %e, "CONNECT upgrade failed"),
            }
        });
        return Response::new(empty());
    }
    let upstream = match ctx.upstream_connect(&host, port).await {
        Ok(s) => s,
        Err(e) => return resp_for(&ctx, &host, port, "connect", e),
    };
    tokio::spawn(async move {
        match hyper::upgrade::on(req).await {
            Ok(upgraded) => tunnel_checked(upgraded, upstream, ctx, host, port).await,
            Err(e) => tracing::debug!(error = %e, "CONNECT upgrade failed"),
        }
    });
    Response::new(empty())
}

/// A CONNECT tunnel to a secret-bound host, handled like a transparent connection. Boxed
/// with an explicit `Send` so the compiler need not prove it through the recursion
/// (proxy -> tunnel -> HTTP serving -> proxy handler).
fn tunnel_to_bound_host(
    upgraded: hyper::upgrade::Upgraded,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let flow =
            crate::tcp::handle_named(TokioIo::new(upgraded), ctx.clone(), host.clone(), port);
        crate::cut::guarded(&ctx, &host, port, "connect", flow).await
    })
}

/// A CONNECT tunnel to any other host: its opening is judged before anything is spliced.
/// Boxed with an explicit `Send` for the same reason as [`tunnel_to_bound_host`].
fn tunnel_checked(
    upgraded: hyper::upgrade::Upgraded,
    upstream: tokio::net::TcpStream,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let flow = splice_checked(
            TokioIo::new(upgraded),
            upstream,
            ctx.clone(),
            host.clone(),
            port,
        );
        crate::cut::guarded(&ctx, &host, port, "connect", flow).await
    })
}
