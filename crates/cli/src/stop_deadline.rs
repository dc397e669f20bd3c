//! `cleanroom serve` always stops: once SIGTERM or SIGINT arrives, the process exits within
//! [`STOP_DEADLINE`] whatever state the async runtime is in.
//!
//! The graceful stop (stop accepting, terminate sandboxes, close the store) runs on the
//! runtime, so a runtime wedged by a bug — as one once was by a dependency's blocking
//! `Drop` — would ignore SIGTERM. This guard does not depend on the runtime: a signal
//! handler (async-signal-safe: one `write(2)`) wakes a plain OS thread, which waits out the
//! deadline and then ends the process. Sandboxes left behind are reconciled by the next
//! server's recovery.

use std::os::fd::{AsRawFd, IntoRawFd};
use std::time::Duration;

/// Longest a graceful stop may take after the first SIGTERM/SIGINT.
pub const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Exit code when the deadline, not the graceful stop, ended the server.
const EXIT_STOP_DEADLINE: i32 = 124;

/// Install the guard. Call once, before the server starts.
pub fn arm() -> std::io::Result<()> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds into a valid array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just created and are owned here alone.
    let (rd, wr) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    // The write end lives as long as the process: the handlers may fire at any time.
    let wr = wr.into_raw_fd();
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the action only calls write(2) on an fd that stays open for the
        // process's life, which is async-signal-safe. tokio registers its own handlers
        // through the same registry; both run.
        unsafe {
            signal_hook_registry::register(sig, move || {
                let _ = libc::write(wr, b"x".as_ptr().cast(), 1);
            })
        }?;
    }
    std::thread::Builder::new()
        .name("stop-deadline".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                // SAFETY: read into a valid one-byte buffer from an fd this thread owns.
                let n = unsafe { libc::read(rd.as_raw_fd(), b.as_mut_ptr().cast(), 1) };
                if n == 1 {
                    break;
                }
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            }
            std::thread::sleep(STOP_DEADLINE);
            eprintln!(
                "cleanroom: the graceful stop did not finish within {}s; exiting anyway",
                STOP_DEADLINE.as_secs()
            );
            // SAFETY: _exit ends the process without running destructors or atexit
            // handlers, which a wedged runtime could block.
            unsafe { libc::_exit(EXIT_STOP_DEADLINE) };
        })?;
    Ok(())
}
