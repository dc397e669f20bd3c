//! The bodies the gateway hands to the sandbox, and the short answers it writes itself.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::{Response, StatusCode};

/// The error a refused body ends with (the connection to the sandbox is cut).
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body towards the sandbox.
pub(crate) type Body = BoxBody<Bytes, BoxError>;

/// A plain-text answer that closes the connection; `reason` becomes `x-cleanroom-deny`.
pub(crate) fn text(status: StatusCode, reason: Option<&str>, msg: String) -> Response<Body> {
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

/// An empty body.
pub(crate) fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|n| match n {}).boxed()
}
