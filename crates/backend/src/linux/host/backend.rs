//! The default backend: Linux namespaces, no daemons, no VM — the [`Backend`] object the
//! server holds (this file runs in the server process).
//!
//! Each sandbox is one `cleanroom __sandbox-init` process tree (see
//! [`crate::linux::sandbox::shim`] and [`crate::linux::sandbox::pid1`]) in fresh
//! mount, pid, net, uts, ipc and cgroup namespaces. The server talks to its pid 1 over a
//! seqpacket socket ([`crate::linux::protocol`]); killing pid 1 kills the whole pid namespace, which
//! releases every mount and the network namespace with it. The only host-visible state is
//! the sandbox's directory under the backend's state root, removed on terminate and swept
//! by [`Backend::reconcile`].

use super::{
    cgroup, freeze, idslots, nspawn_ids, procinfo, runtime_fs, sweep, usage, zygote_client,
};
use crate::linux::sys::{self, pidfd};
use crate::linux::{config, protocol, served};

use crate::files::{FileAnswer, FileOp};
use crate::{
    Backend, BackendError, ExitStatus, ProcessHandle, ProcessId, ProcessSpec, ProvisionedSandbox,
    ReconcileRecord, ReconcileReport, SandboxSpec,
};
use async_trait::async_trait;
use protocol::Request;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long a sandbox may take to become ready before provisioning fails.
pub(super) const PROVISION_TIMEOUT: Duration = Duration::from_secs(30);
/// Where a root server keeps per-sandbox mountpoints (traversable, nothing secret inside).
pub const RUNTIME_BASE: &str = "/run/cleanroom";
/// How long the server waits for a sandbox to open a file for a file RPC.
pub(super) const OPEN_TIMEOUT: Duration = Duration::from_secs(15);

/// Linux namespaces backend.
pub struct LinuxBackend {
    /// Per-sandbox mountpoint directories. For a root server this is
    /// `/run/cleanroom/<instance>`: the sandbox's mapped root must traverse it, while the
    /// state dir (database, logs) stays private to the server.
    runtime_root: PathBuf,
    /// Forks every sandbox's shim (started on first use; see [`zygote_client`]).
    pub(super) zygote: zygote_client::Zygote,
    pub(super) cgroups: cgroup::Mode,
    /// Marks this server instance alive so other servers never sweep it (root server).
    instance_lock: Mutex<Option<sweep::InstanceLock>>,
    pub(super) sandboxes: Mutex<HashMap<String, Arc<LinuxSandbox>>>,
}

pub(super) struct LinuxSandbox {
    /// pid 1's control socket, one fd shared with the reader task (sends here, reads
    /// there): every fd per idle sandbox counts against the server's descriptor limit.
    pub(super) control: Arc<OwnedFd>,
    pub(super) send_lock: Mutex<()>,
    pub(super) init_pid: i32,
    pub(super) init_start: u64,
    pub(super) state_dir: PathBuf,
    pub(super) next_id: AtomicU64,
    pub(super) exits: Arc<Mutex<HashMap<ProcessId, oneshot::Sender<ExitStatus>>>>,
    /// File RPCs waiting for pid 1's helper to open their file.
    pub(super) opens: Waiters<Opened>,
    /// The shim (pid 1's parent), killed when dropped; its exit means every process of
    /// the sandbox is gone.
    pub(super) shim: tokio::sync::Mutex<Option<Shim>>,
    pub(super) cgroups: Vec<PathBuf>,
    /// The host-wide lease of this sandbox's id block, held until it is torn down.
    pub(super) id_lease: Mutex<Option<idslots::IdLease>>,
    /// Host uid/gid of the sandbox's id 0 (root server).
    pub(super) id_base: Option<(u32, u32)>,
    /// The image root's copy-on-write upper directory (from pid 1), for snapshots.
    pub(super) upper: Option<OwnedFd>,
    /// The snapshot layers this sandbox was restored from (its image-root layers are
    /// carried into its own snapshots below its upper).
    pub(super) restored_from: Option<PathBuf>,
}

