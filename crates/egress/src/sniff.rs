//! Reading the host name a client is about to talk to from its first bytes: TLS SNI (parsed
//! by rustls, not by hand) or an HTTP request, without consuming them — the bytes are
//! replayed to the upstream (or to the HTTP parser) afterwards.
//!
//! Fail closed: once a client has started to send, the opening is read until it can be
//! judged. A ClientHello or request head that stalls, ends early, grows past [`MAX_PEEK`]
//! or does not parse is a refusal with a stable reason code, never "opaque, let it through".
//! Anything an HTTP server could take for a request (leading empty lines, any letter case
//! of a method, a tab as separator) is classified as HTTP, where the strict parser rejects
//! what it cannot check.

use cleanroom_policy::DenyReason;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// Most bytes read while classifying (a ClientHello or a request line is far smaller).
pub const MAX_PEEK: usize = 64 * 1024;
/// How long to wait for a client's first byte before treating the connection as one where
/// the server speaks first (SSH, SMTP, ...; see `tcp::server_first`).
pub const FIRST_BYTE_WAIT: Duration = Duration::from_millis(500);
/// How long a client may take to finish a ClientHello / request line once it started.
pub const HEAD_WAIT: Duration = Duration::from_secs(10);

/// Methods recognized case-insensitively as the start of an HTTP request (whatever their
/// case, the strict parser decides whether they are acceptable).
const METHODS: &[&str] = &[
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "DELETE",
    "CONNECT",
    "OPTIONS",
    "TRACE",
    "PATCH",
    "PRI",
    "PROPFIND",
    "PROPPATCH",
    "MKCOL",
    "COPY",
    "MOVE",
    "LOCK",
    "UNLOCK",
    "REPORT",
    "SEARCH",
    "PURGE",
    "LINK",
    "UNLINK",
    "MKCALENDAR",
    "ACL",
    "MERGE",
    "CHECKOUT",
    "M-SEARCH",
    "NOTIFY",
    "SUBSCRIBE",
    "UNSUBSCRIBE",
];

/// What the first bytes of a connection say.
#[derive(Debug, PartialEq, Eq)]
pub enum Opening {
    /// A complete TLS ClientHello, with its SNI when it carries one.
    Tls { sni: Option<String> },
    /// Something an HTTP/1 server would take for a request.
    Http,
    /// Neither TLS nor HTTP (binary, or a text line no HTTP server would accept).
    Opaque,
    /// The client sent nothing within the first-byte wait (it may wait for the server).
    Silent,
    /// The client closed without sending anything.
    Closed,
}

/// Why an opening was not accepted: a deny reason and a message for the event.
#[derive(Debug)]
pub enum Refused {
    Io(io::Error),
    Deny(DenyReason, String),
}

/// Read the opening of a client stream. With `first_wait`, a client that sends nothing in
/// that time is [`Opening::Silent`]. Returns what it is and every byte read.
pub async fn peek<S: AsyncRead + Unpin>(
    stream: &mut S,
    first_wait: Option<Duration>,
) -> Result<(Opening, Vec<u8>), Refused> {
    let mut chunk = [0u8; 4096];
    let first = match first_wait {
        Some(w) => match tokio::time::timeout(w, stream.read(&mut chunk)).await {
            Err(_) => return Ok((Opening::Silent, Vec::new())),
            Ok(r) => r,
        },
        None => stream.read(&mut chunk).await,
    };
    match first.map_err(Refused::Io)? {
        0 => Ok((Opening::Closed, Vec::new())),
        n => peek_from(stream, chunk[..n].to_vec()).await,
    }
}

