//! Errors a generic client can read.
//!
//! Every error the API returns carries a `cleanroom.v1.ErrorDetail` with a stable code
//! ([`cleanroom_vocab::ErrorCode`]), in every protocol:
//! - Connect JSON: in `details[]`, with the detail also in readable JSON form in the
//!   Connect protocol's `debug` field (a generic client need not decode base64 protobuf);
//! - gRPC: in `grpc-status-details-bin` (a `google.rpc.Status`);
//! - gRPC-Web: the same `grpc-status-details-bin`, in the trailer frame of the body.
//!
//! Three layers get there:
//! 1. handlers build errors with [`engine_error`] (code + detail + debug);
//! 2. [`DetailInterceptor`] adds a detail to any error that passes the dispatch chain
//!    without one (undecodable or misspelled request fields, framework checks);
//! 3. [`ApiService`] wraps the Connect service and fixes what the framework answers
//!    before any interceptor runs (route misses, size limits, unsupported content types),
//!    and answers unknown methods at once: the framework otherwise reads the whole request
//!    body first, and a client holding a bidirectional stream open (a reflection request
//!    to a server without reflection) waits forever.

use bytes::{Bytes, BytesMut};
use cleanroom_proto::cleanroom::v1::{ErrorDetail, GrpcStatus, GrpcStatusDetail};
use cleanroom_vocab::ErrorCode;
use connectrpc::{ConnectError, ConnectRpcService, Dispatcher, Router};
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Frame;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Fully-qualified name of the error detail message.
pub const ERROR_DETAIL_TYPE: &str = "cleanroom.v1.ErrorDetail";
const GRPC_TYPE_PREFIX: &str = "type.googleapis.com/";
const GRPC_DETAILS: &str = "grpc-status-details-bin";

/// The Connect detail for `code`: protobuf value plus its JSON form in `debug`.
pub fn detail(code: &str, message: &str, details: &[(String, String)]) -> connectrpc::ErrorDetail {
    let details: BTreeMap<&str, &str> = details
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let msg = ErrorDetail {
        code: code.to_string(),
        message: message.to_string(),
        details: details
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    let mut d = connectrpc::ErrorDetail::from_message(ERROR_DETAIL_TYPE, &msg);
    d.debug = Some(serde_json::json!({
        "code": code,
        "message": message,
        "details": details,
    }));
    d
}

/// A Connect error with the stable code, its message and the typed detail.
pub fn engine_error(
    connect_code: connectrpc::ErrorCode,
    code: &str,
    message: &str,
    details: &[(String, String)],
) -> ConnectError {
    ConnectError::new(connect_code, format!("{code}: {message}"))
        .with_detail(detail(code, message, details))
}

/// The stable code for an error the framework raised with only a Connect code.
pub fn stable_code(c: connectrpc::ErrorCode) -> ErrorCode {
    use connectrpc::ErrorCode as C;
    match c {
        C::InvalidArgument | C::OutOfRange => ErrorCode::InvalidArgument,
        C::ResourceExhausted => ErrorCode::ResourceExhausted,
        C::Unimplemented | C::NotFound => ErrorCode::Unimplemented,
        C::Unauthenticated => ErrorCode::Unauthenticated,
        C::PermissionDenied => ErrorCode::PermissionDenied,
        C::DeadlineExceeded => ErrorCode::DeadlineExceeded,
        C::Canceled => ErrorCode::Canceled,
        C::Unavailable => ErrorCode::Unavailable,
        _ => ErrorCode::Internal,
    }
}

fn has_detail(e: &ConnectError) -> bool {
    e.details.iter().any(|d| d.type_url == ERROR_DETAIL_TYPE)
}

/// `e` with a detail, derived from its Connect code when it has none.
pub fn ensure_detail(mut e: ConnectError) -> ConnectError {
    if !has_detail(&e) {
        let message = e.message.clone().unwrap_or_default();
        let code = stable_code(e.code);
        e.details.push(detail(code.as_str(), &message, &[]));
    }
    e
}

/// Adds the detail to every error that passes the dispatch chain without one.
pub struct DetailInterceptor;

#[connectrpc::async_trait]
impl connectrpc::Interceptor for DetailInterceptor {
    async fn intercept_unary(
        &self,
        req: connectrpc::interceptor::UnaryRequest,
        next: connectrpc::Next<'_>,
    ) -> Result<connectrpc::interceptor::UnaryResponse, ConnectError> {
        next.run(req).await.map_err(ensure_detail)
    }

    async fn intercept_streaming(
        &self,
        req: connectrpc::interceptor::StreamRequest,
        inbound: connectrpc::PayloadStream,
        next: connectrpc::NextStream<'_>,
    ) -> Result<connectrpc::interceptor::StreamResponse, ConnectError> {
        let resp = next.run(req, inbound).await.map_err(ensure_detail)?;
        Ok(resp.map_body(|s| -> connectrpc::PayloadStream {
            Box::pin(s.map(|item| item.map_err(ensure_detail)))
        }))
    }
}

/// Response body of [`ApiService`].
pub type ApiBody = UnsyncBoxBody<Bytes, Infallible>;

/// The Connect service plus the error fixes of the module docs.
#[derive(Clone)]
pub struct ApiService {
    inner: ConnectRpcService<Router>,
}

impl ApiService {
    pub fn new(inner: ConnectRpcService<Router>) -> Self {
        ApiService { inner }
    }
}

impl<B> tower::Service<Request<B>> for ApiService
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
        let path = req.uri().path();
        let known = self
            .inner
            .dispatcher()
            .lookup(path.strip_prefix('/').unwrap_or(path))
            .is_some();
        let fut = if known {
            tower::Service::call(&mut self.inner, req)
        } else {
            // Answer now, in the request's own protocol, without waiting for a body the
            // client may never end (the framework drains it first). The unread body is
            // dropped: hyper then resets the HTTP/2 stream or closes the HTTP/1.1
            // connection, never reads it as the next request.
            let (parts, _body) = req.into_parts();
            let empty = Request::from_parts(parts, Empty::<Bytes>::new());
            tower::Service::call(&mut self.inner, empty)
        };
        Box::pin(async move {
            let Ok(resp) = fut.await;
            Ok(fix_response(resp).await)
        })
    }
}

