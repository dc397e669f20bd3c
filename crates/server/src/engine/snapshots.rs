//! Filesystem snapshots (`snap_…`): capture a sandbox's writable state with its compiled
//! policy, image digest and limits; list, inspect, remove; restore (`from_snapshot`).
//!
//! Layout under the state dir: `snapshots/<id>/layers/{rootfs,tmp,root,workspace}` (the
//! backend's capture, ids relative to the sandbox: on-disk uid N is the sandbox's uid N).
//! A capture goes to `snapshots/.tmp-<uuid>` first and is renamed into place once its
//! row is stored: a crash leaves only a temp dir, swept at the next start. The id is
//! content addressed: sha256 over the owner, the manifest digest of the captured files,
//! the policy hash, the image digest and the limits, so the same state captured twice by
//! the same principal is one snapshot. Restoring hands `layers` to the backend, which uses
//! it as a shared read-only lower layer under a fresh upper per sandbox (fork: N sandboxes
//! from one snapshot share its files, none copies them).
//!
//! Budget (docs/budgets.md): a capture may allocate at most the source sandbox's
//! `disk_bytes` plus the size of the snapshot it was restored from, within what its owner
//! has left of [`MAX_SNAPSHOT_BYTES_PER_OWNER`] (captures in flight reserved) and what
//! the state filesystem has free above [`FREE_SPACE_RESERVE`]. The backend charges every
//! block before writing it and stops past the budget (`resource_exhausted`); the partial
//! capture is deleted. A snapshot's `size_bytes` is what it allocated on the host.
//!
//! Never captured: the setup's own tmpfs at `/run/cleanroom` (resolver config, sandbox
//! CA), secret values (they never enter a sandbox) and the egress gateway's CA key (it
//! lives in the server's memory only). A restored sandbox gets a fresh CA and fresh
//! placeholders from the normal create path.

use super::Engine;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::model::ids;
use crate::model::owner::Owner;
use crate::model::status::sandbox as ss;
use crate::store::{now_micros, SandboxCaps, SandboxRow, SnapshotRow};
use cleanroom_backend::Limits;
use cleanroom_vocab::{Capability, ErrorCode};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Most snapshots one principal may keep (each holds up to the sandbox's writable caps on
/// the server's disk); beyond it `resource_exhausted`.
pub const MAX_SNAPSHOTS_PER_OWNER: usize = 64;

/// Host bytes all of one principal's snapshots may hold together: as many snapshots as
/// [`MAX_SNAPSHOTS_PER_OWNER`] of a sandbox with the default disk quota (1 GiB).
pub const MAX_SNAPSHOT_BYTES_PER_OWNER: u64 = MAX_SNAPSHOTS_PER_OWNER as u64 * (1 << 30);

/// Free space a capture always leaves on the state filesystem.
pub const FREE_SPACE_RESERVE: u64 = 1 << 30;

/// Bytes reserved by captures in progress, per owner (released when the capture ends).
static IN_FLIGHT: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<Owner, u64>>> =
    std::sync::LazyLock::new(Default::default);

/// One capture's reservation against its owner's snapshot bytes.
struct Reservation {
    owner: Owner,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut m = crate::model::sync::lock(&IN_FLIGHT);
        if let Some(v) = m.get_mut(&self.owner) {
            *v = v.saturating_sub(self.bytes);
            if *v == 0 {
                m.remove(&self.owner);
            }
        }
    }
}

/// A snapshot to restore a new sandbox from (its id and its layers directory), or, with
/// `memory`, a memory checkpoint (its id and its verified image directory; see
/// [`super::checkpoints`]).
#[derive(Debug, Clone)]
pub struct Restore {
    pub snapshot_id: String,
    pub layers: PathBuf,
    pub memory: bool,
}

fn snapshot_not_found(id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::SnapshotNotFound,
        format!("no snapshot with id {id:?}"),
    )
    .with("snapshot_id", id)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long `snapshot rm` waits for sandboxes that use the snapshot and are already
