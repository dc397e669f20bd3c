//! The gVisor backend: every sandbox is a `runsc` container, so its processes talk to
//! gVisor's user-space kernel (the sentry), not to the host's. The server drives `runsc`
//! as a child process with a `--root` of its own under its state directory (two servers
//! never see each other's containers); the sandbox's network namespace holds only the tun
//! device of its egress gateway, so gVisor's netstack sends every packet to the same
//! gateway as the Linux backend's sandboxes (see [`netns`]).
//!
//! Modules: [`runsc`] (the binary, its platform), [`bundle`] (the OCI bundle), [`netns`]
//! (the network namespace), [`scratch`] (the writable directories), [`launch`]
//! (`runsc run`), [`process`] (executions), [`console`] (their terminals), [`stats`] (pause,
//! resume, usage), [`init`] (the sandbox's idle first process and its signal helper),
//! [`checkpoint`] (memory checkpoints and restores), [`hibernate`] (suspend with the memory
//! released), [`pids`] (the pids limit's two layers), [`spawn`] (background processes that
//! survive a restore), [`oneshot`] and [`first`] (a one-shot sandbox started with its
//! command), [`files`] and
//! [`filehelper`] (the files API, carried out inside the sandbox), [`fsnap`] (filesystem
//! snapshots, captured and restored inside the sandbox).

pub mod bundle;
mod checkpoint;
mod console;
pub mod filehelper;
mod files;
pub mod first;
pub mod fsnap;
mod hibernate;
mod hostview;
pub mod init;
mod launch;
pub mod netns;
mod oneshot;
pub mod pids;
mod process;
pub mod relay;
pub mod runsc;
pub mod scratch;
pub mod spawn;
mod stats;

pub use runsc::{Platform, Runsc};

