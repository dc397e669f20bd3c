//! The server's side of a sandbox's control socket: one small blocking thread per sandbox
//! routes pid 1's replies (exits, opened files, lifecycle messages) to their waiters.

use super::*;

/// Blocking reader of one sandbox's control socket (one small thread per sandbox).
pub(super) fn read_replies(
    sandbox_id: String,
    fd: OwnedFd,
    life: tokio::sync::mpsc::UnboundedSender<(Reply, Vec<OwnedFd>)>,
    (exits, opens): (Waiters<ExitStatus>, Waiters<Opened>),
    cgroups: Vec<PathBuf>,
) {
    let mut ooms = cgroup::oom_kills(&cgroups);
    loop {
        match protocol::recv::<Reply>(fd.as_raw_fd()) {
            Ok(Some((Reply::Exited { id, code, signal }, _))) => {
                // A SIGKILL while the OOM counter moved: the memory limit killed it.
                // The counter can lag the victim's exit slightly: re-read briefly, and only
                // for SIGKILL exits (the only way the OOM killer ends a process).
                let mut now = cgroup::oom_kills(&cgroups);
                if signal == Some(libc::SIGKILL) && !cgroups.is_empty() {
                    for _ in 0..20 {
                        if now > ooms {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(5));
                        now = cgroup::oom_kills(&cgroups);
                    }
                }
                let oom_killed = signal == Some(libc::SIGKILL) && now > ooms;
                ooms = now;
                let tx = exits.lock().ok().and_then(|mut m| m.remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(ExitStatus {
                        code,
                        signal,
                        oom_killed,
                    });
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
    // pid 1 is gone: every process of the sandbox died with it. Dropping the senders
    // tells waiters their process ended with the sandbox.
    if let Ok(mut m) = exits.lock() {
        m.clear();
    }
    if let Ok(mut m) = opens.lock() {
        m.clear();
    }
}
