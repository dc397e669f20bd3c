//! The web console (docs/web.md): pages under `/ui/` on the server's own listeners, and
//! browser sessions for the API.
//!
//! The console is a static page and one ES module compiled into the binary ([`assets`]);
//! everything it shows or changes goes through the **Connect API itself** (JSON over
//! HTTP), as the principal of the browser's session. This service sits in front of the
//! listener's [`crate::inbound::http::InboundRouter`] and [`crate::rest::HttpService`] on the console's own
//! listener (`--ui-listen`; see [`WebService`]): it answers `/ui/…` (pages, login, logout, the live signal
//! [`live`]) and, for any other path, turns a session cookie into that session's principal
//! — only with the session's CSRF token in `x-csrf-token`, else the request is refused
//! with `permission_denied` before any handler runs. Ownership, caps and codes are
//! therefore exactly the API's: there is no console-only handler that reads or changes a
//! sandbox.

pub mod assets;
pub mod live;
pub mod login;
pub mod session;

use crate::api::errors::ApiBody;
use crate::api::Api;
use crate::identity::auth::{Authenticator, SessionPrincipal};
use crate::model::error::EngineError;
use crate::rest::error::RestError;
use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use session::{Current, Sessions};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The session cookie's name.
pub const COOKIE: &str = "cleanroom_session";
/// The header that must carry the session's CSRF token on every cookie-authenticated
/// API call and console state change.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The policy every console answer carries: nothing but this origin's own files, no
/// inline script or style, never framed.
pub const CSP: &str =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
frame-ancestors 'none'";

/// What the console needs: the API (for the live signal's engine), the authenticator
/// (token logins, login-code requests), its sessions and where browsers reach it.
pub struct Web {
    pub api: Arc<Api>,
    pub auth: Arc<Authenticator>,
    pub sessions: Arc<Sessions>,
    /// `http(s)://host:port` of the server's TCP listener(s), for `cleanroom ui`'s link;
    /// empty when the server listens on a unix socket only.
    pub urls: Vec<String>,
    /// `http(s)://host:port` of the main listener, where exposed ports are served
    /// (`/_sandbox/…`); `None` when it is a unix socket. The sandbox page links there — a
    /// separate origin from the console's.
    pub exposure_base: Option<String>,
}

/// The listener's service: the console and session auth in front of REST and Connect.
///
/// The console lives on its own listener (`serve --ui-listen`), a separate browser origin:
/// the main listener serves exposed sandbox ports under `/_sandbox/…`, pages a sandbox
/// writes, which on the console's origin could read the console and act as whoever is
/// logged in. So the main listener's service answers no `/ui/` route and takes no session
/// cookie, and the console's listener serves no exposure or port-forward.
#[derive(Clone)]
pub struct WebService {
    inner: crate::inbound::http::InboundRouter,
    web: Arc<Web>,
    role: Role,
}

/// Which listener a [`WebService`] serves.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `--listen`: the API, REST, `/metrics`, exposures; no console page, no cookie.
    Main,
    /// `--ui-listen`: the console and the API it calls; no exposure or port-forward.
    Console,
    /// `--metrics-listen`: `/metrics` (admins, as on every listener) and nothing else.
    Metrics,
}

impl WebService {
    pub fn new(inner: crate::inbound::http::InboundRouter, web: Web) -> Self {
        WebService {
            inner,
            web: Arc::new(web),
            role: Role::Main,
        }
    }

    /// The same service for the console's own listener.
    pub fn for_console(&self) -> Self {
        WebService {
            role: Role::Console,
            ..self.clone()
        }
    }

    /// The same service for a listener of `/metrics` only (`serve --metrics-listen`).
    pub fn for_metrics(&self) -> Self {
        WebService {
            role: Role::Metrics,
            ..self.clone()
        }
    }
}

/// The refusal of a route the listener does not serve (see [`WebService`]).
fn not_here(what: &str) -> Response<ApiBody> {
    RestError::from(EngineError::new(
        cleanroom_vocab::ErrorCode::Unimplemented,
        format!("{what} is not served on this listener (the web console has its own, `serve --ui-listen`: a separate origin from exposed sandbox ports)"),
    ))
    .into_response()
}

/// Where `cleanroom ui` asks for a one-time login code.
const LOGIN_CODE_PATH: &str = "/ui/api/login-code";

