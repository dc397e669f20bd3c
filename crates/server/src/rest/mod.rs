//! Plain HTTP routes beside the Connect services on every API listener: seed 002's REST
//! API under `/v1/` ([`sandboxes`], [`pools`]), its OpenAPI 3 document at
//! `/v1/openapi.json` ([`openapi`]) and Prometheus metrics at `/metrics`
//! ([`crate::metrics`]). See docs/rest.md and docs/metrics.md.
//!
//! No second code path: every REST call builds the Connect request message and calls the
//! same handler of [`Api`] a Connect client reaches, with the principal this module
//! authenticated exactly as the Connect interceptor does ([`admit`]). Ownership, caps,
//! validation and metrics are therefore the API's own. Errors leave as
//! `{"error": {"code", "message", "details"}}` with the stable code and an HTTP status of
//! its class ([`error`]).

pub mod error;
pub mod openapi;
pub mod pools;
pub mod sandboxes;
pub mod scrape;
pub mod shapes;

use crate::api::errors::{ApiBody, ApiService};
use crate::api::interceptor::admit;
use crate::api::Api;
use crate::identity::auth::{Authenticator, Principal};
use crate::model::error::EngineError;
use bytes::Bytes;
use connectrpc::RequestContext;
use error::RestError;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Largest REST request body read (JSON specs, commands): beyond it, `invalid_argument`.
pub const MAX_BODY: usize = 1 << 20;

/// The listener's service: REST and `/metrics` here, everything else to Connect.
#[derive(Clone)]
pub struct HttpService {
    connect: ApiService,
    rest: Arc<Rest>,
}

/// What the REST routes need: the API they translate to and the authenticator.
pub struct Rest {
    pub api: Arc<Api>,
    pub auth: Arc<Authenticator>,
}

impl HttpService {
    pub fn new(connect: ApiService, rest: Rest) -> Self {
        HttpService {
            connect,
            rest: Arc::new(rest),
        }
    }
}

/// Is `path` one of ours (not a Connect procedure, which are `/<package>.<Service>/…`)?
fn is_rest(path: &str) -> bool {
    path == "/metrics" || path.starts_with("/v1/") || path == "/v1"
}

impl<B> tower::Service<Request<B>> for HttpService
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    type Response = Response<ApiBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The caller's trace continues through this call (docs/traces.md).
        let (span, cx) = crate::telemetry::propagate::enter_call(&req);
        if !is_rest(req.uri().path()) {
            let call = tower::Service::call(&mut self.connect, req);
            return Box::pin(crate::telemetry::propagate::within(call, span, cx));
        }
        let rest = self.rest.clone();
        Box::pin(crate::telemetry::propagate::within(
            async move {
                let resp = match rest.handle(req).await {
                    Ok(r) => r,
                    Err(e) => e.into_response(),
                };
                Ok(resp)
            },
            span,
            cx,
        ))
    }
}

