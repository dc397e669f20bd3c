//! Process file descriptors: a handle on exactly one process, immune to pid reuse.
//!
//! The server tracks each sandbox's shim and pid 1 by pidfd: a signal sent through one
//! reaches that process or fails with `ESRCH`, never a newcomer that got the same pid, and
//! the fd turns readable once the process has exited (zombie or reaped, child of ours or
//! not), which is how [`PidFd::exited`] waits. nix has no pidfd calls, hence the raw
//! syscalls.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// One process, by pidfd.
#[derive(Debug)]
pub struct PidFd {
    fd: OwnedFd,
    pid: i32,
}

impl PidFd {
    /// `pidfd_open(pid)`. Only race-free while `pid` cannot have been reaped and reused:
    /// the caller's own unreaped child, or a process whose unreaped parent is known alive.
    pub fn open(pid: i32) -> io::Result<PidFd> {
        if pid <= 0 {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        // SAFETY: pidfd_open takes two integers and returns a new fd (or -1); no memory.
        let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let raw = i32::try_from(rc).map_err(|_| io::Error::other("pidfd out of range"))?;
        // SAFETY: the kernel just returned this fd (close-on-exec by default); we own it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(PidFd { fd, pid })
    }

    /// Adopt a pidfd received from elsewhere (the zygote), naming `pid`.
    pub fn from_owned(fd: OwnedFd, pid: i32) -> PidFd {
        PidFd { fd, pid }
    }

    /// The fd itself (to pass it on).
    pub fn into_owned(self) -> OwnedFd {
        self.fd
    }

    /// The process's pid (in the server's pid namespace).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Signal exactly this process. `ESRCH` once it has exited.
    pub fn signal(&self, signal: i32) -> io::Result<()> {
        // SAFETY: pidfd_send_signal with our own pidfd, a signal number and no siginfo
        // (null pointer is the documented "like kill(2)" form); touches no memory of ours.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.fd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// SIGKILL, ignoring "already gone".
    pub fn kill(&self) {
        let _ = self.signal(libc::SIGKILL);
    }

    /// True once the process has exited (without waiting).
    pub fn has_exited(&self) -> bool {
        let mut fds = [nix::poll::PollFd::new(
            self.fd.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        matches!(nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO), Ok(n) if n > 0)
    }

    /// Wait (without blocking the runtime) until the process has exited.
    pub async fn exited(&self) -> io::Result<()> {
        let dup = self.fd.try_clone()?;
        // SAFETY: the AsyncFd owns `dup` (an OwnedFd): it stays open and names the same
        // pidfd until the AsyncFd is dropped.
        let afd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(dup, tokio::io::Interest::READABLE)
        }
        .map_err(std::io::Error::from)?;
        loop {
            let mut guard = afd.readable().await?;
            if self.has_exited() {
                return Ok(());
            }
            guard.clear_ready();
        }
    }
}

impl AsFd for PidFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn signal_reaches_the_process_and_exit_is_seen() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let p = PidFd::open(child.id() as i32).unwrap();
        assert!(!p.has_exited());
        p.signal(libc::SIGKILL).unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), p.exited())
            .await
            .expect("exit seen")
            .unwrap();
        // A zombie counts as exited; once reaped, signals fail instead of reaching anyone.
        let _ = child.wait();
        let e = p.signal(libc::SIGKILL).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn nonsense_pids_are_refused() {
        assert!(PidFd::open(0).is_err());
        assert!(PidFd::open(-1).is_err());
    }
}
