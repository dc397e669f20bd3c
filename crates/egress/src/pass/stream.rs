//! A kernel-plane connection's socket: the sandbox's TCP connection as the host kernel
//! terminated it, counting the bytes it moves into the gateway's traffic. Unlike a stream
//! of the userspace stack it has a file descriptor, so body bytes can be moved to and from
//! it with `splice(2)` ([`super::splice`]).

use crate::device::Traffic;
use std::any::Any;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The sandbox's side of one kernel-plane connection.
pub struct KernelStream {
    io: TcpStream,
    traffic: Arc<Traffic>,
}

impl KernelStream {
    pub(crate) fn new(io: TcpStream, traffic: Arc<Traffic>) -> Self {
        KernelStream { io, traffic }
    }

    /// The socket, for readiness and `splice(2)`; count what moves with
    /// [`KernelStream::sent`] and [`KernelStream::received`].
    pub(crate) fn socket(&self) -> &TcpStream {
        &self.io
    }

    /// `n` bytes went to the sandbox other than through `AsyncWrite`.
    pub(crate) fn sent(&self, n: u64) {
        self.traffic.rx.fetch_add(n, Relaxed);
    }

    /// `n` bytes came from the sandbox other than through `AsyncRead`.
    pub(crate) fn received(&self, n: u64) {
        self.traffic.tx.fetch_add(n, Relaxed);
    }
}

/// The connection as a [`KernelStream`] when it is one (`Err` gives it back unchanged).
///
/// The per-connection code is generic over the client stream so both planes share every
/// check; a type test at the one place that can use the socket itself (plain HTTP, after
/// the opening was judged) keeps it that way instead of threading a capability through
/// every generic bound.
pub(crate) fn kernel_stream<S: Any>(s: S) -> Result<KernelStream, S> {
    let mut slot = Some(s);
    let taken = (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<KernelStream>>()
        .and_then(Option::take);
    match (taken, slot) {
        (Some(k), _) => Ok(k),
        (None, Some(s)) => Err(s),
        // `slot` is emptied only when the type test matched.
        (None, None) => unreachable!("the slot was taken without a match"),
    }
}

impl AsyncRead for KernelStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.traffic.tx.fetch_add(n as u64, Relaxed);
        r
    }
}

impl AsyncWrite for KernelStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &r {
            self.traffic.rx.fetch_add(*n as u64, Relaxed);
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &r {
            self.traffic.rx.fetch_add(*n as u64, Relaxed);
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