/// Give every error response of the framework the detail.
async fn fix_response<B>(resp: Response<B>) -> Response<ApiBody>
where
    B: hyper::body::Body<Data = Bytes, Error = Infallible> + Send + 'static,
{
    let ct = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ct.starts_with("application/grpc-web") {
        // gRPC-Web trailers travel inside the body, as a frame flagged 0x80.
        return resp.map(|b| {
            b.map_frame(|f| match f.into_data() {
                Ok(d) => Frame::data(fix_grpc_web_frame(d)),
                Err(f) => f,
            })
            .boxed_unsync()
        });
    }
    if ct.starts_with("application/grpc") {
        let (mut parts, body) = resp.into_parts();
        add_grpc_details(&mut parts.headers);
        let body = body.map_frame(|f| match f.into_trailers() {
            Ok(mut t) => {
                add_grpc_details(&mut t);
                Frame::trailers(t)
            }
            Err(f) => f,
        });
        return Response::from_parts(parts, body.boxed_unsync());
    }
    if ct.starts_with("application/connect+") {
        return resp.map(|b| {
            b.map_frame(|f| match f.into_data() {
                Ok(d) => Frame::data(fix_end_stream(d)),
                Err(f) => f,
            })
            .boxed_unsync()
        });
    }
    if resp.status() == StatusCode::OK {
        return resp.map(|b| b.boxed_unsync());
    }
    // A Connect unary error: a small JSON object the framework built itself (or no body).
    let (mut parts, body) = resp.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let fixed = fix_error_json(&bytes, parts.status);
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(fixed).boxed_unsync())
}

/// The detail as a connect JSON `details[]` entry.
fn detail_json(code: ErrorCode, message: &str) -> serde_json::Value {
    serde_json::to_value(detail(code.as_str(), message, &[])).unwrap_or(serde_json::Value::Null)
}

/// A Connect error object (`{code, message, details}`) with our detail added when it has
/// none.
fn fix_error_object(err: &mut serde_json::Map<String, serde_json::Value>) {
    let details = err
        .entry("details")
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    if !details.is_array() {
        *details = serde_json::Value::Array(Vec::new());
    }
    if details
        .as_array()
        .is_some_and(|l| l.iter().any(|d| d["type"] == ERROR_DETAIL_TYPE))
    {
        return;
    }
    let connect_code = err
        .get("code")
        .and_then(|c| c.as_str())
        .and_then(|c| c.parse::<connectrpc::ErrorCode>().ok())
        .unwrap_or(connectrpc::ErrorCode::Internal);
    let message = err
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or_default()
        .to_string();
    let d = detail_json(stable_code(connect_code), &message);
    if let Some(serde_json::Value::Array(list)) = err.get_mut("details") {
        list.push(d);
    }
}

