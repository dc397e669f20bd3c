//! Memory checkpoints of gVisor sandboxes: `runsc checkpoint` saves the whole sandbox —
//! the sentry's memory, every process, and the writable filesystems, which all live in
//! that memory (every mount is overlaid by the sentry, `--overlay2=all:dir=…` on the
//! scratch tmpfs: see `scratch.rs`) — into one image directory; `runsc restore`
//! starts a new container from it. A restore runs in a fresh bundle and network namespace
//! of the new sandbox (same image, limits and mounts as the checkpointed one), so one
//! image restored N times is N independent forks.
//!
//! The image is written uncompressed (`--compression=none`): faster to write and read
//! back for memory that does not compress, and plainly inspectable.
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
        let mut args = vec!["checkpoint", "--compression=none", image.as_str()];
        if leave_running {
            args.push("--leave-running");
        }
        args.push(sandbox_id);
        self.runsc.run(&args).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        assert_eq!(start_args(&spec), vec!["run", "--detach"]);
        spec.checkpoint = Some("/state/ckpt_1/image".into());
        assert_eq!(
            start_args(&spec),
            vec!["restore", "--detach", "--image-path=/state/ckpt_1/image"]
        );
    }
}