use crate::{
    BackendError, Capability, ProcessHandle, ProcessId, ProcessSpec, ProvisionedSandbox,
    ReconcileRecord, ReconcileReport, SandboxSpec,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// One running gVisor sandbox as the server knows it.
struct GvisorSandbox {
    bundle: bundle::Bundle,
    /// Keeps the network namespace alive (runsc opens it through our fd's /proc path).
    netns: OwnedFd,
    /// The tmpfs of `/tmp`, `/root`, `/workspace` (held until the sandbox goes).
    scratch: scratch::Scratch,
    /// The image root bound onto the bundle's rootfs (`None`: the host view).
    image_root: Option<PathBuf>,
    /// The tun's addresses (`None`: loopback only), set again before a restore in place.
    tun: Option<crate::TunConfig>,
    /// The image directory while the sandbox's memory is released ([`hibernate`]).
    released: Mutex<Option<PathBuf>>,
    /// Held for writing while a suspension is decided, for reading while an execution
    /// starts ([`hibernate`]).
    gate: tokio::sync::RwLock<()>,
    next_id: AtomicU64,
    /// The sandbox's pids limit, set on each execution ([`pids::rlimits`]).
    pids: u64,
    /// Inbound relays running ([`relay`]).
    relays: Arc<std::sync::atomic::AtomicUsize>,
    /// Between `runsc pause` and `runsc resume`.
    paused: std::sync::atomic::AtomicBool,
    /// The freeze a checkpoint not left running started and nobody awaited yet
    /// ([`checkpoint`]): its `runsc pause` succeeded (`true`) or not.
    freezing: Mutex<Option<tokio::task::JoinHandle<bool>>>,
    /// In-sandbox pid files of running executions, by process id.
    procs: Mutex<HashMap<ProcessId, PathBuf>>,
    /// Whether the container runs yet, and how ([`oneshot`]); held while it is started.
    start: Arc<tokio::sync::Mutex<oneshot::Start>>,
    /// Realtime (s, ns) before the sandbox's root existed: an inode changed at or after
    /// it is the sandbox's own change ([`fsnap`]). `(0, 0)` for a sandbox restored from a
    /// memory checkpoint (its files changed before this launch): everything is taken.
    fs_since: (i64, i64),
}

/// The gVisor backend (see the module doc).
pub struct GvisorBackend {
    runsc: Runsc,
    /// `<state>/gvisor/sandboxes`: one bundle directory per sandbox.
    dir: PathBuf,
    /// The server's own executable, bound into each sandbox as its idle init.
    init_exe: PathBuf,
    sandboxes: Mutex<HashMap<String, Arc<GvisorSandbox>>>,
    /// File helpers in flight and upload sessions.
    files: Arc<files::FileHelpers>,
}

impl GvisorBackend {
    /// Probe `runsc` (`runsc_bin`, else `PATH`) and pick its platform; `Err` says why the
    /// gvisor runtime is unavailable on this server. Must be called by root.
    pub async fn new(
        state_dir: &Path,
        runsc_bin: Option<&Path>,
        platform: Option<Platform>,
    ) -> Result<GvisorBackend, String> {
        if !nix::unistd::geteuid().is_root() {
            return Err("the gvisor runtime needs a root server".into());
        }
        // Absolute: `runsc run` starts in another mount namespace, at its root.
        let base = std::path::absolute(state_dir.join("gvisor"))
            .map_err(|e| format!("state directory: {e}"))?;
        let runsc = Runsc::probe(runsc_bin, &base.join("runsc"), platform).await?;
        let dir = base.join("sandboxes");
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let init_exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .map_err(|e| format!("own executable: {e}"))?;
        Ok(GvisorBackend {
            runsc,
            dir,
            init_exe,
            sandboxes: Mutex::new(HashMap::new()),
            files: Arc::default(),
        })
    }

    /// The platform `runsc` runs on here.
    pub fn platform(&self) -> Platform {
        self.runsc.platform
    }

    /// `runsc --version`'s first line.
    pub fn version(&self) -> &str {
        &self.runsc.version
    }

    fn get(&self, sandbox_id: &str) -> Result<Arc<GvisorSandbox>, BackendError> {
        self.sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .get(sandbox_id)
            .cloned()
            .ok_or_else(|| BackendError::SandboxNotFound(sandbox_id.into()))
    }

    /// The bundle directory of a sandbox id (ids are the server's: letters, digits, `_`).
    fn dir_for(&self, sandbox_id: &str) -> Result<PathBuf, BackendError> {
        let ok = !sandbox_id.is_empty()
            && sandbox_id.len() <= 64
            && sandbox_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(BackendError::LaunchFailed(format!(
                "invalid sandbox id {sandbox_id:?}"
            )));
        }
        Ok(self.dir.join(sandbox_id))
    }
}

#[async_trait]
impl crate::Backend for GvisorBackend {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn default_runtime(&self) -> crate::Runtime {
        crate::Runtime::Gvisor
    }

    fn runtime_version(&self, runtime: crate::Runtime) -> Option<String> {
        (runtime == crate::Runtime::Gvisor).then(|| {
            format!(
                "{} (platform {})",
                self.runsc.version,
                self.runsc.platform.as_str()
            )
        })
    }

    fn capabilities(&self) -> Vec<Capability> {
        use Capability as C;
        // What works today; named volumes are not declared, so a policy or request that
        // needs them is refused at create.
        vec![
            C::PolicyImmutability,
            // The netns's only device is the gateway's tun; gVisor's netstack sends there.
            C::NetworkDefaultDeny,
            C::NetworkEgress,
            C::NetworkHostPortFiltering,
            C::DnsControlOrEquivalent,
            C::AuditEventEmission,
            C::SecretIsolation,
            C::PidIsolation,
            C::MountIsolation,
            C::OciImages,
            // `runsc pause` stops every task of the sentry (stats.rs).
            C::PauseResume,
            // runsc checkpoint/restore: memory, processes and writable filesystems.
            C::CheckpointRestore,
            // Through a relay process inside the sandbox (relay.rs).
            C::InboundConnections,
            // Captured and restored by a helper inside the sandbox (fsnap/).
            C::FilesystemSnapshots,
        ]
    }

