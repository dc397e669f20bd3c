//! The server's runtimes behind one [`Backend`]: each sandbox is provisioned on the runtime
//! its [`SandboxSpec::runtime`] names (`linux`, `gvisor`), and every later call for it goes
//! to the backend that made it. A runtime this server does not have is refused with
//! `runtime_unavailable` — never served by another runtime instead. A call that needs a
//! capability the sandbox's runtime lacks (pause, snapshots, checkpoints) is refused with
//! `backend_capability_mismatch` naming it.

use crate::Backend;
use crate::{
    files, BackendError, Capability, CaptureStats, FileContent, GuestLayout, OpenMode,
    ProcessHandle, ProcessId, ProcessSpec, ProvisionedSandbox, ReconcileRecord, ReconcileReport,
    Runtime, SandboxSpec, Usage,
};
use async_trait::async_trait;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The runtimes of one server (see the module doc).
pub struct Runtimes {
    default: Runtime,
    linux: Arc<dyn Backend>,
    /// The gVisor backend, or why this server has none.
    gvisor: Result<Arc<dyn Backend>, String>,
    /// Which runtime made each live sandbox.
    of: Mutex<HashMap<String, Runtime>>,
}

impl Runtimes {
    /// `default` must be available (`Err` says why not).
    pub fn new(
        default: Runtime,
        linux: Arc<dyn Backend>,
        gvisor: Result<Arc<dyn Backend>, String>,
    ) -> Result<Runtimes, String> {
        if let (Runtime::Gvisor, Err(why)) = (default, &gvisor) {
            return Err(format!("default runtime gvisor is unavailable: {why}"));
        }
        Ok(Runtimes {
            default,
            linux,
            gvisor,
            of: Mutex::new(HashMap::new()),
        })
    }

    /// The backend of `runtime`, or `runtime_unavailable`.
    pub fn get(&self, runtime: Runtime) -> Result<&Arc<dyn Backend>, BackendError> {
        match runtime {
            Runtime::Linux => Ok(&self.linux),
            Runtime::Gvisor => self.gvisor.as_ref().map_err(|why| {
                BackendError::RuntimeUnavailable(format!(
                    "runtime gvisor is not available on this server: {why}"
                ))
            }),
        }
    }

    fn runtime_of(&self, sandbox_id: &str) -> Runtime {
        self.of
            .lock()
            .ok()
            .and_then(|m| m.get(sandbox_id).copied())
            .unwrap_or(Runtime::Linux)
    }

    /// The backend that runs `sandbox_id` (the Linux one for a sandbox it never saw: a
    /// previous process's, which only the Linux backend reconciles by id).
    fn of(&self, sandbox_id: &str) -> &Arc<dyn Backend> {
        self.get(self.runtime_of(sandbox_id)).unwrap_or(&self.linux)
    }

    /// The sandbox's backend, when it declares `cap`; else `backend_capability_mismatch`.
    fn with(&self, sandbox_id: &str, cap: Capability) -> Result<&Arc<dyn Backend>, BackendError> {
        let b = self.of(sandbox_id);
        if b.capabilities().contains(&cap) {
            Ok(b)
        } else {
            Err(BackendError::MissingCapability {
                runtime: b.name(),
                capability: cap,
            })
        }
    }
}

