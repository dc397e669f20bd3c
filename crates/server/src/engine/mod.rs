//! The control plane's core: sandbox lifecycle, executions, durable output, events.
//!
//! RPC-agnostic on purpose: the Connect services in [`crate::api`] only translate
//! messages and map the streams returned here; every rule (status transitions,
//! validation, reconciliation) lives in this module tree:
//!
//! * this file: the [`Engine`] itself, restart recovery, retention GC; [`builder`]: its
//!   construction, every part given before it exists;
//! * [`sandboxes`]: sandbox lifecycle (create, terminate, files) and the image cache;
//! * [`executions`]: starting, finding, inspecting, canceling and streaming executions;
//! * [`events`]: the durable event log, its live tail, and egress decisions as events.
//!
//! A running execution is driven by [`crate::engine::supervisor`], which sees only a narrow
//! handle; the guest's environment and request guards are in [`crate::engine::guest`].

pub mod activity;
pub mod approvals;
pub mod attestation;
pub mod bootstrap;
pub mod builder;
pub mod checkpoint_follow;
pub mod checkpoint_image;
pub mod checkpoint_seal;
pub mod checkpoints;
pub mod console;
pub mod create;
pub mod egress;
pub mod egress_notes;
pub mod events;
pub mod executions;
#[cfg(test)]
mod fake;
pub mod files;
pub mod foreground;
pub mod guest;
pub mod inbound;
pub mod lifetimes;
pub mod listings;
pub mod network;
pub mod outstream;
pub mod owned;
pub mod pause;
#[cfg(test)]
mod policy_tests;
pub mod pools;
#[cfg(test)]
mod recovery_tests;
pub mod registries;
pub mod sandboxes;
#[cfg(test)]
mod settled_tests;
pub mod snapshots;
mod store_errors;
pub mod supervisor;
pub mod suspend;
pub mod teardown;
#[cfg(test)]
mod teardown_tests;
#[cfg(test)]
mod tests;
pub mod usage;
pub mod volumes;

use crate::engine::egress::EgressHub;
use crate::engine::supervisor::Cancel;
use crate::model::error::EngineError;
use crate::model::status::{execution as es, sandbox as ss};
use crate::model::sync::lock;
use crate::output::execlog::{self, ExitRecord, WarningRecord};
use crate::store::{ExecutionRow, SandboxRow, Store};
pub use builder::EngineBuilder;
use cleanroom_backend::{Backend, ReconcileRecord};
use cleanroom_image::ImageStore;
use events::EventLog;
pub use owned::{OwnedExecution, OwnedSandbox, OwnedSnapshot};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, mpsc, watch};

pub use crate::engine::supervisor::DEFAULT_GRACE;

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
    pub owner: crate::model::owner::Owner,
    /// Initial terminal size (cols, rows) when `tty`.
    pub tty_size: (u16, u16),
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

/// What the engine keeps of a running execution (removed when its supervisor ends).
struct LiveExec {
    sandbox_id: String,
    /// The backend's handle of its process (for an interrupt: SIGINT to it alone).
    process: u64,
    stdin: tokio::sync::Mutex<Option<pipe::Sender>>,
    has_stdin: bool,
    cancel: watch::Sender<Option<Arc<Cancel>>>,
    commit: watch::Receiver<execlog::Committed>,
    done: watch::Receiver<bool>,
    /// Set once the execution's result is in the store (before the log's fsync; `done`
    /// waits for that too), with the result as stored.
    recorded: watch::Receiver<crate::engine::supervisor::Recorded>,
    /// The sandbox's facts an inspection reports (they do not change while it runs):
    /// policy hash, image reference and digest.
    sandbox_facts: Arc<(String, String, String)>,
    /// Warnings (egress denies) to write into the execution's output log.
    warnings: mpsc::UnboundedSender<WarningRecord>,
    /// Output that is streamed to attached clients but not retained (over quota).
    live_only: broadcast::Sender<execlog::LiveItem>,
    /// Bumped by subscribers for each item they hand out (live-only pacing).
    read_progress: Arc<std::sync::atomic::AtomicU64>,
    /// Bytes not retained so far.
    dropped: Arc<std::sync::atomic::AtomicU64>,
    /// The terminal of an interactive execution.
    console: Option<console::Terminal>,
}

impl LiveExec {
    /// Ask the supervisor to stop the execution, unless a stop was asked for already.
    fn cancel(&self, status: i32, message: &str, grace: Duration) {
        self.cancel.send_if_modified(|c| {
            if c.is_none() {
                *c = Some(Arc::new(Cancel {
                    status,
                    message: message.into(),
                    grace,
                }));
                true
            } else {
                false
            }
        });
    }
}

/// Running executions by id.
type LiveMap = Arc<Mutex<HashMap<String, Arc<LiveExec>>>>;

