//! Strict checks on a request head that hyper parsed, before anything about it is decided.
//!
//! hyper's parser follows RFC 9112 but, like every server, tolerates things an upstream
//! may read differently (two Host headers, a lower-case method, Transfer-Encoding with
//! Content-Length, an absolute-form URI naming another host than Host). The gateway decides
//! on the parsed form and forwards a re-serialization of it, so the upstream sees exactly
//! what was checked; this module refuses every head whose parsed form is ambiguous.

use cleanroom_policy::normalize_wire_host;
use hyper::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use hyper::{Method, Request, Version};

/// Longest method accepted (the registered ones are far shorter).
const MAX_METHOD: usize = 24;

/// Why a request head was refused (`request_malformed`).
pub(crate) type Malformed = String;

/// Refuse a request head that is not unambiguous under RFC 9110/9112.
pub(crate) fn validate<B>(req: &Request<B>) -> Result<(), Malformed> {
    let m = req.method().as_str();
    if m.is_empty()
        || m.len() > MAX_METHOD
        || !m.bytes().all(|b| b.is_ascii_uppercase() || b == b'-')
    {
        return Err(format!(
            "method {m:?}: methods are case-sensitive upper-case tokens"
        ));
    }
    if !matches!(req.version(), Version::HTTP_10 | Version::HTTP_11) {
        return Err(format!("HTTP version {:?} is not HTTP/1", req.version()));
    }
    let hosts: Vec<_> = req.headers().get_all(HOST).iter().collect();
    match hosts.as_slice() {
        [] if req.version() == Version::HTTP_11 => {
            return Err("an HTTP/1.1 request without a Host header".into())
        }
        [] => {}
        [h] => {
            let h = h
                .to_str()
                .map_err(|_| "a Host header that is not ASCII".to_string())?;
            if h.is_empty() || h.contains(['@', '/', '?', '#', ' ', '\t', ',']) {
                return Err(format!("Host {h:?} is not a bare host[:port]"));
            }
        }
        _ => return Err(format!("{} Host headers", hosts.len())),
    }
    let cls: Vec<_> = req.headers().get_all(CONTENT_LENGTH).iter().collect();
    if cls.len() > 1 {
        return Err(format!("{} Content-Length headers", cls.len()));
    }
    if let Some(cl) = cls.first() {
        if cl.is_empty() || !cl.as_bytes().iter().all(u8::is_ascii_digit) {
            return Err("a Content-Length that is not a single number".into());
        }
    }
    let tes: Vec<_> = req.headers().get_all(TRANSFER_ENCODING).iter().collect();
    if !tes.is_empty() {
        if !cls.is_empty() {
            return Err("Transfer-Encoding together with Content-Length".into());
        }
        if tes.len() > 1 || !tes[0].as_bytes().eq_ignore_ascii_case(b"chunked") {
            return Err("a Transfer-Encoding other than one plain \"chunked\"".into());
        }
        if req.version() == Version::HTTP_10 {
            return Err("Transfer-Encoding in an HTTP/1.0 request".into());
        }
    }
    check_target(req)
}

/// The request target: authority-form only for CONNECT, `*` only for OPTIONS, and an
/// absolute-form URI must name the same authority as Host.
fn check_target<B>(req: &Request<B>) -> Result<(), Malformed> {
    let uri = req.uri();
    if req.method() == Method::CONNECT {
        return Ok(());
    }
    if uri.scheme().is_none() && uri.authority().is_some() {
        return Err("authority-form target outside CONNECT".into());
    }
    if uri == "*" && req.method() != Method::OPTIONS {
        return Err("asterisk-form target outside OPTIONS".into());
    }
    let Some(auth) = uri.authority() else {
        return Ok(());
    };
    let default = match uri.scheme_str() {
        Some("http") => 80,
        Some("https") => 443,
        other => return Err(format!("absolute-form URI with scheme {other:?}")),
    };
    if auth.as_str().contains('@') {
        return Err("absolute-form URI with user information".into());
    }
    let Some(host) = req.headers().get(HOST).and_then(|h| h.to_str().ok()) else {
        return Ok(());
    };
    if !same_authority(auth.as_str(), host, default) {
        return Err(format!(
            "absolute-form URI names {:?} but Host is {host:?}",
            auth.as_str()
        ));
    }
    Ok(())
}

