//! The server's end of an interactive execution's terminal: the PTY master, read by the
//! supervisor (output into the durable log) and written by attached console drivers
//! (input, window size). Non-blocking on the server's runtime: a guest that never reads
//! its terminal only stalls the attach that is typing, never a runtime thread.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A PTY master (already `O_NONBLOCK`, see the backend's `open_pty`).
#[derive(Debug)]
pub struct PtyMaster {
    fd: AsyncFd<OwnedFd>,
}

impl PtyMaster {
    pub fn new(fd: OwnedFd) -> io::Result<PtyMaster> {
        // SAFETY: an OwnedFd is a valid open fd and returns the same fd for its whole life.
        let fd =
            unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE | Interest::WRITABLE) }
                .map_err(io::Error::from)?;
        Ok(PtyMaster { fd })
    }

    /// Read terminal output. `Ok(0)` once no process holds the terminal any more (the
    /// kernel answers `EIO` on a master whose slave is closed everywhere).
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut guard = self.fd.readable().await?;
            match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
                Ok(Ok(n)) => return Ok(n),
                Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }

    /// Type `data` into the terminal (waits while the guest's input queue is full).
    pub async fn write_all(&self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let mut guard = self.fd.writable().await?;
            match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from))
            {
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
        Ok(())
    }

    /// Set the window size (the kernel sends SIGWINCH to the foreground job).
    pub fn resize(&self, cols: u16, rows: u16) -> io::Result<()> {
        let ws = libc::winsize {
            ws_row: rows.max(1),
            ws_col: cols.max(1),
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one `winsize` from the valid pointer; the fd is ours.
        let r = unsafe { libc::ioctl(self.fd.get_ref().as_raw_fd(), libc::TIOCSWINSZ, &ws) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
