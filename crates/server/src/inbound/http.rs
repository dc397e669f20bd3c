//! The inbound URL prefixes on every API listener, ahead of REST and Connect:
//! `/_sandbox/<exposure-id>/…` (an exposure: an HTTP reverse proxy to the sandbox's port,
//! [`expose`]) and `/_portforward/<sandbox-id>/<port>` (raw TCP, [`super::forward`]).
//!
//! Access to an exposure needs its token (query `cleanroom_token`, which also sets a
//! cookie of that name scoped to the exposure's path so the app's relative links keep
//! working; or the `x-cleanroom-token` header) or the API credentials of the sandbox's
//! owner or an admin. A token that does not verify is `unauthenticated`; a verified one
//! past its expiry `exposure_expired`, of a removed exposure `exposure_revoked`; another
//! principal's credentials get `exposure_not_found`, as a missing exposure does.
//!
//! The request goes to the sandbox as HTTP/1.1 on a fresh connection (HTTP/1.1 or HTTP/2
//! from the client), streamed both ways (server-sent events arrive as they are written);
//! an HTTP/1.1 Upgrade (WebSocket) becomes a byte pipe once the app answers 101. What the
//! server used to authenticate the caller (its `Authorization` header, the token, the
//! cookie) is not passed on: the sandbox never sees a credential of the server's.

use super::pipe::{Meter, Metered};
use super::token::Verdict;
use super::{Inbound, EXPOSE_PREFIX, FORWARD_PREFIX, TOKEN_PARAM};
use crate::api::errors::ApiBody;
use crate::api::interceptor::admit;
use crate::identity::auth::{Authenticator, Principal, Role};
use crate::model::error::{EngineError, ErrorCode};
use crate::rest::error::RestError;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The listener's service: the inbound prefixes here, everything else to REST/Connect.
#[derive(Clone)]
pub struct InboundRouter {
    inner: crate::rest::HttpService,
    state: Arc<State>,
}

/// What the inbound routes need.
pub struct State {
    pub inbound: Arc<Inbound>,
    pub auth: Arc<Authenticator>,
}

impl InboundRouter {
    pub fn new(
        inner: crate::rest::HttpService,
        inbound: Arc<Inbound>,
        auth: Arc<Authenticator>,
    ) -> Self {
        InboundRouter {
            inner,
            state: Arc::new(State { inbound, auth }),
        }
    }
}

impl tower::Service<Request<Incoming>> for InboundRouter {
    type Response = Response<ApiBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> Self::Future {
        let path = req.uri().path();
        if path.starts_with(EXPOSE_PREFIX) {
            let st = self.state.clone();
            return Box::pin(async move { Ok(answer(expose(st, req).await)) });
        }
        if path.starts_with(FORWARD_PREFIX) {
            let st = self.state.clone();
            return Box::pin(async move { Ok(answer(super::forward::handle(st, req).await)) });
        }
        tower::Service::call(&mut self.inner, req)
    }
}

fn answer(r: Result<Response<ApiBody>, EngineError>) -> Response<ApiBody> {
    r.unwrap_or_else(|e| RestError::from(e).into_response())
}

pub(super) fn empty() -> ApiBody {
    http_body_util::Empty::new()
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// The token a request carries: the query parameter first (and whether it was there),
/// then the header, then the cookie.
fn presented_token(req: &Request<Incoming>) -> Option<(String, bool)> {
    let query = req.uri().query().unwrap_or_default();
    for pair in query.split('&') {
        if let Some(v) = pair
            .strip_prefix(TOKEN_PARAM)
            .and_then(|r| r.strip_prefix('='))
        {
            return Some((v.to_string(), true));
        }
    }
    if let Some(v) = req
        .headers()
        .get("x-cleanroom-token")
        .and_then(|v| v.to_str().ok())
    {
        return Some((v.to_string(), false));
    }
    for c in req.headers().get_all(header::COOKIE) {
        let Ok(c) = c.to_str() else { continue };
        for part in c.split(';') {
            if let Some(v) = part
                .trim()
                .strip_prefix(TOKEN_PARAM)
                .and_then(|r| r.strip_prefix('='))
            {
                return Some((v.to_string(), false));
            }
        }
    }
    None
}

/// How a request was let in.
#[derive(Clone)]
pub(super) enum Via {
    Token,
    Principal(Principal),
}

impl Via {
    pub(super) fn describe(&self) -> String {
        match self {
            Via::Token => "token".into(),
            Via::Principal(p) => p.name.clone(),
        }
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::new(ErrorCode::ExposureNotFound, format!("no exposure {id:?}"))
}

/// Who may use exposure `id`, and the exposure.
fn authorize(
    st: &State,
    req: &Request<Incoming>,
    id: &str,
    token: Option<&str>,
) -> Result<(super::store::Exposure, Via), EngineError> {
    let now = super::now_secs();
    if let Some(token) = token {
        return match st.inbound.key.verify(id, token, now) {
            Verdict::Forged => Err(EngineError::unauthenticated(
                "the exposure token is not valid for this URL",
            )),
            Verdict::Expired { expires_at } => Err(EngineError::new(
                ErrorCode::ExposureExpired,
                format!("the exposure token expired at {expires_at} (unix seconds)"),
            )
            .with("expires_at", expires_at.to_string())),
            Verdict::Valid { .. } => match st.inbound.live(id) {
                Some(e) => {
                    // The connection counts against the exposing principal's share.
                    let owner = Principal {
                        name: e.created_by.clone(),
                        role: Role::User,
                    };
                    if let Some(gate) = req
                        .extensions()
                        .get::<Arc<crate::budgets::admission::Gate>>()
                    {
                        gate.authenticate(&owner).map_err(|r| {
                            EngineError::resource_exhausted(format!("connection refused: {r}"))
                        })?;
                    }
                    Ok((e, Via::Token))
                }
                None => Err(EngineError::new(
                    ErrorCode::ExposureRevoked,
                    format!("exposure {id} was removed (sandbox unexpose, or its sandbox ended)"),
                )),
            },
        };
    }
    let who = admit(
        &st.auth,
        req.extensions(),
        req.headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes()),
    )?;
    let e = st.inbound.live(id).ok_or_else(|| not_found(id))?;
    if st.inbound.engine.sandbox(&who, &e.sandbox_id).is_err() {
        return Err(not_found(id));
    }
    Ok((e, Via::Principal(who)))
}

/// Headers that belong to one hop, never forwarded.
const HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn is_upgrade(req: &Request<Incoming>) -> bool {
    req.version() == http::Version::HTTP_11
        && req.headers().contains_key(header::UPGRADE)
        && req
            .headers()
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            })
}