impl LinuxBackend {
    /// `state_root` holds one directory per sandbox; `init_exe` is the `cleanroom` binary
    /// (executed once as `__sandbox-init`: the zygote that forks every sandbox's shim).
    pub fn new(state_root: PathBuf, init_exe: PathBuf) -> Result<Self, BackendError> {
        let instance = cgroup::instance_key(&state_root);
        let root = nix::unistd::geteuid().is_root();
        // The instance lock comes first: a server sweeping dead instances must never see
        // this one's directories without its lock held.
        let instance_lock = if root {
            Some(
                sweep::InstanceLock::acquire(Path::new(RUNTIME_BASE), &instance)
                    .map_err(|e| BackendError::io("lock the server instance", e))?,
            )
        } else {
            None
        };
        let runtime_root = if root {
            PathBuf::from(RUNTIME_BASE).join(&instance)
        } else {
            state_root
        };
        std::fs::create_dir_all(&runtime_root)
            .map_err(|e| BackendError::io(format!("create {}", runtime_root.display()), e))?;
        if root {
            // Speed, not isolation: on failure the mountpoints stay on whatever /run is.
            match runtime_fs::ensure_tmpfs(&runtime_root) {
                Ok(runtime_fs::RuntimeFs::Mounted) => {
                    tracing::info!(dir = %runtime_root.display(), "runtime dir on a tmpfs of its own (/run is not a tmpfs here)")
                }
                Ok(runtime_fs::RuntimeFs::AlreadyTmpfs) => {}
                Err(e) => {
                    tracing::warn!(dir = %runtime_root.display(), error = %e, "runtime dir stays on a disk filesystem")
                }
            }
        }
        let cgroups = cgroup::Mode::detect(&instance);
        if root {
            let swept = sweep::sweep_dead(Path::new(RUNTIME_BASE), &instance, &cgroups);
            if !swept.instances.is_empty() {
                tracing::info!(instances = ?swept.instances, killed = swept.killed, "swept dead servers");
            }
        }
        tracing::info!(cgroups = %cgroups.describe(), runtime = %runtime_root.display(), "linux backend ready");
        Ok(LinuxBackend {
            runtime_root,
            zygote: zygote_client::Zygote::new(init_exe),
            cgroups,
            instance_lock: Mutex::new(instance_lock),
            sandboxes: Mutex::new(HashMap::new()),
        })
    }

    /// Remove the runtime root if it is empty (a root server's tmpfs detached first): a
    /// sandbox that could not be terminated keeps its state, and the runtime tmpfs with
    /// it, for the next server's sweep. Also what a server whose start failed after the
    /// backend was made must call: nothing else undoes the mount. Whether it is gone.
    pub fn release_runtime_dir(&self) -> bool {
        if self.runtime_root.starts_with(RUNTIME_BASE) {
            runtime_fs::release(&self.runtime_root)
        } else {
            std::fs::remove_dir(&self.runtime_root).is_ok()
        }
    }

    pub(super) fn get(&self, id: &str) -> Result<Arc<LinuxSandbox>, BackendError> {
        self.sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("backend lock poisoned".into()))?
            .get(id)
            .cloned()
            .ok_or_else(|| BackendError::SandboxNotFound(id.to_string()))
    }

    /// Lease a private block of host ids for one sandbox (root server), host-wide: no
    /// other live sandbox of any server gets the same block (see [`idslots`]). Blocks start
    /// high to stay clear of the host's own users and /etc/subuid allocations.
    pub(super) fn allocate_ids(&self) -> Option<idslots::IdLease> {
        idslots::lease(
            &idslots::slots_dir(Path::new(RUNTIME_BASE)),
            nspawn_ids::host_lock_dir(),
        )
    }

    /// The sandbox's root (a host id of its range, no host privileges) must be able to reach
    /// its own mountpoint: traversable parents, a mountpoint it owns.
    pub(super) fn prepare_for_mapped_root(&self, dir: &Path, r: config::IdRange) {
        use std::os::unix::fs::PermissionsExt;
        let id = Some(nix::unistd::Uid::from_raw(r.host_base));
        let _ = nix::unistd::chown(
            &dir.join("root"),
            id,
            Some(nix::unistd::Gid::from_raw(r.host_base)),
        );
        let mut parents = vec![dir.to_path_buf(), self.runtime_root.clone()];
        parents.extend(self.runtime_root.parent().map(Path::to_path_buf));
        // (The runtime root holds only empty mountpoints; the state dir stays private.)
        for d in parents {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o711));
        }
    }

    pub(super) fn dir_for(&self, id: &str) -> Result<PathBuf, BackendError> {
        // Ids come from the server, but never let one escape the state root.
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(BackendError::LaunchFailed(format!(
                "invalid sandbox id {id:?}"
            )));
        }
        Ok(self.runtime_root.join(id))
    }
}