/// Continue classifying an opening of which `buf` (non-empty) was already read.
pub async fn peek_from<S: AsyncRead + Unpin>(
    stream: &mut S,
    mut buf: Vec<u8>,
) -> Result<(Opening, Vec<u8>), Refused> {
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + HEAD_WAIT;
    loop {
        match classify(&buf) {
            Some(Ok(o)) => return Ok((o, buf)),
            Some(Err(msg)) => return Err(Refused::Deny(DenyReason::RequestMalformed, msg)),
            None => {}
        }
        if buf.len() >= MAX_PEEK {
            return Err(Refused::Deny(
                DenyReason::RequestMalformed,
                format!("no complete ClientHello or request line in the first {MAX_PEEK} bytes"),
            ));
        }
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) => {
                return Err(Refused::Deny(
                    DenyReason::RequestMalformed,
                    "the connection ended inside its ClientHello or request line".into(),
                ))
            }
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(Refused::Io(e)),
            Err(_) => {
                return Err(Refused::Deny(
                    DenyReason::DecisionTimeout,
                    format!(
                        "ClientHello or request line not complete after {}s",
                        HEAD_WAIT.as_secs()
                    ),
                ))
            }
        }
    }
}

/// `None` while more bytes are needed; `Some(Err)` when the opening cannot be accepted.
fn classify(buf: &[u8]) -> Option<Result<Opening, String>> {
    match *buf.first()? {
        0x16 => classify_tls(buf),
        b'\r' | b'\n' => classify_empty_lines(buf),
        b if is_tchar(b) => classify_text(buf),
        _ => Some(Ok(Opening::Opaque)),
    }
}

fn classify_tls(buf: &[u8]) -> Option<Result<Opening, String>> {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut rd: &[u8] = buf;
    while !rd.is_empty() {
        match acceptor.read_tls(&mut rd) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Some(Err(format!("unreadable TLS record: {e}"))),
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                return Some(Ok(Opening::Tls {
                    sni: accepted.client_hello().server_name().map(str::to_string),
                }))
            }
            Ok(None) => {}
            Err((e, _)) => return Some(Err(format!("malformed TLS ClientHello: {e}"))),
        }
    }
    None
}

/// RFC 9112 2.2: a server may ignore one empty line before a request. More, or a bare CR
/// or LF, is refused rather than left to the upstream's interpretation.
fn classify_empty_lines(buf: &[u8]) -> Option<Result<Opening, String>> {
    match buf {
        [b'\r'] => None,
        [b'\r', b'\n', rest @ ..] => match rest.first() {
            None => None,
            Some(b'\r' | b'\n') => Some(Err("more than one empty line before a request".into())),
            Some(_) => Some(Ok(Opening::Http)),
        },
        _ => Some(Err("a bare CR or LF before a request".into())),
    }
}

/// A line starting with a token: HTTP if the token is a method (any case) followed by
/// whitespace, or if the first line mentions an HTTP version.
fn classify_text(buf: &[u8]) -> Option<Result<Opening, String>> {
    let token_len = buf.iter().take_while(|b| is_tchar(**b)).count();
    if let Some(&sep) = buf.get(token_len) {
        let token = &buf[..token_len];
        if matches!(sep, b' ' | b'\t')
            && METHODS
                .iter()
                .any(|m| m.as_bytes().eq_ignore_ascii_case(token))
        {
            return Some(Ok(Opening::Http));
        }
    }
    let line_end = buf.iter().position(|&b| b == b'\n');
    let line = &buf[..line_end.unwrap_or(buf.len())];
    if line.windows(5).any(|w| w.eq_ignore_ascii_case(b"HTTP/")) {
        return Some(Ok(Opening::Http));
    }
    if line_end.is_some() {
        return Some(Ok(Opening::Opaque));
    }
    // Binary before the end of the first line: not a request line.
    if line
        .iter()
        .any(|&b| (b < 0x20 && b != b'\t' && b != b'\r') || b == 0x7f)
    {
        return Some(Ok(Opening::Opaque));
    }
    None
}

/// RFC 9110 5.6.2 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A stream whose first bytes were already read: they are served again before the rest.
pub struct Prefixed<S> {
    prefix: Vec<u8>,
    pos: usize,
    inner: S,
}

