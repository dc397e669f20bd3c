//! Memory checkpoints (`ckpt_…`, docs/checkpoints.md): a READY sandbox's memory,
//! processes, writable filesystems and policy, saved by its runtime (gVisor's `runsc
//! checkpoint`), stored content-addressed under the server's state directory (see
//! [`super::checkpoint_image`]) and owned by the caller; listed, inspected, removed; and
//! restored by `CreateSandbox` with `from_checkpoint` — N creates from one checkpoint are
//! N forks.
//!
//! A checkpoint is taken only while no execution is attached: an execution's stdio is the
//! server's pipes, which no image can carry. The sandbox is CHECKPOINTING meanwhile (no
//! execution starts); afterwards it is READY again (`leave_running`) or torn down (in the
//! background: its processes are stopped already). A checkpoint that fails after the
//! runtime's save (hashing, describing or storing the image) is no checkpoint: a sandbox
//! the runtime froze for it is resumed and READY again, or — if even that fails — torn
//! down with a `sandbox.checkpoint_failed` event; never READY while frozen.
//!
//! A restore is verified before the runtime sees the image: the caller's checkpoint
//! (another principal's is `checkpoint_not_found`, exactly like one that does not exist),
//! made by this server's runtime version (`checkpoint_incompatible`), every file as
//! recorded (`checkpoint_corrupt`). A refused or failed restore leaves nothing behind (the
//! create path's cleanup). Each restored copy is a new sandbox: new id, its own network
//! namespace, gateway, secret placeholders and CA, and an attestation naming the
//! checkpoint's content digest. Secret values never reach a sandbox, so never an image.

use super::checkpoint_follow::Follower;
use super::checkpoint_image::{self as image, Invalid, Manifest};
use super::checkpoint_seal as seal;
use super::Engine;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::ids;
use crate::model::owner::Owner;
use crate::model::status::{execution as es, sandbox as ss};
use crate::store::{now_micros, SandboxCaps, SandboxRow};
use cleanroom_backend::Limits;
use cleanroom_vocab::{Capability, Runtime};
use std::path::PathBuf;
use std::sync::Arc;

/// Most checkpoints one principal may hold.
const MAX_CHECKPOINTS_PER_OWNER: usize = 32;
/// Free space the state filesystem keeps besides a checkpoint's worst case.
const FREE_SPACE_RESERVE: u64 = 512 << 20;

/// A stored checkpoint: its id, manifest and content digest.
#[derive(Debug, Clone)]
pub struct CheckpointInfo {
    pub id: String,
    pub manifest: Manifest,
    /// `sha256:<hex>` of the canonical manifest.
    pub content_digest: String,
}

impl CheckpointInfo {
    fn of(manifest: Manifest) -> CheckpointInfo {
        CheckpointInfo {
            id: manifest.id(),
            content_digest: format!("sha256:{}", manifest.digest()),
            manifest,
        }
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::CheckpointNotFound,
        format!("no checkpoint with id {id:?}"),
    )
    .with("checkpoint_id", id)
}

fn corrupt(id: &str, why: &str) -> EngineError {
    EngineError::new(
        ErrorCode::CheckpointCorrupt,
        format!("checkpoint {id} is corrupt: {why}"),
    )
    .with("checkpoint_id", id)
}

impl Engine {
    /// Where checkpoints live (beside snapshots, inside the private state dir).
    fn checkpoints_dir(&self) -> PathBuf {
        self.logs_dir
            .parent()
            .map(|p| p.join("checkpoints"))
            .unwrap_or_else(|| self.logs_dir.join("../checkpoints"))
    }