#[async_trait]
impl Backend for Runtimes {
    fn name(&self) -> &'static str {
        self.default.as_str()
    }

    fn capabilities(&self) -> Vec<Capability> {
        self.get(self.default)
            .map(|b| b.capabilities())
            .unwrap_or_default()
    }

    fn default_runtime(&self) -> Runtime {
        self.default
    }

    fn capabilities_of(&self, runtime: Runtime) -> Result<Vec<Capability>, BackendError> {
        self.get(runtime).map(|b| b.capabilities())
    }

    fn runtime_version(&self, runtime: Runtime) -> Option<String> {
        self.get(runtime).ok()?.runtime_version(runtime)
    }

    fn runtime_of_sandbox(&self, sandbox_id: &str) -> Runtime {
        self.runtime_of(sandbox_id)
    }

    fn guest_layout(&self) -> GuestLayout {
        self.linux.guest_layout()
    }

    async fn provision(&self, spec: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
        let backend = self.get(spec.runtime)?;
        // Never a fresh sandbox instead of a restore the runtime cannot do.
        if spec.checkpoint.is_some()
            && !backend
                .capabilities()
                .contains(&Capability::CheckpointRestore)
        {
            return Err(BackendError::MissingCapability {
                runtime: backend.name(),
                capability: Capability::CheckpointRestore,
            });
        }
        if let Ok(mut m) = self.of.lock() {
            m.insert(spec.sandbox_id.clone(), spec.runtime);
        }
        let mut p = backend.provision(spec).await?;
        p.info
            .insert("runtime".into(), spec.runtime.as_str().into());
        Ok(p)
    }

    async fn spawn(&self, id: &str, spec: ProcessSpec) -> Result<ProcessHandle, BackendError> {
        self.of(id).spawn(id, spec).await
    }

    async fn signal(&self, id: &str, process: ProcessId, signal: i32) -> Result<(), BackendError> {
        self.of(id).signal(id, process, signal).await
    }

    async fn terminate(&self, id: &str) -> Result<(), BackendError> {
        let r = self.of(id).terminate(id).await;
        if r.is_ok() {
            if let Ok(mut m) = self.of.lock() {
                m.remove(id);
            }
        }
        r
    }

    async fn reconcile(
        &self,
        records: &[ReconcileRecord],
    ) -> Result<ReconcileReport, BackendError> {
        // A record's runtime is in its provision facts; the Linux backend gets the rest.
        let is_gvisor = |r: &&ReconcileRecord| {
            r.provisioned
                .as_ref()
                .and_then(|p| p.info.get("runtime"))
                .is_some_and(|rt| rt == Runtime::Gvisor.as_str())
        };
        let linux: Vec<ReconcileRecord> =
            records.iter().filter(|r| !is_gvisor(r)).cloned().collect();
        let gvisor: Vec<ReconcileRecord> = records.iter().filter(is_gvisor).cloned().collect();
        let mut report = self.linux.reconcile(&linux).await?;
        if let Ok(g) = &self.gvisor {
            let more = g.reconcile(&gvisor).await?;
            report.killed_sandboxes.extend(more.killed_sandboxes);
            report.removed_dirs.extend(more.removed_dirs);
        }
        Ok(report)
    }

    async fn open_file(
        &self,
        id: &str,
        path: &str,
        mode: OpenMode,
    ) -> Result<std::fs::File, BackendError> {
        self.of(id).open_file(id, path, mode).await
    }

    async fn read_file(
        &self,
        id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<FileContent, BackendError> {
        self.of(id).read_file(id, path, max_bytes).await
    }

    async fn read_range(
        &self,
        id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<files::FileRead, BackendError> {
        self.of(id).read_range(id, path, offset, length).await
    }

    async fn file_op(
        &self,
        id: &str,
        op: files::FileOp,
        fds: Vec<std::os::fd::OwnedFd>,
    ) -> Result<files::FileReply, BackendError> {
        self.of(id).file_op(id, op, fds).await
    }

    async fn close(&self) {
        self.linux.close().await;
        if let Ok(g) = &self.gvisor {
            g.close().await;
        }
    }

    async fn usage(&self, id: &str) -> Result<Usage, BackendError> {
        self.of(id).usage(id).await
    }

    async fn pause(&self, id: &str) -> Result<(), BackendError> {
        self.with(id, Capability::PauseResume)?.pause(id).await
    }

    async fn resume(&self, id: &str) -> Result<(), BackendError> {
        self.with(id, Capability::PauseResume)?.resume(id).await
    }

    async fn suspend(&self, id: &str) -> Result<crate::Suspension, BackendError> {
        self.with(id, Capability::PauseResume)?.suspend(id).await
    }

    fn cpu_usage_nanos(&self, id: &str) -> Option<u64> {
        self.of(id).cpu_usage_nanos(id)
    }

    async fn inbound_socket(&self, id: &str) -> Result<std::os::fd::OwnedFd, BackendError> {
        self.with(id, Capability::InboundConnections)?
            .inbound_socket(id)
            .await
    }

    async fn inbound_relay(
        &self,
        id: &str,
        port: u16,
    ) -> Result<crate::gvisor::relay::Relay, BackendError> {
        self.with(id, Capability::InboundConnections)?
            .inbound_relay(id, port)
            .await
    }

    async fn checkpoint(
        &self,
        id: &str,
        dest: &Path,
        leave_running: bool,
    ) -> Result<(), BackendError> {
        self.with(id, Capability::CheckpointRestore)?
            .checkpoint(id, dest, leave_running)
            .await
    }

    fn checkpoint_format(&self, runtime: Runtime) -> Option<String> {
        self.get(runtime).ok()?.checkpoint_format(runtime)
    }

    fn capture_runs_live(&self, id: &str) -> bool {
        self.of(id).capture_runs_live(id)
    }

    async fn capture_filesystem(
        &self,
        id: &str,
        dest: &Path,
        budget: u64,
    ) -> Result<CaptureStats, BackendError> {
        self.with(id, Capability::FilesystemSnapshots)?
            .capture_filesystem(id, dest, budget)
            .await
    }
}