/// The request headers the sandbox gets.
fn upstream_headers(src: &HeaderMap, via: &Via, upgrade: bool, host: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in src {
        let name = k.as_str();
        if HOP.contains(&name) || name == "x-cleanroom-token" || name == "cookie" {
            continue;
        }
        if name == "authorization" && matches!(via, Via::Principal(_)) {
            continue;
        }
        h.append(k.clone(), v.clone());
    }
    // Cookies minus ours.
    let kept: Vec<String> = src
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|c| c.split(';'))
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.starts_with(&format!("{TOKEN_PARAM}=")))
        .map(String::from)
        .collect();
    if let Ok(v) = HeaderValue::from_str(&kept.join("; ")) {
        if !kept.is_empty() {
            h.insert(header::COOKIE, v);
        }
    }
    if upgrade {
        if let Some(u) = src.get(header::UPGRADE) {
            h.insert(header::UPGRADE, u.clone());
        }
        h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    }
    if !h.contains_key(header::HOST) {
        if let Some(v) = host.and_then(|a| HeaderValue::from_str(a).ok()) {
            h.insert(header::HOST, v);
        }
    }
    h
}

/// Where an exposure is mounted: under its path prefix on the API's listener, or at the
/// root of a host name of its own ([`super::preview`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mount {
    Path,
    Host,
}

