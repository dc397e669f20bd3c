//! The control plane's core: sandbox lifecycle, executions, durable output, events.
//!
//! RPC-agnostic on purpose: the Connect services in [`crate::api`] only translate
//! messages; every rule (status transitions, validation, reconciliation) lives here.

use crate::egress::{EgressHub, EgressNote};
use crate::error::{Class, EngineError, ErrorCode};
use crate::execlog::{self, Entry, ExitRecord, Kind, LogReader, LogWriter, WarningRecord};
use crate::ids;
use crate::status::{execution as es, sandbox as ss};
use crate::store::{now_micros, CapHit, EventRow, ExecutionRow, SandboxCaps, SandboxRow, Store};
use cleanroom_backend::{
    Backend, ExitStatus, ImageRoot, Limits, NetworkSpec, ProcessSpec, ReconcileRecord, SandboxSpec,
    TunConfig,
};
use cleanroom_egress::UpstreamConfig;
use cleanroom_image::{ImageRecord, ImageStore, PinnedRef};
use cleanroom_policy::CompiledPolicy;
use cleanroom_vocab::{Capability, Decision};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Grace between SIGTERM and SIGKILL when none is requested.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// After the main process exits, how long output from lingering children is still read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// Bytes of each stream InspectExecution returns (the tail).
const INSPECT_TAIL: u64 = 1 << 20;
const READ_CHUNK: usize = 256 * 1024;
/// How long live-only output waits for a slow attached client (see `wait_for_live_readers`).
const LIVE_STALL: Duration = Duration::from_secs(2);
/// Hostile-input guards.
const MAX_ARGS: usize = 4096;
const MAX_ARGV_BYTES: usize = 128 * 1024;
const MAX_ENV: usize = 1024;
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Request to run a command (validated by [`Engine::create_execution`]).
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    pub sandbox_id: String,
    pub command: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: String,
    pub timeout_seconds: u32,
    pub attach_stdin: bool,
    pub tty: bool,
    /// Principal starting it (recorded on the execution).
    pub owner: String,
}

/// One item of an execution stream.
#[derive(Debug, Clone)]
pub enum StreamItem {
    Output {
        seq: u64,
        stdout: bool,
        offset: u64,
        data: Vec<u8>,
    },
    Exit {
        seq: u64,
        exit: ExitRecord,
    },
    Warning {
        seq: u64,
        code: String,
        message: String,
    },
}

/// InspectExecution's richer view.
#[derive(Debug, Clone)]
pub struct Inspection {
    pub execution: ExecutionRow,
    pub stdout_tail: Vec<u8>,
    pub stderr_tail: Vec<u8>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub policy_hash: String,
    pub log_path: PathBuf,
    pub image_ref: String,
    pub image_digest: String,
    /// Retention facts: bytes not retained, and whether GC deleted the log.
    pub output: crate::store::OutputState,
}

struct Cancel {
    status: i32,
    message: String,
    grace: Duration,
}

struct LiveExec {
    sandbox_id: String,
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    has_stdin: bool,
    cancel: watch::Sender<Option<Arc<Cancel>>>,
    commit: watch::Receiver<execlog::Committed>,
    done: watch::Receiver<bool>,
    /// Warnings (egress denies) to write into the execution's output log.
    warnings: mpsc::UnboundedSender<WarningRecord>,
    /// Output that is streamed to attached clients but not retained (over quota).
    live_only: tokio::sync::broadcast::Sender<execlog::LiveItem>,
    /// Bytes not retained so far.
    dropped: Arc<std::sync::atomic::AtomicU64>,
}

