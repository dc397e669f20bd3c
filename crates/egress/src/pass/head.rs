//! Message heads on the passthrough path: the client's request head read into the same
//! parsed form the hyper path checks, the checked request written to the upstream, and the
//! upstream's response head parsed strictly and written to the client.
//!
//! A request head is taken only when it is one the hyper path would take with the same
//! result: it passed the framing gate's strict parse ([`crate::framing::judge_head`]), it
//! is HTTP/1.1, its body is absent or of a fixed length, and it asks for nothing hyper
//! does itself (`Expect`, an upgrade, CONNECT). Anything else is left to hyper, which
//! then refuses or serves it exactly as before.

use crate::framing::{judge_head, State};
use crate::http::PROXY_ONLY;
use hyper::{Request, Version};

/// Most header fields in one head.
const MAX_FIELDS: usize = 128;

/// Most informational (1xx) responses skipped before the final one.
pub(super) const MAX_INFORMATIONAL: usize = 16;

/// A request head the passthrough path serves.
pub(super) struct RequestHead {
    /// The parsed form every check runs on.
    pub(super) req: Request<()>,
    /// Length of the body that follows (0: none).
    pub(super) body: u64,
    /// The client asked to close the connection after this exchange.
    pub(super) close: bool,
}

/// Where the first complete request head in `buf` ends (`None`: not complete yet). One
/// empty line before a request is tolerated, as the framing gate tolerates it.
pub(super) fn request_end(buf: &[u8]) -> Option<(usize, usize)> {
    let start = if buf.starts_with(b"\r\n") { 2 } else { 0 };
    memchr::memmem::find(&buf[start..], b"\r\n\r\n").map(|i| (start, start + i + 4))
}

/// The head `head` (exactly one, as [`request_end`] cut it) if the passthrough path takes
/// it; `None` leaves it to hyper.
pub(super) fn request(head: &[u8]) -> Option<RequestHead> {
    if head.first().is_some_and(|b| matches!(b, b'\r' | b'\n')) {
        return None;
    }
    let body = match judge_head(head).ok()? {
        State::Head => 0,
        State::Body(n) => n,
        _ => return None,
    };
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut p = httparse::Request::new(&mut fields);
    match p.parse(head).ok()? {
        httparse::Status::Complete(n) if n == head.len() => {}
        _ => return None,
    }
    if p.version != Some(1) {
        return None;
    }
    let mut b = Request::builder()
        .method(p.method?)
        .uri(p.path?)
        .version(Version::HTTP_11);
    let mut close = false;
    for h in p.headers.iter() {
        if h.name.eq_ignore_ascii_case("expect") {
            return None;
        }
        if h.name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, b"close");
        }
        b = b.header(h.name, h.value);
    }
    let req = b.body(()).ok()?;
    Some(RequestHead { req, body, close })
}

/// Does a comma-separated header value list `token` (case-insensitive)?
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// The request as the upstream gets it: origin-form target, the proxy-only headers
/// dropped, Host written from the decided target (`host`), as the hyper path forwards it.
pub(super) fn upstream_request(req: &Request<()>, host: &str) -> Vec<u8> {
    let target = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(req.method().as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in req.headers() {
        if name == hyper::header::HOST || PROXY_ONLY.contains(&name.as_str()) {
            continue;
        }
        field(&mut out, name.as_str().as_bytes(), value.as_bytes());
    }
    field(&mut out, b"host", host.as_bytes());
    out.extend_from_slice(b"\r\n");
    out
}

fn field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// How a response's body is delimited (RFC 9112 section 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (a HEAD request, 204, 304).
    Empty,
    Length(u64),
    Chunked,
    /// Until the upstream closes.
    Close,
}

/// The upstream's response head, checked.
#[derive(Debug)]
pub(super) enum Response {
    /// 1xx other than 101: skipped, as the hyper client skips it.
    Informational,
    Final {
        /// The head as the client gets it (obs-folds unfolded).
        bytes: Vec<u8>,
        framing: Framing,
        /// Neither side keeps the connection after this response.
        close: bool,
    },
}