/// `/_sandbox/<id>/<rest>`.
async fn expose(st: Arc<State>, req: Request<Incoming>) -> Result<Response<ApiBody>, EngineError> {
    if st.inbound.preview.is_some() {
        return Err(super::preview::path_routing_off());
    }
    let path = req.uri().path().to_string();
    let rest = &path[EXPOSE_PREFIX.len()..];
    let (id, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let well_formed =
        id.len() == 36 && id.starts_with("exp_") && id[4..].bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed {
        return Err(not_found(id));
    }
    if tail.is_empty() {
        // The app's relative links resolve below the exposure only with the slash.
        let q = req
            .uri()
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        return Ok(Response::builder()
            .status(StatusCode::PERMANENT_REDIRECT)
            .header(header::LOCATION, format!("{EXPOSE_PREFIX}{id}/{q}"))
            .body(empty())
            .unwrap_or_default());
    }
    let (id, tail) = (id.to_string(), tail.to_string());
    proxy(st, req, &id, &tail, Mount::Path).await
}

/// A request to a preview host of exposure `id` (the whole path is the app's).
pub async fn preview(
    st: Arc<State>,
    req: Request<Incoming>,
    id: &str,
) -> Result<Response<ApiBody>, EngineError> {
    let tail = req.uri().path().to_string();
    proxy(st, req, id, &tail, Mount::Host).await
}

/// Authorize a request for exposure `id` and proxy it to the sandbox as `tail`.
async fn proxy(
    st: Arc<State>,
    mut req: Request<Incoming>,
    id: &str,
    tail: &str,
    mount: Mount,
) -> Result<Response<ApiBody>, EngineError> {
    let token = presented_token(&req);
    let (e, via) = authorize(&st, &req, id, token.as_ref().map(|(t, _)| t.as_str()))?;
    let inbound = &st.inbound;
    let engine = inbound.engine.clone();
    let refused = |reason: &str, err: EngineError| {
        engine.inbound_event(
            &e.sandbox_id,
            "refused",
            format!("inbound request to port {} refused: {reason}", e.port),
            serde_json::json!({"exposure_id": e.id, "port": e.port, "via": via.describe(), "reason": reason, "code": err.code.as_str()}),
        );
        err
    };
    let Some(permit) = inbound.slot(&e.id) else {
        return Err(refused(
            "connection cap",
            EngineError::resource_exhausted(format!(
                "exposure {} has {} open connections, the most allowed",
                e.id, inbound.limits.max_connections
            ))
            .with("exposure_id", e.id.clone()),
        ));
    };
    let stream = match engine
        .inbound_dial(&e.sandbox_id, e.port, "inbound request")
        .await
    {
        Ok(s) => s,
        Err(err) => {
            let reason = err.code.as_str().to_string();
            return Err(refused(&reason, err));
        }
    };
    let upgrade = is_upgrade(&req);
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    // The sandbox sees its own path: the prefix and our token parameter are removed.
    let query: Vec<&str> = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| {
            !p.is_empty() && !p.starts_with(&format!("{TOKEN_PARAM}=")) && *p != TOKEN_PARAM
        })
        .collect();
    let target = if query.is_empty() {
        tail.to_string()
    } else {
        format!("{tail}?{}", query.join("&"))
    };
    let host = req.uri().authority().map(|a| a.as_str().to_string());
    let headers = upstream_headers(req.headers(), &via, upgrade, host.as_deref());
    let method = req.method().clone();
    let mut up = Request::builder()
        .method(method)
        .uri(target)
        .version(http::Version::HTTP_11)
        .body(req.into_body())
        .map_err(|err| EngineError::invalid(format!("request: {err}")))?;
    *up.headers_mut() = headers;
    if mount == Mount::Path {
        up.headers_mut().insert(
            "x-forwarded-prefix",
            HeaderValue::from_str(&format!("{EXPOSE_PREFIX}{}", e.id))
                .unwrap_or(HeaderValue::from_static("/")),
        );
    }

    let meter = Meter::new(engine.clone(), &e.sandbox_id, inbound.limits);
    let life = Arc::new(super::forward::Life::open(
        engine.clone(),
        &e.sandbox_id,
        e.port,
        &e.id,
        &via,
        meter.clone(),
        permit,
    ));
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(Metered::new(stream, meter.clone())))
        .await
        .map_err(|err| {
            EngineError::new(
                ErrorCode::SandboxPortClosed,
                format!("port {}: {err}", e.port),
            )
        })?;
    let conn_life = life.clone();
    tokio::spawn(async move {
        tokio::select! {
            r = conn.with_upgrades() => {
                if let Err(err) = r {
                    tracing::debug!(error = %err, "inbound upstream connection");
                }
            }
            _ = conn_life.meter.idle() => conn_life.set_reason("idle"),
        }
        drop(conn_life);
    });
    let mut resp = sender.send_request(up).await.map_err(|err| {
        EngineError::new(
            ErrorCode::SandboxPortClosed,
            format!(
                "port {} of sandbox {} did not answer: {err}",
                e.port, e.sandbox_id
            ),
        )
    })?;
    let mut out = Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        if !HOP.contains(&k.as_str()) {
            out = out.header(k, v);
        }
    }
    if let Some((t, true)) = &token {
        let remaining = (e.expires_at - super::now_secs()).max(0);
        // Host-only either way (no Domain attribute): under a preview domain the cookie
        // belongs to this exposure's host alone.
        let path = match mount {
            Mount::Path => format!("{EXPOSE_PREFIX}{}/", e.id),
            Mount::Host => "/".to_string(),
        };
        let cookie =
            format!("{TOKEN_PARAM}={t}; Path={path}; Max-Age={remaining}; HttpOnly; SameSite=Lax");
        out = out.header(header::SET_COOKIE, cookie);
    }
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
        let Some(client_upgrade) = client_upgrade else {
            return Err(EngineError::new(
                ErrorCode::SandboxPortClosed,
                "the sandbox's app switched protocols without being asked",
            ));
        };
        if let Some(u) = resp.headers().get(header::UPGRADE) {
            out = out.header(header::UPGRADE, u);
        }
        out = out.header(header::CONNECTION, "upgrade");
        let upstream = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            let (Ok(client), Ok(upstream)) = (client_upgrade.await, upstream.await) else {
                life.set_reason("upgrade failed");
                return;
            };
            let mut a = TokioIo::new(client);
            let mut b = TokioIo::new(upstream);
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut a, &mut b) => {}
                _ = life.meter.idle() => life.set_reason("idle"),
            }
        });
        return out
            .body(empty())
            .map_err(|err| EngineError::internal(format!("response: {err}")));
    }
    let body = EndOnError {
        inner: resp.into_body(),
        _life: life,
    };
    out.body(body.boxed_unsync())
        .map_err(|err| EngineError::internal(format!("response: {err}")))
}

/// A streamed response body from the sandbox: an error there ends the stream (the
/// listener's body type cannot fail); holds the connection's [`super::forward::Life`].
struct EndOnError {
    inner: Incoming,
    _life: Arc<super::forward::Life>,
}

impl hyper::body::Body for EndOnError {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => Poll::Ready(Some(Ok(f))),
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