/// A sandbox's shim by pidfd; dropping the handle kills it (and pid 1 with it, by its
/// parent-death signal), as a failed launch or a dropped sandbox must.
pub(super) struct Shim(pub(super) pidfd::PidFd);

impl Drop for Shim {
    fn drop(&mut self) {
        self.0.kill();
    }
}

impl LinuxSandbox {
    pub(super) fn send(
        &self,
        req: &Request,
        fds: &[std::os::fd::RawFd],
    ) -> Result<(), BackendError> {
        let _guard = self
            .send_lock
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?;
        protocol::send(self.control.as_raw_fd(), req, fds)
            .map_err(|e| BackendError::io("sandbox control socket", e))
    }
}

/// Pid 1's (or its file helper's) answer to a file request and the fds that came with it.
pub(super) type Opened = (Result<FileAnswer, served::FileRefusal>, Vec<OwnedFd>);
/// Callers waiting for pid 1's answer to request `id`.
pub(super) type Waiters<T> = Arc<Mutex<HashMap<u64, oneshot::Sender<T>>>>;

/// Kill a sandbox's pid 1 (if it is still the same process) and wait for it to vanish.
async fn kill_init(pid: i32, start: u64) -> bool {
    if !procinfo::is_same_process(pid, start) {
        return false;
    }
    // Pid identity was just checked against its start time.
    let _ = sys::kill(pid, nix::sys::signal::Signal::SIGKILL);
    for _ in 0..500 {
        if !procinfo::is_same_process(pid, start) {
            break;
        }
        // A zombie still matches its start time until reaped; treat zombies as gone.
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            if stat
                .rsplit(')')
                .next()
                .map(|r| r.trim_start().starts_with('Z'))
                .unwrap_or(false)
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Remove a sandbox's state directory and cgroups on the blocking pool: a large directory
/// tree, or cgroups that stay busy for a moment (their removal retries with sleeps), must
/// never hold a runtime worker that other sandboxes' traffic needs.
async fn remove_state(dir: PathBuf, cgroups: Vec<PathBuf>) {
    let work = move || {
        remove_dir(&dir);
        cgroup::remove_eventually(cgroup::remove(&cgroups));
    };
    if let Err(e) = tokio::task::spawn_blocking(work).await {
        tracing::warn!(error = %e, "sandbox state removal did not finish");
    }
}

pub(super) fn remove_dir(dir: &Path) -> Option<PathBuf> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Some(dir.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "could not remove sandbox directory");
            None
        }
    }
}

