//! The sandbox's tun device as an async packet stream.
//!
//! The backend creates the tun interface inside the sandbox's network namespace and hands
//! the server its fd. Each `read` returns exactly one IP packet and each `write` sends one,
//! which is the contract `ipstack` expects of a device.

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
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

/// The tun fd, closed off the async runtime. The last close of a tun fd unregisters the
/// device (rtnl lock, RCU grace periods: measured 10–50 ms here), and done on a runtime
/// worker it stalled every task of that worker — new API connections included — once per
/// sandbox teardown.
struct DeviceFd(ManuallyDrop<OwnedFd>);

impl AsRawFd for DeviceFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl AsFd for DeviceFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl Drop for DeviceFd {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and nothing uses the fd after it: it is taken out here
        // and only closed.
        let fd = unsafe { ManuallyDrop::take(&mut self.0) };
        match tokio::runtime::Handle::try_current() {
            // The blocking pool is bounded; if the runtime is shutting down the closure
            // is dropped, which closes the fd right there.
            Ok(rt) => drop(rt.spawn_blocking(move || drop(fd))),
            Err(_) => drop(fd),
        }
    }
}

/// A non-blocking tun fd registered with the tokio reactor.
pub struct TunDevice {
    fd: AsyncFd<DeviceFd>,
    traffic: Arc<Traffic>,
}

impl TunDevice {
    /// Take ownership of a tun fd (made non-blocking here).
    pub fn new(fd: OwnedFd) -> io::Result<Self> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let flags = OFlag::from_bits_retain(fcntl(&fd, FcntlArg::F_GETFL)?);
        fcntl(&fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        // SAFETY: an OwnedFd is a valid open fd and returns the same fd for its whole life.
        let fd = unsafe { AsyncFd::register(DeviceFd(ManuallyDrop::new(fd))) }
            .map_err(io::Error::from)?;
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

    /// One packet from several pieces (its headers, its payload where it lies): `writev(2)`
    /// on a tun fd sends them as one packet.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            let res = guard
                .try_io(|fd| nix::sys::uio::writev(fd.get_ref(), bufs).map_err(io::Error::from));
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

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod close_tests {
    use super::*;
    use std::io::Read;

    /// Dropped inside a runtime or outside one, the device's fd is closed (the reader sees
    /// end of file) — inside, by the blocking pool rather than the dropping worker.
    #[test]
    fn the_device_fd_is_closed_on_drop_inside_and_outside_a_runtime() {
        for in_runtime in [true, false] {
            let (r, w) = std::io::pipe().unwrap();
            let dev = DeviceFd(ManuallyDrop::new(OwnedFd::from(w)));
            if in_runtime {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(async move { drop(dev) });
                drop(rt); // waits for the blocking pool's close
            } else {
                drop(dev);
            }
            let mut r = r;
            let mut buf = [0u8; 1];
            assert_eq!(r.read(&mut buf).unwrap(), 0, "in_runtime={in_runtime}");
        }
    }
}
