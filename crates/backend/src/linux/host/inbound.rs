//! Sockets inside a sandbox's network namespace, for inbound connections (`sandbox
//! expose`, `port-forward`): the server must reach a port of the sandbox without giving it
//! any path it did not have. A socket belongs to the network namespace it was created in,
//! whatever thread later uses it, so a short-lived thread enters the sandbox's namespace
//! (by a pidfd of its pid 1, checked against pid 1's start time so a reused pid is never
//! entered), creates the socket and exits; the server connects it to the sandbox's own
//! loopback. Nothing else runs in that thread, and the server's other threads never change
//! namespace.

use crate::linux::host::procinfo;
use crate::linux::sys::pidfd::PidFd;
use crate::BackendError;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// A non-blocking, close-on-exec IPv4 TCP socket in the network namespace of the sandbox
/// whose pid 1 is `pid` (started at `start`).
pub(super) async fn socket_in(pid: i32, start: u64) -> Result<OwnedFd, BackendError> {
    let gone = || BackendError::SandboxNotFound(format!("pid 1 ({pid}) is gone"));
    let pidfd = PidFd::open(pid).map_err(|_| gone())?;
    // The pidfd names whatever process has `pid` now: make sure it is still pid 1.
    if !procinfo::is_same_process(pid, start) {
        return Err(gone());
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("inbound-netns".into())
        .spawn(move || {
            let _ = tx.send(make_socket(&pidfd));
        })
        .map_err(|e| BackendError::io("spawn the inbound socket thread", e))?;
    rx.await
        .map_err(|_| BackendError::Unavailable("inbound socket thread ended".into()))?
        .map_err(|e| BackendError::io("socket in the sandbox's network namespace", e))
}

/// On a thread of its own (which ends right after): enter the namespace, make the socket.
fn make_socket(pidfd: &PidFd) -> std::io::Result<OwnedFd> {
    nix::sched::setns(pidfd.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(std::io::Error::from)?;
    // SAFETY: socket(2) takes three integers and returns a new fd or -1.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reused_or_missing_pid_is_refused() {
        // Our own pid with a wrong start time: never entered.
        let me = std::process::id() as i32;
        let start = procinfo::start_time(me).unwrap();
        assert!(matches!(
            socket_in(me, start + 1).await,
            Err(BackendError::SandboxNotFound(_))
        ));
        assert!(matches!(
            socket_in(-1, 0).await,
            Err(BackendError::SandboxNotFound(_))
        ));
    }
}
