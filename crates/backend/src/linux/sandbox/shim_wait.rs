//! The shim's life after setup: wait for pid 1, and end it when the server asks.
//!
//! The server ends a sandbox by sending the shim `SIGTERM` (through its pidfd of the
//! shim). The shim then kills pid 1 through a pidfd of its own: pid 1 is the shim's
//! unreaped child, so that handle can never name a recycled pid, and the server needs no
//! handle on pid 1 at all (one descriptor fewer per idle sandbox: at thousands of idle
//! sandboxes the server's descriptor limit is what runs out first, see docs/scale.md).
//! The shim still reaps pid 1 only after the kernel has ended every process of the pid
//! namespace, so its own exit stays the precise "everything of this sandbox is gone"
//! signal the server waits for.
//!
//! `SIGTERM` is blocked before the server learns pid 1's pid ([`take_term`] runs before
//! `Started` is sent), so no termination request can arrive while the default action
//! would still apply. Nobody else can send it: the sandbox's processes live in a pid
//! namespace in which the shim does not exist.

use crate::linux::sys::pidfd::PidFd;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::Pid;
use std::os::fd::AsFd;

/// `SIGTERM` blocked and readable from a signalfd.
pub struct Term(SignalFd);

/// Block `SIGTERM` in this (single-threaded) shim and take it through a signalfd. Must
/// run after pid 1 was forked (pid 1 must not inherit the blocked signal: its children
/// would) and before pid 1's pid is reported.
pub fn take_term() -> Result<Term, String> {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    mask.thread_block()
        .map_err(|e| format!("block SIGTERM: {e}"))?;
    SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map(Term)
        .map_err(|e| format!("signalfd: {e}"))
}

/// Wait for pid 1 (`child`) to exit and return the shim's exit code for it; on `SIGTERM`,
/// kill pid 1 (and so its whole pid namespace) and keep waiting.
pub fn wait_pid1(child: Pid, term: &Term) -> Result<i32, String> {
    // The shim's own unreaped child: opening its pidfd is race-free.
    let pid1 = PidFd::open(child.as_raw()).map_err(|e| format!("pidfd of pid 1: {e}"))?;
    loop {
        let mut fds = [
            nix::poll::PollFd::new(pid1.as_fd(), nix::poll::PollFlags::POLLIN),
            nix::poll::PollFd::new(term.0.as_fd(), nix::poll::PollFlags::POLLIN),
        ];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        let readable = |f: &nix::poll::PollFd| f.revents().is_some_and(|r| !r.is_empty());
        if readable(&fds[1]) {
            // Drain the request(s), then end pid 1: exactly our child, never a newcomer.
            while let Ok(Some(_)) = term.0.read_signal() {}
            pid1.kill();
        }
        if readable(&fds[0]) {
            loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, c)) => return Ok(c),
                    Ok(WaitStatus::Signaled(_, s, _)) => return Ok(128 + s as i32),
                    Ok(_) => continue,
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(format!("waitpid: {e}")),
                }
            }
        }
    }
}
