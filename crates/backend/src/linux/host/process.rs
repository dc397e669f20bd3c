//! The server's side of starting a process in a sandbox: its stdio (pipes, or a terminal
//! whose master stays with the server), its exit slot, and the `Spawn` request to pid 1.

use super::backend::LinuxBackend;
use crate::linux::protocol::Request;
use crate::linux::sys;
use crate::{BackendError, ProcessHandle, ProcessSpec};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// Pipe buffer for stdout/stderr: larger pipes mean fewer wake-ups on bulk output.
const PIPE_SIZE: i32 = 1 << 20;

impl LinuxBackend {
    /// `Backend::spawn`: pipes (or a terminal) for the process, its exit slot, and the
    /// request to the sandbox's pid 1, which starts it ([`crate::linux::sandbox::spawn`]).
    pub(super) fn start_process(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError> {
        let sbx = self.get(sandbox_id)?;
        if spec.argv.is_empty() {
            return Err(BackendError::LaunchFailed("empty command".into()));
        }
        let id = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let (out_r, out_w) = pipe_pair()?;
        let (err_r, err_w) = pipe_pair()?;
        grow_pipe(&out_w);
        grow_pipe(&err_w);
        // An interactive process gets one terminal as stdin, stdout and stderr; its pipes
        // are closed at once (EOF). The master end stays with the server.
        let pty = match spec.tty {
            Some(size) => Some(open_pty(size)?),
            None => None,
        };
        // Without input the command's stdin is pid 1's own `/dev/null` (`stdin_null`), never
        // a file the server opens on the host: see `Request::Spawn`.
        let (stdin_child, stdin_host): (Option<OwnedFd>, Option<OwnedFd>) = if spec.stdin {
            let (r, w) = pipe_pair()?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        let (tx, rx) = oneshot::channel();
        sbx.exits
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .insert(id, tx);
        let req = Request::Spawn {
            id,
            argv: spec.argv,
            env: spec.env,
            cwd: spec.cwd,
            tty: pty.is_some(),
            stdin_null: pty.is_none() && stdin_child.is_none(),
        };
        let fds: Vec<i32> = match (&pty, &stdin_child) {
            (Some((_, slave)), _) => vec![slave.as_raw_fd(); 3],
            (None, Some(stdin)) => vec![stdin.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
            (None, None) => vec![out_w.as_raw_fd(), err_w.as_raw_fd()],
        };
        let sent = sbx.send(&req, &fds);
        drop((stdin_child, out_w, err_w));
        // The server keeps no slave fd: when the sandbox's last one closes, the master
        // reads EOF (EIO), like a pipe.
        let (master, stdin_host) = match pty {
            Some((master, slave)) => {
                drop(slave);
                (Some(master), None)
            }
            None => (None, stdin_host),
        };
        if let Err(e) = sent {
            if let Ok(mut m) = sbx.exits.lock() {
                m.remove(&id);
            }
            return Err(e);
        }
        let wrap = |e: std::io::Error| BackendError::io("wrap pipe", e);
        Ok(ProcessHandle {
            id,
            stdin: stdin_host
                .map(pipe::Sender::from_owned_fd)
                .transpose()
                .map_err(wrap)?,
            stdout: pipe::Receiver::from_owned_fd(out_r).map_err(wrap)?,
            stderr: pipe::Receiver::from_owned_fd(err_r).map_err(wrap)?,
            pty: master,
            exit: rx,
        })
    }
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), BackendError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| BackendError::io("pipe", e.into()))
}

/// A new pseudo-terminal pair (master, slave) of the given size, close-on-exec. The
/// master is non-blocking (the server reads it on its runtime).
fn open_pty(size: crate::TtySize) -> Result<(OwnedFd, OwnedFd), BackendError> {
    let ws = nix::pty::Winsize {
        ws_row: size.rows.max(1),
        ws_col: size.cols.max(1),
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair =
        nix::pty::openpty(Some(&ws), None).map_err(|e| BackendError::io("openpty", e.into()))?;
    for fd in [&pair.master, &pair.slave] {
        nix::fcntl::fcntl(
            fd,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )
        .map_err(|e| BackendError::io("openpty", e.into()))?;
    }
    nix::fcntl::fcntl(
        &pair.master,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .map_err(|e| BackendError::io("openpty", e.into()))?;
    Ok((pair.master, pair.slave))
}

fn grow_pipe(fd: &OwnedFd) {
    // Failure (a lower pipe-max-size) only means the default size stays: a speed knob.
    let _ = sys::set_pipe_size(fd.as_fd(), PIPE_SIZE);
}