/// A REST handler's answer before it is put on the wire.
pub enum Reply {
    /// A JSON body with this status.
    Json(StatusCode, serde_json::Value),
    /// No body (204).
    Empty,
    /// A body of another type (the metrics text).
    Text(&'static str, String),
}

impl Reply {
    fn into_response(self) -> Response<ApiBody> {
        let (status, ct, body) = match self {
            Reply::Json(s, v) => (s, "application/json", Bytes::from(v.to_string())),
            Reply::Empty => (StatusCode::NO_CONTENT, "", Bytes::new()),
            Reply::Text(ct, t) => (StatusCode::OK, ct, Bytes::from(t)),
        };
        let mut b = Response::builder()
            .status(status)
            .header(http::header::CACHE_CONTROL, "no-store")
            .header("x-content-type-options", "nosniff");
        if !ct.is_empty() {
            b = b.header(http::header::CONTENT_TYPE, ct);
        }
        b.body(Full::new(body).map_err(|e| match e {}).boxed_unsync())
            .unwrap_or_else(|_| Response::new(ApiBody::default()))
    }
}

/// A parsed route (path parameters are validated by the handlers' API calls).
enum Route<'a> {
    Metrics,
    OpenApi,
    Sandboxes,
    Sandbox(&'a str),
    SandboxStatus(&'a str),
    Exec(&'a str),
    Checkpoint(&'a str),
    Restore(&'a str),
    Pools,
    Pool(&'a str),
    Claim(&'a str),
    Release(&'a str, &'a str),
    PoolStats(&'a str),
}

/// Does `route` take `m`? (The dispatch in [`Rest::handle`] and the OpenAPI document
/// follow this; a unit test holds the document to it.)
fn accepts(route: &Route<'_>, m: &Method) -> bool {
    let want = match route {
        Route::Metrics | Route::OpenApi | Route::SandboxStatus(_) | Route::PoolStats(_) => {
            Method::GET
        }
        Route::Sandboxes => return m == Method::GET || m == Method::POST,
        Route::Sandbox(_) | Route::Pool(_) => Method::DELETE,
        Route::Exec(_)
        | Route::Checkpoint(_)
        | Route::Restore(_)
        | Route::Pools
        | Route::Claim(_)
        | Route::Release(..) => Method::POST,
    };
    m == want
}

fn route(path: &str) -> Option<Route<'_>> {
    if path == "/metrics" {
        return Some(Route::Metrics);
    }
    let rest = path.strip_prefix("/v1/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    // An empty segment (`//`, a trailing `/`) names nothing.
    if parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    Some(match parts.as_slice() {
        ["openapi.json"] => Route::OpenApi,
        ["sandboxes"] => Route::Sandboxes,
        ["sandboxes", id] => Route::Sandbox(id),
        ["sandboxes", id, "status"] => Route::SandboxStatus(id),
        ["sandboxes", id, "exec"] => Route::Exec(id),
        ["sandboxes", id, "checkpoint"] => Route::Checkpoint(id),
        ["checkpoints", id, "restore"] => Route::Restore(id),
        ["warm-pools"] => Route::Pools,
        ["warm-pools", id] => Route::Pool(id),
        ["warm-pools", id, "claim"] => Route::Claim(id),
        ["warm-pools", id, "release", sbx] => Route::Release(id, sbx),
        ["warm-pools", id, "stats"] => Route::PoolStats(id),
        _ => return None,
    })
}

impl Rest {
    async fn handle<B>(&self, req: Request<B>) -> Result<Response<ApiBody>, RestError>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        // Who first, for every path (known or not): nothing is said to a stranger.
        let who = admit(
            &self.auth,
            req.extensions(),
            req.headers()
                .get(http::header::AUTHORIZATION)
                .map(|v| v.as_bytes()),
        )?;
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().to_string();
        let Some(route) = route(&path) else {
            return Err(RestError::no_route(&path));
        };
        let m = &parts.method;
        if !accepts(&route, m) {
            return Err(RestError::method(m, &path));
        }
        let body = Body(body);
        let reply = match (route, m) {
            (Route::Metrics, &Method::GET) => self.metrics(&who).await?,
            (Route::OpenApi, &Method::GET) => Reply::Json(StatusCode::OK, openapi::document()),
            (Route::Sandboxes, &Method::POST) => sandboxes::create(self, &who, body).await?,
            (Route::Sandboxes, &Method::GET) => sandboxes::list(self, &who).await?,
            (Route::Sandbox(id), &Method::DELETE) => sandboxes::terminate(self, &who, id).await?,
            (Route::SandboxStatus(id), &Method::GET) => sandboxes::status(self, &who, id).await?,
            (Route::Exec(id), &Method::POST) => sandboxes::exec(self, &who, id, body).await?,
            (Route::Checkpoint(id), &Method::POST) => sandboxes::checkpoint(self, &who, id).await?,
            (Route::Restore(id), &Method::POST) => sandboxes::restore(self, &who, id, body).await?,
            (Route::Pools, &Method::POST) => pools::create(self, &who, body).await?,
            (Route::Pool(id), &Method::DELETE) => pools::destroy(self, &who, id).await?,
            (Route::Claim(id), &Method::POST) => pools::claim(self, &who, id, body).await?,
            (Route::Release(id, sbx), &Method::POST) => {
                pools::release(self, &who, id, sbx, body).await?
            }
            (Route::PoolStats(id), &Method::GET) => pools::stats(self, &who, id).await?,
            _ => return Err(RestError::method(m, &path)),
        };
        Ok(reply.into_response())
    }

    /// `/metrics`: admins only (the counts are server-wide, across every owner).
    async fn metrics(&self, who: &Principal) -> Result<Reply, RestError> {
        if !who.is_admin() {
            return Err(EngineError::new(
                crate::model::error::ErrorCode::PermissionDenied,
                "/metrics is for admin principals",
            )
            .with("principal", who.name.clone())
            .into());
        }
        let node = self.api.cluster.as_ref().map(|c| c.node_name().to_string());
        let text = scrape::render(self.api.engine.clone(), node).await?;
        Ok(Reply::Text(scrape::CONTENT_TYPE, text))
    }
}

/// A request body, read when a handler asks for it (bounded by [`MAX_BODY`]).
pub struct Body<B>(B);

impl<B> Body<B>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    /// The body as `T` (JSON); an empty body reads as `{}`. Anything malformed, unknown
    /// fields included, is `invalid_argument`.
    pub async fn json<T: serde::de::DeserializeOwned>(self) -> Result<T, RestError> {
        let bytes = Limited::new(self.0, MAX_BODY)
            .collect()
            .await
            .map_err(|e| {
                EngineError::invalid(format!(
                    "cannot read the request body (at most {MAX_BODY} bytes): {e}"
                ))
            })?
            .to_bytes();
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text).map_err(|e| {
            EngineError::invalid(format!("malformed JSON body: {e}"))
                .with("field", "body")
                .into()
        })
    }
}

/// The request context of a Connect handler called for `who` (see [`call`]).
pub(crate) fn context(who: &Principal) -> RequestContext {
    let mut ext = http::Extensions::new();
    ext.insert(who.clone());
    RequestContext::new(http::HeaderMap::new()).with_extensions(ext)
}

/// The wire form of `msg`, for [`ServiceRequest::from_parts`].
pub(crate) fn wire<M: buffa::Message>(msg: &M) -> Bytes {
    buffa::Message::encode_to_bytes(msg)
}

/// `body` decoded as `M`'s view, for [`connectrpc::ServiceRequest::from_parts`] (it was encoded by [`wire`]: never fails in practice).
pub(crate) fn view<'b, M: buffa::HasMessageView>(
    _msg: &M,
    body: &'b Bytes,
) -> Result<M::View<'b>, RestError> {
    M::decode_view(body)
        .map_err(|e| RestError::from(EngineError::internal(format!("request encoding: {e}"))))
}

/// Run one of [`Api`]'s Connect handlers — `$method` of `$trait`, as `$who`, with the
/// request message `$msg` — encoded and decoded as the Connect dispatcher would. Yields
/// the response message or a [`RestError`].
macro_rules! call {
    ($rest:expr, $who:expr, $trait:ident :: $method:ident, $msg:expr) => {{
        let msg = $msg;
        let body = $crate::rest::wire(&msg);
        match $crate::rest::view(&msg, &body) {
            Err(e) => Err(e),
            Ok(view) => cleanroom_proto::cleanroom::v1::$trait::$method(
                &*$rest.api,
                $crate::rest::context($who),
                connectrpc::ServiceRequest::from_parts(&view, &body),
            )
            .await
            .map(|r| r.body)
            .map_err($crate::rest::error::RestError::from),
        }
    }};
}
pub(crate) use call;