    /// Checkpoint `sandbox_id` (READY, on a runtime with `checkpoint_restore`) for
    /// `owner`; see the module doc.
    pub(in crate::engine) async fn checkpoint_sandbox(
        self: &Arc<Self>,
        owner: &Owner,
        sandbox_id: &str,
        leave_running: bool,
    ) -> Result<CheckpointInfo, EngineError> {
        let entered = std::time::Instant::now();
        let row = self.get_sandbox(sandbox_id)?;
        let runtime = self.backend.runtime_of_sandbox(sandbox_id);
        let caps = self.backend.capabilities_of(runtime)?;
        let format = self.backend.checkpoint_format(runtime);
        let Some(format) = format.filter(|_| caps.contains(&Capability::CheckpointRestore)) else {
            return Err(
                EngineError::from(cleanroom_backend::BackendError::MissingCapability {
                    runtime: runtime.as_str(),
                    capability: Capability::CheckpointRestore,
                })
                .with("sandbox_id", sandbox_id),
            );
        };
        let owner_text = owner.to_string();
        let mine = self
            .all_checkpoints()
            .into_iter()
            .filter(|c| c.manifest.owner == owner_text)
            .count();
        if mine >= MAX_CHECKPOINTS_PER_OWNER {
            return Err(EngineError::resource_exhausted(format!(
                "{owner} already has {mine} checkpoints (at most {MAX_CHECKPOINTS_PER_OWNER}); remove some first"
            ))
            .with("limit", MAX_CHECKPOINTS_PER_OWNER.to_string()));
        }
        let limits: Limits = self
            .store
            .sandbox_limits(&row.id)
            .ok()
            .and_then(|l| serde_json::from_str(&l).ok())
            .unwrap_or_default();
        let dir = self.checkpoints_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| EngineError::internal(format!("create {}: {e}", dir.display())))?;
        // The image holds the sandbox's memory (its tmpfs included): at most its limit.
        let free = crate::output::quota::free_bytes(&dir).unwrap_or(0);
        if free < limits.memory_bytes.saturating_add(FREE_SPACE_RESERVE) {
            return Err(EngineError::resource_exhausted(format!(
                "the server's state filesystem has {free} bytes free; a checkpoint of this \
                 sandbox needs up to {} plus {FREE_SPACE_RESERVE} in reserve",
                limits.memory_bytes
            ))
            .with("sandbox_id", sandbox_id));
        }
        let _guard = super::pause::freeze_guard(sandbox_id).await;
        let row = self.get_sandbox(sandbox_id)?;
        if row.status != ss::READY {
            return Err(super::pause::not_ready(&row));
        }
        let attached: Vec<String> = self
            .store
            .executions_with_status(&[es::QUEUED, es::RUNNING])?
            .into_iter()
            .filter(|e| e.sandbox_id == sandbox_id)
            .map(|e| e.id)
            .collect();
        if !attached.is_empty() {
            return Err(EngineError::new(
                ErrorCode::SandboxNotReady,
                format!(
                    "sandbox {sandbox_id} has running executions ({}): their stdio is the \
                     server's and cannot be checkpointed; wait for them (detach background \
                     work from their output: `cmd >/tmp/log 2>&1 </dev/null &`)",
                    attached.join(", ")
                ),
            )
            .with("sandbox_id", sandbox_id)
            .with("execution_ids", attached.join(",")));
        }
        if !self
            .store
            .transition_sandbox(sandbox_id, ss::READY, ss::CHECKPOINTING)?
        {
            return Err(super::pause::not_ready(&self.get_sandbox(sandbox_id)?));
        }
        self.events
            .sandbox_status(sandbox_id, ss::CHECKPOINTING, "checkpointing");
        let prepared = entered.elapsed();
        let taken = self
            .write_checkpoint(owner, &row, (runtime, format), &limits, leave_running)
            .await;
        let wrote = entered.elapsed();
        match &taken {
            Ok(_) if !leave_running => {
                // Its processes are stopped already; the teardown need not hold the caller.
                self.terminate_sandbox_in_background(sandbox_id)?;
            }
            Err(failed) if failed.saved && !leave_running => {
                // The runtime saved and froze the sandbox, then describing or storing the
                // image failed: no checkpoint exists, so the sandbox goes on as it was.
                self.resume_after_failed_store(sandbox_id, &failed.error)
                    .await?;
            }
            _ => self.back_to_ready(sandbox_id, "")?,
        }
        let info = taken.map_err(|f| f.error)?;
        self.events.record(crate::store::EventRow {
            sandbox_id: sandbox_id.to_string(),
            kind: "sandbox.checkpoint".into(),
            at: now_micros(),
            sandbox_status: self.get_sandbox(sandbox_id)?.status.number(),
            message: format!("checkpoint {} taken", info.id),
            attributes: serde_json::json!({ "checkpoint_id": info.id }).to_string(),
            ..Default::default()
        });
        tracing::debug!(
            sandbox_id,
            prepare_ms = ms(prepared),
            write_ms = ms(wrote - prepared),
            finish_ms = ms(entered.elapsed() - wrote),
            "checkpoint request timings"
        );
        Ok(info)
    }

    /// Let the runtime write the image into a temporary directory, describe it, and
    /// move it into place under its content address.
    async fn write_checkpoint(
        &self,
        owner: &Owner,
        row: &SandboxRow,
        (runtime, format): (Runtime, String),
        limits: &Limits,
        leave_running: bool,
    ) -> Result<CheckpointInfo, Failed> {
        let dir = self.checkpoints_dir();
        let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let image_dir = tmp.join(image::IMAGE);
        let t0 = std::time::Instant::now();
        let saved = std::sync::atomic::AtomicBool::new(false);
        let written = async {
            std::fs::create_dir_all(&image_dir)
                .map_err(|e| EngineError::internal(format!("create checkpoint dir: {e}")))?;
            // Hashed while the runtime writes (checkpoint_follow.rs).
            let follower = Follower::start(&image_dir)
                .map_err(|e| EngineError::internal(format!("start hashing: {e}")))?;
            if let Err(e) = self
                .backend
                .checkpoint(&row.id, &image_dir, leave_running)
                .await
            {
                follower.abandon();
                return Err(EngineError::from(e).with("sandbox_id", &row.id));
            }
            saved.store(true, std::sync::atomic::Ordering::Relaxed);
            let t_runtime = t0.elapsed();
            let hashed = tokio::task::spawn_blocking(move || follower.finish())
                .await
                .map_err(|e| EngineError::internal(format!("hashing task: {e}")))?
                .map_err(|e| EngineError::internal(format!("describe checkpoint: {e}")))?;
            let files = hashed.iter().map(|h| h.entry.clone()).collect();
            let t_hash = t0.elapsed();
            let policy = row.policy.get(&row.id)?;
            let manifest = Manifest::new(
                owner.to_string(),
                row.id.clone(),
                (runtime.as_str().into(), format),
                (row.policy_hash.clone(), policy.canonical_json()),
                (row.image_ref.clone(), row.image_digest.clone()),
                serde_json::to_string(limits).unwrap_or_default(),
                files,
                dropped(policy),
                now_micros(),
            );
            manifest
                .write(&tmp)
                .map_err(|e| EngineError::internal(format!("write manifest: {e}")))?;
            let info = CheckpointInfo::of(manifest);
            let stored = dir.join(&info.id);
            std::fs::rename(&tmp, &stored)
                .map_err(|e| EngineError::internal(format!("store checkpoint: {e}")))?;
            // What was just hashed need not be hashed again by a restore while unchanged.
            for h in &hashed {
                let path = stored.join(image::IMAGE).join(&h.entry.name);
                seal::remember(&path, h.stamp, &h.entry.sha256);
            }
            tracing::debug!(
                sandbox_id = %row.id,
                checkpoint_id = %info.id,
                bytes = info.manifest.size_bytes(),
                runtime_ms = ms(t_runtime),
                hash_ms = ms(t_hash - t_runtime),
                store_ms = ms(t0.elapsed() - t_hash),
                "checkpoint timings"
            );
            Ok(info)
        }
        .await;
        written.map_err(|error| {
            let _ = std::fs::remove_dir_all(&tmp);
            Failed {
                error,
                saved: saved.into_inner(),
            }
        })
    }

    /// READY again after CHECKPOINTING (`message` on the status event).
    fn back_to_ready(&self, sandbox_id: &str, message: &str) -> Result<(), EngineError> {
        if self
            .store
            .transition_sandbox(sandbox_id, ss::CHECKPOINTING, ss::READY)?
        {
            self.events.sandbox_status(sandbox_id, ss::READY, message);
        }
        Ok(())
    }

    /// A checkpoint not left running failed after the runtime's save (which froze the
    /// sandbox): resume it and say so — READY must mean running. If even the resume fails,
    /// its state is unknown: it is torn down (fail closed), never left READY and frozen.
    async fn resume_after_failed_store(
        self: &Arc<Self>,
        sandbox_id: &str,
        error: &EngineError,
    ) -> Result<(), EngineError> {
        match self.backend.resume(sandbox_id).await {
            Ok(()) => self.back_to_ready(
                sandbox_id,
                &format!("checkpoint failed after the save ({error}); the sandbox was resumed"),
            ),
            Err(e) => {
                tracing::warn!(sandbox_id, error = %e, "resume after a failed checkpoint");
                self.events.record(crate::store::EventRow {
                    sandbox_id: sandbox_id.to_string(),
                    kind: "sandbox.checkpoint_failed".into(),
                    at: now_micros(),
                    sandbox_status: ss::CHECKPOINTING.number(),
                    message: format!(
                        "checkpoint failed after the save ({error}) and the frozen sandbox \
                         could not be resumed ({e}); it is torn down"
                    ),
                    ..Default::default()
                });
                self.terminate_sandbox_in_background(sandbox_id).map(drop)
            }
        }
    }

    /// The checkpoint, if `who` may see it (others get `checkpoint_not_found`).
    pub fn owned_checkpoint(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<CheckpointInfo, EngineError> {
        if !ids::looks_valid(id, "ckpt_") {
            return Err(not_found(id));
        }
        match image::load(&self.checkpoints_dir().join(id), id) {
            Ok(m) if visible(who, &m) => Ok(CheckpointInfo::of(m)),
            Ok(_) | Err(Invalid::Missing) => Err(not_found(id)),
            Err(Invalid::Corrupt(why)) => Err(corrupt(id, &why)),
        }
    }

    /// Checkpoints `who` may see (a corrupt one is left out of the listing; inspect
    /// names it).
    pub fn owned_checkpoints(&self, who: &Principal) -> Vec<CheckpointInfo> {
        self.all_checkpoints()
            .into_iter()
            .filter(|c| visible(who, &c.manifest))
            .collect()
    }

    /// Every stored checkpoint whose manifest matches its id, oldest first.
    fn all_checkpoints(&self) -> Vec<CheckpointInfo> {
        let dir = self.checkpoints_dir();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return vec![];
        };
        let mut out: Vec<CheckpointInfo> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| ids::looks_valid(n, "ckpt_"))
            .filter_map(|n| image::load(&dir.join(&n), &n).ok())
            .map(CheckpointInfo::of)
            .collect();
        out.sort_by_key(|c| c.manifest.created_at);
        out
    }

    /// Remove the caller's checkpoint and its files (sandboxes restored from it keep
    /// running: a restore does not need the image afterwards).
    pub async fn delete_checkpoint(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<CheckpointInfo, EngineError> {
        let info = self.owned_checkpoint(who, id)?;
        let dir = self.checkpoints_dir().join(&info.id);
        seal::forget_under(&dir);
        tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir))
            .await
            .map_err(|e| EngineError::internal(format!("remove task: {e}")))?
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(EngineError::internal(format!(
                    "remove checkpoint files: {e}"
                ))),
            })?;
        Ok(info)
    }

    /// Create a sandbox from the caller's checkpoint (see the module doc for the checks).
    pub(in crate::engine) async fn create_sandbox_from_checkpoint(
        &self,
        who: &Principal,
        sandbox_caps: SandboxCaps,
        checkpoint_id: &str,
    ) -> Result<SandboxRow, EngineError> {
        let info = self.owned_checkpoint(who, checkpoint_id)?;
        let m = &info.manifest;
        let runtime: Runtime = m
            .runtime
            .parse()
            .map_err(|_| corrupt(checkpoint_id, "unknown runtime"))?;
        let here = self.backend.checkpoint_format(runtime);
        if here.as_deref() != Some(m.runtime_version.as_str()) {
            return Err(EngineError::new(
                ErrorCode::CheckpointIncompatible,
                format!(
                    "checkpoint {checkpoint_id} was made by {} ({}); this server restores {}",
                    m.runtime,
                    m.runtime_version,
                    here.map_or_else(
                        || format!("no {} checkpoints", m.runtime),
                        |v| format!("those of {v}")
                    )
                ),
            )
            .with("checkpoint_id", checkpoint_id)
            .with("recorded", m.runtime_version.clone()));
        }
        let image_dir = self.checkpoints_dir().join(&info.id).join(image::IMAGE);
        let (d, manifest) = (image_dir.clone(), m.clone());
        let t0 = std::time::Instant::now();
        tokio::task::spawn_blocking(move || image::verify(&d, &manifest))
            .await
            .map_err(|e| EngineError::internal(format!("verify task: {e}")))?
            .map_err(|why| corrupt(checkpoint_id, &why))?;
        let t_verify = t0.elapsed();
        let policy = crate::store::StoredPolicy::decode(&m.compiled_policy)
            .get(checkpoint_id)?
            .as_ref()
            .clone();
        if policy.policy_hash() != m.policy_hash {
            return Err(corrupt(checkpoint_id, "the policy does not match its hash"));
        }
        // Same rule as snapshots: registry pins are bound at create from lockfiles.
        if !policy.registries.is_empty() {
            return Err(EngineError::new(
                ErrorCode::BackendCapabilityMismatch,
                format!(
                    "checkpoint {checkpoint_id} comes from a sandbox with mediated package \
                     registries (sandbox.registries); restoring those is not supported"
                ),
            ));
        }
        let limits: Limits = serde_json::from_str(&m.limits)
            .map_err(|_| corrupt(checkpoint_id, "limits do not parse"))?;
        let requested = crate::budgets::limits::RequestedLimits {
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpu_millis: limits.cpu_millis,
            disk_bytes: limits.disk_bytes,
            output_bytes: limits.output_bytes,
        };
        let restore = super::snapshots::Restore {
            snapshot_id: info.id.clone(),
            layers: image_dir,
            memory: true,
        };
        let mediation = cleanroom_egress::registry::Mediation::none().with_git(policy.git.clone());
        let created = self
            .create_compiled(
                &who.owner(),
                sandbox_caps,
                policy,
                &m.image_ref,
                requested,
                (Some(restore), mediation, None, false),
            )
            .await;
        tracing::debug!(
            checkpoint_id = %info.id,
            bytes = m.size_bytes(),
            verify_ms = ms(t_verify),
            create_ms = ms(t0.elapsed() - t_verify),
            "restore timings"
        );
        created
    }

    /// The content digest of the checkpoint `sandbox_id` was restored from (empty: none,
    /// or the checkpoint is gone), for its attestation.
    pub(crate) fn restored_checkpoint_digest(&self, sandbox_id: &str) -> String {
        let origin = self.store.sandbox_origin(sandbox_id).unwrap_or_default();
        if !ids::looks_valid(&origin, "ckpt_") {
            return String::new();
        }
        image::load(&self.checkpoints_dir().join(&origin), &origin)
            .map(|m| format!("sha256:{}", m.digest()))
            .unwrap_or_default()
    }

    /// Remove checkpoint temp dirs a crash left behind (called at startup).
    pub fn sweep_checkpoint_temps(&self) {
        let Ok(entries) = std::fs::read_dir(self.checkpoints_dir()) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// A checkpoint that was not stored; `saved`: the runtime's save had succeeded (so a
/// sandbox not left running is frozen).
struct Failed {
    error: EngineError,
    saved: bool,
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// May `who` see a checkpoint of this manifest? (An owner that does not parse: nobody.)
fn visible(who: &Principal, m: &Manifest) -> bool {
    Owner::parse(&m.owner).is_ok_and(|o| who.can_see(&o))
}

/// What a restored copy of a sandbox with `policy` does not get back as it was.
fn dropped(policy: &cleanroom_policy::CompiledPolicy) -> Vec<String> {
    let mut out = vec![
        "open network connections through the egress gateway: a restored copy has a fresh \
         gateway, so they are reset"
            .to_string(),
    ];
    if !policy.secrets.is_empty() {
        out.push(
            "secret placeholders and the sandbox CA: a restored copy gets fresh ones in new \
             executions' environment and under /run/cleanroom; placeholders or certificates \
             its processes kept in memory are refused by its gateway"
                .to_string(),
        );
    }
    out
}
