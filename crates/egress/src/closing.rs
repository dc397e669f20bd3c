//! Closing a sandbox connection that hyper gave up on.

use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client side of a served connection. hyper drops its IO without shutting it down
/// when a connection ends in an error (a refused head, a body cut off for a secret); the
/// sandbox would wait for a FIN that never comes. Dropping this sends it, in the
/// background and bounded (see [`crate::tcp::close_soon`]).
pub(crate) struct Closing<S: AsyncWrite + Unpin + Send + 'static>(Option<S>);

impl<S: AsyncWrite + Unpin + Send + 'static> Closing<S> {
    pub(crate) fn new(io: S) -> Self {
        Closing(Some(io))
    }
}

impl<S: AsyncWrite + Unpin + Send + 'static> Drop for Closing<S> {
    fn drop(&mut self) {
        if let (Some(mut io), Ok(rt)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(async move { crate::tcp::close_soon(&mut io).await });
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
        match self.0.as_mut() {
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
        match self.0.as_mut() {
            Some(io) => Pin::new(io).poll_write(cx, data),
            None => Poll::Ready(Err(gone())),
        }
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(io) => Pin::new(io).poll_flush(cx),
            None => Poll::Ready(Err(gone())),
        }
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.0.as_mut() {
            Some(io) => Pin::new(io).poll_shutdown(cx),
            None => Poll::Ready(Err(gone())),
        }
    }
}
