//! HTTP through the gateway: the explicit proxy (`HTTP_PROXY`/`HTTPS_PROXY`, CONNECT and
//! absolute-form requests) and transparent plain-HTTP connections to an allowed name.
//!
//! Requests are parsed by hyper and then checked strictly ([`crate::strict`]): one policy
//! decision per request, so a keep-alive or pipelined connection cannot smuggle a second
//! request to another host past the first check, and the upstream gets a re-serialization
//! of the checked form (Host written from the decided target), never the client's bytes.

use crate::body::text;
pub(crate) use crate::body::Body;
use crate::ctx::{denied, resp_for, Ctx};
use crate::event::EgressEvent;
use crate::judge::{judge, settle, Query};
use crate::strict::split_authority;
use cleanroom_policy::{normalize_wire_host, DenyReason};
use cleanroom_vocab::FailReason;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// What answers a CONNECT request on the proxy (`connect.rs`): passed in, so the proxy's
/// tunnels, which serve HTTP again (`Mode::Fixed`, `Mode::Intercept`), need no import back.
pub type ConnectHandler =
    fn(
        Request<Incoming>,
        Arc<Ctx>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>;

/// Who decides the destination of each request.
#[derive(Clone)]
pub enum Mode {
    /// The explicit proxy: CONNECT targets (answered by the handler) and absolute-form URIs.
    Proxy(ConnectHandler),
    /// A transparent connection the sandbox opened to `host:port` (a name from our DNS):
    /// every request's Host must name that host.
    Fixed { host: String, port: u16 },
    /// Like `Fixed`, on a TLS connection the gateway terminated because a secret is bound
    /// to `host`: placeholders are replaced, responses redacted, upstream is TLS again.
    Intercept { host: String, port: u16 },
}

/// Serve HTTP/1 on one client connection until it closes.
pub async fn serve<S>(io: S, ctx: Arc<Ctx>, mode: Mode)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // A connection whose destination is fixed keeps one upstream connection for all its
    // requests (no new TCP + TLS handshake per request); the proxy's requests may each go
    // elsewhere, so they do not.
    let slot = match mode {
        Mode::Proxy(_) => None,
        Mode::Fixed { .. } | Mode::Intercept { .. } => Some(UpstreamSlot::default()),
    };
    let served = Arc::new(AtomicU64::new(0));
    let gate = crate::framing::Verdict::default();
    let partial_head = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (svc_ctx, svc_mode, svc_served) = (ctx.clone(), mode.clone(), served.clone());
    let svc = hyper::service::service_fn(move |req| {
        let ctx = svc_ctx.clone();
        let mode = svc_mode.clone();
        let slot = slot.clone();
        svc_served.fetch_add(1, Ordering::Relaxed);
        async move { Ok::<_, Infallible>(handle(req, ctx, mode, slot).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // A client may shut down its sending side after its request and still wait for the
        // response (HTTP/1.0 tools, `nc -N`): its end of stream is not a cancel.
        .half_close(true)
        .header_read_timeout(crate::sniff::HEAD_WAIT)
        .serve_connection(
            TokioIo::new(crate::closing::Closing::new(
                crate::framing::Gate::new(io, gate.clone(), partial_head.clone()),
                gate.clone(),
            )),
            svc,
        )
        .with_upgrades();
    let result = conn.await;
    let (host, port, proto) = mode.event_target();
    // The framing gate refused a head before hyper saw it (hyper then sees a plain end).
    if let Some(msg) = gate.lock().ok().and_then(|mut g| g.take()) {
        ctx.events.emit(EgressEvent::deny(
            host,
            port,
            proto,
            DenyReason::RequestMalformed,
            format!("request head refused: {msg}"),
        ));
        return;
    }
    let Err(e) = result else { return };
    tracing::debug!(error = %e, "gateway http connection ended");
    // hyper answered a head it could not parse with 400 and forwarded nothing; a head that
    // did not arrive in time was not forwarded either. Both are decisions.
    let reason = if e.is_parse() || e.is_parse_too_large() {
        DenyReason::RequestMalformed
    } else if e.is_timeout()
        && (served.load(Ordering::Relaxed) == 0 || partial_head.load(Ordering::Relaxed))
    {
        // A timeout with no head started is an idle keep-alive connection being closed.
        DenyReason::DecisionTimeout
    } else {
        return;
    };
    ctx.events.emit(EgressEvent::deny(
        host,
        port,
        proto,
        reason,
        format!("request head refused: {e}"),
    ));
}

/// [`serve`] as a boxed `Send` future: the tunnel paths (proxy -> CONNECT -> judged opening
/// -> HTTP serving -> proxy handler) recurse, and a box breaks the recursive type.
pub(crate) fn serve_boxed<S>(
    io: S,
    ctx: Arc<Ctx>,
    mode: Mode,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    Box::pin(serve(io, ctx, mode))
}

impl Mode {
    /// Host, port and protocol that events about this connection name.
    fn event_target(&self) -> (String, u16, &'static str) {
        match self {
            Mode::Proxy(_) => (
                crate::link::GATEWAY_ADDR.to_string(),
                crate::link::PROXY_PORT,
                "http-proxy",
            ),
            Mode::Fixed { host, port } => (host.clone(), *port, "http"),
            Mode::Intercept { host, port } => (host.clone(), *port, "https"),
        }
    }
}

/// The judge's ruling for a destination a request names ([`crate::judge`]); the host to go
/// to on success. With `admit`, a destination the policy asks about is held for a decision
/// (or learned) here; without, the connection carrying the request was admitted already (a
/// transparent connection or a CONNECT tunnel to this very host and port).
pub(crate) async fn check(
    ctx: &Ctx,
    raw_host: &str,
    port: u16,
    proto: &'static str,
    admit: bool,
) -> Result<String, (String, DenyReason, String)> {
    let ruling = judge(
        &ctx.policy(),
        Query::Reach {
            host: raw_host,
            port,
        },
    );
    let ruling = if admit { ruling } else { ruling.on_admitted() };
    let host = settle(ctx, ruling, proto)
        .await
        .map_err(|d| (d.host, d.reason, d.message))?;
    // A proxy connection is cut when live rules deny a destination it admitted: it must
    // know them all (a bounded number).
    if !crate::cut::note(&host, port) {
        return Err((
            host,
            DenyReason::TooManyConnections,
            "this proxy connection reached too many destinations; open a new one".into(),
        ));
    }
    Ok(host)
}

/// The upstream connection a client connection reuses across its requests.
type UpstreamSlot = Arc<tokio::sync::Mutex<Option<SendRequest<Incoming>>>>;
/// How long to wait for a kept upstream connection to be ready before opening another.
const REUSE_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

async fn handle(
    req: Request<Incoming>,
    ctx: Arc<Ctx>,
    mode: Mode,
    slot: Option<UpstreamSlot>,
) -> Response<Body> {
    if let Err(msg) = crate::strict::validate(&req) {
        let (mut host, mut port, proto) = mode.event_target();
        if let Some(a) = req.uri().authority() {
            (host, port) = (a.host().to_string(), a.port_u16().unwrap_or(port));
        }
        return denied(&ctx, &host, port, proto, DenyReason::RequestMalformed, msg);
    }
    if req.method() == Method::CONNECT {
        return match mode {
            Mode::Proxy(on_connect) => on_connect(req, ctx).await,
            Mode::Fixed { .. } | Mode::Intercept { .. } => text(
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                "CONNECT is only for the proxy\n".into(),
            ),
        };
    }
    let mut req = req;
    match admit(&mut req, &ctx, &mode).await {
        Ok((target, used)) => forward(req, ctx, target, used, slot).await,
        Err(resp) => resp,
    }
}

/// Every check a request passes after its head is validated ([`crate::strict::validate`])
/// and before it is forwarded: its destination (Host on a transparent connection, the URI
/// on the proxy) judged, registries, secret placeholders (injected on a terminated
/// connection, refused anywhere else). `Err` is the answer to give the client (the deny
/// event already emitted). The passthrough path (`crate::pass`) runs the same function.
pub(crate) async fn admit<B>(
    req: &mut Request<B>,
    ctx: &Ctx,
    mode: &Mode,
) -> Result<(Target, Vec<String>), Response<Body>> {
    let (host, port, proto) = match mode {
        Mode::Proxy(_) => {
            let uri = req.uri();
            if uri.scheme_str() != Some("http") {
                return Err(text(
                    StatusCode::BAD_REQUEST,
                    None,
                    "cleanroom gateway: send absolute http:// URIs or use CONNECT\n".into(),
                ));
            }
            let Some(auth) = uri.authority() else {
                return Err(text(StatusCode::BAD_REQUEST, None, "missing host\n".into()));
            };
            (
                auth.host().trim_matches(['[', ']']).to_string(),
                auth.port_u16().unwrap_or(80),
                "http-proxy",
            )
        }
        Mode::Fixed { host, port } | Mode::Intercept { host, port } => {
            let proto = if matches!(mode, Mode::Intercept { .. }) {
                "https"
            } else {
                "http"
            };
            let named = req
                .headers()
                .get(hyper::header::HOST)
                .and_then(|h| h.to_str().ok())
                .and_then(|h| split_authority(h, *port))
                .and_then(|(h, _)| normalize_wire_host(&h));
            if named.as_deref() != Some(host.as_str()) {
                return Err(denied(
                    ctx,
                    host,
                    *port,
                    proto,
                    DenyReason::HostMismatch,
                    format!(
                        "request for {:?} on a connection to {host}",
                        named.unwrap_or_default()
                    ),
                ));
            }
            (host.clone(), *port, proto)
        }
    };
    let admit = matches!(mode, Mode::Proxy(_));
    let host = match check(ctx, &host, port, proto, admit).await {
        Ok(h) => h,
        Err((h, r, msg)) => return Err(denied(ctx, &h, port, proto, r, msg)),
    };
    if ctx.registries.mediates(&host) {
        let msg =
            format!("plain HTTP to registry host {host}: registries are served over TLS only");
        return Err(denied(
            ctx,
            &host,
            port,
            proto,
            DenyReason::RegistryNotAllowed,
            msg,
        ));
    }
    let intercept = matches!(mode, Mode::Intercept { .. });
    // Placeholders: rewritten on a terminated connection, refused anywhere else.
    let scope = if intercept {
        ctx.secrets.inject(req, &host).map_err(|v| v.message)
    } else {
        match ctx.secrets.placeholder_in_request(req) {
            None => Ok(Vec::new()),
            Some(id) if ctx.secrets.binds(&host) => Err(format!(
                "placeholder of secret {id} sent to {host} in plain HTTP: secrets are only sent over TLS"
            )),
            Some(id) => Err(format!(
                "placeholder of secret {id} sent to {host}, which it is not bound to"
            )),
        }
    };
    let used = match scope {
        Ok(used) => used,
        Err(msg) => {
            return Err(denied(
                ctx,
                &host,
                port,
                proto,
                DenyReason::SecretScopeViolation,
                msg,
            ))
        }
    };
    let target = Target {
        host,
        port,
        proto,
        tls: intercept,
    };
    Ok((target, used))
}

/// Headers about the client's connection to the gateway: never forwarded.
pub(crate) const PROXY_ONLY: [&str; 3] = ["proxy-connection", "proxy-authorization", "keep-alive"];

/// Where one request goes.
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) proto: &'static str,
    /// Speak TLS to the upstream (requests from a terminated connection).
    pub(crate) tls: bool,
}

impl Target {
    /// The Host header the upstream gets: written from the decided target, whatever the
    /// client spelled (case, port, trailing dot), so the upstream routes on exactly what
    /// was checked.
    pub(crate) fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        if self.port == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

async fn forward(
    mut req: Request<Incoming>,
    ctx: Arc<Ctx>,
    t: Target,
    secrets_used: Vec<String>,
    slot: Option<UpstreamSlot>,
) -> Response<Body> {
    let (host, port, proto, tls) = (t.host.clone(), t.port, t.proto, t.tls);
    // Origin-form towards the server; proxy-only headers never leave.
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    if let Ok(uri) = path.parse() {
        *req.uri_mut() = uri;
    }
    for h in PROXY_ONLY {
        req.headers_mut().remove(h);
    }
    let value = t.host_header();
    match value.parse() {
        Ok(v) => {
            req.headers_mut().insert(hyper::header::HOST, v);
        }
        Err(_) => return request_failed(&ctx, &t, format!("cannot write Host {value:?}")),
    }
    if tls {
        // Responses must come back searchable for secret values: no compression, and no
        // protocol switch to a stream the gateway would not see.
        req.headers_mut().insert(
            hyper::header::ACCEPT_ENCODING,
            hyper::header::HeaderValue::from_static("identity"),
        );
        req.headers_mut().remove(hyper::header::UPGRADE);
    }
    let result = match slot {
        Some(slot) => exchange_reusing(&slot, req, &ctx, &t).await,
        None => match open(&ctx, &t).await {
            Ok(mut sender) => sender
                .send_request(req)
                .await
                .map_err(|e| request_failed(&ctx, &t, e.to_string())),
            Err(resp) => Err(resp),
        },
    };
    let resp = match result {
        Ok(r) => r,
        Err(resp) => return resp,
    };

    if !tls {
        ctx.events.emit(EgressEvent::allow(&host, port, proto));
        return resp.map(|b| crate::relay::FlushFirst::new(b.map_err(Into::into)).boxed());
    }
    let on_refuse: crate::redact::OnRefuse = {
        let (ctx, host) = (ctx.clone(), host.clone());
        Arc::new(move |msg: String| {
            ctx.events.emit(EgressEvent::failed(
                &host,
                port,
                proto,
                FailReason::ResponseNotInspectable,
                format!("response cut off: {msg}"),
            ))
        })
    };
    match crate::redact::redact_response(resp, ctx.secrets.redactor(), on_refuse).await {
        Ok(r) => {
            let r = r.map(|b| crate::relay::FlushFirst::new(b).boxed());
            let mut ev = EgressEvent::allow(&host, port, proto);
            ev.secrets = secrets_used;
            ctx.events.emit(ev);
            r
        }
        Err(why) => {
            let msg = format!("{why}; it cannot be checked for secret values");
            ctx.events.emit(EgressEvent::failed(
                &host,
                port,
                proto,
                FailReason::ResponseNotInspectable,
                msg.clone(),
            ));
            text(
                StatusCode::BAD_GATEWAY,
                None,
                format!(
                    "cleanroom: [{}] {msg}\n",
                    FailReason::ResponseNotInspectable
                ),
            )
        }
    }
}

fn upstream_tls_failed(
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    msg: String,
) -> Response<Body> {
    ctx.events.emit(EgressEvent::failed(
        host,
        port,
        proto,
        FailReason::UpstreamTlsFailed,
        msg.clone(),
    ));
    text(
        StatusCode::BAD_GATEWAY,
        None,
        format!(
            "cleanroom: [{}] TLS to {host}:{port} failed: {msg}\n",
            FailReason::UpstreamTlsFailed
        ),
    )
}

/// A 502 for a request that failed on the upstream connection, with its event.
pub(crate) fn request_failed(ctx: &Ctx, t: &Target, msg: String) -> Response<Body> {
    ctx.events
        .emit(EgressEvent::error(&t.host, t.port, t.proto, msg.clone()));
    text(
        StatusCode::BAD_GATEWAY,
        None,
        format!("cleanroom: upstream request failed: {msg}\n"),
    )
}

/// A new upstream HTTP/1 connection for `t`: TCP (policy-checked addresses), then verified
/// TLS when `t.tls`. Failures come back as the response to give the client.
async fn open(ctx: &Ctx, t: &Target) -> Result<SendRequest<Incoming>, Response<Body>> {
    let upstream = ctx
        .upstream_connect(&t.host, t.port)
        .await
        .map_err(|e| resp_for(ctx, &t.host, t.port, t.proto, e))?;
    if !t.tls {
        return handshake(ctx, t, upstream).await;
    }
    let tls_failed = |e: String| upstream_tls_failed(ctx, &t.host, t.port, t.proto, e);
    let name = rustls::pki_types::ServerName::try_from(t.host.clone())
        .map_err(|e| tls_failed(e.to_string()))?;
    let config = ctx
        .upstream
        .client_tls()
        .map_err(|e| tls_failed(e.to_string()))?;
    let io = tokio_rustls::TlsConnector::from(config)
        .connect(name, upstream)
        .await
        .map_err(|e| tls_failed(e.to_string()))?;
    handshake(ctx, t, io).await
}

async fn handshake<I>(ctx: &Ctx, t: &Target, io: I) -> Result<SendRequest<Incoming>, Response<Body>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = crate::upstream::http1_client()
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| request_failed(ctx, t, format!("upstream handshake: {e}")))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Send on the client connection's kept upstream connection when it is still usable, else
/// on a new one (kept for the next request). A request the kept connection refused before
/// writing it is sent again on a new connection; one that was written is not replayed.
async fn exchange_reusing(
    slot: &UpstreamSlot,
    req: Request<Incoming>,
    ctx: &Ctx,
    t: &Target,
) -> Result<Response<Incoming>, Response<Body>> {
    let mut kept = slot.lock().await;
    let mut req = req;
    if let Some(mut sender) = kept.take() {
        let ready = matches!(
            tokio::time::timeout(REUSE_WAIT, sender.ready()).await,
            Ok(Ok(()))
        );
        if ready {
            match sender.try_send_request(req).await {
                Ok(resp) => {
                    *kept = Some(sender);
                    return Ok(resp);
                }
                Err(mut e) => match e.take_message() {
                    Some(r) => req = r,
                    None => return Err(request_failed(ctx, t, e.into_error().to_string())),
                },
            }
        }
    }
    let mut sender = open(ctx, t).await?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| request_failed(ctx, t, e.to_string()))?;
    *kept = Some(sender);
    Ok(resp)
}
