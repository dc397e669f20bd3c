//! Suspend on idle with the memory released: an idle gVisor sandbox is saved by `runsc
//! checkpoint` — the sentry's memory, the init, and the writable filesystems (they live in
//! the sentry's overlay, `scratch.rs`) — into a directory of its bundle on the server's
//! disk, and runsc's processes exit: the sandbox then holds no memory and no CPU. Its
//! network namespace (with the gateway's tun), scratch namespace and bundle stay, so the
//! resume is a `runsc restore` of the same container into the same places: the same
//! sandbox, its files and processes as they were.
//!
//! Released only when the restore is faithful. The runsc this project uses kills, on
//! restore, every process that descends from a `runsc exec` (upstream gVisor issue 11544;
//! an execution's background process, even once reparented to the init, is one), and a
//! process holding an execution's host stdio makes the restore fail. So the memory is
//! released only when nothing but the init runs and no execution is attached; otherwise
//! the sandbox is frozen with its memory kept (`runsc pause`), and the event says why.
//!
//! runsc itself refuses to save some states — a TCP connection of the sandbox, even one
//! closed less than 60 s ago (gVisor keeps it in TIME-WAIT) — so the save runs with the
//! sandbox left running: a refusal leaves it as it was, and it is frozen instead, with
//! runsc's reason in the event.
//!
//! Executions are shut out while a suspension is decided: [`GvisorSandbox::gate`] is held
//! for writing here and for reading while an execution starts, so a new execution either
//! is counted before the check or finds the sandbox released (and is refused: the engine
//! resumes a suspended sandbox before it runs anything in it).

use super::{GvisorBackend, GvisorSandbox};
use crate::{BackendError, Suspension};
use std::os::fd::AsRawFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::atomic::Ordering;

/// The bundle's directory for the image of a released sandbox.
const IMAGE_DIR: &str = "suspended";

impl GvisorSandbox {
    /// True while its memory is released (only its image on disk).
    pub(super) fn is_released(&self) -> bool {
        self.released.lock().map(|r| r.is_some()).unwrap_or(true)
    }
}

impl GvisorBackend {
    /// [`crate::Backend::suspend`] for gVisor (see the module doc).
    pub(super) async fn suspend_sandbox(
        &self,
        sandbox_id: &str,
    ) -> Result<Suspension, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let _gate = sbx.gate.write().await;
        if let Some(why) = self.why_memory_is_kept(sandbox_id, &sbx).await {
            self.pause_sandbox(sandbox_id, &sbx).await?;
            return Ok(Suspension::Frozen { memory_kept: why });
        }
        let image = sbx.bundle.dir.join(IMAGE_DIR);
        let _ = std::fs::remove_dir_all(&image);
        // The server's alone: the image is the sandbox's memory.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&image)
            .map_err(|e| BackendError::io(format!("create {}", image.display()), e))?;
        // Saved with the sandbox left running: a failed save then leaves it as it was (a
        // failed save without `--leave-running` kills it), and it is frozen instead. Only
        // the idle init runs (checked above, executions shut out by the gate), so nothing
        // changes between the save and the kill that follows.
        if let Err(e) = self.checkpoint_into(sandbox_id, &image, true).await {
            let _ = std::fs::remove_dir_all(&image);
            if !self.runsc.is_running(sandbox_id).await {
                return Err(e);
            }
            self.pause_sandbox(sandbox_id, &sbx).await?;
            return Ok(Suspension::Frozen {
                memory_kept: format!(
                    "runsc could not save it: {}",
                    super::checkpoint::runsc_reason(&e)
                ),
            });
        }
        sbx.paused.store(true, Ordering::SeqCst);
        // The container's name must be free for the restore.
        self.runsc.destroy(sandbox_id).await?;
        let image_bytes = dir_bytes(&image);
        *self.released_slot(&sbx)? = Some(image);
        Ok(Suspension::Released { image_bytes })
    }

    /// Why this sandbox's memory cannot be released now (`None`: it can).
    async fn why_memory_is_kept(&self, sandbox_id: &str, sbx: &GvisorSandbox) -> Option<String> {
        let attached = sbx.procs.lock().map(|p| p.len()).unwrap_or(usize::MAX);
        if attached > 0 {
            return Some(format!("{attached} execution(s) attached"));
        }
        let pids = match self.runsc.run(&["ps", "--format=json", sandbox_id]).await {
            Ok(out) => serde_json::from_slice::<Vec<i64>>(&out).ok(),
            Err(_) => None,
        };
        let Some(pids) = pids else {
            return Some("its processes could not be listed".into());
        };
        let others = pids.iter().filter(|p| **p != 1).count();
        (others > 0).then(|| {
            format!(
                "{others} process(es) besides the init are running, which a gVisor restore \
                 would not bring back (processes started by an execution are killed: gVisor \
                 issue 11544)"
            )
        })
    }

    async fn pause_sandbox(
        &self,
        sandbox_id: &str,
        sbx: &GvisorSandbox,
    ) -> Result<(), BackendError> {
        sbx.paused.store(true, Ordering::SeqCst);
        let r = self.runsc.run(&["pause", sandbox_id]).await.map(drop);
        if r.is_err() && self.runsc.is_running(sandbox_id).await {
            sbx.paused.store(false, Ordering::SeqCst);
        }
        r
    }

    fn released_slot<'a>(
        &self,
        sbx: &'a GvisorSandbox,
    ) -> Result<std::sync::MutexGuard<'a, Option<std::path::PathBuf>>, BackendError> {
        sbx.released
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))
    }

    /// Bring a released sandbox back: `runsc restore` of its image into its own bundle and
    /// namespaces. `Ok(false)` when it was not released (the caller thaws a frozen one).
    pub(super) async fn restore_released(&self, sandbox_id: &str) -> Result<bool, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let _gate = sbx.gate.write().await;
        let Some(image) = self.released_slot(&sbx)?.clone() else {
            return Ok(false);
        };
        if let Some(cfg) = sbx.tun {
            let ns = sbx.netns.try_clone();
            let ns = ns.map_err(|e| BackendError::io("dup network namespace", e))?;
            tokio::task::spawn_blocking(move || super::netns::readdress(&ns, cfg))
                .await
                .map_err(|e| BackendError::LaunchFailed(format!("netns task: {e}")))??;
        }
        let mut path = std::ffi::OsString::from("--image-path=");
        path.push(image.as_os_str());
        let start = vec!["restore".into(), "--detach".into(), path];
        let started = self
            .start_container(
                sandbox_id,
                &sbx.bundle,
                sbx.netns.as_raw_fd(),
                &sbx.scratch,
                sbx.image_root.as_deref(),
                start,
            )
            .await;
        if let Err(e) = started {
            // Nothing half-running: the image stays, so a later resume may try again.
            let _ = self.runsc.destroy(sandbox_id).await;
            return Err(e);
        }
        *self.released_slot(&sbx)? = None;
        sbx.paused.store(false, Ordering::SeqCst);
        let _ = std::fs::remove_dir_all(&image);
        Ok(true)
    }
}

/// Bytes of the regular files directly in `dir` (runsc's image is flat).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