/// The Connect unary error body, completed; an empty or unreadable body (405, 415) becomes
/// a full error object.
fn fix_error_json(body: &[u8], status: StatusCode) -> Bytes {
    let mut v = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .filter(|v| v["code"].is_string())
        .unwrap_or_else(|| {
            let (code, message) = match status {
                StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                    "unimplemented",
                    "unsupported content type: use application/json or application/proto \
                     (Connect), application/grpc (gRPC)",
                ),
                StatusCode::METHOD_NOT_ALLOWED => (
                    "unimplemented",
                    "unsupported HTTP method for this procedure",
                ),
                StatusCode::NOT_FOUND => ("unimplemented", "no such procedure"),
                StatusCode::UNAUTHORIZED => ("unauthenticated", "unauthenticated"),
                StatusCode::FORBIDDEN => ("permission_denied", "permission denied"),
                StatusCode::PAYLOAD_TOO_LARGE => ("resource_exhausted", "request too large"),
                _ => ("internal", "request failed"),
            };
            serde_json::json!({"code": code, "message": message})
        });
    if let Some(obj) = v.as_object_mut() {
        fix_error_object(obj);
    }
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// A Connect streaming frame that is exactly one uncompressed end-of-stream envelope
/// (flag 0x02) carrying an error without our detail gets the detail. Anything else —
/// messages, split or coalesced envelopes, compressed ones — passes as is (errors raised
/// inside the dispatch chain already carry the detail: [`DetailInterceptor`]).
fn fix_end_stream(d: Bytes) -> Bytes {
    if d.len() < 5 || d[0] != 0x02 {
        return d;
    }
    let len = u32::from_be_bytes([d[1], d[2], d[3], d[4]]) as usize;
    if d.len() != 5 + len {
        return d;
    }
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&d[5..]) else {
        return d;
    };
    let Some(err) = v.get_mut("error").and_then(|e| e.as_object_mut()) else {
        return d;
    };
    fix_error_object(err);
    let Ok(json) = serde_json::to_vec(&v) else {
        return d;
    };
    let Ok(n) = u32::try_from(json.len()) else {
        return d;
    };
    let mut out = BytesMut::with_capacity(5 + json.len());
    out.extend_from_slice(&[0x02]);
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&json);
    out.freeze()
}