/// The server's engine. Cheap to share (`Arc<Engine>`).
pub struct Engine {
    /// `pub(crate)`: ownership checks ([`crate::owner`]) read it.
    pub(crate) store: Store,
    backend: Arc<dyn Backend>,
    logs_dir: PathBuf,
    live: Mutex<HashMap<String, Arc<LiveExec>>>,
    events: watch::Sender<i64>,
    egress: EgressHub,
    /// The OCI image cache (`None`: this server cannot root sandboxes on images).
    images: Option<Arc<ImageStore>>,
    /// Output retention quotas and watermarks ([`crate::quota`]).
    retention: Arc<crate::quota::Retention>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Engine {
    /// Open the engine on `state_dir` (database + logs). Call [`Engine::recover`] next.
    /// `upstream` tells the egress gateways how to reach allowed hosts. Must be called
    /// inside a tokio runtime (gateway decisions are recorded by a task of the engine).
    pub fn new(
        state_dir: &Path,
        backend: Arc<dyn Backend>,
        images: Option<Arc<ImageStore>>,
        upstream: Arc<UpstreamConfig>,
        secrets: Arc<crate::secrets::SecretStore>,
    ) -> Result<Arc<Engine>, EngineError> {
        let logs_dir = state_dir.join("executions");
        std::fs::create_dir_all(&logs_dir)
            .map_err(|e| EngineError::internal(format!("create {}: {e}", logs_dir.display())))?;
        let store = Store::open(&state_dir.join("state.db"))?;
        let (events, _) = watch::channel(0);
        let (notes_tx, mut notes_rx) = mpsc::unbounded_channel::<EgressNote>();
        let engine = Arc::new(Engine {
            store,
            backend,
            live: Mutex::new(HashMap::new()),
            events,
            egress: EgressHub::new(upstream, secrets, notes_tx),
            images,
            retention: Arc::new(crate::quota::Retention::new(&logs_dir)),
            logs_dir,
        });
        let weak = Arc::downgrade(&engine);
        tokio::spawn(async move {
            while let Some(note) = notes_rx.recv().await {
                match weak.upgrade() {
                    Some(engine) => engine.record_egress(note),
                    None => break,
                }
            }
        });
        Ok(engine)
    }

    /// Persist one gateway decision as a sandbox event; a deny also becomes a warning on
    /// the sandbox's running executions (attributed to the execution when it is the only
    /// one running).
    fn record_egress(&self, note: EgressNote) {
        let live: Vec<(String, Arc<LiveExec>)> = lock(&self.live)
            .iter()
            .filter(|(_, l)| l.sandbox_id == note.sandbox_id)
            .map(|(k, l)| (k.clone(), l.clone()))
            .collect();
        let e = &note.event;
        let message = if e.message.is_empty() {
            format!("{} {}:{} ({})", e.decision, e.host, e.port, e.protocol)
        } else {
            format!(
                "{} {}:{} ({}): {}",
                e.decision, e.host, e.port, e.protocol, e.message
            )
        };
        if e.decision == Decision::Deny {
            for (_, l) in &live {
                let _ = l.warnings.send(WarningRecord {
                    code: e.reason.to_string(),
                    message: format!(
                        "egress denied: {}:{} ({}): {}",
                        e.host, e.port, e.protocol, e.message
                    ),
                });
            }
        }
        self.event(EventRow {
            sandbox_id: note.sandbox_id.clone(),
            execution_id: match live.as_slice() {
                [(id, _)] => id.clone(),
                _ => String::new(),
            },
            kind: format!("egress.{}", e.decision),
            message,
            attributes: crate::egress::attributes(&note).to_string(),
            ..Default::default()
        });
    }

    /// Apply the server's output retention settings and start the retention GC task
    /// (see [`crate::retention`]); it stops when the engine is dropped.
    pub fn start_retention(self: &Arc<Self>, cfg: crate::quota::RetentionConfig) {
        let interval = cfg.gc_interval.max(Duration::from_millis(100));
        self.retention.set_config(cfg);
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(engine) = weak.upgrade() else { break };
                let pass = tokio::task::spawn_blocking(move || {
                    crate::retention::gc(&engine.store, &engine.logs_dir, &engine.retention)
                })
                .await;
                match pass {
                    Ok(Ok(r)) if r.removed > 0 => tracing::info!(
                        removed = r.removed,
                        freed_bytes = r.freed_bytes,
                        total_bytes = r.total_bytes,
                        "output retention GC"
                    ),
                    Ok(Err(e)) => tracing::warn!(error = %e, "output retention GC failed"),
                    _ => {}
                }
            }
        });
    }

    /// Release the backend's per-server state (after every sandbox was terminated).
    pub async fn close(&self) {
        self.backend.close().await;
    }

    fn event(&self, mut e: EventRow) {
        e.at = now_micros();
        match self.store.append_event(&e) {
            Ok(seq) => {
                self.events.send_replace(seq);
            }
            Err(err) => tracing::error!(error = %err, "could not record event"),
        }
    }

    fn sandbox_event(&self, id: &str, status: i32, message: &str) {
        self.event(EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.status".into(),
            sandbox_status: status,
            message: message.into(),
            ..Default::default()
        });
    }

    fn execution_event(&self, sandbox_id: &str, exec_id: &str, status: i32, message: &str) {
        self.event(EventRow {
            sandbox_id: sandbox_id.into(),
            execution_id: exec_id.into(),
            kind: "execution.status".into(),
            execution_status: status,
            message: message.into(),
            ..Default::default()
        });
    }

    // ---- startup -----------------------------------------------------------

    /// After a restart: fail interrupted executions honestly (their output stays
    /// readable), and reclaim every resource of sandboxes the previous process ran.
    pub async fn recover(&self) -> Result<(), EngineError> {
        let msg =
            "server restarted while the execution was running; output up to that point is retained";
        for exe in self
            .store
            .executions_with_status(&[es::QUEUED, es::RUNNING])?
        {
            let path = execlog::path_for(&self.logs_dir, &exe.id);
            if path.exists() {
                let has_exit = execlog::repair(&path).map(|(h, _, _)| h).unwrap_or(false);
                if !has_exit {
                    let rec = ExitRecord {
                        status: es::FAILED,
                        exit_code: -1,
                        message: msg.into(),
                        ..Default::default()
                    };
                    if let Err(e) = execlog::append_exit(&path, &rec) {
                        tracing::warn!(execution_id = %exe.id, error = %e, "could not finish log");
                    }
                }
            }
            self.store.finish_execution(&exe.id, es::FAILED, -1, msg)?;
            self.execution_event(&exe.sandbox_id, &exe.id, es::FAILED, msg);
        }
        let mut records = Vec::new();
        let stale: Vec<SandboxRow> = self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| !ss::is_terminal(s.status))
            .collect();
        for s in &stale {
            records.push(ReconcileRecord {
                sandbox_id: s.id.clone(),
                provisioned: serde_json::from_str(&s.provisioned).ok(),
            });
        }
        let report = self.backend.reconcile(&records).await?;
        for s in &stale {
            let msg = "server restarted; the sandbox's processes and files were reclaimed";
            self.store.set_sandbox_status(&s.id, ss::FAILED, msg)?;
            self.store
                .set_sandbox_executions(&s.id, &s.last_execution_id, "")?;
            self.sandbox_event(&s.id, ss::FAILED, msg);
        }
        tracing::info!(
            killed = report.killed_sandboxes.len(),
            removed_dirs = report.removed_dirs.len(),
            "reconciled state from previous run"
        );
        Ok(())
    }

    // ---- sandboxes ---------------------------------------------------------

    /// Compile the policy once, check capabilities, provision. Returns the READY sandbox,
    /// owned by `owner`; refused with `resource_exhausted` when `sandbox_caps` are reached.
    pub async fn create_sandbox(
        &self,
        owner: &str,
        sandbox_caps: SandboxCaps,
        policy_yaml: &str,
        image_ref: &str,
        requested: Limits,
    ) -> Result<SandboxRow, EngineError> {
        let policy = cleanroom_policy::compile(policy_yaml)?;
        // Capability handshake: fail closed before anything is provisioned.
        let caps = self.backend.capabilities();
        let mut required = policy.required_capabilities();
        // The request's image (CLI --image) wins over the policy's `sandbox.image.ref`.
        let image_ref = match (image_ref.trim(), &policy.image_ref) {
            ("", Some(p)) => p.clone(),
            (r, _) => r.to_string(),
        };
        let pinned = if image_ref.is_empty() {
            None
        } else {
            required.push(Capability::OciImages.as_str());
            Some(PinnedRef::parse(&image_ref).map_err(EngineError::from)?)
        };
        let missing: Vec<&str> = required.into_iter().filter(|c| !caps.contains(c)).collect();
        if !missing.is_empty() {
            return Err(EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::BackendCapabilityMismatch,
                format!(
                    "backend {:?} lacks capabilities this sandbox needs: {}",
                    self.backend.name(),
                    missing.join(", ")
                ),
            )
            .with("missing", missing.join(","))
            .with("backend", self.backend.name()));
        }
        let limits = crate::limits::effective(&policy, requested)?;
        let id = ids::sandbox_id();
        // Secrets and the sandbox CA before anything exists: a secret this server has no
        // value for refuses the sandbox like a capability mismatch does.
        let prepared = self.egress.prepare(&id, &policy)?;
        let now = now_micros();
        let row = SandboxRow {
            id: id.clone(),
            status: ss::PROVISIONING,
            backend: self.backend.name().into(),
            policy_hash: policy.policy_hash(),
            compiled_policy: policy.canonical_json(),
            created_at: now,
            updated_at: now,
            last_execution_id: String::new(),
            active_execution_id: String::new(),
            message: String::new(),
            provisioned: String::new(),
            image_ref: pinned.as_ref().map(|p| p.to_string()).unwrap_or_default(),
            image_digest: pinned
                .as_ref()
                .map(|p| p.digest.clone())
                .unwrap_or_default(),
            owner: owner.to_string(),
        };
        if let Some(hit) = self.store.insert_sandbox(&row, sandbox_caps)? {
            return Err(match hit {
                CapHit::PerOwner(n) => EngineError::resource_exhausted(format!(
                    "{owner} already has {n} live sandboxes (serve --max-sandboxes-per-principal)"
                )),
                CapHit::Total(n) => EngineError::resource_exhausted(format!(
                    "the server already runs {n} sandboxes (serve --max-sandboxes)"
                )),
            }
            .with("limit", n_of(hit)));
        }
        self.sandbox_event(&id, ss::PROVISIONING, "");
        // The row exists (PROVISIONING, with its digest) before the pull, so the image
        // counts as in use from here on and `image rm` cannot pull it from under us.
        let image = match &pinned {
            None => None,
            Some(p) => match self.image_root(p).await {
                Ok(i) => Some(i),
                Err(e) => {
                    self.store.set_sandbox_status(&id, ss::FAILED, &e.message)?;
                    self.sandbox_event(&id, ss::FAILED, &e.message);
                    return Err(e.with("sandbox_id", &id));
                }
            },
        };
        let spec = SandboxSpec {
            sandbox_id: id.clone(),
            hostname: "cleanroom".into(),
            limits,
            network: NetworkSpec::Tun(TunConfig {
                guest: cleanroom_egress::GUEST_ADDR,
                gateway: cleanroom_egress::GATEWAY_ADDR,
                mtu: cleanroom_egress::MTU,
            }),
            image,
            trusted_ca_pem: prepared.ca_pem(),
        };
        let provisioned = self.backend.provision(&spec).await.and_then(|p| {
            // Fail closed: a sandbox whose gateway is not running must not become READY.
            let device = p.network_device.as_ref().ok_or_else(|| {
                cleanroom_backend::BackendError::LaunchFailed(
                    "backend returned no network device for the egress gateway".into(),
                )
            })?;
            self.egress
                .attach(&id, &policy, device, prepared)
                .map_err(|e| {
                    cleanroom_backend::BackendError::LaunchFailed(format!("egress gateway: {e}"))
                })?;
            Ok(p)
        });
        if provisioned.is_err() {
            // The sandbox may exist without a gateway: take it down again.
            let _ = self.backend.terminate(&id).await;
        }
        match provisioned {
            Ok(p) => {
                self.store
                    .set_sandbox_provisioned(&id, &serde_json::to_string(&p).unwrap_or_default())?;
                self.retention.add_sandbox(&id, limits.output_bytes);
                self.store.set_sandbox_status(&id, ss::READY, "")?;
                self.sandbox_event(&id, ss::READY, "");
            }
            Err(e) => {
                let msg = e.to_string();
                self.store.set_sandbox_status(&id, ss::FAILED, &msg)?;
                self.sandbox_event(&id, ss::FAILED, &msg);
                return Err(EngineError::from(e).with("sandbox_id", &id));
            }
        }
        self.get_sandbox(&id)
    }

    async fn image_root(&self, pinned: &PinnedRef) -> Result<ImageRoot, EngineError> {
        let images = self.image_store()?;
        let rec = images.ensure(&pinned.to_string()).await?;
        Ok(ImageRoot {
            rootfs: images.rootfs(&rec.digest)?,
            digest: rec.digest,
        })
    }

    fn image_store(&self) -> Result<&Arc<ImageStore>, EngineError> {
        self.images.as_ref().ok_or_else(|| {
            EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::BackendCapabilityMismatch,
                "this server has no image store",
            )
        })
    }

    // ---- images ------------------------------------------------------------

    /// Pull (or find cached) a digest-pinned image.
    pub async fn pull_image(&self, reference: &str) -> Result<ImageRecord, EngineError> {
        let pinned = PinnedRef::parse(reference)?;
        Ok(self.image_store()?.ensure(&pinned.to_string()).await?)
    }

    pub fn list_images(&self) -> Result<Vec<ImageRecord>, EngineError> {
        Ok(self.image_store()?.list())
    }

    /// Remove a cached image unless a sandbox that is not yet stopped uses it.
    pub fn remove_image(&self, digest: &str) -> Result<ImageRecord, EngineError> {
        let digest = if digest.starts_with("sha256:") {
            digest.to_string()
        } else {
            format!("sha256:{digest}")
        };
        let users: Vec<String> = self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| !ss::is_terminal(s.status) && s.image_digest == digest)
            .map(|s| s.id)
            .collect();
        if !users.is_empty() {
            return Err(EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::ImageInUse,
                format!("image {digest} is used by {}", users.join(", ")),
            )
            .with("sandbox_ids", users.join(",")));
        }
        Ok(self.image_store()?.remove(&digest)?)
    }

    pub fn get_sandbox(&self, id: &str) -> Result<SandboxRow, EngineError> {
        if !ids::looks_valid(id, "sbx_") {
            return Err(EngineError::sandbox_not_found(id));
        }
        self.store
            .get_sandbox(id)?
            .ok_or_else(|| EngineError::sandbox_not_found(id))
    }

    pub fn list_sandboxes(&self, include_stopped: bool) -> Result<Vec<SandboxRow>, EngineError> {
        Ok(self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| include_stopped || !ss::is_terminal(s.status))
            .collect())
    }

    /// Kill everything in the sandbox and remove it. Idempotent.
    pub async fn terminate_sandbox(&self, id: &str) -> Result<SandboxRow, EngineError> {
        let row = self.get_sandbox(id)?;
        if ss::is_terminal(row.status) {
            return Ok(row);
        }
        self.store.set_sandbox_status(id, ss::STOPPING, "")?;
        self.sandbox_event(id, ss::STOPPING, "");
        let running: Vec<(String, Arc<LiveExec>)> = lock(&self.live)
            .iter()
            .filter(|(_, l)| l.sandbox_id == id)
            .map(|(k, l)| (k.clone(), l.clone()))
            .collect();
        for (_, l) in &running {
            l.cancel.send_if_modified(|c| {
                if c.is_none() {
                    *c = Some(Arc::new(Cancel {
                        status: es::CANCELED,
                        message: "sandbox terminated while the execution was running".into(),
                        grace: Duration::ZERO,
                    }));
                    true
                } else {
                    false
                }
            });
        }
        let result = self.backend.terminate(id).await;
        self.egress.detach(id);
        for (_, l) in running {
            let mut done = l.done.clone();
            let _ = tokio::time::timeout(Duration::from_secs(10), done.wait_for(|d| *d)).await;
        }
        self.retention.remove_sandbox(id);
        match result {
            Ok(()) => {
                self.store.set_sandbox_status(id, ss::STOPPED, "")?;
                self.sandbox_event(id, ss::STOPPED, "");
            }
            Err(e) => {
                let msg = format!("terminate failed: {e}");
                self.store.set_sandbox_status(id, ss::FAILED, &msg)?;
                self.sandbox_event(id, ss::FAILED, &msg);
                return Err(e.into());
            }
        }
        self.get_sandbox(id)
    }

    /// Read a file out of a READY sandbox (at most `max_bytes`, default 4 MiB, cap 16 MiB).
    pub async fn download_file(
        &self,
        sandbox_id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<cleanroom_backend::FileContent, EngineError> {
        let sbx = self.get_sandbox(sandbox_id)?;
        if sbx.status != ss::READY {
            return Err(EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::SandboxNotReady,
                format!("sandbox {sandbox_id} is {}", ss::name(sbx.status)),
            ));
        }
        if !path.starts_with('/') || path.contains('\0') || path.len() > 4096 {
            return Err(EngineError::invalid(
                "path must be an absolute path inside the sandbox",
            ));
        }
        let max = match max_bytes {
            0 => 4 << 20,
            n => n.min(16 << 20),
        };
        Ok(self.backend.read_file(sandbox_id, path, max).await?)
    }

    pub fn compiled_policy(&self, row: &SandboxRow) -> CompiledPolicy {
        serde_json::from_str(&row.compiled_policy).unwrap_or_else(|_| CompiledPolicy::builtin())
    }

    // ---- executions --------------------------------------------------------

    fn validate(req: &ExecRequest) -> Result<(), EngineError> {
        if req.command.is_empty() || req.command[0].is_empty() {
            return Err(EngineError::invalid("command is empty"));
        }
        if req.command.len() > MAX_ARGS
            || req.command.iter().map(|a| a.len() + 1).sum::<usize>() > MAX_ARGV_BYTES
        {
            return Err(EngineError::invalid("command is too long"));
        }
        if req.command.iter().any(|a| a.contains('\0')) {
            return Err(EngineError::invalid("command contains a NUL byte"));
        }
        if req.env.len() > MAX_ENV {
            return Err(EngineError::invalid("too many environment variables"));
        }
        for (k, v) in &req.env {
            if !cleanroom_policy::is_valid_env_key(k) || v.contains('\0') {
                return Err(
                    EngineError::invalid(format!("invalid environment variable {k:?}"))
                        .with("env", k),
                );
            }
        }
        if !req.cwd.is_empty() && (!req.cwd.starts_with('/') || req.cwd.contains('\0')) {
            return Err(EngineError::invalid("cwd must be an absolute path"));
        }
        if req.tty {
            return Err(EngineError::unimplemented(
                "tty executions need AttachExecution, which is not implemented yet",
            ));
        }
        Ok(())
    }

    fn base_env(
        &self,
        sandbox: &SandboxRow,
        exec_id: &str,
        req: &ExecRequest,
    ) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("PATH".into(), DEFAULT_PATH.into());
        env.insert("HOME".into(), "/root".into());
        env.insert("LANG".into(), "C.UTF-8".into());
        env.insert("HOSTNAME".into(), "cleanroom".into());
        env.insert("CLEANROOM_SANDBOX_ID".into(), sandbox.id.clone());
        env.insert("CLEANROOM_EXECUTION_ID".into(), exec_id.into());
        // Proxy-aware tools use the gateway's proxy; everything else is caught by it anyway.
        let proxy = format!(
            "http://{}:{}",
            cleanroom_egress::GATEWAY_ADDR,
            cleanroom_egress::PROXY_PORT
        );
        for k in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            env.insert(k.into(), proxy.clone());
        }
        for k in ["NO_PROXY", "no_proxy"] {
            env.insert(k.into(), "localhost,127.0.0.1,::1".into());
        }
        env.extend(self.compiled_policy(sandbox).env);
        // Secrets appear only as placeholders; the policy cannot override them.
        env.extend(self.egress.guest_env(&sandbox.id));
        env.extend(req.env.clone());
        env.into_iter().collect()
    }

    /// Start a command. The execution is RUNNING when this returns.
    pub async fn create_execution(
        self: &Arc<Self>,
        req: ExecRequest,
    ) -> Result<ExecutionRow, EngineError> {
        Self::validate(&req)?;
        let sandbox = self.get_sandbox(&req.sandbox_id)?;
        if sandbox.status != ss::READY {
            return Err(EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::SandboxNotReady,
                format!("sandbox {} is {}", sandbox.id, ss::name(sandbox.status)),
            )
            .with("sandbox_id", &sandbox.id));
        }
        let id = ids::execution_id();
        let cwd = if req.cwd.is_empty() {
            cleanroom_backend::linux::config::WORKSPACE_PATH.to_string()
        } else {
            req.cwd.clone()
        };
        let mut row = ExecutionRow {
            id: id.clone(),
            sandbox_id: sandbox.id.clone(),
            status: es::QUEUED,
            command: req.command.clone(),
            exit_code: 0,
            created_at: now_micros(),
            started_at: 0,
            finished_at: 0,
            message: String::new(),
            cwd: cwd.clone(),
            tty: req.tty,
            kind: 1,
            trace_id: ids::trace_id(),
            owner: req.owner.clone(),
        };
        let log_path = execlog::path_for(&self.logs_dir, &id);
        let writer = LogWriter::create(&log_path)
            .map_err(|e| EngineError::internal(format!("create output log: {e}")))?;
        self.store.insert_execution(&row)?;
        self.execution_event(&sandbox.id, &id, es::QUEUED, "");

        let spec = ProcessSpec {
            argv: req.command.clone(),
            env: self.base_env(&sandbox, &id, &req),
            cwd,
            stdin: req.attach_stdin,
        };
        let handle = match self.backend.spawn(&sandbox.id, spec).await {
            Ok(h) => h,
            Err(e) => {
                let msg = format!("could not start the command: {e}");
                let _ = writer.close(&ExitRecord {
                    status: es::FAILED,
                    exit_code: -1,
                    message: msg.clone(),
                    ..Default::default()
                });
                self.store.finish_execution(&id, es::FAILED, -1, &msg)?;
                self.execution_event(&sandbox.id, &id, es::FAILED, &msg);
                return Err(EngineError::from(e).with("execution_id", &id));
            }
        };
        row.started_at = now_micros();
        row.status = es::RUNNING;
        self.store.mark_execution_running(&id, row.started_at)?;
        self.store.set_sandbox_executions(&sandbox.id, &id, &id)?;
        self.execution_event(&sandbox.id, &id, es::RUNNING, "");

        let (cancel_tx, cancel_rx) = watch::channel(None);
        let (done_tx, done_rx) = watch::channel(false);
        let (warn_tx, warn_rx) = mpsc::unbounded_channel();
        let live = Arc::new(LiveExec {
            sandbox_id: sandbox.id.clone(),
            has_stdin: handle.stdin.is_some(),
            stdin: tokio::sync::Mutex::new(handle.stdin),
            cancel: cancel_tx,
            commit: writer.subscribe(),
            done: done_rx,
            warnings: warn_tx,
            live_only: writer.live_sender(),
            dropped: writer.dropped_counter(),
        });
        lock(&self.live).insert(id.clone(), live);
        let timeout =
            (req.timeout_seconds > 0).then(|| Duration::from_secs(req.timeout_seconds.into()));
        let engine = self.clone();
        let mut run = Run {
            exec_id: id.clone(),
            sandbox_id: sandbox.id.clone(),
            process: handle.id,
            timeout,
            warnings: warn_rx,
            budget: self.retention.budget(&sandbox.id),
        };
        tokio::spawn(async move {
            run.drive(
                &engine,
                handle.stdout,
                handle.stderr,
                handle.exit,
                writer,
                cancel_rx,
            )
            .await;
            lock(&engine.live).remove(&run.exec_id);
            let _ = done_tx.send(true);
        });
        Ok(row)
    }

    fn find_execution(&self, sandbox_id: &str, exec_id: &str) -> Result<ExecutionRow, EngineError> {
        if !ids::looks_valid(exec_id, "exe_") {
            return Err(EngineError::execution_not_found(exec_id));
        }
        let row = self
            .store
            .get_execution(exec_id)?
            .ok_or_else(|| EngineError::execution_not_found(exec_id))?;
        if !sandbox_id.is_empty() && row.sandbox_id != sandbox_id {
            return Err(EngineError::execution_not_found(exec_id).with("sandbox_id", sandbox_id));
        }
        Ok(row)
    }

    pub fn get_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<ExecutionRow, EngineError> {
        self.find_execution(sandbox_id, exec_id)
    }

    /// Resolve `--sandbox-id X --last`.
    pub fn last_execution(&self, sandbox_id: &str) -> Result<ExecutionRow, EngineError> {
        let sbx = self.get_sandbox(sandbox_id)?;
        if sbx.last_execution_id.is_empty() {
            return Err(EngineError::new(
                Class::NotFound,
                ErrorCode::ExecutionNotFound,
                format!("sandbox {sandbox_id} has no executions"),
            )
            .with("sandbox_id", sandbox_id));
        }
        self.find_execution(sandbox_id, &sbx.last_execution_id)
    }

    pub fn inspect_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<Inspection, EngineError> {
        let execution = self.find_execution(sandbox_id, exec_id)?;
        let sandbox = self.store.get_sandbox(&execution.sandbox_id)?;
        let (image_ref, image_digest) = sandbox
            .as_ref()
            .map(|s| (s.image_ref.clone(), s.image_digest.clone()))
            .unwrap_or_default();
        let log_path = execlog::path_for(&self.logs_dir, exec_id);
        let mut output = self.store.output_state(exec_id)?;
        if let Some(l) = self.live(exec_id) {
            output.dropped_bytes = l.dropped.load(std::sync::atomic::Ordering::Relaxed);
        }
        let (stdout_tail, stderr_tail, stdout_bytes, stderr_bytes) = if output.expired_at > 0 {
            Default::default()
        } else {
            read_tails(&log_path).unwrap_or_default()
        };
        Ok(Inspection {
            execution,
            stdout_tail,
            stderr_tail,
            stdout_bytes,
            stderr_bytes,
            policy_hash: sandbox.map(|s| s.policy_hash).unwrap_or_default(),
            log_path,
            image_ref,
            image_digest,
            output,
        })
    }

    fn live(&self, exec_id: &str) -> Option<Arc<LiveExec>> {
        lock(&self.live).get(exec_id).cloned()
    }

    /// SIGTERM now, SIGKILL after `grace`. No-op for finished executions.
    pub fn cancel_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        grace: Option<Duration>,
    ) -> Result<ExecutionRow, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        if let Some(l) = self.live(exec_id) {
            l.cancel.send_if_modified(|c| {
                if c.is_none() {
                    *c = Some(Arc::new(Cancel {
                        status: es::CANCELED,
                        message: "canceled by client".into(),
                        grace: grace.unwrap_or(DEFAULT_GRACE),
                    }));
                    true
                } else {
                    false
                }
            });
        }
        Ok(row)
    }

    pub async fn write_stdin(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        data: &[u8],
    ) -> Result<u64, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        let not_open = || {
            EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::StdinClosed,
                "stdin is not open for this execution",
            )
            .with("execution_id", &row.id)
        };
        let live = self.live(exec_id).ok_or_else(not_open)?;
        if !live.has_stdin {
            return Err(EngineError::new(
                Class::FailedPrecondition,
                ErrorCode::StdinNotAttached,
                "execution was created without attach_stdin",
            ));
        }
        let mut guard = live.stdin.lock().await;
        let w = guard.as_mut().ok_or_else(not_open)?;
        match w.write_all(data).await {
            Ok(()) => Ok(data.len() as u64),
            // The command stopped reading (exited or closed stdin): that's its choice.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                *guard = None;
                Err(not_open())
            }
            Err(e) => Err(EngineError::internal(format!("write stdin: {e}"))),
        }
    }

    pub async fn close_stdin(&self, sandbox_id: &str, exec_id: &str) -> Result<(), EngineError> {
        self.find_execution(sandbox_id, exec_id)?;
        if let Some(live) = self.live(exec_id) {
            live.stdin.lock().await.take();
        }
        Ok(())
    }

    /// Stream an execution's output from its durable log: retained part first, then live.
    pub fn stream_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        after_seq: u64,
        stdout_offset: u64,
        stderr_offset: u64,
        follow: bool,
    ) -> Result<mpsc::Receiver<Result<StreamItem, EngineError>>, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        if self.store.output_state(&row.id)?.expired_at > 0 {
            return Err(crate::retention::expired(&row.id));
        }
        let path = execlog::path_for(&self.logs_dir, &row.id);
        let reader = LogReader::open(&path)
            .map_err(|e| EngineError::internal(format!("open output log: {e}")))?;
        // Subscribe to live-only output before reading anything (see `outstream`).
        let (commit, live) = match self.live(exec_id) {
            Some(l) => (Some(l.commit.clone()), Some(l.live_only.subscribe())),
            None => (None, None),
        };
        let from = crate::outstream::From {
            after_seq,
            stdout_offset,
            stderr_offset,
            follow,
        };
        Ok(crate::outstream::spawn(reader, path, commit, live, from))
    }

    /// Tail a sandbox's events after `after_seq`; with `follow`, until the sandbox ends.
    pub fn stream_events(
        self: &Arc<Self>,
        sandbox_id: &str,
        after_seq: u64,
        follow: bool,
    ) -> Result<mpsc::Receiver<EventRow>, EngineError> {
        self.get_sandbox(sandbox_id)?;
        let (tx, rx) = mpsc::channel(64);
        let mut notify = self.events.subscribe();
        let engine = self.clone();
        let sandbox_id = sandbox_id.to_string();
        tokio::spawn(async move {
            let mut last = after_seq as i64;
            loop {
                notify.mark_unchanged();
                // Read the status before the events: if it is terminal now, the events read
                // next include the final one, so stopping after them loses nothing.
                let terminal = engine
                    .store
                    .get_sandbox(&sandbox_id)
                    .ok()
                    .flatten()
                    .is_none_or(|s| ss::is_terminal(s.status));
                let Ok(rows) = engine.store.events_after(&sandbox_id, last, 256) else {
                    return;
                };
                let full = rows.len() == 256;
                for r in rows {
                    last = r.seq;
                    if tx.send(r).await.is_err() {
                        return;
                    }
                }
                if full {
                    continue;
                }
                if !follow || terminal {
                    return;
                }
                tokio::select! {
                    _ = notify.changed() => {}
                    _ = tx.closed() => return,
                }
            }
        });
        Ok(rx)
    }
}

