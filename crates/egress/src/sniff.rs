//! Reading the host name a client is about to talk to from its first bytes: TLS SNI (parsed
//! by rustls, not by hand) or an HTTP request line, without consuming them — the bytes are
//! replayed to the upstream afterwards.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// Most bytes read while classifying (a ClientHello is far smaller).
const MAX_PEEK: usize = 16 * 1024;
/// How long to wait for a client's first byte before treating the protocol as opaque (a
/// server-speaks-first protocol such as SSH or SMTP sends nothing until the server does).
const FIRST_BYTE_WAIT: Duration = Duration::from_millis(500);
/// How long a client may take to finish a ClientHello / request head once it started.
const HEAD_WAIT: Duration = Duration::from_secs(10);

/// What the first bytes of a connection say.
#[derive(Debug, PartialEq, Eq)]
pub enum Opening {
    /// A TLS ClientHello, with its SNI when it carries one.
    Tls { sni: Option<String> },
    /// Looks like an HTTP/1 request.
    Http,
    /// Anything else, or nothing yet.
    Opaque,
}

/// Read the opening of a client stream. Returns what it is and every byte read.
pub async fn peek<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<(Opening, Vec<u8>)> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    match tokio::time::timeout(FIRST_BYTE_WAIT, stream.read(&mut chunk)).await {
        Err(_) => return Ok((Opening::Opaque, buf)),
        Ok(Err(e)) => return Err(e),
        Ok(Ok(0)) => return Ok((Opening::Opaque, buf)),
        Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
    }
    let deadline = tokio::time::Instant::now() + HEAD_WAIT;
    loop {
        let verdict = classify(&buf);
        if verdict.is_some() || buf.len() >= MAX_PEEK {
            return Ok((verdict.unwrap_or(Opening::Opaque), buf));
        }
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(e),
            // EOF or too slow: judge what we have.
            _ => return Ok((classify(&buf).unwrap_or(Opening::Opaque), buf)),
        }
    }
}

/// `Some` once the bytes suffice for a verdict.
fn classify(buf: &[u8]) -> Option<Opening> {
    match buf.first() {
        None => None,
        Some(0x16) => {
            let mut acceptor = rustls::server::Acceptor::default();
            let mut rd: &[u8] = buf;
            if acceptor.read_tls(&mut rd).is_err() {
                return Some(Opening::Opaque);
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => Some(Opening::Tls {
                    sni: accepted.client_hello().server_name().map(str::to_string),
                }),
                Ok(None) => None,
                Err(_) => Some(Opening::Opaque),
            }
        }
        Some(_) => {
            let method_len = buf.iter().take_while(|b| b.is_ascii_uppercase()).count();
            if method_len == buf.len() && method_len < 16 {
                None
            } else if (3..16).contains(&method_len) && buf[method_len] == b' ' {
                Some(Opening::Http)
            } else {
                Some(Opening::Opaque)
            }
        }
    }
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

    #[test]
    fn http_and_garbage() {
        assert_eq!(classify(b"GET / HTTP/1.1\r\n"), Some(Opening::Http));
        assert_eq!(classify(b"CONNECT x:443 HTTP/1.1\r\n"), Some(Opening::Http));
        assert_eq!(classify(b"GE"), None);
        assert_eq!(classify(b"SSH-2.0-x\r\n"), Some(Opening::Opaque));
        assert_eq!(
            classify(b"\x16\x03\x01\x00\x05hello"),
            Some(Opening::Opaque)
        );
        assert_eq!(classify(b"\x16\x03"), None);
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