/// The server's engine. Cheap to share (`Arc<Engine>`).
pub struct Engine {
    /// `pub(crate)`: ownership checks ([`listings`]) read it.
    pub(crate) store: Arc<Store>,
    backend: Arc<dyn Backend>,
    logs_dir: PathBuf,
    live: LiveMap,
    /// `pub(crate)`: approval decisions ([`crate::engine::approvals`]) are events too.
    pub(crate) events: Arc<EventLog>,
    /// `pub(crate)`: egress approvals ([`crate::engine::approvals`]) reach the sandboxes' gateways.
    pub(crate) egress: EgressHub,
    /// The OCI image cache (`None`: this server cannot root sandboxes on images).
    images: Option<Arc<ImageStore>>,
    /// Output retention quotas and watermarks ([`crate::output::quota`]).
    retention: Arc<crate::output::quota::Retention>,
    /// Package registry mediation ([`crate::engine::registries`]); unset: no defaults, no cache.
    registries: Option<crate::engine::registries::RegistryHub>,
    /// When each sandbox was last used ([`crate::engine::activity`]).
    activity: Arc<crate::engine::activity::Activity>,
    /// TTL / idle defaults ([`lifetimes`]).
    lifetime_defaults: Mutex<lifetimes::LifetimeDefaults>,
    /// Warm pools ([`pools`]).
    pub(crate) pools: pools::Pools,
    /// The attestation signer ([`attestation`]); unset: nothing is signed.
    attestor: Option<Arc<crate::identity::attest::Attestor>>,
    /// Teardowns in flight ([`teardown`]).
    stopping: teardown::Stopping,
    /// Foreground work pool refills yield to ([`foreground`]).
    pub(crate) foreground: Arc<foreground::Foreground>,
    /// Named volumes ([`volumes`]); unset: this server mounts none.
    volumes: Option<Arc<crate::volumes::Volumes>>,
    /// Policies compiled so far ([`Engine::compile_policy`]; tests: a pool compiles once).
    #[cfg(test)]
    pub(crate) compiles: std::sync::atomic::AtomicU64,
}

impl Engine {
    /// Apply the server's output retention settings and start the retention GC task
    /// (see [`crate::output::retention`]); it stops when the engine is dropped.
    pub fn start_retention(self: &Arc<Self>, cfg: crate::output::quota::RetentionConfig) {
        let interval = cfg.gc_interval.max(Duration::from_millis(100));
        self.retention.set_config(cfg);
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(engine) = weak.upgrade() else { break };
                let pass = tokio::task::spawn_blocking(move || {
                    crate::output::retention::gc(&engine.store, &engine.logs_dir, &engine.retention)
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
        self.unmount_volumes();
        self.backend.close().await;
    }

    /// The live state of a running execution (`None` once its supervisor ended).
    fn live(&self, exec_id: &str) -> Option<Arc<LiveExec>> {
        lock(&self.live).get(exec_id).cloned()
    }

    /// Running executions of one sandbox.
    fn live_in(&self, sandbox_id: &str) -> Vec<(String, Arc<LiveExec>)> {
        lock(&self.live)
            .iter()
            .filter(|(_, l)| l.sandbox_id == sandbox_id)
            .map(|(k, l)| (k.clone(), l.clone()))
            .collect()
    }

    // ---- startup -----------------------------------------------------------

    /// After a restart: finish interrupted executions honestly — with the result their log
    /// already holds when the previous process died between writing it and committing
    /// it, else FAILED (their output stays readable) — and reclaim every resource of
    /// sandboxes the previous process ran.
    pub async fn recover(&self) -> Result<(), EngineError> {
        let msg =
            "server restarted while the execution was running; output up to that point is retained";
        for exe in self
            .store
            .executions_with_status(&[es::QUEUED, es::RUNNING])?
        {
            let path = execlog::path_for(&self.logs_dir, &exe.id);
            let logged = match path.exists() {
                true => execlog::repair(&path).ok().and_then(|(exit, _, _)| exit),
                false => None,
            };
            // The log's exit record is written before the result's commit: a server that
            // died in between left the result there, and it is the truth.
            let (status, code, message) = match &logged {
                Some(exit) => (exit.status, exit.exit_code, exit.message.as_str()),
                None => (es::FAILED, -1, msg),
            };
            if logged.is_none() && path.exists() {
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
            self.store
                .finish_execution(&exe.id, status, code, message)?;
            self.events
                .execution_status(&exe.sandbox_id, &exe.id, status, message);
        }
        let mut records = Vec::new();
        let stale: Vec<SandboxRow> = self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| !ss::is_terminal(s.status))
            .collect();
        for s in &stale {
            // A record that does not decode is not guessed at: the sandbox is reclaimed
            // as one the backend has no record of (its directory, its cgroups).
            let provisioned = match s.provisioned.get(&s.id) {
                Ok(p) => p.cloned(),
                Err(e) => {
                    tracing::warn!(sandbox_id = %s.id, error = %e, "reclaiming without its provision record");
                    None
                }
            };
            records.push(ReconcileRecord {
                sandbox_id: s.id.clone(),
                provisioned,
            });
        }
        let report = self.backend.reconcile(&records).await?;
        for s in &stale {
            let msg = "server restarted; the sandbox's processes and files were reclaimed";
            self.store.set_sandbox_status(&s.id, ss::FAILED, msg)?;
            self.store
                .set_sandbox_executions(&s.id, &s.last_execution_id, "")?;
            self.events.sandbox_status(&s.id, ss::FAILED, msg);
        }
        self.sweep_snapshot_temps();
        self.sweep_checkpoint_temps();
        tracing::info!(
            killed = report.killed_sandboxes.len(),
            removed_dirs = report.removed_dirs.len(),
            "reconciled state from previous run"
        );
        Ok(())
    }
}
