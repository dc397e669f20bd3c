//! Memory checkpoints of gVisor sandboxes: `runsc checkpoint` saves the whole sandbox —
//! the sentry's memory, every process, and the writable filesystems, which all live in
//! that memory (every mount is overlaid by the sentry, `--overlay2=all:dir=…` on the
//! scratch tmpfs: see `scratch.rs`) — into one image directory; `runsc restore`
//! starts a new container from it. A restore runs in a fresh bundle and network namespace
//! of the new sandbox (same image, limits and mounts as the checkpointed one), so one
//! image restored N times is N independent forks.
//!
//! The image is written uncompressed (`--compression=none`): faster to write and read
//! back for memory that does not compress, and plainly inspectable. Through the page cache,
//! not `--direct` (`O_DIRECT`): that makes runsc's own save far faster on a loaded machine,
//! but the server hashes each file while runsc writes it, and with `O_DIRECT` those reads
//! go back to the disk — slower in all (measured, docs/runtimes.md "What a checkpoint's
//! time is made of").
//!
//! Host file descriptors cannot be restored: an execution's stdio is the server's pipes
//! (`runsc exec` hands them to the sentry), so the engine checkpoints only when no
//! execution is attached, and a process that kept such a descriptor open makes the
//! restore fail (the create then fails cleanly, nothing left behind).

use super::GvisorBackend;
use crate::{BackendError, SandboxSpec};
use std::ffi::OsString;
use std::path::Path;

/// The `runsc` subcommand that starts a sandbox's container: `run`, or `restore` from
/// the spec's checkpoint image.
pub(super) fn start_args(spec: &SandboxSpec) -> Vec<OsString> {
    match &spec.checkpoint {
        None => vec!["run".into(), "--detach".into()],
        Some(image) => {
            let mut path = OsString::from("--image-path=");
            path.push(image.as_os_str());
            vec!["restore".into(), "--detach".into(), path]
        }
    }
}

impl GvisorBackend {
    /// `runsc checkpoint` of a running sandbox into `dest` (see the module doc).
    pub(super) async fn checkpoint_into(
        &self,
        sandbox_id: &str,
        dest: &Path,
        leave_running: bool,
    ) -> Result<(), BackendError> {
        self.get(sandbox_id)?;
        let empty = std::fs::read_dir(dest)
            .map_err(|e| BackendError::io(format!("read {}", dest.display()), e))?
            .next()
            .is_none();
        if !empty {
            return Err(BackendError::LaunchFailed(format!(
                "checkpoint destination {} is not empty",
                dest.display()
            )));
        }
        let image = format!("--image-path={}", dest.display());
        // Uncompressed: faster to write and read back, and what is in the sandbox's memory
        // is plainly what is on disk (the secrets test greps the image for values).
        // Always `--leave-running`: a save runsc refuses without it kills the sandbox
        // (measured: runsc 20240729 SIGKILLs the init after a rejected save); with it the
        // sandbox runs on unchanged. Not to be left running, it is frozen right after the
        // save, before anything in it could move on from the saved state.
        let args = [
            "checkpoint",
            "--compression=none",
            image.as_str(),
            "--leave-running",
            sandbox_id,
        ];
        let t0 = std::time::Instant::now();
        self.runsc.run(&args).await.map_err(refusal)?;
        tracing::debug!(
            sandbox_id,
            save_ms = t0.elapsed().as_secs_f64() * 1e3,
            "gvisor checkpoint timings"
        );
        if !leave_running {
            // Frozen at once, but the caller does not wait for it: the engine's teardown of
            // the sandbox follows right away (its `runsc kill` serializes with this pause on
            // runsc's container lock). Awaited, this one runsc round trip was 17–120 ms of
            // every such checkpoint on a loaded machine (docs/runtimes.md "What a
            // checkpoint's time is made of"); started here, the window in which the sandbox
            // can move on from the saved state is the same as before. Kept in the sandbox,
            // so that a resume (the engine's, when storing the image failed) comes after it.
            let sbx = self.get(sandbox_id)?;
            sbx.paused.store(true, std::sync::atomic::Ordering::SeqCst);
            let (runsc, id) = (self.runsc.clone(), sandbox_id.to_string());
            let freeze = tokio::spawn(async move {
                match runsc.run(&["pause", &id]).await {
                    Ok(_) => true,
                    Err(e) => {
                        tracing::debug!(sandbox_id = %id, error = %e, "freeze after a checkpoint");
                        false
                    }
                }
            });
            if let Ok(mut slot) = sbx.freezing.lock() {
                *slot = Some(freeze);
            };
        }
        Ok(())
    }
}

