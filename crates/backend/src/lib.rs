//! Isolation backends for Cleanroom.
//!
//! Every backend (Linux namespaces today, gVisor and microVMs later) sits behind the one
//! [`Backend`] trait so the server never learns how isolation is achieved: it provisions a
//! sandbox, spawns processes in it with plain pipes for stdio, signals them, and tears the
//! sandbox down. `reconcile` lets a restarted server reclaim what a crashed one left behind.

pub mod error;
pub mod files;
pub mod gvisor;
pub mod linux;
pub mod runtimes;
pub mod types;

pub use cleanroom_vocab::{Capability, Runtime};
pub use error::BackendError;
pub use types::*;

use async_trait::async_trait;

/// One isolation technology. Implementations must be safe to call from many tasks at once.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Stable backend name recorded on every sandbox (`linux`, `gvisor`, `firecracker`).
    fn name(&self) -> &'static str;

    /// What this backend truly enforces. CreateSandbox fails closed
    /// (`backend_capability_mismatch`) when a policy needs one that is missing; the wire and
    /// the attestation carry each one's stable key ([`Capability::as_str`]).
    fn capabilities(&self) -> Vec<Capability>;

    /// The runtime this backend is (for a set of runtimes, [`runtimes::Runtimes`]: the
    /// server's default). Default: `linux`.
    fn default_runtime(&self) -> Runtime {
        Runtime::Linux
    }

    /// What sandboxes made on `runtime` get: `runtime_unavailable` when this backend
    /// cannot make them. Default: [`Backend::capabilities`] for [`Backend::default_runtime`].
    fn capabilities_of(&self, runtime: Runtime) -> Result<Vec<Capability>, BackendError> {
        if runtime == self.default_runtime() {
            Ok(self.capabilities())
        } else {
            Err(BackendError::RuntimeUnavailable(format!(
                "runtime {runtime} is not available on this server"
            )))
        }
    }

    /// What implements `runtime` here beyond the host kernel, for attestations (gvisor:
    /// `runsc --version`'s line and the platform). Default: nothing more to say.
    fn runtime_version(&self, runtime: Runtime) -> Option<String> {
        let _ = runtime;
        None
    }

    /// The runtime a live sandbox runs on. Default: [`Backend::default_runtime`].
    fn runtime_of_sandbox(&self, sandbox_id: &str) -> Runtime {
        let _ = sandbox_id;
        self.default_runtime()
    }

    /// Where the workspace and the trusted CA files are inside this backend's sandboxes
    /// (the default working directory of executions, the CA variables of the guest's
    /// environment). Default: [`GuestLayout::STANDARD`].
    fn guest_layout(&self) -> GuestLayout {
        GuestLayout::STANDARD
    }

    /// Build the isolated environment and wait until it can run processes.
    async fn provision(&self, spec: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError>;

    /// Start one process inside a provisioned sandbox.
    async fn spawn(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError>;

    /// Deliver a signal to a process (and its process group) started by [`Backend::spawn`].
    async fn signal(
        &self,
        sandbox_id: &str,
        process: ProcessId,
        signal: i32,
    ) -> Result<(), BackendError>;

    /// Kill every process and release every resource of the sandbox. Idempotent.
    async fn terminate(&self, sandbox_id: &str) -> Result<(), BackendError>;

    /// After a restart: kill and remove everything left by sandboxes the server no longer
    /// runs. `records` are what the store remembers; stray on-disk state is swept as well.
    async fn reconcile(&self, records: &[ReconcileRecord])
        -> Result<ReconcileReport, BackendError>;

    /// Open a regular file inside the sandbox (path as the sandbox sees it) **with the
    /// sandbox's own identity**: the caller gets at most what the sandbox's processes could
    /// open themselves, never more through the server's privileges. Files on kernel pseudo
    /// filesystems, devices and FIFOs are refused. The returned file is only to be read
    /// from (or, for `Write`, written to) — never resolved further. Default: not supported.
    async fn open_file(
        &self,
        sandbox_id: &str,
        path: &str,
        mode: OpenMode,
    ) -> Result<std::fs::File, BackendError> {
        let _ = (sandbox_id, path, mode);
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot open sandbox files",
            self.name()
        )))
    }

    /// Read up to `max_bytes` of a regular file inside the sandbox, opened through
    /// [`Backend::open_file`] (the sandbox's identity); the read itself runs off the async
    /// runtime.
    async fn read_file(
        &self,
        sandbox_id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<FileContent, BackendError> {
        let file = self.open_file(sandbox_id, path, OpenMode::Read).await?;
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let size = file
                .metadata()
                .map_err(|e| BackendError::Io {
                    context: "stat".into(),
                    source: e,
                })?
                .len();
            let mut content = Vec::new();
            (&file)
                .take(max_bytes)
                .read_to_end(&mut content)
                .map_err(|e| BackendError::Io {
                    context: "read".into(),
                    source: e,
                })?;
            Ok(FileContent {
                truncated: size > content.len() as u64,
                size,
                content,
            })
        })
        .await
        .map_err(|e| BackendError::Unavailable(format!("read task: {e}")))?
    }

    /// Read `length` bytes (0: to the end) of a regular file from `offset`, opened with
    /// the sandbox's own identity as [`Backend::open_file`] opens. Default: that
    /// descriptor ([`files::FileRead::File`]); a runtime whose descriptors cannot leave the
    /// sandbox streams the bytes instead.
    async fn read_range(
        &self,
        sandbox_id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<files::FileRead, BackendError> {
        let _ = (offset, length);
        let file = self.open_file(sandbox_id, path, OpenMode::Read).await?;
        Ok(files::FileRead::File(file))
    }

    /// Carry out a files-API operation inside the sandbox **with the sandbox's own
    /// identity** (see [`files`]): the answer, the descriptors the operation hands back
    /// (only to be read from or written to, never resolved further) and, for a stream, its
    /// outcome. Default: not supported.
    async fn file_op(
        &self,
        sandbox_id: &str,
        op: files::FileOp,
        fds: Vec<std::os::fd::OwnedFd>,
    ) -> Result<files::FileReply, BackendError> {
        let _ = (sandbox_id, op, fds);
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot operate on sandbox files",
            self.name()
        )))
    }

    /// The server is stopping and has terminated every sandbox: release per-server state
    /// (empty runtime and cgroup directories). Default: nothing to release.
    async fn close(&self) {}

    /// A live sandbox's resource usage (CPU time, memory, pids, writable filesystems).
    /// Default: not supported.
    async fn usage(&self, sandbox_id: &str) -> Result<Usage, BackendError> {
        let _ = sandbox_id;
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot report usage",
            self.name()
        )))
    }

    /// Freeze every process of the sandbox (no CPU time until [`Backend::resume`]); returns
    /// once the freeze is confirmed. Default: not supported (`pause_resume` not declared).
    async fn pause(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let _ = sandbox_id;
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot pause sandboxes",
            self.name()
        )))
    }

    /// Thaw a paused sandbox; its processes continue exactly where they stopped.
    async fn resume(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let _ = sandbox_id;
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot resume sandboxes",
            self.name()
        )))
    }

    /// Suspend an idle sandbox (the engine's suspend on idle): freeze it like
    /// [`Backend::pause`] and, where the runtime can bring it back faithfully, release its
    /// memory too. [`Backend::resume`] undoes either. Default: a pause that keeps the
    /// memory (no runtime here can save a sandbox's memory without CRIU).
    async fn suspend(&self, sandbox_id: &str) -> Result<Suspension, BackendError> {
        self.pause(sandbox_id).await?;
        Ok(Suspension::Frozen {
            memory_kept: "the runtime keeps a paused sandbox's memory".into(),
        })
    }

    /// A TCP socket (IPv4, non-blocking, close-on-exec, not connected) made inside the
    /// sandbox's network namespace, for the server to connect to one of the sandbox's own
    /// ports on its loopback (`sandbox expose`, `port-forward`): the connection exists only
    /// in the sandbox's namespace, so it reaches nothing but the sandbox itself and gives
    /// the sandbox no new way out. Default: not supported (`inbound_connections` not
    /// declared).
    async fn inbound_socket(&self, sandbox_id: &str) -> Result<std::os::fd::OwnedFd, BackendError> {
        let _ = sandbox_id;
        Err(BackendError::MissingCapability {
            runtime: self.name(),
            capability: Capability::InboundConnections,
        })
    }

    /// For runtimes whose network stack the server cannot enter (gvisor: the sentry's
    /// own): a connection to `port` on the sandbox's loopback, made by a relay process
    /// inside the sandbox ([`gvisor::relay`]). `PortClosed` when nothing accepts there.
    /// Default: not supported (such a runtime uses [`Backend::inbound_socket`]).
    async fn inbound_relay(
        &self,
        sandbox_id: &str,
        port: u16,
    ) -> Result<gvisor::relay::Relay, BackendError> {
        let _ = (sandbox_id, port);
        Err(BackendError::MissingCapability {
            runtime: self.name(),
            capability: Capability::InboundConnections,
        })
    }

    /// CPU time the sandbox's processes used so far, in nanoseconds, where the backend
    /// accounts it (`None`: unknown).
    fn cpu_usage_nanos(&self, sandbox_id: &str) -> Option<u64> {
        let _ = sandbox_id;
        None
    }

    /// Save the sandbox's memory, processes and writable filesystems into `dest` (a new
    /// empty directory of the server's), as [`SandboxSpec::checkpoint`] can restore. With
    /// `leave_running` the sandbox continues afterwards; without, its processes are
    /// stopped (the caller tears it down). The caller makes sure no execution is attached
    /// (their stdio is the server's, which no image can hold). Default: not supported
    /// (`checkpoint_restore` not declared).
    async fn checkpoint(
        &self,
        sandbox_id: &str,
        dest: &std::path::Path,
        leave_running: bool,
    ) -> Result<(), BackendError> {
        let _ = (sandbox_id, dest, leave_running);
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot checkpoint sandboxes",
            self.name()
        )))
    }

    /// What a checkpoint made on `runtime` is compatible with (gVisor: the `runsc`
    /// version line): recorded with each checkpoint, and a restore of one recorded with
    /// another is refused. `None`: this runtime makes no checkpoints.
    fn checkpoint_format(&self, runtime: Runtime) -> Option<String> {
        let _ = runtime;
        None
    }

    /// Whether [`Backend::capture_filesystem`] reads `sandbox_id` while it runs (its
    /// runtime captures from inside the sandbox, which a frozen sandbox cannot do):
    /// the caller then neither freezes it nor captures it while paused. Default: no
    /// (the caller freezes the sandbox around the capture).
    fn capture_runs_live(&self, sandbox_id: &str) -> bool {
        let _ = sandbox_id;
        false
    }

    /// Copy the sandbox's writable state (image upper layer, `/tmp`, `/root`,
    /// `/workspace`) into `dest`, a new empty directory of the server's, as a layer
    /// [`SandboxSpec::restore`] can use. The sandbox is frozen by the caller. Never
    /// follows a link the sandbox made; never includes the setup's own files (resolver
    /// config, CA). Stores what the sandbox wrote as data (no set-id bits, no FIFOs;
    /// their metadata in a manifest the restore re-applies inside the sandbox), keeps
    /// holes and hard links, and allocates at most `budget` bytes on the host: past it,
    /// [`BackendError::NoSpace`] (the caller removes `dest`). Default: not supported
    /// (`filesystem_snapshots` not declared).
    async fn capture_filesystem(
        &self,
        sandbox_id: &str,
        dest: &std::path::Path,
        budget: u64,
    ) -> Result<CaptureStats, BackendError> {
        let _ = (sandbox_id, dest, budget);
        Err(BackendError::Unavailable(format!(
            "backend {:?} cannot capture filesystems",
            self.name()
        )))
    }
}