/// Parse the response head at the start of `buf`: `Ok(None)` when it is not complete yet,
/// else the head and its length. Ambiguous framing (Transfer-Encoding with Content-Length,
/// a coding other than one plain `chunked`, differing lengths) is an error: the gateway
/// would have to pick one reading, and the client might pick the other.
pub(super) fn response(
    buf: &[u8],
    head_request: bool,
) -> Result<Option<(Response, usize)>, String> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut p = httparse::Response::new(&mut fields);
    let n = match httparse::ParserConfig::default()
        .allow_obsolete_multiline_headers_in_responses(true)
        .parse_response(&mut p, buf)
    {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > crate::framing::MAX_HEAD => {
            return Err("a response head over 64 KiB".into())
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("response head: {e}")),
    };
    let code = p.code.unwrap_or(0);
    if code == 101 {
        return Err("101 Switching Protocols to a request that asked for no upgrade".into());
    }
    if (100..200).contains(&code) {
        return Ok(Some((Response::Informational, n)));
    }
    let mut cls = Vec::new();
    let mut tes = Vec::new();
    let mut close = p.version != Some(1);
    for h in p.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            cls.push(h.value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            tes.push(h.value);
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, b"close");
        }
    }
    let framing = if head_request || code == 204 || code == 304 {
        Framing::Empty
    } else if !tes.is_empty() {
        if !cls.is_empty() {
            return Err("Transfer-Encoding together with Content-Length in a response".into());
        }
        if tes.len() > 1 || !tes[0].trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Err("a response Transfer-Encoding other than one plain \"chunked\"".into());
        }
        Framing::Chunked
    } else if let Some(first) = cls.first() {
        if cls.iter().any(|v| v.trim_ascii() != first.trim_ascii()) {
            return Err("differing Content-Length headers in a response".into());
        }
        let n = std::str::from_utf8(first.trim_ascii())
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or("a response Content-Length that is not a single number")?;
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let mut bytes = Vec::with_capacity(n + 16);
    bytes.extend_from_slice(format!("HTTP/1.1 {code} ").as_bytes());
    bytes.extend_from_slice(p.reason.unwrap_or_default().as_bytes());
    bytes.extend_from_slice(b"\r\n");
    for h in p.headers.iter() {
        field(&mut bytes, h.name.as_bytes(), &unfold(h.value));
    }
    bytes.extend_from_slice(b"\r\n");
    let close = close || framing == Framing::Close;
    Ok(Some((
        Response::Final {
            bytes,
            framing,
            close,
        },
        n,
    )))
}

/// A field value with each obs-fold (a line break and the white space after it) replaced
/// by one space (RFC 9112 5.2), as the hyper path delivers it.
fn unfold(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if matches!(value[i], b'\r' | b'\n') {
            while i < value.len() && matches!(value[i], b'\r' | b'\n' | b' ' | b'\t') {
                i += 1;
            }
            out.push(b' ');
            continue;
        }
        out.push(value[i]);
        i += 1;
    }
    out
}

/// A response the gateway made itself (a refusal, a 502), written out whole.
pub(super) async fn gateway_response(resp: hyper::Response<crate::body::Body>) -> Vec<u8> {
    use http_body_util::BodyExt;
    let (parts, body) = resp.into_parts();
    // The gateway's own bodies are short texts, complete at once.
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        if name != hyper::header::CONTENT_LENGTH {
            field(&mut out, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    field(
        &mut out,
        b"content-length",
        body.len().to_string().as_bytes(),
    );
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(s: &[u8]) -> Option<RequestHead> {
        let (start, end) = request_end(s)?;
        assert_eq!(end, s.len());
        request(&s[start..end])
    }

    #[test]
    fn requests_hyper_must_handle_are_left_to_it() {
        assert!(take(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").is_some());
        let r = take(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nConnection: keep-alive, Close\r\n\r\n").unwrap();
        assert_eq!((r.body, r.close), (7, true));
        for s in [
            &b"GET / HTTP/1.0\r\nHost: a\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            b"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
            // What the framing gate refuses, hyper's path refuses (with its event).
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
        ] {
            assert!(take(s).is_none(), "{}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn the_upstream_gets_the_checked_form() {
        let r = take(b"GET http://A.test/x?y HTTP/1.1\r\nHost: A.test\r\nProxy-Authorization: z\r\nX-Y: 1\r\n\r\n").unwrap();
        let out = upstream_request(&r.req, "a.test");
        assert_eq!(out, b"GET /x?y HTTP/1.1\r\nx-y: 1\r\nhost: a.test\r\n\r\n");
    }

    fn framing(s: &[u8]) -> Result<Framing, String> {
        match response(s, false)? {
            Some((Response::Final { framing, .. }, n)) if n == s.len() => Ok(framing),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn response_framing_is_strict() {
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"),
            Ok(Framing::Length(5))
        );
        assert_eq!(
            framing(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Ok(Framing::Chunked)
        );
        assert_eq!(framing(b"HTTP/1.1 200 OK\r\n\r\n"), Ok(Framing::Close));
        assert_eq!(
            framing(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n"),
            Ok(Framing::Empty)
        );
        for s in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        ] {
            assert!(framing(s).is_err(), "{}", String::from_utf8_lossy(s));
        }
        assert!(matches!(
            response(b"HTTP/1.1 100 Continue\r\n\r\n", false),
            Ok(Some((Response::Informational, 25)))
        ));
        assert!(matches!(
            response(b"HTTP/1.1 200 OK\r\nContent-Le", false),
            Ok(None)
        ));
        let Ok(Some((Response::Final { bytes, close, .. }, _))) = response(
            b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        ) else {
            panic!("not parsed")
        };
        assert!(close);
        assert_eq!(
            bytes,
            b"HTTP/1.1 200 OK\r\nX: a b\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        );
    }
}