/// A failed `runsc checkpoint`: a state runsc will not save is [`BackendError::CheckpointRefused`]
/// with runsc's reason; anything else keeps its kind. Either way without the goroutine dump
/// runsc appends.
fn refusal(e: BackendError) -> BackendError {
    let reason = runsc_reason(&e);
    if reason.starts_with("save rejected") {
        BackendError::CheckpointRefused(format!(
            "runsc cannot save this sandbox now: {reason} (gVisor cannot save a TCP \
             connection, and keeps a closed one for 60 s); the sandbox runs on unchanged"
        ))
    } else {
        match e {
            BackendError::LaunchFailed(_) => BackendError::LaunchFailed(reason),
            other => other,
        }
    }
}

/// The reason in a failed runsc command's error, without its goroutine dump: e.g. "save
/// rejected due to unsupported networking state: endpoint cannot be saved in connected
/// state" (gVisor keeps a closed TCP connection in TIME-WAIT for 60 s and cannot save it).
pub(super) fn runsc_reason(e: &BackendError) -> String {
    let text = e.to_string();
    let text = text.split("goroutine ").next().unwrap_or_default();
    let line = text.lines().next().unwrap_or_default();
    let reason = match line.find("save rejected") {
        Some(i) => &line[i..],
        None => line,
    };
    let reason = reason.trim().trim_end_matches(':');
    reason.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runsc_failure_is_reduced_to_its_reason() {
        let e = BackendError::LaunchFailed(
            "runsc checkpoint: checkpoint failed: checkpointing container \"sbx_1\": encoding \
             error: save rejected due to unsupported networking state: endpoint cannot be saved \
             in connected state: local 100.96.0.2:1, remote 100.96.0.1:3128:\ngoroutine 64 \
             [running]:\nstack..."
                .into(),
        );
        assert_eq!(
            runsc_reason(&e),
            "save rejected due to unsupported networking state: endpoint cannot be saved in \
             connected state: local 100.96.0.2:1, remote 100.96.0.1:3128"
        );
        assert!(matches!(refusal(e), BackendError::CheckpointRefused(_)));
        let other = BackendError::LaunchFailed("runsc pause: boom\nmore".into());
        assert!(runsc_reason(&other).ends_with("runsc pause: boom"));
        assert!(matches!(refusal(other), BackendError::LaunchFailed(m) if !m.contains("more")));
    }

    #[test]
    fn a_checkpoint_spec_restores_and_any_other_runs() {
        let mut spec = crate::SandboxSpec {
            sandbox_id: "sbx_1".into(),
            runtime: crate::Runtime::Gvisor,
            hostname: "h".into(),
            limits: Default::default(),
            network: crate::NetworkSpec::LoopbackOnly,
            image: None,
            trusted_ca_pem: None,
            restore: None,
            checkpoint: None,
            volumes: vec![],
            one_shot: false,
        };
        assert_eq!(start_args(&spec), vec!["run", "--detach"]);
        spec.checkpoint = Some("/state/ckpt_1/image".into());
        assert_eq!(
            start_args(&spec),
            vec!["restore", "--detach", "--image-path=/state/ckpt_1/image"]
        );
    }
}