fn n_of(hit: CapHit) -> String {
    match hit {
        CapHit::PerOwner(n) | CapHit::Total(n) => n.to_string(),
    }
}

/// Last `INSPECT_TAIL` bytes of each stream plus stream totals. Payloads that end before
/// the tail are skipped without being read, so inspecting a huge log stays cheap.
fn read_tails(path: &Path) -> std::io::Result<(Vec<u8>, Vec<u8>, u64, u64)> {
    let len = std::fs::metadata(path)?.len();
    // Pass 1 reads headers only, to learn each stream's total.
    let mut totals = LogReader::open(path)?;
    while totals.next(len, |_, _, _| true)?.is_some() {}
    let (out_end, err_end) = totals.stream_ends();
    let from =
        |k: Kind| (if k == Kind::Stdout { out_end } else { err_end }).saturating_sub(INSPECT_TAIL);
    // Pass 2 reads only the payloads that reach into the tails.
    let mut r = LogReader::open(path)?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while let Some((_, e)) = r.next(len, |k, o, l| o + l <= from(k))? {
        if let Entry::Output { kind, offset, data } = e {
            let buf = if kind == Kind::Stdout {
                &mut out
            } else {
                &mut err
            };
            let cut = (from(kind).saturating_sub(offset) as usize).min(data.len());
            buf.extend_from_slice(&data[cut..]);
        }
    }
    Ok((out, err, out_end, err_end))
}