#[async_trait]
impl Backend for LinuxBackend {
    fn name(&self) -> &'static str {
        "linux"
    }

    fn capabilities(&self) -> Vec<crate::Capability> {
        use crate::Capability as C;
        // Only what this backend (with the server's egress gateway on the tun device it
        // hands back) truly enforces.
        let mut caps = vec![
            C::PolicyImmutability,
            // The netns's only route is the tun device; the gateway drops what policy
            // does not allow.
            C::NetworkDefaultDeny,
            C::NetworkEgress,
            C::NetworkHostPortFiltering,
            C::DnsControlOrEquivalent,
            C::AuditEventEmission,
            // Values stay in the server's gateway; the guest gets placeholders, and TLS to
            // bound hosts is terminated with a CA this backend installs in the sandbox only.
            C::SecretIsolation,
            C::PidIsolation,
            C::MountIsolation,
            // Digest-pinned OCI image roots (overlay on a shared, verified cache).
            C::OciImages,
        ];
        // The cgroup freezer (v1 freezer controller or v2 cgroup.freeze).
        if self.cgroups.can_freeze() {
            caps.push(C::PauseResume);
            // A capture needs the sandbox frozen for a consistent copy.
            caps.push(C::FilesystemSnapshots);
        }
        // Volumes are idmapped into the sandbox's id range: a root server only.
        if nix::unistd::geteuid().is_root() {
            caps.push(C::NamedVolumes);
            // Entering a sandbox's network namespace needs CAP_SYS_ADMIN over it and in
            // the server's own user namespace (setns): a root server only.
            caps.push(C::InboundConnections);
        }
        caps
    }

    async fn provision(&self, spec: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
        self.provision_sandbox(spec).await
    }

    async fn spawn(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError> {
        self.start_process(sandbox_id, spec)
    }

    async fn signal(
        &self,
        sandbox_id: &str,
        process: ProcessId,
        signal: i32,
    ) -> Result<(), BackendError> {
        let sbx = self.get(sandbox_id)?;
        sbx.send(
            &Request::Signal {
                id: process,
                signal,
            },
            &[],
        )
    }

    async fn terminate(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let sbx = self
            .sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .remove(sandbox_id);
        if let Some(sbx) = sbx {
            // The shim kills pid 1 on SIGTERM (through a pidfd of its own unreaped child:
            // exactly this sandbox's, shimwait.rs), and the kernel kills the rest of the pid
            // namespace. A paused sandbox: the kill takes effect once thawed.
            let shim = sbx.shim.lock().await.take();
            if let Some(shim) = &shim {
                let _ = shim.0.signal(libc::SIGTERM);
            }
            freeze::thaw_quietly(&sbx.cgroups);
            match shim {
                // The shim reaps pid 1, and pid 1 is reaped only after every process of its
                // pid namespace is gone: the shim's exit is the precise "all dead" signal.
                Some(shim) => {
                    let wait = tokio::time::timeout(Duration::from_secs(10), shim.0.exited());
                    if !matches!(wait.await, Ok(Ok(()))) {
                        // A shim that does not answer: SIGKILL it (pid 1 follows by its
                        // parent-death signal) and make sure of pid 1 by pid and start
                        // time, waiting until it is gone (bounded).
                        shim.0.kill();
                        kill_init(sbx.init_pid, sbx.init_start).await;
                    }
                }
                None => {
                    // Unreachable in practice (one teardown per sandbox takes the shim):
                    // the start-time-checked kill used for sandboxes of earlier runs.
                    kill_init(sbx.init_pid, sbx.init_start).await;
                }
            }
            remove_state(sbx.state_dir.clone(), sbx.cgroups.clone()).await;
            // Only now, with every process of the sandbox gone, may its ids be reused.
            if let Ok(mut lease) = sbx.id_lease.lock() {
                lease.take();
            }
        } else {
            // Unknown to this process (e.g. created before a restart): just sweep its state.
            remove_state(self.dir_for(sandbox_id)?, self.cgroups.dirs_for(sandbox_id)).await;
        }
        Ok(())
    }

    async fn open_file(
        &self,
        sandbox_id: &str,
        path: &str,
        mode: crate::OpenMode,
    ) -> Result<std::fs::File, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let id = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        sbx.opens
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .insert(id, tx);
        let forget = || {
            if let Ok(mut m) = sbx.opens.lock() {
                m.remove(&id);
            }
        };
        let req = Request::OpenFile {
            id,
            path: path.to_string(),
            mode,
        };
        if let Err(e) = sbx.send(&req, &[]) {
            forget();
            return Err(e);
        }
        let (result, fds) = match tokio::time::timeout(OPEN_TIMEOUT, rx).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(_)) => return Err(BackendError::Unavailable("sandbox is gone".into())),
            Err(_) => {
                forget();
                return Err(BackendError::FileNotReadable(format!(
                    "the sandbox did not open {path:?} in time"
                )));
            }
        };
        // (The size pid 1 saw is informational; the server stats the fd itself.)
        result?;
        // The fd comes from inside the sandbox: check it again before reading from it.
        Ok(std::fs::File::from(served::take_served(
            fds,
            libc::O_RDONLY,
        )?))
    }

    async fn usage(&self, sandbox_id: &str) -> Result<crate::Usage, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let (dirs, pid, start) = (sbx.cgroups.clone(), sbx.init_pid, sbx.init_start);
        tokio::task::spawn_blocking(move || usage::read(&dirs, pid, start))
            .await
            .map_err(|e| BackendError::Unavailable(format!("usage task: {e}")))
    }

    async fn close(&self) {
        let emptied = self.release_runtime_dir();
        // A sandbox cgroup still busy at the stop (its last processes exiting; the
        // background retry of its removal ends with this process) keeps its instance
        // cgroup: that is a leftover too.
        let mut cgroups_gone = true;
        for dir in self.cgroups.instance_dirs() {
            if std::fs::remove_dir(&dir).is_err() && dir.exists() {
                cgroups_gone = false;
            }
        }
        // With leftovers, the lock file stays (unlocked once we exit) so that the next
        // server recognises this instance as dead and sweeps it.
        if let Some(lock) = self.instance_lock.lock().ok().and_then(|mut l| l.take()) {
            if emptied && cgroups_gone {
                lock.release();
            } else {
                tracing::warn!(
                    runtime_dir_removed = emptied,
                    cgroups_removed = cgroups_gone,
                    "leftovers at stop: the next server sweeps them"
                );
            }
        }
    }

    async fn reconcile(
        &self,
        records: &[ReconcileRecord],
    ) -> Result<ReconcileReport, BackendError> {
        let mut report = ReconcileReport::default();
        let live: Vec<String> = self
            .sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .keys()
            .cloned()
            .collect();
        for rec in records {
            if live.contains(&rec.sandbox_id) {
                continue;
            }
            if let Some(p) = &rec.provisioned {
                if kill_init(p.init_pid, p.init_start_time).await {
                    report.killed_sandboxes.push(rec.sandbox_id.clone());
                }
            }
        }
        // Any process still charged to a stale sandbox cgroup of this server dies; then the
        // cgroup goes (in the background if zombies still pin it).
        for dir in self.cgroups.all_sandbox_dirs() {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            if live.contains(&name) {
                continue;
            }
            for pid in std::fs::read_to_string(dir.join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
            {
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    // A process inside a stale sandbox cgroup we created.
                    let _ = sys::kill(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
            // A paused sandbox's processes die only once thawed.
            freeze::thaw_quietly(std::slice::from_ref(&dir));
            cgroup::remove_eventually(cgroup::remove(&[dir]));
        }
        let entries = std::fs::read_dir(&self.runtime_root)
            .map_err(|e| BackendError::io("read state root", e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !live.contains(&name) {
                report.removed_dirs.extend(remove_dir(&entry.path()));
            }
        }
        Ok(report)
    }

    async fn pause(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let sbx = self.get(sandbox_id)?;
        let dirs = sbx.cgroups.clone();
        tokio::task::spawn_blocking(move || freeze::freeze(&dirs))
            .await
            .map_err(|e| BackendError::Unavailable(format!("freeze task: {e}")))?
            .map_err(BackendError::Unavailable)
    }

    async fn resume(&self, sandbox_id: &str) -> Result<(), BackendError> {
        let sbx = self.get(sandbox_id)?;
        freeze::thaw(&sbx.cgroups).map_err(BackendError::Unavailable)
    }

    async fn inbound_socket(&self, sandbox_id: &str) -> Result<std::os::fd::OwnedFd, BackendError> {
        let sbx = self.get(sandbox_id)?;
        super::inbound::socket_in(sbx.init_pid, sbx.init_start).await
    }

    fn cpu_usage_nanos(&self, sandbox_id: &str) -> Option<u64> {
        let sbx = self.get(sandbox_id).ok()?;
        freeze::cpu_usage_nanos(&sbx.cgroups)
    }

    async fn capture_filesystem(
        &self,
        sandbox_id: &str,
        dest: &Path,
        budget: u64,
    ) -> Result<crate::CaptureStats, BackendError> {
        self.get(sandbox_id)?.capture_layers(dest, budget).await
    }

    async fn file_op(
        &self,
        sandbox_id: &str,
        op: FileOp,
        fds: Vec<OwnedFd>,
    ) -> Result<crate::files::FileReply, BackendError> {
        self.run_file_op(sandbox_id, op, fds).await
    }
}
