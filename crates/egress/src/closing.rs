//! Closing a sandbox connection: one that hyper gave up on, or one the gateway refused.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};

/// The client side of a served connection. hyper drops its IO without shutting it down
/// when a connection ends in an error (a refused head, a body cut off for a secret); the
/// sandbox would wait for a FIN that never comes. Dropping this sends it, in the
/// background and bounded (see [`close_soon`]). When the framing gate refused
/// a head (hyper never saw it), the client is first told why, with a 400.
pub(crate) struct Closing<S: AsyncWrite + Unpin + Send + 'static> {
    io: Option<S>,
    refused: crate::framing::Verdict,
}

impl<S: AsyncWrite + Unpin + Send + 'static> Closing<S> {
    pub(crate) fn new(io: S, refused: crate::framing::Verdict) -> Self {
        Closing {
            io: Some(io),
            refused,
        }
    }
}

impl<S: AsyncWrite + Unpin + Send + 'static> Drop for Closing<S> {
    fn drop(&mut self) {
        let refused = self.refused.lock().ok().and_then(|g| g.clone());
        if let (Some(mut io), Ok(rt)) = (self.io.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(async move {
                if let Some(msg) = refused {
                    let code = cleanroom_policy::DenyReason::RequestMalformed.as_str();
                    let body = format!("cleanroom: egress denied [{code}]: {msg}\n");
                    let resp = format!(
                        "HTTP/1.1 400 Bad Request\r\nconnection: close\r\nx-cleanroom-deny: {code}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tokio::time::timeout(
                        std::time::Duration::from_secs(2),
                        tokio::io::AsyncWriteExt::write_all(&mut io, resp.as_bytes()),
                    )
                    .await;
                }
                close_soon(&mut io).await
            });
        }
    }
}

fn gone() -> std::io::Error {
    std::io::Error::from(std::io::ErrorKind::NotConnected)
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncRead for Closing<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.io.as_mut() {
            Some(io) => Pin::new(io).poll_read(cx, buf),
            None => Poll::Ready(Err(gone())),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> AsyncWrite for Closing<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.io.as_mut() {
            Some(io) => Pin::new(io).poll_write(cx, data),
            None => Poll::Ready(Err(gone())),
        }
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.io.as_mut() {
            Some(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            None => Poll::Ready(Err(gone())),
        }
    }
    fn is_write_vectored(&self) -> bool {
        self.io.as_ref().is_some_and(|io| io.is_write_vectored())
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.io.as_mut() {
            Some(io) => Pin::new(io).poll_flush(cx),
            None => Poll::Ready(Err(gone())),
        }
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // A refused head gets its 400 first (on drop): hyper's own shutdown must wait.
        if self.refused.lock().map(|g| g.is_some()).unwrap_or(false) {
            return Poll::Ready(Ok(()));
        }
        match self.io.as_mut() {
            Some(io) => Pin::new(io).poll_shutdown(cx),
            None => Poll::Ready(Err(gone())),
        }
    }
}

/// Send FIN to the sandbox's side. The userspace stack only sends it once the handshake is
/// complete, which a connection refused right after its SYN may not be yet: retry for a
/// moment instead of waiting forever on a FIN that was never sent.
pub(crate) async fn close_soon<S: AsyncWrite + Unpin>(client: &mut S) {
    for _ in 0..40 {
        if tokio::time::timeout(Duration::from_millis(50), client.shutdown())
            .await
            .is_ok()
        {
            return;
        }
    }
}