/// Is `path` the console's?
fn is_ui(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// Did a browser make this request for a page (not the user typing a URL)? `Origin`
/// (cross-origin and state-changing fetches, form posts), `Sec-Fetch-Site` other than
/// `none` (every request from a secure context in current browsers), or a `Referer` (a
/// browser without fetch metadata following a page's link or loading its image): no API
/// client sends any of them.
pub fn browser_made(h: &http::HeaderMap) -> bool {
    h.contains_key(header::ORIGIN)
        || h.contains_key(header::REFERER)
        || h.get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes() != b"none")
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

impl tower::Service<Request<hyper::body::Incoming>> for WebService {
    type Response = Response<ApiBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: Request<hyper::body::Incoming>) -> Self::Future {
        let path = req.uri().path().to_string();
        if self.role == Role::Metrics {
            // Authenticated by the REST layer like /metrics anywhere (admins only); no
            // cookie is read, nothing else is served.
            if path == "/metrics" {
                return tower::Service::call(&mut self.inner, req);
            }
            return Box::pin(async move {
                Ok(RestError::from(EngineError::new(
                    cleanroom_vocab::ErrorCode::Unimplemented,
                    "this listener (`serve --metrics-listen`) serves only /metrics",
                ))
                .into_response())
            });
        }
        if self.role == Role::Main {
            // `cleanroom ui` asks for its login code on the API's listener (as the CLI's
            // own principal: no cookie is read here); no page is served.
            if is_ui(&path) && path != LOGIN_CODE_PATH {
                return Box::pin(async move { Ok(not_here("the web console")) });
            }
            if !is_ui(&path) {
                return tower::Service::call(&mut self.inner, req);
            }
        } else if path.starts_with(crate::inbound::EXPOSE_PREFIX)
            || path.starts_with(crate::inbound::FORWARD_PREFIX)
        {
            return Box::pin(async move { Ok(not_here("an exposed sandbox port")) });
        }
        // The console's listener: a browser's call is the console page's own, or nothing.
        if self.role == Role::Console {
            if let Err(e) = console_browser_call(&self.web.sessions, &req, &path) {
                return Box::pin(async move { Ok(refused(&path, e)) });
            }
        }
        if is_ui(&path) {
            let web = self.web.clone();
            return Box::pin(async move {
                let resp = match web.handle(req).await {
                    Ok(r) => r,
                    Err(e) => e.into_response(),
                };
                Ok(secure(resp))
            });
        }
        // A browser's API call: the session stands for its principal, with its CSRF token.
        if !req.headers().contains_key(header::AUTHORIZATION) {
            if let Some(cur) =
                cookie(req.headers(), COOKIE).and_then(|id| self.web.sessions.get(id))
            {
                if !cur.csrf_ok(req.headers().get(CSRF_HEADER).map(|v| v.as_bytes())) {
                    return Box::pin(async move { Ok(refused(&path, csrf_error())) });
                }
                req.extensions_mut().insert(SessionPrincipal(cur.principal));
            }
        }
        tower::Service::call(&mut self.inner, req)
    }
}

/// May a browser make this request on the console's listener? Only for the console's own
/// page: a request a browser makes for a page (`Origin`, `Referer`, `Sec-Fetch-Site` other
/// than `none`, [`browser_made`]) to the API must come from this
/// origin and be authenticated by the console's session — never by what the browser
/// attaches by itself to any request to this host: a TLS client certificate (`https://`
/// with `--client-ca`), which a page on another origin (an exposed sandbox's on the main
/// listener, same site, or any site) could otherwise spend with a form post or a no-cors
/// fetch. `cleanroom ui`'s code request authenticates by the connection too: no browser
/// may make it here. Everything else under `/ui/` has its own rules (a JSON login from
/// this origin, CSRF tokens). Fails closed with `permission_denied`
/// (`reason: browser_request`).
fn console_browser_call<B>(
    sessions: &Sessions,
    req: &Request<B>,
    path: &str,
) -> Result<(), EngineError> {
    let h = req.headers();
    if !browser_made(h) {
        return Ok(());
    }
    let refuse = |why: &str| {
        Err(EngineError::new(
            crate::model::error::ErrorCode::PermissionDenied,
            format!("{why}: on the console's listener a browser may call the API only from the console's own page, with its session"),
        )
        .with("reason", "browser_request"))
    };
    if path == LOGIN_CODE_PATH {
        return refuse("a login code is asked for by `cleanroom ui`, not by a page");
    }
    if is_ui(path) {
        return Ok(());
    }
    let fetch_site = h.get("sec-fetch-site").map(|v| v.as_bytes());
    if fetch_site.is_some_and(|v| v != b"same-origin") {
        return refuse("a request from another site or origin");
    }
    let host = h
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or_default();
    let this_origin = |v: &HeaderValue| {
        let v = v.to_str().unwrap_or_default();
        !host.is_empty()
            && ["http://", "https://"].iter().any(|scheme| {
                v.strip_prefix(scheme).is_some_and(|rest| {
                    rest == host || rest.strip_prefix(host).is_some_and(|p| p.starts_with('/'))
                })
            })
    };
    if h.get(header::ORIGIN).is_some_and(|o| !this_origin(o))
        || h.get(header::REFERER).is_some_and(|r| !this_origin(r))
    {
        return refuse("a request from another origin");
    }
    let session = cookie(h, COOKIE).and_then(|id| sessions.get(id));
    if session.is_none() || h.contains_key(header::AUTHORIZATION) {
        return refuse("a browser's request without the console's session");
    }
    Ok(())
}