/// Do two `host[:port]` authorities name the same host and port?
pub(crate) fn same_authority(a: &str, b: &str, default_port: u16) -> bool {
    let norm = |s: &str| {
        let (h, p) = split_authority(s, default_port)?;
        Some((normalize_wire_host(&h).unwrap_or(h.to_ascii_lowercase()), p))
    };
    matches!((norm(a), norm(b)), (Some(x), Some(y)) if x == y)
}

/// Split `host[:port]` (brackets for IPv6 literals) with a default port.
pub(crate) fn split_authority(auth: &str, default_port: u16) -> Option<(String, u16)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, uri: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn authorities() {
        assert_eq!(
            split_authority("a.test:8443", 443),
            Some(("a.test".into(), 8443))
        );
        assert_eq!(split_authority("a.test", 443), Some(("a.test".into(), 443)));
        assert_eq!(split_authority("[::1]:80", 443), Some(("::1".into(), 80)));
        assert_eq!(split_authority("a.test:x", 443), None);
        assert!(same_authority("A.test.", "a.test:80", 80));
        assert!(!same_authority("a.test:81", "a.test", 80));
        assert!(!same_authority("b.test", "a.test", 80));
    }

    #[test]
    fn plain_requests_pass() {
        for r in [
            req("GET", "/", &[("host", "a.test")]),
            req(
                "POST",
                "/x?y",
                &[("host", "a.test:8080"), ("content-length", "3")],
            ),
            req(
                "PUT",
                "/",
                &[("host", "a.test"), ("transfer-encoding", "chunked")],
            ),
            req("GET", "http://a.test/x", &[("host", "a.test")]),
            req("GET", "http://a.test:8080/x", &[("host", "A.TEST:8080")]),
            req("CONNECT", "a.test:443", &[("host", "a.test:443")]),
            req("OPTIONS", "*", &[("host", "a.test")]),
            req("M-SEARCH", "/", &[("host", "a.test")]),
        ] {
            assert_eq!(validate(&r), Ok(()), "{r:?}");
        }
    }

    #[test]
    fn ambiguous_requests_are_refused() {
        for r in [
            req("get", "/", &[("host", "a.test")]),
            req("Get", "/", &[("host", "a.test")]),
            req("GET", "/", &[]),
            req("GET", "/", &[("host", "a.test"), ("host", "b.test")]),
            req("GET", "/", &[("host", "a.test"), ("host", "a.test")]),
            req("GET", "/", &[("host", "a.test/x")]),
            req("GET", "/", &[("host", "u@a.test")]),
            req("GET", "/", &[("host", "a.test, b.test")]),
            req(
                "POST",
                "/",
                &[
                    ("host", "a.test"),
                    ("content-length", "3"),
                    ("transfer-encoding", "chunked"),
                ],
            ),
            req(
                "POST",
                "/",
                &[
                    ("host", "a.test"),
                    ("content-length", "3"),
                    ("content-length", "3"),
                ],
            ),
            req(
                "POST",
                "/",
                &[("host", "a.test"), ("content-length", "3, 3")],
            ),
            req(
                "POST",
                "/",
                &[("host", "a.test"), ("transfer-encoding", "gzip, chunked")],
            ),
            req("GET", "http://b.test/", &[("host", "a.test")]),
            req("GET", "http://a.test:81/", &[("host", "a.test")]),
            req("GET", "http://u@a.test/", &[("host", "a.test")]),
            req("GET", "ftp://a.test/", &[("host", "a.test")]),
            req("GET", "*", &[("host", "a.test")]),
        ] {
            assert!(validate(&r).is_err(), "{r:?}");
        }
    }
}