/// Pacing of live-only output (see `wait_for_live_readers`).
#[derive(Debug, Default)]
struct LiveWait {
    waited_for_first_reader: bool,
    stalled: bool,
}

/// Before each live-only chunk is sent: the supervisor stops reading the sandbox's pipes
/// (so the guest blocks on write, as with any slow reader) until
/// * the first time, a subscriber is attached: `cleanroom exec` subscribes right after
///   `CreateExecution` returns, and output nobody is attached to is simply gone;
/// * the next send would not evict a chunk an attached client has not taken yet.
///
/// Each wait ends after [`LIVE_STALL`]; a client that is still behind then is let go (it
/// lags and is told so) until it has caught up again, so a stuck client delays the
/// supervisor (and a cancel or timeout it handles) at most that long at a time.
async fn wait_for_live_readers(writer: &LogWriter, st: &mut LiveWait) {
    if !st.waited_for_first_reader {
        st.waited_for_first_reader = true;
        let until = Instant::now() + LIVE_STALL;
        while writer.live_receivers() == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let full = execlog::LIVE_CAPACITY - 1;
    if st.stalled {
        if writer.live_backlog() < execlog::LIVE_CAPACITY / 2 {
            st.stalled = false;
        } else {
            return;
        }
    }
    let until = Instant::now() + LIVE_STALL;
    while writer.live_backlog() >= full {
        if Instant::now() >= until {
            tracing::debug!(
                backlog = writer.live_backlog(),
                "a client fell behind live-only output; not waiting for it"
            );
            st.stalled = true;
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// One running execution's supervisor: pumps output into the log, enforces timeout and
/// cancel, records the final status.
struct Run {
    exec_id: String,
    sandbox_id: String,
    process: u64,
    timeout: Option<Duration>,
    /// Egress denies to record in the output log as warnings.
    warnings: mpsc::UnboundedReceiver<WarningRecord>,
    /// The sandbox's output retention quota.
    budget: Arc<crate::quota::SandboxBudget>,
}

impl Run {
    async fn drive(
        &mut self,
        engine: &Engine,
        mut stdout: pipe::Receiver,
        mut stderr: pipe::Receiver,
        mut exit_rx: tokio::sync::oneshot::Receiver<ExitStatus>,
        mut writer: LogWriter,
        mut cancel_rx: watch::Receiver<Option<Arc<Cancel>>>,
    ) {
        let mut out_buf = vec![0u8; READ_CHUNK];
        let mut err_buf = vec![0u8; READ_CHUNK];
        let (mut out_open, mut err_open) = (true, true);
        let mut exit: Option<Option<ExitStatus>> = None;
        let mut reason: Option<Arc<Cancel>> = None;
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = self.timeout.map(|t| Instant::now() + t).unwrap_or(far);
        let mut kill_at = far;
        let mut drain_until = far;
        let mut write_error: Option<String> = None;
        let mut live_wait = LiveWait::default();
        let budget = self.budget.clone();
        // Retain what the quota allows; returns where the live-only rest starts.
        let record = |w: &mut LogWriter, kind: Kind, data: &[u8], err: &mut Option<String>| {
            if err.is_some() {
                return data.len();
            }
            // Charge only while retaining: after the marker nothing more is kept.
            let charge = if w.truncated() {
                crate::quota::Charge {
                    retain: 0,
                    refused: None,
                }
            } else {
                engine.retention.charge(&budget, data.len())
            };
            let why = charge.refused.map(|r| r.to_string()).unwrap_or_default();
            match w.output_charged(kind, data, charge.retain, &why) {
                Ok(n) => n,
                Err(e) => {
                    *err = Some(format!("output log write failed: {e}"));
                    data.len()
                }
            }
        };
        loop {
            if exit.is_some() && !out_open && !err_open {
                break;
            }
            tokio::select! {
                r = stdout.read(&mut out_buf), if out_open => match r {
                    Ok(n) if n > 0 => {
                        let kept = record(&mut writer, Kind::Stdout, &out_buf[..n], &mut write_error);
                        if kept < n {
                            wait_for_live_readers(&writer, &mut live_wait).await;
                            writer.live_output(Kind::Stdout, &out_buf[kept..n]);
                        }
                    }
                    _ => out_open = false,
                },
                r = stderr.read(&mut err_buf), if err_open => match r {
                    Ok(n) if n > 0 => {
                        let kept = record(&mut writer, Kind::Stderr, &err_buf[..n], &mut write_error);
                        if kept < n {
                            wait_for_live_readers(&writer, &mut live_wait).await;
                            writer.live_output(Kind::Stderr, &err_buf[kept..n]);
                        }
                    }
                    _ => err_open = false,
                },
                r = &mut exit_rx, if exit.is_none() => {
                    exit = Some(r.ok());
                    drain_until = Instant::now() + DRAIN_AFTER_EXIT;
                }
                _ = tokio::time::sleep_until(deadline), if reason.is_none() && exit.is_none() && deadline < far => {
                    let secs = self.timeout.map(|t| t.as_secs()).unwrap_or(0);
                    reason = Some(Arc::new(Cancel { status: es::TIMED_OUT, message: format!("timed out after {secs}s"), grace: DEFAULT_GRACE }));
                    kill_at = self.terminate(engine, reason.as_ref()).await;
                }
                r = cancel_rx.changed(), if reason.is_none() && exit.is_none() => {
                    if r.is_ok() {
                        reason = cancel_rx.borrow().clone();
                        kill_at = self.terminate(engine, reason.as_ref()).await;
                    }
                }
                _ = tokio::time::sleep_until(kill_at), if kill_at < far && exit.is_none() => {
                    let _ = engine.backend.signal(&self.sandbox_id, self.process, libc::SIGKILL).await;
                    kill_at = far;
                }
                Some(w) = self.warnings.recv() => {
                    if write_error.is_none() {
                        // Warnings are charged like output (an allowed sandbox can cause
                        // denies for days); refused ones are live-only.
                        let len = w.code.len() + w.message.len() + 32;
                        let res = if writer.truncated() {
                            Ok(())
                        } else {
                            match engine.retention.charge(&budget, len).refused {
                                Some(r) => writer.truncate(&r.to_string()),
                                None => Ok(()),
                            }
                        };
                        if let Err(e) = res.and_then(|_| writer.warning(&w)) {
                            write_error = Some(format!("output log write failed: {e}"));
                        }
                    }
                }
                _ = tokio::time::sleep_until(drain_until), if drain_until < far => break,
            }
        }

        // A cancel (or sandbox termination) whose kill ended the process before this loop
        // saw the request still names the reason: the end was not the guest's doing. A
        // process that exited on its own keeps its own result.
        let killed = match &exit {
            Some(Some(st)) => st.signal.is_some(),
            _ => true,
        };
        if reason.is_none() && killed {
            reason = cancel_rx.borrow().clone();
        }
        let oom = matches!(&exit, Some(Some(st)) if st.oom_killed) && reason.is_none();
        let (status, exit_code, mut message) = match (exit.flatten(), &reason) {
            (Some(st), Some(r)) => (r.status, st.shell_code(), r.message.clone()),
            (Some(st), None) if st.oom_killed => (
                es::FAILED,
                st.shell_code(),
                "killed by the OOM killer: the sandbox reached its memory limit".to_string(),
            ),
            (Some(st), None) => {
                let code = st.shell_code();
                let msg = match st.signal {
                    Some(sig) => format!("killed by signal {sig}"),
                    None if code == 0 => String::new(),
                    None => format!("exited with code {code}"),
                };
                (
                    if code == 0 { es::SUCCEEDED } else { es::FAILED },
                    code,
                    msg,
                )
            }
            (None, Some(r)) => (r.status, 137, r.message.clone()),
            (None, None) => (
                es::FAILED,
                137,
                "sandbox stopped while the execution was running".to_string(),
            ),
        };
        if let Some(e) = write_error {
            message = if message.is_empty() {
                e
            } else {
                format!("{message}; {e}")
            };
        }
        let writer_dropped = writer.dropped();
        if let Err(e) = writer.close(&ExitRecord {
            status,
            exit_code,
            message: message.clone(),
            code: if oom {
                execlog::exit_code::OOM_KILLED.into()
            } else {
                String::new()
            },
        }) {
            tracing::error!(execution_id = %self.exec_id, error = %e, "could not finish output log");
        }
        let (out_dropped, err_dropped) = writer_dropped;
        if out_dropped + err_dropped > 0 {
            if let Err(e) = engine
                .store
                .set_output_dropped(&self.exec_id, out_dropped + err_dropped)
            {
                tracing::error!(execution_id = %self.exec_id, error = %e, "could not record dropped output");
            }
        }
        if let Err(e) = engine
            .store
            .finish_execution(&self.exec_id, status, exit_code, &message)
        {
            tracing::error!(execution_id = %self.exec_id, error = %e, "could not record execution result");
        }
        let _ = engine
            .store
            .clear_active_execution(&self.sandbox_id, &self.exec_id);
        engine.execution_event(&self.sandbox_id, &self.exec_id, status, &message);
    }

    /// Send SIGTERM (or SIGKILL with zero grace); returns when SIGKILL is due.
    async fn terminate(&self, engine: &Engine, reason: Option<&Arc<Cancel>>) -> Instant {
        let grace = reason.map(|r| r.grace).unwrap_or(DEFAULT_GRACE);
        let sig = if grace.is_zero() {
            libc::SIGKILL
        } else {
            libc::SIGTERM
        };
        let _ = engine
            .backend
            .signal(&self.sandbox_id, self.process, sig)
            .await;
        Instant::now() + grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_backend::{
        BackendError, ProcessHandle, ProcessId, ProvisionedSandbox, ReconcileReport,
    };
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Test double for a backend that declares no capabilities (e.g. a future backend that
    /// cannot enforce deny-by-default). Only the handshake is exercised: provision must
    /// never be reached.
    #[derive(Default)]
    struct NoCapabilities {
        provisioned: AtomicBool,
    }

    #[async_trait::async_trait]
    impl Backend for NoCapabilities {
        fn name(&self) -> &'static str {
            "none"
        }
        fn capabilities(&self) -> Vec<&'static str> {
            vec!["policy_immutability"]
        }
        async fn provision(&self, _: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
            self.provisioned.store(true, Ordering::SeqCst);
            Err(BackendError::Unavailable("test double".into()))
        }
        async fn spawn(&self, _: &str, _: ProcessSpec) -> Result<ProcessHandle, BackendError> {
            Err(BackendError::Unavailable("test double".into()))
        }
        async fn signal(&self, _: &str, _: ProcessId, _: i32) -> Result<(), BackendError> {
            Ok(())
        }
        async fn terminate(&self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        async fn reconcile(&self, _: &[ReconcileRecord]) -> Result<ReconcileReport, BackendError> {
            Ok(ReconcileReport::default())
        }
    }

    #[tokio::test]
    async fn launch_fails_closed_on_missing_capability() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Arc::new(NoCapabilities::default());
        let engine = Engine::new(
            dir.path(),
            backend.clone(),
            None,
            Default::default(),
            Default::default(),
        )
        .unwrap();
        let err = engine
            .create_sandbox("t", Default::default(), "", "", Limits::default())
            .await
            .unwrap_err();
        assert_eq!(err.code, "backend_capability_mismatch");
        assert!(
            err.details
                .iter()
                .any(|(k, v)| k == "missing" && v == "network_default_deny"),
            "{err:?}"
        );
        let err = engine
            .create_sandbox("t", Default::default(), "", "registry.test/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Limits::default())
            .await
            .unwrap_err();
        assert!(
            err.details
                .iter()
                .any(|(k, v)| k == "missing" && v.contains("oci_images")),
            "{err:?}"
        );
        assert!(
            !backend.provisioned.load(Ordering::SeqCst),
            "provision ran despite the mismatch"
        );
        assert!(
            engine.list_sandboxes(true).unwrap().is_empty(),
            "a sandbox row was persisted"
        );
    }
}
