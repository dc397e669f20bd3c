//! The server's side of a gvisor filesystem snapshot ([`super`]): run the capture helper
//! and store its stdout as the snapshot's archive — sha256'd as it arrives, never parsed,
//! at most the capture's budget — and, at a restore, run the restore helper in the new
//! sandbox with the stored archive as its stdin. Both helpers are processes of their
//! sandbox: their answer is one bounded line, every wait has a deadline, and a helper past
//! it (or past the budget) is killed inside the sandbox.

use super::super::bundle::{INIT_ARG, INIT_PATH};
use super::super::GvisorBackend;
use super::{Answer, Refused, ARCHIVE_NAME, SNAPSHOT_ARG};
use crate::{BackendError, CaptureStats};
use sha2::{Digest, Sha256};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::Ordering;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::time::{timeout_at, Instant};

/// How long a capture or a restore may take before it is killed and refused.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);
/// Longest answer line (and whatever runsc says on a failure) read from a helper.
const MAX_ANSWER: usize = 64 * 1024;

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), BackendError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| BackendError::io("pipe", e.into()))
}

/// A helper's answer, mapped to the backend's vocabulary (`restore`: a failure is the
/// restore's, so the sandbox's launch failed).
fn outcome(said: &[u8], restore: bool) -> Result<(u64, u64), BackendError> {
    let line = said
        .split(|b| *b == b'\n')
        .find(|l| l.starts_with(b"{\"answer\""));
    match line.map(serde_json::from_slice::<Answer>) {
        Some(Ok(Answer::Done { entries, bytes })) => Ok((entries, bytes)),
        Some(Ok(Answer::Refused { kind, message })) => Err(match kind {
            Refused::UnsafeEntry => BackendError::UnsafeArchiveEntry(message),
            Refused::NoSpace => BackendError::NoSpace(message),
            Refused::PermissionDenied => BackendError::PermissionDenied(message),
            Refused::Malformed => BackendError::InvalidFileRequest(message),
            Refused::Failed if restore => BackendError::LaunchFailed(message),
            Refused::Failed => BackendError::Unavailable(message),
        }),
        _ => {
            let text = String::from_utf8_lossy(&said[..said.len().min(300)]);
            let what = if restore { "restore" } else { "capture" };
            Err(BackendError::Unavailable(format!(
                "the sandbox's snapshot {what} helper failed: {}",
                text.trim()
            )))
        }
    }
}

/// Read at most [`MAX_ANSWER`] bytes of a helper's stderr, to its end.
async fn read_bounded(mut rx: pipe::Receiver) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = rx.read(&mut chunk).await {
        if n == 0 {
            break;
        }
        if out.len() < MAX_ANSWER {
            out.extend_from_slice(&chunk[..n.min(MAX_ANSWER - out.len())]);
        }
    }
    out
}

/// A running snapshot helper.
struct Helper {
    child: tokio::process::Child,
    pid_file: PathBuf,
    answer: tokio::task::JoinHandle<Vec<u8>>,
}