/// The stable refusal `e` of a browser's request before any handler: the REST error
/// shape on REST paths, Connect's JSON error elsewhere.
fn refused(path: &str, e: EngineError) -> Response<ApiBody> {
    let detail = crate::api::errors::detail(e.code.as_str(), &e.message, &e.details);
    let e = RestError::from(e);
    if path.starts_with("/v1") || path == "/metrics" {
        return e.into_response();
    }
    // Connect's JSON error (every refusal here is permission_denied), with the stable
    // code's detail as the API's own errors carry it.
    let body = serde_json::json!({"code": e.code, "message": e.message, "details": [detail]});
    Response::builder()
        .status(StatusCode::FORBIDDEN)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(full(body.to_string()))
        .unwrap_or_else(|_| Response::new(ApiBody::default()))
}

/// `permission_denied` for a missing or wrong CSRF token.
pub fn csrf_error() -> EngineError {
    EngineError::new(
        crate::model::error::ErrorCode::PermissionDenied,
        format!("a request with the console's session cookie must carry its CSRF token in {CSRF_HEADER}"),
    )
    .with("reason", "csrf_token")
}

pub(crate) fn full(b: impl Into<Bytes>) -> ApiBody {
    Full::new(b.into()).map_err(|e| match e {}).boxed_unsync()
}

/// The console's headers on every `/ui/` answer.
fn secure(mut r: Response<ApiBody>) -> Response<ApiBody> {
    let h = r.headers_mut();
    let no_cache = !h.contains_key(header::CACHE_CONTROL);
    let mut set = |k: &'static str, v: &'static str| {
        h.insert(k, HeaderValue::from_static(v));
    };
    set("content-security-policy", CSP);
    set("x-frame-options", "DENY");
    set("x-content-type-options", "nosniff");
    set("referrer-policy", "no-referrer");
    set("cross-origin-opener-policy", "same-origin");
    set("cross-origin-resource-policy", "same-origin");
    if no_cache {
        set("cache-control", "no-store");
    }
    r
}

impl Web {
    /// The session a request's cookie names, if live.
    pub fn current<B>(&self, req: &Request<B>) -> Option<(String, Current)> {
        let id = cookie(req.headers(), COOKIE)?;
        Some((id.to_string(), self.sessions.get(id)?))
    }

