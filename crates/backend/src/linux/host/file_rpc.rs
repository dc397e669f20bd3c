//! The server's side of the files API on the Linux backend: send a [`FileOp`] to the
//! sandbox's pid 1, which forks a helper with the sandbox's identity to carry it out
//! ([`crate::linux::helper::ops`], [`crate::linux::helper::archive`]), and check what comes back before the server
//! uses it.

use super::backend::*;
use crate::linux::protocol::Request;
use crate::linux::served;
use crate::BackendError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::oneshot;

use crate::files::{FileDone, FileOp, FileReply};

/// Slack over the helper's own deadline before the server gives up on an answer (pid 1
/// kills the helper at its deadline and answers for it).
const ANSWER_SLACK: Duration = Duration::from_secs(5);
/// How long the end-of-stream answer may lag the end of the stream itself.
const DONE_TIMEOUT: Duration = Duration::from_secs(60);

impl LinuxBackend {
    pub(super) async fn run_file_op(
        &self,
        sandbox_id: &str,
        op: FileOp,
        fds: Vec<OwnedFd>,
    ) -> Result<FileReply, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let streamed = matches!(op, FileOp::Archive { .. });
        let wants_fd = matches!(op, FileOp::CreateTemp { .. });
        let deadline = op.deadline() + ANSWER_SLACK;
        let id = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let done_id = streamed.then(|| sbx.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        let done_rx = {
            let mut waiters = sbx
                .opens
                .lock()
                .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?;
            waiters.insert(id, tx);
            done_id.map(|d| {
                let (tx, rx) = oneshot::channel();
                waiters.insert(d, tx);
                rx
            })
        };
        let forget = || {
            if let Ok(mut m) = sbx.opens.lock() {
                m.remove(&id);
                if let Some(d) = done_id {
                    m.remove(&d);
                }
            }
        };
        let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let sent = sbx.send(
            &Request::FileOp {
                id,
                done_id,
                file_op: op,
            },
            &raw,
        );
        // Our copies go now: pid 1 and its helper hold theirs (a pipe's write end must have
        // no other holder for the reader to see its end).
        drop(fds);
        if let Err(e) = sent {
            forget();
            return Err(e);
        }
        let (result, mut fds) = match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => return Err(BackendError::Unavailable("sandbox is gone".into())),
            Err(_) => {
                forget();
                return Err(BackendError::FileNotReadable(
                    "the sandbox did not answer the file request in time".into(),
                ));
            }
        };
        let answer = match result {
            Ok(answer) => answer,
            Err(refusal) => {
                forget();
                return Err(refusal.into());
            }
        };
        if wants_fd {
            // The fd comes from inside the sandbox: check it before writing to it.
            fds = vec![served::take_served(std::mem::take(&mut fds), libc::O_RDWR)?];
        } else {
            fds.clear();
        }
        let done: Option<FileDone> = done_rx.map(|rx| {
            let fut = async move {
                match tokio::time::timeout(DONE_TIMEOUT, rx).await {
                    Ok(Ok((result, _))) => Ok(result?),
                    Ok(Err(_)) => Err(BackendError::Unavailable("sandbox is gone".into())),
                    Err(_) => Err(BackendError::FileNotReadable(
                        "the sandbox did not finish the archive in time".into(),
                    )),
                }
            };
            Box::pin(fut) as FileDone
        });
        Ok(FileReply { answer, fds, done })
    }
}
