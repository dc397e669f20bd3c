//! Terminal executions under gVisor: the server opens a host pseudo-terminal of the asked
//! size and gives its replica to `runsc exec` as stdin, stdout and stderr with the process
//! spec's `terminal` set; runsc hands that terminal to the sentry, which serves it to the
//! process as its controlling terminal. The master end is what the server reads, writes
//! and resizes, exactly like the linux runtime's pty. `runsc exec` runs as the leader of a
//! session of its own with the replica as controlling terminal, so a resize's SIGWINCH
//! reaches it, and runsc forwards the signals it gets to the process.
//!
//! (`runsc exec --console-socket` hands over a terminal only with `--detach`, which loses
//! the exit status this backend reads from `runsc exec`.)

use crate::{BackendError, TtySize};
use std::os::fd::OwnedFd;

/// A new pseudo-terminal pair (master, replica) of `size`, close-on-exec; the master
/// non-blocking (the server reads it on its runtime).
pub(super) fn open_pty(size: TtySize) -> Result<(OwnedFd, OwnedFd), BackendError> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
    let err = |e: nix::errno::Errno| BackendError::io("openpty", e.into());
    let ws = nix::pty::Winsize {
        ws_row: size.rows.max(1),
        ws_col: size.cols.max(1),
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair = nix::pty::openpty(Some(&ws), None).map_err(err)?;
    for fd in [&pair.master, &pair.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(err)?;
    }
    fcntl(&pair.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(err)?;
    Ok((pair.master, pair.slave))
}

/// In `runsc exec`'s child before exec: a session of its own, with its stdin (the
/// replica) as controlling terminal.
pub(super) fn take_terminal() -> std::io::Result<()> {
    nix::unistd::setsid()?;
    // SAFETY: TIOCSCTTY on fd 0 with an integer argument; touches no memory of ours.
    if unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
