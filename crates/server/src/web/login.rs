//! Logging in to the console, out of it, and `cleanroom ui`'s one-time codes.
//!
//! Two ways in, both ending with the same principal the API would give: a bearer token
//! typed into the login form (checked by the API's own [`Authenticator`]), or a login code
//! that `cleanroom ui` asked for over the API (bound to *that* caller's principal — the
//! unix user over the socket — single-use and short-lived, see [`super::session`]).
//!
//! The cookie is `HttpOnly; Secure; SameSite=Strict; Path=/`: scripts cannot read it,
//! other sites cannot send it, and browsers keep it only over https — or on
//! `localhost`/`127.0.0.1`, which Chromium and Firefox treat as secure (docs/web.md).
//! A login must be JSON (a cross-site form cannot send that without a preflight nobody
//! answers) and, when the browser says where it comes from, from this origin.

use super::session::ABSOLUTE;
use super::{full, Web, COOKIE, CSRF_HEADER};
use crate::api::errors::ApiBody;
use crate::api::interceptor::admit;
use crate::identity::auth::{Peer, Principal};
use crate::model::error::{EngineError, ErrorCode};
use crate::rest::error::RestError;
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use serde_json::json;

/// Largest login body read.
const MAX_LOGIN_BODY: usize = 4096;

type R = Result<Response<ApiBody>, RestError>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    code: Option<String>,
}

fn json_reply(status: StatusCode) -> http::response::Builder {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
}

fn who_json(web: &Web, p: &Principal, csrf: &str) -> serde_json::Value {
    json!({
        "principal": p.name,
        "admin": p.is_admin(),
        "csrf": csrf,
        "exposureBase": web.exposure_base,
    })
}

/// Does the request come from this origin (when the browser says)?
fn same_origin<B>(req: &Request<B>) -> bool {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return true;
    };
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let origin = origin.to_str().unwrap_or_default();
    !host.is_empty() && (origin == format!("http://{host}") || origin == format!("https://{host}"))
}

fn is_json<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().unwrap_or_default().trim() == "application/json")
}

/// `POST /ui/api/login` `{token}` or `{code}`: a session and its cookie.
pub async fn login<B>(web: &Web, req: Request<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if !same_origin(&req) || !is_json(&req) {
        return Err(EngineError::permission_denied(
            "a login must be a JSON POST from the console's own origin",
        )
        .with("reason", "cross_origin")
        .into());
    }
    let bytes = Limited::new(req.into_body(), MAX_LOGIN_BODY)
        .collect()
        .await
        .map_err(|e| {
            EngineError::invalid(format!(
                "cannot read the login (at most {MAX_LOGIN_BODY} bytes): {e}"
            ))
        })?
        .to_bytes();
    let b: LoginBody = serde_json::from_slice(&bytes)
        .map_err(|e| EngineError::invalid(format!("malformed login: {e}")))?;
    let who = match (b.token, b.code) {
        (Some(t), None) => {
            let bearer = format!("Bearer {t}");
            // The API's own check, as a TCP caller presenting this token.
            let peer = Peer::Tcp {
                cert_principal: None,
            };
            web.auth
                .authenticate(Some(&peer), Some(bearer.as_bytes()))?
        }
        (None, Some(c)) => web.sessions.redeem(&c).ok_or_else(|| {
            EngineError::unauthenticated(
                "this login link is unknown, used or expired: run `cleanroom ui` again",
            )
        })?,
        _ => return Err(EngineError::invalid("give either a token or a code").into()),
    };
    let s = web.sessions.open(who.clone())?;
    let cookie = format!(
        "{COOKIE}={}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={}",
        s.id,
        ABSOLUTE.as_secs()
    );
    Ok(json_reply(StatusCode::OK)
        .header(header::SET_COOKIE, cookie)
        .body(full(who_json(web, &who, &s.csrf).to_string()))
        .unwrap_or_else(|_| Response::new(ApiBody::default())))
}

/// `POST /ui/api/logout` (with the CSRF token): the session ends, the cookie goes.
pub fn logout<B>(web: &Web, req: Request<B>) -> R {
    let Some((id, cur)) = web.current(&req) else {
        return Err(EngineError::unauthenticated("not logged in").into());
    };
    if !cur.csrf_ok(req.headers().get(CSRF_HEADER).map(|v| v.as_bytes())) {
        return Err(super::csrf_error().into());
    }
    web.sessions.close(&id);
    Ok(Response::builder()
        .status(StatusCode::NO_CONTENT)
        .header(
            header::SET_COOKIE,
            format!("{COOKIE}=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0"),
        )
        .body(ApiBody::default())
        .unwrap_or_else(|_| Response::new(ApiBody::default())))
}

/// `GET /ui/api/session`: who the cookie stands for and its CSRF token (readable only by
/// this origin's scripts: no CORS is ever answered).
pub fn session<B>(web: &Web, req: Request<B>) -> R {
    let Some((_, cur)) = web.current(&req) else {
        return Err(EngineError::unauthenticated("not logged in").into());
    };
    Ok(json_reply(StatusCode::OK)
        .body(full(who_json(web, &cur.principal, &cur.csrf).to_string()))
        .unwrap_or_else(|_| Response::new(ApiBody::default())))
}

/// `POST /ui/api/login-code` (`cleanroom ui`): a single-use code for the caller — as the
/// API authenticates it (the unix user over the socket, a token's principal over TCP;
/// never a console session) — and the link that spends it.
pub async fn login_code<B>(web: &Web, req: Request<B>) -> R {
    let who = admit(
        &web.auth,
        req.extensions(),
        req.headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes()),
    )?;
    let Some(base) = web.urls.first() else {
        return Err(EngineError::new(
            ErrorCode::Unimplemented,
            "this server has no web console listener: start it with `serve --ui-listen http://127.0.0.1:PORT` (the console has a listener of its own, a separate origin from exposed sandbox ports)",
        )
        .with("reason", "no_tcp_listener")
        .into());
    };
    let code = web.sessions.new_code(who.clone())?;
    let body = json!({
        "principal": who.name,
        "url": format!("{base}/ui/login?code={code}"),
        "expiresInSeconds": super::session::CODE_TTL.as_secs(),
    });
    Ok(json_reply(StatusCode::OK)
        .body(full(body.to_string()))
        .unwrap_or_else(|_| Response::new(ApiBody::default())))
}