impl GvisorBackend {
    /// `runsc exec` the snapshot helper with `args`; its stderr is read in the background.
    fn start_snapshot_helper(
        &self,
        sandbox_id: &str,
        args: &[String],
        stdin: Stdio,
        stdout: Stdio,
    ) -> Result<Helper, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let n = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let pid_file = sbx.bundle.procs().join(format!("snapshot-{n}.pid"));
        let (ctl_r, ctl_w) = pipe_pair()?;
        let mut cmd = self.runsc.command();
        cmd.arg("exec")
            .arg("--user")
            .arg("0:0")
            .arg("--internal-pid-file")
            .arg(&pid_file)
            .arg(sandbox_id)
            .arg(INIT_PATH)
            .arg(INIT_ARG)
            .arg(SNAPSHOT_ARG)
            .args(args)
            .stdin(stdin)
            .stdout(stdout)
            .stderr(Stdio::from(ctl_w))
            .kill_on_drop(false);
        let child = cmd.spawn().map_err(|e| BackendError::io("runsc exec", e))?;
        drop(cmd);
        let rx =
            pipe::Receiver::from_owned_fd(ctl_r).map_err(|e| BackendError::io("wrap pipe", e))?;
        Ok(Helper {
            child,
            pid_file,
            answer: tokio::spawn(read_bounded(rx)),
        })
    }

    /// Wait for a helper's end and answer by `deadline`; past it, kill it in the sandbox.
    async fn finish(
        &self,
        sandbox_id: &str,
        mut helper: Helper,
        deadline: Instant,
        restore: bool,
    ) -> Result<(u64, u64), BackendError> {
        let waited = timeout_at(deadline, async {
            let _ = helper.child.wait().await;
            (&mut helper.answer).await.unwrap_or_default()
        })
        .await;
        let said = match waited {
            Ok(said) => said,
            Err(_) => {
                self.stop_helper(sandbox_id, helper).await;
                return Err(BackendError::Unavailable(
                    "the sandbox's snapshot helper did not finish in time".into(),
                ));
            }
        };
        let _ = std::fs::remove_file(&helper.pid_file);
        outcome(&said, restore)
    }

    async fn stop_helper(&self, sandbox_id: &str, mut helper: Helper) {
        self.kill_helper(sandbox_id, &helper.pid_file).await;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), helper.child.wait()).await;
        let _ = helper.child.start_kill();
        helper.answer.abort();
        let _ = std::fs::remove_file(&helper.pid_file);
    }

    /// `Backend::capture_filesystem` on the gVisor runtime: the archive is written to
    /// `dest/gvisor.snap` (see the module doc).
    pub(in crate::gvisor) async fn capture_archive(
        &self,
        sandbox_id: &str,
        dest: &Path,
        budget: u64,
    ) -> Result<CaptureStats, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let (since_s, since_ns) = sbx.fs_since;
        drop(sbx);
        let deadline = Instant::now() + DEADLINE;
        let path = dest.join(ARCHIVE_NAME);
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .await
            .map_err(|e| BackendError::io(format!("create {}", path.display()), e))?;
        let (out_r, out_w) = pipe_pair()?;
        let args = [
            "capture".to_string(),
            since_s.to_string(),
            since_ns.to_string(),
        ];
        let helper =
            self.start_snapshot_helper(sandbox_id, &args, Stdio::null(), Stdio::from(out_w))?;
        let mut rx =
            pipe::Receiver::from_owned_fd(out_r).map_err(|e| BackendError::io("wrap pipe", e))?;
        let mut hash = Sha256::new();
        let mut written = 0u64;
        let mut buf = vec![0u8; 1 << 20];
        let copied: Result<(), BackendError> = loop {
            let n = match timeout_at(deadline, rx.read(&mut buf)).await {
                Err(_) => {
                    break Err(BackendError::Unavailable(
                        "the snapshot capture did not finish in time".into(),
                    ))
                }
                Ok(Err(e)) => break Err(BackendError::io("read the capture", e)),
                Ok(Ok(0)) => break Ok(()),
                Ok(Ok(n)) => n,
            };
            written += n as u64;
            if written > budget {
                break Err(BackendError::NoSpace(format!(
                    "the capture is larger than its budget of {budget} bytes"
                )));
            }
            hash.update(&buf[..n]);
            if let Err(e) = file.write_all(&buf[..n]).await {
                break Err(BackendError::io("write the capture", e));
            }
        };
        drop(rx);
        if let Err(e) = copied {
            self.stop_helper(sandbox_id, helper).await;
            return Err(e);
        }
        let (entries, bytes) = self.finish(sandbox_id, helper, deadline, false).await?;
        file.sync_all()
            .await
            .map_err(|e| BackendError::io("sync the capture", e))?;
        let allocated = file
            .metadata()
            .await
            .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
            .unwrap_or(written);
        let digest: [u8; 32] = hash.finalize().into();
        Ok(CaptureStats {
            files: entries,
            bytes,
            allocated_bytes: allocated.min(budget),
            manifest_digest: digest.iter().map(|b| format!("{b:02x}")).collect(),
        })
    }

    /// Apply a snapshot's archive (`layers/gvisor.snap`) inside the freshly launched
    /// sandbox, before anything else runs in it.
    pub(in crate::gvisor) async fn restore_archive(
        &self,
        sandbox_id: &str,
        layers: &Path,
    ) -> Result<(), BackendError> {
        let path = layers.join(ARCHIVE_NAME);
        // The server's own file (0600, in its private state directory), read-only.
        let file = std::fs::File::open(&path).map_err(|e| {
            BackendError::LaunchFailed(format!(
                "this snapshot was not taken under gvisor (no {}): {e}",
                path.display()
            ))
        })?;
        let helper = self.start_snapshot_helper(
            sandbox_id,
            &["restore".to_string()],
            Stdio::from(file),
            Stdio::null(),
        )?;
        self.finish(sandbox_id, helper, Instant::now() + DEADLINE, true)
            .await
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_stable_errors_and_garbage_fails_closed() {
        let said = br#"runsc noise
{"answer":"refused","kind":"unsafe_entry","message":"x"}
"#;
        assert!(matches!(
            outcome(said, true),
            Err(BackendError::UnsafeArchiveEntry(_))
        ));
        let said = br#"{"answer":"refused","kind":"no_space","message":"x"}"#;
        assert!(matches!(
            outcome(said, false),
            Err(BackendError::NoSpace(_))
        ));
        let said = br#"{"answer":"done","entries":3,"bytes":4}"#;
        assert_eq!(outcome(said, false).unwrap(), (3, 4));
        assert!(matches!(
            outcome(b"{\"answer\":\"done\"", false),
            Err(BackendError::Unavailable(_))
        ));
        assert!(matches!(
            outcome(b"", true),
            Err(BackendError::Unavailable(_))
        ));
    }
}
