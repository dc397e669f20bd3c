//! The sandbox's tun device as an async packet stream.
//!
//! The backend creates the tun interface inside the sandbox's network namespace and hands
//! the server its fd. Each `read` returns exactly one IP packet and each `write` sends one,
//! which is the contract `ipstack` expects of a device.

use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes through the sandbox's device: `tx` the sandbox sent (packets read from the tun),
/// `rx` it received (packets written to it). IP packets, headers included.
#[derive(Debug, Default)]
pub struct Traffic {
    pub tx: AtomicU64,
    pub rx: AtomicU64,
}

/// A non-blocking tun fd registered with the tokio reactor.
pub struct TunDevice {
    fd: AsyncFd<OwnedFd>,
    traffic: Arc<Traffic>,
}

impl TunDevice {
    /// Take ownership of a tun fd (made non-blocking here).
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = OFlag::from_bits_retain(fcntl(&fd, FcntlArg::F_GETFL)?);
        fcntl(&fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        // SAFETY: an OwnedFd is a valid open fd and returns the same fd for its whole life.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(io::Error::from)?;
        Ok(TunDevice {
            fd,
            traffic: Arc::default(),
        })
    }

    /// The device's byte counters (shared: they outlive moving the device into the stack).
    pub fn traffic(&self) -> Arc<Traffic> {
        self.traffic.clone()
    }
}

impl AsyncRead for TunDevice {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            let res = guard
                .try_io(|fd| nix::unistd::read(fd.get_ref(), unfilled).map_err(io::Error::from));
            match res {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    self.traffic.tx.fetch_add(n as u64, Ordering::Relaxed);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for TunDevice {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let res =
                guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from));
            match res {
                Ok(r) => {
                    if let Ok(n) = &r {
                        self.traffic.rx.fetch_add(*n as u64, Ordering::Relaxed);
                    }
                    return Poll::Ready(r);
                }
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