    async fn checkpoint(
        &self,
        sandbox_id: &str,
        dest: &Path,
        leave_running: bool,
    ) -> Result<(), BackendError> {
        self.started(sandbox_id).await?;
        self.checkpoint_into(sandbox_id, dest, leave_running).await
    }

    async fn capture_filesystem(
        &self,
        sandbox_id: &str,
        dest: &Path,
        budget: u64,
    ) -> Result<crate::CaptureStats, BackendError> {
        // The helper runs in the container: a deferred one-shot starts first (oneshot.rs).
        self.started(sandbox_id).await?;
        self.capture_archive(sandbox_id, dest, budget).await
    }

    fn capture_runs_live(&self, sandbox_id: &str) -> bool {
        // `runsc pause` stops the whole sentry: the helper could not run in it.
        let _ = sandbox_id;
        true
    }

    async fn inbound_relay(
        &self,
        sandbox_id: &str,
        port: u16,
    ) -> Result<relay::Relay, BackendError> {
        self.started(sandbox_id).await?;
        self.relay_to(sandbox_id, port).await
    }

    fn checkpoint_format(&self, runtime: crate::Runtime) -> Option<String> {
        (runtime == crate::Runtime::Gvisor).then(|| self.runsc.version.clone())
    }

    async fn provision(&self, spec: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
        if let Some(layers) = &spec.restore {
            // A linux runtime's capture is layers for its overlays: not restorable here.
            if fsnap::runtime_of_layers(layers) != crate::Runtime::Gvisor {
                return Err(BackendError::MissingCapability {
                    runtime: "gvisor",
                    capability: Capability::FilesystemSnapshots,
                });
            }
        }
        // Not declared (`named_volumes`), so the engine refuses first; never ignore them here.
        if !spec.volumes.is_empty() {
            return Err(BackendError::Unavailable(
                "the gvisor runtime cannot mount named volumes".into(),
            ));
        }
        let dir = self.dir_for(&spec.sandbox_id)?;
        std::fs::create_dir(&dir)
            .map_err(|e| BackendError::io(format!("create {}", dir.display()), e))?;
        let launched = match self.launch(spec, &dir).await {
            Ok((sbx, provisioned)) => {
                self.sandboxes
                    .lock()
                    .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
                    .insert(spec.sandbox_id.clone(), Arc::new(sbx));
                Ok(provisioned)
            }
            Err(e) => Err(e),
        };
        // A snapshot's files, applied inside before anything else runs there.
        let restored = match (launched, &spec.restore) {
            (Ok(p), Some(layers)) => match self.restore_archive(&spec.sandbox_id, layers).await {
                Ok(()) => Ok(p),
                Err(e) => {
                    if let Ok(mut m) = self.sandboxes.lock() {
                        m.remove(&spec.sandbox_id);
                    }
                    Err(e)
                }
            },
            (r, _) => r,
        };
        match restored {
            Ok(p) => Ok(p),
            Err(e) => {
                let _ = self.runsc.destroy(&spec.sandbox_id).await;
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    async fn spawn(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError> {
        if let Some(first) = self.spawn_first(sandbox_id, &spec).await? {
            return Ok(first);
        }
        self.started(sandbox_id).await?;
        self.start_process(sandbox_id, spec).await
    }

    async fn signal(
        &self,
        sandbox_id: &str,
        process: ProcessId,
        signal: i32,
    ) -> Result<(), BackendError> {
        self.signal_process(sandbox_id, process, signal).await
    }

    async fn terminate(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let known = self
            .sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .remove(sandbox_id);
        let dir = self.dir_for(sandbox_id)?;
        if known.is_none() && !dir.exists() {
            return Ok(());
        }
        let started = match &known {
            Some(sbx) => self.before_teardown(sbx).await,
            None => true,
        };
        // A deferred sandbox, or a one-shot whose `runsc run` failed early, left nothing.
        if started && self.runsc.has_state(sandbox_id) {
            self.runsc.destroy(sandbox_id).await?;
        }
        drop(known);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(BackendError::io(format!("remove {}", dir.display()), e)),
        }
    }

    async fn reconcile(
        &self,
        records: &[ReconcileRecord],
    ) -> Result<ReconcileReport, BackendError> {
        let _ = records;
        let live: Vec<String> = self
            .sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .keys()
            .cloned()
            .collect();
        let mut report = ReconcileReport::default();
        // Every container in our root that this process did not start is a dead server's.
        for id in self.runsc.list().await? {
            if !live.contains(&id) {
                self.runsc.destroy(&id).await?;
                report.killed_sandboxes.push(id);
            }
        }
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if !live.contains(&name) && std::fs::remove_dir_all(e.path()).is_ok() {
                    report.removed_dirs.push(e.path());
                }
            }
        }
        Ok(report)
    }

    async fn file_op(
        &self,
        sandbox_id: &str,
        op: crate::files::FileOp,
        fds: Vec<OwnedFd>,
    ) -> Result<crate::files::FileReply, BackendError> {
        self.started(sandbox_id).await?;
        self.run_file_op(sandbox_id, op, fds).await
    }

    async fn read_range(
        &self,
        sandbox_id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<crate::files::FileRead, BackendError> {
        self.started(sandbox_id).await?;
        self.read_stream(sandbox_id, path, offset, length).await
    }

    async fn read_file(
        &self,
        sandbox_id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<crate::FileContent, BackendError> {
        self.started(sandbox_id).await?;
        self.read_bounded(sandbox_id, path, max_bytes).await
    }

    async fn usage(&self, sandbox_id: &str) -> Result<crate::Usage, BackendError> {
        self.started(sandbox_id).await?;
        self.sandbox_usage(sandbox_id).await
    }

    async fn pause(&self, sandbox_id: &str) -> Result<(), BackendError> {
        use std::sync::atomic::Ordering;
        let sbx = self.started(sandbox_id).await?;
        // Marked first: a signal sent meanwhile must not wait on a frozen sentry.
        sbx.paused.store(true, Ordering::SeqCst);
        let r = self.runsc.run(&["pause", sandbox_id]).await.map(drop);
        if r.is_err() && self.runsc.is_running(sandbox_id).await {
            sbx.paused.store(false, Ordering::SeqCst);
        }
        r
    }

    async fn suspend(&self, sandbox_id: &str) -> Result<crate::Suspension, BackendError> {
        self.started(sandbox_id).await?;
        self.suspend_sandbox(sandbox_id).await
    }

    async fn resume(&self, sandbox_id: &str) -> Result<(), BackendError> {
        use std::sync::atomic::Ordering;
        self.started(sandbox_id).await?;
        if self.restore_released(sandbox_id).await? {
            return Ok(());
        }
        let sbx = self.get(sandbox_id)?;
        // A checkpoint's freeze may still be on its way: resume after it, never before
        // (a `runsc pause` landing after the resume would leave the sandbox frozen).
        let freezing = sbx.freezing.lock().map(|mut f| f.take()).unwrap_or(None);
        if let Some(freeze) = freezing {
            if !freeze.await.unwrap_or(false) && self.runsc.is_running(sandbox_id).await {
                sbx.paused.store(false, Ordering::SeqCst);
                return Ok(());
            }
        }
        self.runsc.run(&["resume", sandbox_id]).await?;
        sbx.paused.store(false, Ordering::SeqCst);
        Ok(())
    }

    fn cpu_usage_nanos(&self, sandbox_id: &str) -> Option<u64> {
        self.get(sandbox_id).ok()?;
        stats::cgroup_cpu_nanos(sandbox_id)
    }

    async fn close(&self) {
        // runsc leaves the parent of its sandboxes' cgroups; remove it once empty.
        for ctl in [
            "memory",
            "pids",
            "cpu",
            "cpu,cpuacct",
            "cpuacct",
            "unified",
            "",
        ] {
            let dir = Path::new("/sys/fs/cgroup").join(ctl);
            let _ = std::fs::remove_dir(dir.join(bundle::CGROUP_PARENT));
        }
    }
}