/// STOPPING (a teardown takes well under a second; this bounds a wedged one).
const STOPPING_USERS_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

impl Engine {
    /// Where snapshots live (next to the execution logs, inside the private state dir).
    fn snapshots_dir(&self) -> PathBuf {
        self.logs_dir
            .parent()
            .map(|p| p.join("snapshots"))
            .unwrap_or_else(|| self.logs_dir.join("../snapshots"))
    }

    /// Capture `sandbox_id` (READY or PAUSED) into a snapshot owned by `owner`. A READY
    /// sandbox is frozen for the capture and thawed afterwards; a PAUSED one stays paused.
    pub(in crate::engine) async fn create_snapshot(
        &self,
        owner: &Owner,
        sandbox_id: &str,
    ) -> Result<SnapshotRow, EngineError> {
        self.get_sandbox(sandbox_id)?;
        self.require_capability(Capability::FilesystemSnapshots)?;
        let mine = self
            .store
            .list_snapshots()?
            .into_iter()
            .filter(|s| s.owner == *owner)
            .count();
        if mine >= MAX_SNAPSHOTS_PER_OWNER {
            return Err(EngineError::resource_exhausted(format!(
                "{owner} already has {mine} snapshots (at most {MAX_SNAPSHOTS_PER_OWNER}); remove some first"
            ))
            .with("limit", MAX_SNAPSHOTS_PER_OWNER.to_string()));
        }
        // No pause, resume or other capture of this sandbox until the capture is done.
        let _guard = super::pause::freeze_guard(sandbox_id).await;
        let row = self.get_sandbox(sandbox_id)?;
        if row.status != ss::READY && row.status != ss::PAUSED {
            return Err(super::pause::not_ready(&row));
        }
        // A runtime that captures from inside the sandbox (gvisor) needs it running: a
        // READY one is captured as it runs, a PAUSED one is refused rather than thawed
        // behind its owner's back.
        let live = self.backend.capture_runs_live(sandbox_id);
        if live && row.status == ss::PAUSED {
            let mut e = super::pause::not_ready(&row);
            e.message = format!(
                "sandbox {sandbox_id} is SANDBOX_STATUS_PAUSED and its runtime ({}) captures \
                 files from inside the running sandbox: resume it with `cleanroom sandbox \
                 resume {sandbox_id}`, then take the snapshot",
                self.backend.runtime_of_sandbox(sandbox_id).as_str()
            );
            return Err(e);
        }
        let dir = self.snapshots_dir();
        std::fs::create_dir_all(&dir)
            .map_err(|e| EngineError::internal(format!("create {}: {e}", dir.display())))?;
        let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let layers = tmp.join("layers");
        std::fs::create_dir_all(&layers)
            .map_err(|e| EngineError::internal(format!("create {}: {e}", layers.display())))?;
        let limits = self.sandbox_limits(&row);
        let (budget, _reservation) = match self.snapshot_budget(owner, sandbox_id, &limits, &dir) {
            Ok(b) => b,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e);
            }
        };
        // Frozen around the capture unless the runtime captures a running sandbox.
        let was_paused = row.status == ss::PAUSED || live;
        if !was_paused {
            if let Err(e) = self.backend.pause(sandbox_id).await {
                let _ = std::fs::remove_dir_all(&tmp);
                return Err(e.into());
            }
        }
        let captured = self
            .backend
            .capture_filesystem(sandbox_id, &layers, budget)
            .await;
        if !was_paused {
            if let Err(e) = self.backend.resume(sandbox_id).await {
                tracing::warn!(sandbox_id, error = %e, "could not thaw after a snapshot");
            }
        }
        let stats = match captured {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&tmp);
                let over = matches!(e, cleanroom_backend::BackendError::NoSpace(_));
                let e = EngineError::from(e).with("sandbox_id", sandbox_id);
                return Err(if over {
                    e.with("budget_bytes", budget.to_string())
                } else {
                    e
                });
            }
        };
        let limits_json = serde_json::to_string(&limits).unwrap_or_default();
        let mut h = Sha256::new();
        let owner_text = owner.to_string();
        for part in [
            &owner_text,
            &stats.manifest_digest,
            &row.policy_hash,
            &row.image_digest,
            &limits_json,
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let digest: [u8; 32] = h.finalize().into();
        let id = format!("snap_{}", &hex(&digest)[..32]);
        let snap = SnapshotRow {
            id: id.clone(),
            owner: owner.clone(),
            source_sandbox_id: sandbox_id.to_string(),
            parent_id: self.store.sandbox_origin(sandbox_id)?,
            policy_hash: row.policy_hash.clone(),
            compiled_policy: row.policy.get(&row.id)?.canonical_json(),
            image_ref: row.image_ref.clone(),
            image_digest: row.image_digest.clone(),
            limits: limits_json,
            size_bytes: stats.allocated_bytes as i64,
            file_count: stats.files as i64,
            content_digest: format!("sha256:{}", stats.manifest_digest),
            created_at: now_micros(),
        };
        let dest = dir.join(&id);
        if dest.exists() || !self.store.insert_snapshot(&snap)? {
            // The same content, owner and settings: that snapshot already exists.
            let _ = std::fs::remove_dir_all(&tmp);
            return self
                .store
                .get_snapshot(&id)?
                .ok_or_else(|| snapshot_not_found(&id));
        }
        if let Err(e) = std::fs::rename(&tmp, &dest) {
            let _ = std::fs::remove_dir_all(&tmp);
            self.store.delete_snapshot(&id)?;
            return Err(EngineError::internal(format!("store snapshot: {e}")));
        }
        self.events.record(crate::store::EventRow {
            sandbox_id: sandbox_id.to_string(),
            kind: "sandbox.snapshot".into(),
            at: now_micros(),
            sandbox_status: self.get_sandbox(sandbox_id)?.status.number(),
            message: format!("snapshot {id} captured"),
            attributes: serde_json::json!({ "snapshot_id": id }).to_string(),
            ..Default::default()
        });
        Ok(snap)
    }

    /// The byte budget of one capture of `sandbox_id` for `owner` (see the module doc),
    /// reserved against the owner's total until the returned guard drops. Nothing left:
    /// `resource_exhausted` before anything is written.
    fn snapshot_budget(
        &self,
        owner: &Owner,
        sandbox_id: &str,
        limits: &Limits,
        dir: &std::path::Path,
    ) -> Result<(u64, Reservation), EngineError> {
        let snaps = self.store.list_snapshots()?;
        let origin = self.store.sandbox_origin(sandbox_id)?;
        let parent = snaps
            .iter()
            .find(|s| !origin.is_empty() && s.id == origin)
            .map_or(0, |s| s.size_bytes.max(0) as u64);
        let own = limits.disk_bytes.saturating_add(parent);
        let held: u64 = snaps
            .iter()
            .filter(|s| s.owner == *owner)
            .map(|s| s.size_bytes.max(0) as u64)
            .sum();
        let mut in_flight = crate::model::sync::lock(&IN_FLIGHT);
        let pending = in_flight.get(owner).copied().unwrap_or(0);
        let owner_left = MAX_SNAPSHOT_BYTES_PER_OWNER.saturating_sub(held.saturating_add(pending));
        // An unreadable filesystem counts as full (fail closed).
        let free = crate::output::quota::free_bytes(dir)
            .unwrap_or(0)
            .saturating_sub(FREE_SPACE_RESERVE);
        let budget = own.min(owner_left).min(free);
        if budget == 0 {
            let why = if owner_left == 0 {
                format!(
                    "{owner}'s snapshots hold {held} bytes (at most {MAX_SNAPSHOT_BYTES_PER_OWNER}); remove some first"
                )
            } else {
                format!(
                    "the server's state filesystem has less than {FREE_SPACE_RESERVE} bytes free"
                )
            };
            return Err(EngineError::resource_exhausted(why)
                .with("sandbox_id", sandbox_id)
                .with("budget_bytes", "0"));
        }
        *in_flight.entry(owner.clone()).or_insert(0) += budget;
        Ok((
            budget,
            Reservation {
                owner: owner.clone(),
                bytes: budget,
            },
        ))
    }

    /// The snapshot, if `who` may see it (others get `snapshot_not_found`).
    pub(in crate::engine) fn owned_snapshot(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<SnapshotRow, EngineError> {
        if !ids::looks_valid(id, "snap_") {
            return Err(snapshot_not_found(id));
        }
        match self.store.get_snapshot(id)? {
            Some(s) if who.can_see(&s.owner) => Ok(s),
            _ => Err(snapshot_not_found(id)),
        }
    }

    /// Snapshots `who` may see.
    pub fn owned_snapshots(&self, who: &Principal) -> Result<Vec<SnapshotRow>, EngineError> {
        Ok(self
            .store
            .list_snapshots()?
            .into_iter()
            .filter(|s| who.can_see(&s.owner))
            .collect())
    }

    /// Delete a snapshot and its files; refused while a live sandbox uses it as a layer.
    /// Sandboxes that are only STOPPING (the one-shot sandbox of an `exec --from` that
    /// just finished is torn down in the background) are waited for, up to
    /// [`STOPPING_USERS_WAIT`]: `snapshot rm` right after such an `exec` used to fail
    /// `snapshot_in_use`.
    pub(in crate::engine) async fn remove_snapshot(&self, id: &str) -> Result<(), EngineError> {
        let deadline = tokio::time::Instant::now() + STOPPING_USERS_WAIT;
        loop {
            let users: Vec<SandboxRow> = self
                .store
                .list_sandboxes()?
                .into_iter()
                .filter(|s| !ss::is_terminal(s.status))
                .filter(|s| self.store.sandbox_origin(&s.id).is_ok_and(|o| o == id))
                .collect();
            if users.is_empty() {
                break;
            }
            let only_stopping = users.iter().all(|s| s.status == ss::STOPPING);
            if only_stopping && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                continue;
            }
            let ids: Vec<String> = users.into_iter().map(|s| s.id).collect();
            return Err(EngineError::new(
                ErrorCode::SnapshotInUse,
                format!("snapshot {id} is the lower layer of {}", ids.join(", ")),
            )
            .with("sandbox_ids", ids.join(",")));
        }
        self.store.delete_snapshot(id)?;
        let dir = self.snapshots_dir().join(id);
        tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir))
            .await
            .map_err(|e| EngineError::internal(format!("remove task: {e}")))?
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(EngineError::internal(format!("remove snapshot files: {e}")))
                }
            })
    }

    /// Create a sandbox from the caller's snapshot: its compiled policy, image and limits
    /// (non-zero `requested` fields override the limits), its files as a shared lower layer.
    pub(in crate::engine) async fn create_sandbox_from_snapshot(
        &self,
        who: &Principal,
        sandbox_caps: SandboxCaps,
        snapshot_id: &str,
        requested: crate::budgets::limits::RequestedLimits,
    ) -> Result<SandboxRow, EngineError> {
        let snap = self.owned_snapshot(who, snapshot_id)?;
        self.require_capability(Capability::FilesystemSnapshots)?;
        let policy = crate::store::StoredPolicy::decode(&snap.compiled_policy)
            .get(snapshot_id)?
            .as_ref()
            .clone();
        let base: Limits = serde_json::from_str(&snap.limits).unwrap_or_default();
        let pick = |r: u64, b: u64| if r != 0 { r } else { b };
        let limits = crate::budgets::limits::RequestedLimits {
            memory_bytes: pick(requested.memory_bytes, base.memory_bytes),
            pids: pick(requested.pids, base.pids),
            cpu_millis: pick(requested.cpu_millis, base.cpu_millis),
            disk_bytes: pick(requested.disk_bytes, base.disk_bytes),
            // A defaulted output quota follows a smaller disk asked for at restore
            // (docs/budgets.md); an explicit one stays.
            output_bytes: match requested.output_bytes {
                0 if requested.disk_bytes != 0
                    && base.output_bytes
                        == crate::budgets::limits::default_output_bytes(base.disk_bytes) =>
                {
                    crate::budgets::limits::default_output_bytes(requested.disk_bytes)
                }
                r => pick(r, base.output_bytes),
            },
        };
        let restore = Restore {
            snapshot_id: snap.id.clone(),
            layers: self.snapshots_dir().join(&snap.id).join("layers"),
            memory: false,
        };
        if !restore.layers.is_dir() {
            return Err(EngineError::internal(format!(
                "the files of snapshot {snapshot_id} are missing"
            )));
        }
        // A capture restores only on the runtime that made it (a linux capture is overlay
        // layers, a gvisor one an archive applied inside the sandbox); the restore's
        // runtime is the policy's, else this server's default, which may have changed.
        let taken_on = cleanroom_backend::gvisor::fsnap::runtime_of_layers(&restore.layers);
        let restore_on = policy
            .runtime
            .unwrap_or_else(|| self.backend.default_runtime());
        if taken_on != restore_on {
            return Err(EngineError::new(
                ErrorCode::BackendCapabilityMismatch,
                format!(
                    "snapshot {snapshot_id} was taken under runtime {} and would be restored \
                     under {} (this server's default runtime); a snapshot restores only on \
                     the runtime that took it — start the server with `--default-runtime {}`",
                    taken_on.as_str(),
                    restore_on.as_str(),
                    taken_on.as_str()
                ),
            )
            .with("snapshot_runtime", taken_on.as_str())
            .with("runtime", restore_on.as_str()));
        }
        // Registry pins are bound from lockfile contents at create, which a snapshot does
        // not keep: a snapshot of a mediated sandbox is refused (fail closed) rather than
        // restored with unmediated access to its registry hosts.
        if !policy.registries.is_empty() {
            return Err(EngineError::new(
                ErrorCode::BackendCapabilityMismatch,
                format!(
                    "snapshot {snapshot_id} comes from a sandbox with mediated package \
                     registries (sandbox.registries); restoring those is not supported"
                ),
            ));
        }
        let mediation = cleanroom_egress::registry::Mediation::none().with_git(policy.git.clone());
        self.create_compiled(
            &who.owner(),
            sandbox_caps,
            policy,
            &snap.image_ref,
            limits,
            (Some(restore), mediation, None, false),
        )
        .await
    }

    /// Remove capture temp dirs a crash left behind, and store the content of snapshots
    /// captured before it was stored as data as data now (called at startup; see
    /// `cleanroom_backend::linux::capture::migrate`).
    pub fn sweep_snapshot_temps(&self) {
        let Ok(entries) = std::fs::read_dir(self.snapshots_dir()) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with(".tmp-") {
                let _ = std::fs::remove_dir_all(e.path());
            } else if name.starts_with("snap_") {
                let layers = e.path().join("layers");
                // A gvisor capture is one archive, applied inside the sandbox: no layers.
                if cleanroom_backend::gvisor::fsnap::runtime_of_layers(&layers)
                    == cleanroom_backend::Runtime::Gvisor
                {
                    continue;
                }
                match cleanroom_backend::linux::capture::migrate::store_as_data(&layers) {
                    Ok(0) => {}
                    Ok(n) => {
                        tracing::info!(snapshot_id = name, entries = n, "snapshot stored as data")
                    }
                    Err(err) => {
                        tracing::error!(snapshot_id = name, error = %err, "could not store a snapshot as data")
                    }
                }
            }
        }
    }

    /// The limits a sandbox runs with (from its provision record's request, else defaults).
    fn sandbox_limits(&self, row: &SandboxRow) -> Limits {
        self.store
            .sandbox_limits(&row.id)
            .ok()
            .and_then(|l| serde_json::from_str(&l).ok())
            .unwrap_or_default()
    }
}