    async fn handle<B>(&self, req: Request<B>) -> Result<Response<ApiBody>, RestError>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let path = req.uri().path().to_string();
        let m = req.method().clone();
        match (path.as_str(), &m) {
            ("/ui/api/login", &Method::POST) => login::login(self, req).await,
            (LOGIN_CODE_PATH, &Method::POST) => login::login_code(self, req).await,
            ("/ui/api/logout", &Method::POST) => login::logout(self, req),
            ("/ui/api/session", &Method::GET) => login::session(self, req),
            ("/ui/api/live", &Method::GET) => live::live(self, req),
            (p, _) if p.starts_with("/ui/api/") => Err(RestError::no_route(p)),
            (p, &Method::GET) | (p, &Method::HEAD) => Ok(assets::serve(p)),
            (p, m) => Err(RestError::method(m, p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_exact_name() {
        let mut h = http::HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; x_cleanroom_session=evil"),
        );
        h.append(
            header::COOKIE,
            HeaderValue::from_static("cleanroom_session=good; b=2"),
        );
        assert_eq!(cookie(&h, COOKIE), Some("good"));
        assert_eq!(cookie(&h, "b"), Some("2"));
        assert_eq!(cookie(&h, "missing"), None);
    }

    #[test]
    fn only_ui_paths_are_the_consoles() {
        assert!(is_ui("/ui") && is_ui("/ui/") && is_ui("/ui/sandboxes/sbx_1"));
        assert!(
            !is_ui("/uix")
                && !is_ui("/v1/sandboxes")
                && !is_ui("/cleanroom.v1.SandboxService/ListSandboxes")
        );
    }

    #[test]
    fn csrf_refusals_carry_the_stable_code_in_each_shape() {
        let connect = refused(
            "/cleanroom.v1.SandboxService/TerminateSandbox",
            csrf_error(),
        );
        assert_eq!(connect.status(), StatusCode::FORBIDDEN);
        let rest = refused("/v1/sandboxes/sbx_1", csrf_error());
        assert_eq!(rest.status(), StatusCode::FORBIDDEN);
        let e = RestError::from(csrf_error());
        assert_eq!(e.code, "permission_denied");
        assert_eq!(e.details["reason"], "csrf_token");
        // Connect's shape carries the API's detail (code, reason) like every API error.
        let body = futures::executor::block_on(connect.into_body().collect())
            .unwrap()
            .to_bytes();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["code"], "permission_denied");
        assert_eq!(
            v["details"][0]["debug"]["details"]["reason"], "csrf_token",
            "{v}"
        );
    }

    #[test]
    fn on_the_consoles_listener_a_browser_calls_the_api_only_from_its_page_with_its_session() {
        use crate::identity::auth::{Principal, Role};
        let sessions = Sessions::default();
        let s = sessions
            .open(Principal {
                name: "alice".into(),
                role: Role::User,
            })
            .unwrap();
        let call = |path: &str, headers: &[(&str, String)]| {
            let mut b = Request::builder()
                .uri(path)
                .header("host", "127.0.0.1:7780");
            for (k, v) in headers {
                b = b.header(*k, v.as_str());
            }
            console_browser_call(&sessions, &b.body(()).unwrap(), path)
        };
        let api = "/v1/sandboxes";
        let cookie = ("cookie", format!("{COOKIE}={}", s.id));
        let here = ("origin", "http://127.0.0.1:7780".to_string());
        let same = ("sec-fetch-site", "same-origin".to_string());
        // Not a browser (curl, the SDKs), or the user typing a URL: not this rule's.
        assert!(call(api, &[]).is_ok());
        assert!(call(api, &[("sec-fetch-site", "none".into())]).is_ok());
        // The console's page: same origin, its session.
        assert!(call(api, &[here.clone(), same.clone(), cookie.clone()]).is_ok());
        assert!(call(api, &[same.clone(), cookie.clone()]).is_ok());
        // Without the session: whatever else authenticates it (a client certificate, a
        // header) is refused.
        for h in [
            vec![same.clone()],
            vec![here.clone()],
            vec![
                same.clone(),
                ("authorization", "Bearer t".into()),
                cookie.clone(),
            ],
            vec![same.clone(), ("cookie", format!("{COOKIE}=made-up"))],
        ] {
            let e = call(api, &h).unwrap_err();
            assert!(
                e.details
                    .iter()
                    .any(|(k, v)| k == "reason" && v == "browser_request"),
                "{h:?}"
            );
        }
        // Another origin or site, with the session or not.
        for h in [
            vec![("sec-fetch-site", "same-site".into()), cookie.clone()],
            vec![("sec-fetch-site", "cross-site".into()), cookie.clone()],
            vec![("origin", "http://127.0.0.1:7777".into()), cookie.clone()],
            vec![("origin", "http://127.0.0.1:77801".into()), cookie.clone()],
            vec![("origin", "null".into()), cookie.clone()],
            vec![
                ("referer", "http://127.0.0.1:7777/_sandbox/exp_1/".into()),
                cookie.clone(),
            ],
        ] {
            assert!(call(api, &h).is_err(), "{h:?}");
        }
        assert!(call(
            api,
            &[
                ("referer", "http://127.0.0.1:7780/ui/".into()),
                cookie.clone()
            ]
        )
        .is_ok());
        // No page asks for a login code here; the pages and the login have their own rules.
        assert!(call(LOGIN_CODE_PATH, &[same.clone(), cookie.clone()]).is_err());
        assert!(call("/ui/", &[("sec-fetch-site", "cross-site".into())]).is_ok());
    }

    #[test]
    fn the_pages_hold_no_inline_script_or_markup_sinks() {
        // The CSP forbids inline script; the modules never parse strings as HTML.
        assert!(!assets::INDEX.contains("<script>"));
        // The shell names its icon: no request for /favicon.ico, which with the session
        // cookie and no CSRF token would be refused (a 403 in the browser's console).
        assert!(assets::INDEX.contains(r#"<link rel="icon" href="data:,">"#));
        // No inline handler attribute (` onclick=`…) either.
        let handler = assets::INDEX.split(" on").skip(1).any(|rest| {
            let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
            !name.is_empty() && rest[name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler in index.html");
        for js in [
            assets::APP_JS,
            assets::LIB_JS,
            assets::LISTS_JS,
            assets::SANDBOXES_JS,
            assets::SANDBOX_JS,
        ] {
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
            ] {
                assert!(!js.contains(sink), "{sink} in a console module");
            }
        }
        assert!(CSP.contains("script-src 'self'") && !CSP.contains("unsafe"));
    }
}
