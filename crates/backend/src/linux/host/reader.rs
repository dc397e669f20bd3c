//! The server's side of a sandbox's control socket: one tokio task per sandbox (no OS
//! thread: thousands of idle sandboxes cost thousands of parked tasks, not threads) routes
//! pid 1's replies (exits, opened files, lifecycle messages) to their waiters.

use super::backend::*;
use super::cgroup;
use crate::files::FileAnswer;
use crate::linux::protocol::{self, Reply};
use crate::ExitStatus;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;

/// Read one sandbox's control socket until pid 1 closes it. Readiness comes from the
/// runtime's epoll; each read is `MSG_DONTWAIT` (see [`protocol::try_recv`]).
pub(super) async fn read_replies(
    sandbox_id: String,
    fd: Arc<OwnedFd>,
    life: tokio::sync::mpsc::UnboundedSender<(Reply, Vec<OwnedFd>)>,
    (exits, opens): (Waiters<ExitStatus>, Waiters<Opened>),
    cgroups: Vec<PathBuf>,
) {
    // SAFETY: the AsyncFd owns one reference to the socket (the sandbox holds the other,
    // for sends); the fd stays open and names the same socket at least until the AsyncFd
    // is dropped, and as_raw_fd of the Arc always returns it.
    let registered = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) };
    let afd = match registered {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(sandbox_id, error = %e, "control socket cannot be polled");
            return finish(&exits, &opens);
        }
    };
    let counter = cgroup::oom_counter(&cgroups);
    let mut ooms = cgroup::oom_kills(counter.as_deref());
    loop {
        let next = match afd.readable().await {
            Ok(mut guard) => match guard.try_io(|f| protocol::try_recv::<Reply>(f.as_raw_fd())) {
                Ok(r) => r,
                Err(_would_block) => continue,
            },
            Err(e) => Err(e),
        };
        match next {
            Ok(Some((Reply::Exited { id, code, signal }, _))) => {
                // A SIGKILL while the OOM counter moved: the memory limit killed it.
                // The counter can lag the victim's exit slightly: re-read briefly, and only
                // for SIGKILL exits (the only way the OOM killer ends a process).
                let killed = signal == Some(libc::SIGKILL);
                let mut oom_killed = false;
                if killed {
                    let mut now = cgroup::oom_kills(counter.as_deref());
                    if counter.is_some() {
                        for _ in 0..20 {
                            if now > ooms {
                                break;
                            }
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                            now = cgroup::oom_kills(counter.as_deref());
                        }
                    }
                    oom_killed = now > ooms;
                    ooms = now;
                }
                let tx = exits.lock().ok().and_then(|mut m| m.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(ExitStatus {
                        code,
                        signal,
                        oom_killed,
                    });
                }
                if !killed {
                    // Any other exit still moves the baseline (an OOM kill of a process
                    // that was not the command must not mark a later SIGKILL), but after
                    // the result is on its way: this task yields first, so the waiter
                    // woken above runs before the read.
                    tokio::task::yield_now().await;
                    ooms = cgroup::oom_kills(counter.as_deref());
                }
            }
            Ok(Some((Reply::Opened { id, result }, fds))) => {
                let tx = opens.lock().ok().and_then(|mut m| m.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send((result.map(|size| FileAnswer::Opened { size }), fds));
                }
            }
            Ok(Some((Reply::FileDone { id, result }, fds))) => {
                let tx = opens.lock().ok().and_then(|mut m| m.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send((result, fds));
                }
            }
            Ok(Some((Reply::Spawned { id, pid }, _))) => {
                tracing::debug!(sandbox_id, id, pid, "process started");
            }
            Ok(Some((other, fds))) => {
                let _ = life.send((other, fds));
            }
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(sandbox_id, error = %e, "control socket error");
                break;
            }
        }
    }
    finish(&exits, &opens);
}

/// pid 1 is gone: every process of the sandbox died with it. Dropping the senders tells
/// waiters their process ended with the sandbox.
fn finish(exits: &Waiters<ExitStatus>, opens: &Waiters<Opened>) {
    if let Ok(mut m) = exits.lock() {
        m.clear();
    }
    if let Ok(mut m) = opens.lock() {
        m.clear();
    }
}