/// gRPC status headers/trailers with a non-OK `grpc-status` and no details get a
/// `grpc-status-details-bin` carrying our detail.
fn add_grpc_details(h: &mut HeaderMap) {
    let Some(status) = h
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    if status == 0 {
        return;
    }
    // Details the framework already sent (possibly none): kept, ours added when missing.
    let mut existing = Vec::new();
    if let Some(v) = h.get(GRPC_DETAILS) {
        use base64::Engine as _;
        let raw = v.to_str().unwrap_or("").trim_end_matches('=');
        // Unreadable: replaced below with one a client can read.
        if let Some(st) = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(raw)
            .ok()
            .and_then(|b| <GrpcStatus as buffa::Message>::decode_from_slice(&b).ok())
        {
            existing = st.details;
        }
        if existing
            .iter()
            .any(|d| d.type_url == format!("{GRPC_TYPE_PREFIX}{ERROR_DETAIL_TYPE}"))
        {
            return;
        }
    }
    let message = h
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| {
            percent_encoding::percent_decode_str(m)
                .decode_utf8_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let connect_code =
        connectrpc::ErrorCode::from_grpc_code(status).unwrap_or(connectrpc::ErrorCode::Internal);
    let code = stable_code(connect_code);
    let inner = ErrorDetail {
        code: code.as_str().to_string(),
        message: message.clone(),
        ..Default::default()
    };
    let st = GrpcStatus {
        code: status as i32,
        message,
        details: std::iter::once(GrpcStatusDetail {
            type_url: format!("{GRPC_TYPE_PREFIX}{ERROR_DETAIL_TYPE}"),
            value: buffa::Message::encode_to_vec(&inner),
            ..Default::default()
        })
        .chain(existing)
        .collect(),
        ..Default::default()
    };
    use base64::Engine as _;
    let b64 =
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(buffa::Message::encode_to_vec(&st));
    if let Ok(v) = HeaderValue::from_str(&b64) {
        h.insert(GRPC_DETAILS, v);
    }
}

/// A gRPC-Web body chunk whose envelopes it holds exactly, one of them the trailer frame
/// (flag 0x80) of an error without our detail: that frame gets the detail
/// ([`add_grpc_details`]). Anything else — messages, partial envelopes, success trailers —
/// passes as is.
fn fix_grpc_web_frame(d: Bytes) -> Bytes {
    const TRAILER: u8 = 0x80;
    let mut at = 0;
    let mut trailer = None;
    while at < d.len() {
        if d.len() - at < 5 {
            return d;
        }
        let len = u32::from_be_bytes([d[at + 1], d[at + 2], d[at + 3], d[at + 4]]) as usize;
        let end = match (at + 5).checked_add(len) {
            Some(e) if e <= d.len() => e,
            _ => return d,
        };
        if d[at] & TRAILER != 0 {
            trailer = Some((at, end));
        }
        at = end;
    }
    let Some((start, end)) = trailer else {
        return d;
    };
    let mut h = HeaderMap::new();
    for line in d[start + 5..end].split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            return d;
        };
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(line[..colon].trim_ascii()),
            HeaderValue::from_bytes(line[colon + 1..].trim_ascii()),
        ) else {
            return d;
        };
        h.append(name, value);
    }
    let before = h.get(GRPC_DETAILS).cloned();
    add_grpc_details(&mut h);
    if h.get(GRPC_DETAILS) == before.as_ref() {
        return d;
    }
    let mut payload = Vec::new();
    for (k, v) in &h {
        payload.extend_from_slice(k.as_str().as_bytes());
        payload.extend_from_slice(b": ");
        payload.extend_from_slice(v.as_bytes());
        payload.extend_from_slice(b"\r\n");
    }
    let Ok(n) = u32::try_from(payload.len()) else {
        return d;
    };
    let mut out = BytesMut::with_capacity(d.len() + payload.len());
    out.extend_from_slice(&d[..start]);
    out.extend_from_slice(&[d[start]]);
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&d[end..]);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_json_gets_detail_with_debug() {
        let b = fix_error_json(
            br#"{"code":"invalid_argument","message":"bad json"}"#,
            StatusCode::BAD_REQUEST,
        );
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["code"], "invalid_argument");
        assert_eq!(v["details"][0]["type"], ERROR_DETAIL_TYPE);
        assert_eq!(v["details"][0]["debug"]["code"], "invalid_argument");
        assert_eq!(v["details"][0]["debug"]["message"], "bad json");
        // Idempotent: an error that has the detail keeps exactly one.
        let again = fix_error_json(&b, StatusCode::BAD_REQUEST);
        let v2: serde_json::Value = serde_json::from_slice(&again).unwrap();
        assert_eq!(v2["details"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn empty_and_hostile_bodies_become_full_errors() {
        for body in [
            &b""[..],
            b"not json",
            b"[1,2]",
            b"{\"details\":5}",
            b"{\"code\":\"internal\",\"details\":5}",
        ] {
            let b = fix_error_json(body, StatusCode::UNSUPPORTED_MEDIA_TYPE);
            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
            assert!(v["code"].is_string(), "{v}");
            assert_eq!(v["details"][0]["type"], ERROR_DETAIL_TYPE, "{v}");
        }
        let b = fix_error_json(b"", StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["details"][0]["debug"]["code"], "unimplemented");
    }

    #[test]
    fn end_stream_envelope_gets_detail_only_when_exact() {
        let json = br#"{"error":{"code":"resource_exhausted","message":"too big"}}"#;
        let mut env = vec![0x02];
        env.extend_from_slice(&(json.len() as u32).to_be_bytes());
        env.extend_from_slice(json);
        let fixed = fix_end_stream(Bytes::from(env.clone()));
        let v: serde_json::Value = serde_json::from_slice(&fixed[5..]).unwrap();
        assert_eq!(
            v["error"]["details"][0]["debug"]["code"],
            "resource_exhausted"
        );
        // A truncated envelope, a data message and a success end-stream are untouched.
        let cut = Bytes::from(env[..env.len() - 1].to_vec());
        assert_eq!(fix_end_stream(cut.clone()), cut);
        let mut data = env.clone();
        data[0] = 0;
        assert_eq!(fix_end_stream(Bytes::from(data.clone())), Bytes::from(data));
        let ok = Bytes::from_static(b"\x02\x00\x00\x00\x02{}");
        assert_eq!(fix_end_stream(ok.clone()), ok);
    }

    #[test]
    fn grpc_status_gets_details_bin() {
        let mut h = HeaderMap::new();
        h.insert("grpc-status", HeaderValue::from_static("12"));
        h.insert(
            "grpc-message",
            HeaderValue::from_static("method%20not%20found"),
        );
        add_grpc_details(&mut h);
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(h[GRPC_DETAILS].as_bytes())
            .unwrap();
        let st = <GrpcStatus as buffa::Message>::decode_from_slice(&raw).unwrap();
        assert_eq!(st.code, 12);
        assert_eq!(st.message, "method not found");
        let d = <ErrorDetail as buffa::Message>::decode_from_slice(&st.details[0].value).unwrap();
        assert_eq!(d.code, "unimplemented");
        // OK statuses and statuses that already carry details are left alone.
        let mut ok = HeaderMap::new();
        ok.insert("grpc-status", HeaderValue::from_static("0"));
        add_grpc_details(&mut ok);
        assert!(!ok.contains_key(GRPC_DETAILS));
    }

    fn web_trailer(text: &str) -> Bytes {
        let mut f = vec![0x80];
        f.extend_from_slice(&(text.len() as u32).to_be_bytes());
        f.extend_from_slice(text.as_bytes());
        Bytes::from(f)
    }

    fn web_detail_code(frame: &[u8]) -> String {
        let text = std::str::from_utf8(&frame[5..]).unwrap();
        let b64 = text
            .lines()
            .find_map(|l| l.strip_prefix("grpc-status-details-bin: "))
            .unwrap_or_else(|| panic!("no details in {text}"));
        use base64::Engine as _;
        let raw = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(b64.trim())
            .unwrap();
        let st = <GrpcStatus as buffa::Message>::decode_from_slice(&raw).unwrap();
        let d = st
            .details
            .iter()
            .find(|d| d.type_url.ends_with(ERROR_DETAIL_TYPE))
            .unwrap();
        <ErrorDetail as buffa::Message>::decode_from_slice(&d.value)
            .unwrap()
            .code
    }

    #[test]
    fn grpc_web_error_trailer_gets_the_detail() {
        // The framework's own error: status, message, a details-bin without our detail.
        let empty = {
            use base64::Engine as _;
            let st = GrpcStatus {
                code: 12,
                ..Default::default()
            };
            base64::engine::general_purpose::STANDARD_NO_PAD
                .encode(buffa::Message::encode_to_vec(&st))
        };
        let f = web_trailer(&format!(
            "grpc-status: 12\r\ngrpc-message: no%20such%20method\r\ngrpc-status-details-bin: {empty}\r\n"
        ));
        let fixed = fix_grpc_web_frame(f);
        assert_eq!(web_detail_code(&fixed), "unimplemented");
        // A message envelope then the trailer in one chunk: the message is kept.
        let mut both = vec![0u8, 0, 0, 0, 2, 8, 1];
        both.extend_from_slice(&web_trailer("grpc-status: 3\r\n"));
        let fixed = fix_grpc_web_frame(Bytes::from(both));
        assert_eq!(&fixed[..7], &[0u8, 0, 0, 0, 2, 8, 1]);
        assert_eq!(web_detail_code(&fixed[7..]), "invalid_argument");
        // Idempotent; success, partial and hostile frames pass as is.
        let once = fix_grpc_web_frame(web_trailer("grpc-status: 5\r\n"));
        assert_eq!(fix_grpc_web_frame(once.clone()), once);
        for f in [
            web_trailer("grpc-status: 0\r\n"),
            Bytes::from_static(b"\x80\x00\x00\x01\x00abc"),
            Bytes::from_static(b"\x80\x00"),
            web_trailer("no colon here\r\n"),
            Bytes::from_static(b"\x00\x00\x00\x00\x01\x08"),
        ] {
            assert_eq!(fix_grpc_web_frame(f.clone()), f);
        }
    }
}
