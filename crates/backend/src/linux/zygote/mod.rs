//! The fork server ("zygote") that starts every sandbox's shim: the code of the zygote
//! process (single-threaded, no runtime; the server's handle on it is
//! [`crate::linux::host`]'s `zygote_client`).
//!
//! Exec'ing the 42 MB `cleanroom` binary once per sandbox cost ~1 MB of privately
//! relocated pages per sandbox (dynamic relocations of a PIE) and a few ms of start-up.
//! Instead the server starts ONE helper, `cleanroom-init __sandbox-init` (the same binary,
//! environment cleared, stdin/stdout `/dev/null`), connected by a seqpacket socket on
//! fd 3. For each sandbox the server sends [`ZygoteRequest::Fork`] with the sandbox's
//! control socket attached; the zygote forks, and the child becomes the shim running
//! exactly the code an exec'd shim ran ([`crate::linux::sandbox::shim::shim_main`]). Every shim and pid 1
//! shares the zygote's already-relocated pages copy-on-write.
//!
//! ```text
//! server ─exec once─> zygote ─fork─> shim ─fork─> pid 1 ─fork/exec─> user processes
//!   (pidfds of shim and pid 1, control socket per sandbox)
//! ```
//!
//! Death chain (all `PR_SET_PDEATHSIG` = SIGKILL): server thread → zygote → shim → pid 1
//! → its pid namespace. The zygote's death thus ends every sandbox; the server notices
//! (EOF / EPIPE on the zygote socket), restarts it on the next create and never waits on a
//! dead one. The zygote answers each fork with the shim's pidfd, opened while the shim is
//! its unreaped child, so the server's handle can never name a recycled pid.
//!
//! What a forked shim does NOT inherit from the zygote: signal dispositions (all reset to
//! default, SIGPIPE ignored as in any Rust program), the signal mask (emptied), fds (only
//! the control socket, moved to fd 3), environment (the zygote's is empty). What it does
//! share: the zygote's address-space layout (see docs/zygote.md).

use crate::linux::config::CONTROL_FD;
use crate::linux::protocol::{self, ZygoteReply, ZygoteRequest};
use crate::linux::sys;
use crate::linux::sys::pidfd::PidFd;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

/// Entry point of `cleanroom __sandbox-init`: the server's sandbox launcher, which forks
/// every shim ([`crate::linux::sandbox::shim::shim_main`]). Never returns.
pub fn main() -> ! {
    // Which of its mappings an idle shim or pid 1 may give back (see trim.rs), once.
    crate::linux::sandbox::trim::prepare();
    serve()
}

/// Entry point of the zygote process; never returns. Exits when the server closes the
/// socket (or dies: the parent-death signal is quicker).
pub fn serve() -> ! {
    let code = match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("cleanroom zygote: {e}");
            1
        }
    };
    std::process::exit(code)
}

fn run() -> Result<(), String> {
    let me = nix::unistd::getpid();
    // Exited shims arrive as SIGCHLD on a signalfd and are reaped in the loop.
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    mask.thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;
    // SAFETY: fd 3 was placed by the server before exec and stays open for our lifetime.
    let control = unsafe { std::os::fd::BorrowedFd::borrow_raw(CONTROL_FD) };
    // Shims forked and not yet reaped; once the server closes the socket (it retired us,
    // see [`ROTATE_EVERY`]) we stay only as long as they do: our exit would kill them.
    let (mut live, mut retired) = (0usize, false);
    loop {
        if retired && live == 0 {
            return Ok(());
        }
        let mut fds = vec![nix::poll::PollFd::new(
            sfd.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        if !retired {
            fds.push(nix::poll::PollFd::new(
                control,
                nix::poll::PollFlags::POLLIN,
            ));
        }
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(format!("poll: {e}")),
        }
        let ready = |i: usize| {
            fds.get(i)
                .and_then(|f| f.revents())
                .is_some_and(|r| !r.is_empty())
        };
        let (child_ready, control_ready) = (ready(0), ready(1));
        if child_ready {
            while let Ok(Some(_)) = sfd.read_signal() {}
            live = live.saturating_sub(reap());
        }
        if control_ready {
            match protocol::recv::<ZygoteRequest>(CONTROL_FD) {
                Ok(Some((ZygoteRequest::Fork { seq }, fds))) => {
                    let (reply, pidfd) = fork_shim(seq, fds, me);
                    live += usize::from(pidfd.is_some());
                    let attached: Vec<RawFd> = pidfd.iter().map(|p| p.as_raw_fd()).collect();
                    protocol::send(CONTROL_FD, &reply, &attached)
                        .map_err(|e| format!("zygote socket: {e}"))?;
                }
                // Retired (or the server is gone, and its death signal is on its way).
                Ok(None) => retired = true,
                Err(e) => return Err(format!("zygote socket: {e}")),
            }
        }
    }
}

/// Reap every exited shim (the server watches them through pidfds, not through us);
/// how many were reaped.
fn reap() -> usize {
    let mut n = 0;
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::ECHILD) => return n,
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => n += 1,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return n,
        }
    }
}

/// Fork one shim for the control socket in `fds`; the reply and the shim's pidfd.
fn fork_shim(seq: u64, fds: Vec<OwnedFd>, me: Pid) -> (ZygoteReply, Option<OwnedFd>) {
    let failed = |error: String| (ZygoteReply::ForkFailed { seq, error }, None);
    let mut fds = fds.into_iter();
    let (Some(control), None) = (fds.next(), fds.next()) else {
        return failed("a fork request carries exactly one fd".into());
    };
    // SAFETY: the zygote is single-threaded (no runtime, no helper threads), so the child
    // may run arbitrary code; it never returns into this loop (become_shim is `-> !`).
    match unsafe { fork() } {
        Err(e) => failed(format!("fork: {e}")),
        Ok(ForkResult::Child) => become_shim(control, me),
        Ok(ForkResult::Parent { child }) => {
            drop(control);
            // The child is ours and unreaped (we reap only in the loop): no pid reuse.
            match PidFd::open(child.as_raw()) {
                Ok(p) => (
                    ZygoteReply::Forked {
                        seq,
                        pid: child.as_raw(),
                    },
                    Some(p.into_owned()),
                ),
                Err(e) => {
                    // Our own unreaped child: the pid is still its.
                    let _ = sys::kill(child.as_raw(), Signal::SIGKILL);
                    failed(format!("pidfd_open: {e}"))
                }
            }
        }
    }
}

/// In the forked child: shed everything of the zygote, then run the shim.
fn become_shim(control: OwnedFd, zygote: Pid) -> ! {
    // Die with the zygote; if it is already gone, don't start a sandbox nobody owns.
    if sys::kill_with_parent().is_err() || nix::unistd::getppid() != zygote {
        std::process::exit(125);
    }
    if sys::reset_signals().is_err() {
        std::process::exit(125);
    }
    // The control socket replaces the zygote's socket at fd 3 (dup2 clears CLOEXEC);
    // everything above it (the zygote's signalfd, the original fd) closes.
    if sys::dup2_onto(control.as_fd(), CONTROL_FD).is_err() {
        std::process::exit(125);
    }
    drop(control);
    if sys::close_range(CONTROL_FD as u32 + 1, u32::MAX).is_err() {
        std::process::exit(125);
    }
    crate::linux::sandbox::shim::shim_main()
}
