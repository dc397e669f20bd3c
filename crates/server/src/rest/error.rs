//! REST errors: `{"error": {"code", "message", "details"}}` (seed 002's shape) with the
//! stable code every API error carries ([`cleanroom_vocab::ErrorCode`]) and the HTTP
//! status of its class. A Connect handler's error is read back from its typed detail, so
//! REST and Connect callers see the same code, message and details.

use crate::api::errors::ApiBody;
use crate::api::errors::ERROR_DETAIL_TYPE;
use crate::model::error::EngineError;
use bytes::Bytes;
use connectrpc::{ConnectError, ErrorCode as C};
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Map, Value};

/// One refused REST call.
#[derive(Debug)]
pub struct RestError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub details: Map<String, Value>,
}

/// The HTTP status of a Connect code (Connect's own mapping, except that a failed
/// precondition is a conflict, as seed 002 has it).
pub fn http_status(c: C) -> StatusCode {
    match c {
        C::InvalidArgument | C::OutOfRange => StatusCode::BAD_REQUEST,
        C::Unauthenticated => StatusCode::UNAUTHORIZED,
        C::PermissionDenied => StatusCode::FORBIDDEN,
        C::NotFound => StatusCode::NOT_FOUND,
        C::AlreadyExists | C::Aborted | C::FailedPrecondition => StatusCode::CONFLICT,
        C::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        C::Canceled => StatusCode::REQUEST_TIMEOUT,
        C::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        C::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        C::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<ConnectError> for RestError {
    fn from(e: ConnectError) -> Self {
        let e = crate::api::errors::ensure_detail(e);
        let debug = e
            .details
            .iter()
            .find(|d| d.type_url == ERROR_DETAIL_TYPE)
            .and_then(|d| d.debug.clone())
            .unwrap_or(Value::Null);
        let code = debug
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("internal")
            .to_string();
        let message = debug
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| e.message.clone().unwrap_or_default());
        let details = debug
            .get("details")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        RestError {
            status: http_status(e.code),
            code,
            message,
            details,
        }
    }
}

impl From<EngineError> for RestError {
    fn from(e: EngineError) -> Self {
        crate::api::to_connect(e).into()
    }
}

impl RestError {
    /// A path that is no REST route.
    pub fn no_route(path: &str) -> Self {
        RestError {
            status: StatusCode::NOT_FOUND,
            code: cleanroom_vocab::ErrorCode::Unimplemented
                .as_str()
                .to_string(),
            message: format!("no REST route {path} (see /v1/openapi.json)"),
            details: Map::from_iter([("path".to_string(), json!(path))]),
        }
    }

    /// A route that does not take `method`.
    pub fn method(method: &Method, path: &str) -> Self {
        RestError {
            status: StatusCode::METHOD_NOT_ALLOWED,
            code: cleanroom_vocab::ErrorCode::Unimplemented
                .as_str()
                .to_string(),
            message: format!("{path} does not take {method} (see /v1/openapi.json)"),
            details: Map::from_iter([
                ("path".to_string(), json!(path)),
                ("method".to_string(), json!(method.as_str())),
            ]),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        json!({"error": {"code": self.code, "message": self.message, "details": self.details}})
    }

    pub fn into_response(self) -> Response<ApiBody> {
        let mut b = Response::builder()
            .status(self.status)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::CACHE_CONTROL, "no-store")
            .header("x-content-type-options", "nosniff");
        if self.status == StatusCode::UNAUTHORIZED {
            b = b.header(http::header::WWW_AUTHENTICATE, "Bearer");
        }
        b.body(
            Full::new(Bytes::from(self.body().to_string()))
                .map_err(|e| match e {})
                .boxed_unsync(),
        )
        .unwrap_or_else(|_| Response::new(ApiBody::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_error_keeps_its_stable_code_and_details() {
        let e = EngineError::new(
            cleanroom_vocab::ErrorCode::SandboxNotFound,
            "no sandbox sbx_x",
        )
        .with("sandbox_id", "sbx_x");
        let r = RestError::from(e);
        assert_eq!(r.status, StatusCode::NOT_FOUND);
        assert_eq!(r.code, "sandbox_not_found");
        assert_eq!(r.message, "no sandbox sbx_x");
        assert_eq!(r.body()["error"]["details"]["sandbox_id"], "sbx_x");
    }
}