impl<S> Prefixed<S> {
    pub fn new(prefix: Vec<u8>, inner: S) -> Self {
        Prefixed {
            prefix,
            pos: 0,
            inner,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.pos < self.prefix.len() {
            let n = (self.prefix.len() - self.pos).min(buf.remaining());
            let start = self.pos;
            buf.put_slice(&self.prefix[start..start + n]);
            self.pos += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(b: &[u8]) -> Option<Result<Opening, String>> {
        classify(b)
    }

    #[test]
    fn http_in_every_spelling_is_http() {
        for b in [
            &b"GET / HTTP/1.1\r\n"[..],
            b"CONNECT x:443 HTTP/1.1\r\n",
            b"get / HTTP/1.1\r\n",
            b"GET\t/ HTTP/1.1\r\n",
            b"FOO / HTTP/1.1\r\n",
            b"\r\nGET / HTTP/1.1\r\n",
            b"PoSt ",
        ] {
            assert_eq!(c(b).unwrap().unwrap(), Opening::Http, "{b:?}");
        }
    }

    #[test]
    fn incomplete_openings_wait() {
        for b in [&b"GE"[..], b"GET", b"FOO /x", b"\r", b"\r\n", b"\x16\x03"] {
            assert!(c(b).is_none(), "{b:?}");
        }
    }

    #[test]
    fn ambiguous_openings_are_refused() {
        for b in [
            &b"\r\n\r\nGET / HTTP/1.1\r\n"[..],
            b"\nGET / HTTP/1.1\r\n",
            b"\r\n\nGET",
            b"\x16\x03\x01\x00\x05hello",
        ] {
            assert!(matches!(c(b), Some(Err(_))), "{b:?}");
        }
    }

    #[test]
    fn other_protocols_are_opaque() {
        for b in [
            &b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"[..],
            b"*1\r\n$4\r\nPING\r\n",
            b"\x00\x00\x00\x08\x04\xd2\x16\x2f",
            b"EHLO x\x00",
        ] {
            assert_eq!(c(b).unwrap().unwrap(), Opening::Opaque, "{b:?}");
        }
    }

    /// A real ClientHello for `sni`, as TLS records.
    fn client_hello(sni: &str) -> Vec<u8> {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(sni.to_string()).unwrap();
        let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    #[test]
    fn a_client_hello_split_across_records_or_bytes_is_read_whole() {
        let hello = client_hello("other.test");
        // Every prefix is "wait", the whole is the SNI.
        for n in 1..hello.len() {
            assert!(c(&hello[..n]).is_none(), "prefix {n}");
        }
        let sni = Some("other.test".to_string());
        assert_eq!(
            c(&hello).unwrap().unwrap(),
            Opening::Tls { sni: sni.clone() }
        );
        // The same handshake message re-framed into 7-byte records.
        let body = &hello[5..];
        let mut split = Vec::new();
        for part in body.chunks(7) {
            split.extend_from_slice(&[0x16, 0x03, 0x01, 0, part.len() as u8]);
            split.extend_from_slice(part);
        }
        for n in 1..split.len() {
            assert!(c(&split[..n]).is_none(), "split prefix {n}");
        }
        assert_eq!(c(&split).unwrap().unwrap(), Opening::Tls { sni });
    }

    #[tokio::test]
    async fn a_stalled_or_truncated_opening_is_refused() {
        let (mut a, mut b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut a, b"\x16\x03\x01\x02\x00\x01")
            .await
            .unwrap();
        drop(a);
        let r = peek(&mut b, None).await;
        assert!(
            matches!(r, Err(Refused::Deny(DenyReason::RequestMalformed, _))),
            "{r:?}"
        );
        let (_a, mut b) = tokio::io::duplex(64);
        let r = peek(&mut b, Some(Duration::from_millis(10))).await.unwrap();
        assert_eq!(r.0, Opening::Silent);
    }

    #[tokio::test]
    async fn prefixed_replays_then_continues() {
        let (mut a, b) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut a, b"world")
            .await
            .unwrap();
        drop(a);
        let mut p = Prefixed::new(b"hello ".to_vec(), b);
        let mut out = String::new();
        p.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "hello world");
    }
}
