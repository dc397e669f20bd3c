//! Warm pools (seed 002 `WarmPoolManager`): READY sandboxes kept for a template and handed
//! to a principal by a claim that only rewrites the sandbox's owner and signs its
//! attestation — no provisioning on the claim path.
//!
//! * this file: pool definitions, their in-memory state, create/list/stats/destroy;
//! * [`claim`]: claim, release, and the transparent claim of `CreateSandbox`;
//! * [`pending`]: `RunExecution`'s transparent claim, committed with the command's start;
//! * [`warm`]: the per-pool task that keeps `ready` at its target (min_ready, autoscaling
//!   with headroom, max_age replacement) and rebuilds pools after a restart.
//!
//! Per-tenant material is never shared between claims: a warm sandbox belongs to the
//! pool's internal owner (`pool:<id>`, a name no principal can have) until one claim hands
//! it over; its egress gateway, secret placeholders and sandbox CA were made for it alone
//! when it was warmed, and a released sandbox is destroyed (its slot is re-warmed with a
//! fresh sandbox), so no claimer ever sees another claimer's processes, files, IPC,
//! sockets, gateway state or CA.

pub mod adopt;
pub mod alive;
pub mod claim;
pub mod pending;
#[cfg(test)]
mod template_tests;
pub mod warm;
#[cfg(test)]
mod yield_tests;

use super::Engine;
use crate::budgets::limits::RequestedLimits;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::owner::Owner;
use crate::model::sync::lock;
use crate::store::{now_micros, PoolRow, SandboxCaps, SandboxRow};
use cleanroom_backend::Limits;
use cleanroom_policy::CompiledPolicy;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Upper bound of `max_ready` (per pool).
pub const MAX_READY_BOUND: u32 = 5000;
/// Pools one principal may have. Each is a stored definition and a warming task that wakes
/// every second, and every create scans them for a template match: sandboxes are capped
/// per principal, so pools are too.
pub const MAX_POOLS_PER_OWNER: u32 = 64;
/// Claim latencies kept for avg/p99.
const LATENCY_WINDOW: usize = 4096;
/// Claim times kept at most per pool.
const MAX_RECENT: usize = 1_000_000;

/// Autoscaling settings (seed 002 `AutoScalingConfig`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Autoscaling {
    pub enabled: bool,
    pub headroom_factor: f64,
    pub interval_seconds: u32,
}

/// A pool's definition, stored as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolSpec {
    pub name: String,
    pub policy_yaml: String,
    pub image_ref: String,
    pub memory_bytes: u64,
    pub pids: u64,
    pub cpu_millis: u64,
    pub disk_bytes: u64,
    pub output_bytes: u64,
    pub runtime: String,
    pub min_ready: u32,
    pub max_ready: u32,
    pub max_age_seconds: u32,
    pub reusable: bool,
    pub autoscaling: Autoscaling,
}

impl PoolSpec {
    pub fn requested(&self) -> RequestedLimits {
        RequestedLimits {
            memory_bytes: self.memory_bytes,
            pids: self.pids,
            cpu_millis: self.cpu_millis,
            disk_bytes: self.disk_bytes,
            output_bytes: self.output_bytes,
        }
    }
}

/// What makes two sandboxes interchangeable: compiled policy hash, image digest,
/// effective limits, runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateKey {
    pub policy_hash: String,
    pub image_digest: String,
    pub limits: Limits,
    pub runtime: String,
}

/// A READY sandbox waiting in a pool: its row as it became READY (what a claim hands
/// over, so the claim reads nothing back) and its pid 1 (checked before it is handed out).
#[derive(Clone)]
pub(crate) struct Warm {
    pub row: SandboxRow,
    pub at: Instant,
    pub init: alive::InitProc,
}

/// Counters and the ready queue of one pool (all under one lock, so `ready + warming` is
/// one consistent number for the warming task and for `pool stats`).
#[derive(Default)]
pub(crate) struct PoolState {
    /// READY sandboxes, oldest first.
    pub ready: VecDeque<Warm>,
    /// Sandboxes being warmed right now (from the start of their create until they are in
    /// `ready` or have failed).
    pub warming: u32,
    /// Recent claim latencies (µs).
    pub latencies: VecDeque<u64>,
    /// Times of the claims within the longest window anyone asks about (claims/min and the
    /// autoscaler's interval), oldest first.
    pub recent: VecDeque<Instant>,
    pub claims_total: u64,
    pub misses_total: u64,
    /// Warm sandboxes found dead (pid 1 gone) before they were handed out.
    pub dead_total: u64,
    /// Dead warm sandboxes the warming task still has to terminate.
    pub dead: Vec<String>,
    /// Passes of the warming task's loop (tests: it must not wake up in a loop).
    #[cfg(test)]
    pub passes: u64,
}

impl PoolState {
    /// Claims within the last `window`.
    pub fn claims_within(&self, window: std::time::Duration) -> usize {
        match Instant::now().checked_sub(window) {
            Some(cutoff) => self.recent.len() - self.recent.partition_point(|t| *t < cutoff),
            None => self.recent.len(),
        }
    }
}

/// One live pool.
pub(crate) struct PoolHandle {
    pub id: String,
    pub owner: Owner,
    pub created_at: i64,
    pub spec: PoolSpec,
    /// `spec.policy_yaml`, compiled once when the pool started: every warm sandbox is
    /// made from it, and a claim whose policy text is the pool's is matched without
    /// compiling.
    pub policy: Arc<CompiledPolicy>,
    pub key: TemplateKey,
    pub state: Mutex<PoolState>,
    pub stopped: AtomicBool,
    pub wake: tokio::sync::Notify,
}

impl PoolHandle {
    /// Owner of the pool's READY, unclaimed sandboxes.
    pub fn internal_owner(&self) -> Owner {
        Owner::pool(&self.id)
    }
}

/// Every pool of the server.
#[derive(Default)]
pub struct Pools {
    pub(crate) map: Mutex<HashMap<String, Arc<PoolHandle>>>,
    pub(crate) caps: Mutex<SandboxCaps>,
}

/// A pool as the API shows it.
#[derive(Debug, Clone)]
pub struct PoolView {
    pub id: String,
    pub owner: Owner,
    pub created_at: i64,
    pub spec: PoolSpec,
    pub policy_hash: String,
    pub image_digest: String,
}

/// Statistics (seed 002 `PoolStatistics`).
#[derive(Debug, Clone, Default)]
pub struct PoolStats {
    pub ready: u32,
    pub claimed: u32,
    pub warming: u32,
    pub claims_per_minute: f64,
    pub avg_claim_latency_us: u64,
    pub p99_claim_latency_us: u64,
    pub claims_total: u64,
    pub misses_total: u64,
    pub target_ready: u32,
    pub replaced_dead_total: u64,
}

fn pool_not_found(id: &str) -> EngineError {
    EngineError::new(ErrorCode::PoolNotFound, format!("no pool {id}")).with("pool_id", id)
}

fn view(p: &PoolHandle) -> PoolView {
    PoolView {
        id: p.id.clone(),
        owner: p.owner.clone(),
        created_at: p.created_at,
        spec: p.spec.clone(),
        policy_hash: p.key.policy_hash.clone(),
        image_digest: p.key.image_digest.clone(),
    }
}

impl Engine {
    /// The template key of a create request, exactly as `create_sandbox` would build it.
    pub fn template_key(
        &self,
        policy_yaml: &str,
        image_ref: &str,
        requested: RequestedLimits,
    ) -> Result<TemplateKey, EngineError> {
        let policy = self.compile_policy(policy_yaml)?;
        self.template_key_of(&policy, image_ref, requested)
    }

    /// A pool's template: its policy compiled once (kept on the pool, reused by every
    /// warm and claim) and its key.
    fn template(&self, spec: &PoolSpec) -> Result<(Arc<CompiledPolicy>, TemplateKey), EngineError> {
        let policy = Arc::new(self.compile_policy(&spec.policy_yaml)?);
        let key = self.template_key_of(&policy, &spec.image_ref, spec.requested())?;
        Ok((policy, key))
    }

    /// [`Engine::template_key`] of a policy already compiled.
    pub(crate) fn template_key_of(
        &self,
        policy: &CompiledPolicy,
        image_ref: &str,
        requested: RequestedLimits,
    ) -> Result<TemplateKey, EngineError> {
        let image_ref = match (image_ref.trim(), &policy.image_ref) {
            ("", Some(p)) => p.clone(),
            (r, _) => r.to_string(),
        };
        let image_digest = if image_ref.is_empty() {
            String::new()
        } else {
            cleanroom_image::PinnedRef::parse(&image_ref)
                .map_err(EngineError::from)?
                .digest
        };
        Ok(TemplateKey {
            limits: crate::budgets::limits::effective(policy, requested.into())?,
            policy_hash: policy.policy_hash(),
            image_digest,
            runtime: policy
                .runtime
                .unwrap_or_else(|| self.backend.default_runtime())
                .as_str()
                .into(),
        })
    }

    /// Create a pool owned by `who` and start warming it.
    pub fn create_pool(
        self: &Arc<Self>,
        who: &Principal,
        spec: PoolSpec,
    ) -> Result<PoolView, EngineError> {
        let (spec, policy, key) = self.checked_pool_spec(spec)?;
        let id = format!("pool_{}", uuid::Uuid::now_v7().simple());
        let row = PoolRow {
            id: id.clone(),
            owner: who.owner(),
            created_at: now_micros(),
            spec: serde_json::to_string(&spec).map_err(|e| EngineError::internal(e.to_string()))?,
        };
        if !self.store.insert_pool(&row, MAX_POOLS_PER_OWNER)? {
            return Err(EngineError::resource_exhausted(format!(
                "{} already has {MAX_POOLS_PER_OWNER} pools; remove one first",
                who.name
            ))
            .with("limit", MAX_POOLS_PER_OWNER.to_string()));
        }
        let handle = self.start_pool(row, spec, policy, key);
        Ok(view(&handle))
    }

    /// `spec` checked and normalized as [`Engine::create_pool`] stores it (its runtime
    /// applied to its policy), with its compiled policy and template key: everything a
    /// create would refuse is refused here.
    pub(crate) fn checked_pool_spec(
        &self,
        mut spec: PoolSpec,
    ) -> Result<(PoolSpec, Arc<CompiledPolicy>, TemplateKey), EngineError> {
        if spec.max_ready == 0 {
            spec.max_ready = spec.min_ready.max(1);
        }
        if spec.min_ready > spec.max_ready || spec.max_ready > MAX_READY_BOUND {
            return Err(EngineError::invalid(format!(
                "need min_ready <= max_ready <= {MAX_READY_BOUND} (got {} and {})",
                spec.min_ready, spec.max_ready
            ))
            .with("field", "max_ready"));
        }
        if spec.name.len() > 128 || spec.name.chars().any(|c| c.is_control()) {
            return Err(
                EngineError::invalid("name: at most 128 printable characters")
                    .with("field", "name"),
            );
        }
        let a = &mut spec.autoscaling;
        if a.enabled {
            if !(a.headroom_factor.is_finite() && (0.0..=100.0).contains(&a.headroom_factor)) {
                return Err(EngineError::invalid(
                    "autoscaling.headroom_factor must be within 0..=100",
                )
                .with("field", "autoscaling.headroom_factor"));
            }
            if a.headroom_factor == 0.0 {
                a.headroom_factor = 1.5;
            }
            a.interval_seconds = a.interval_seconds.clamp(1, 3600);
        }
        // The template's runtime is applied to its policy (so the pool's key, like a
        // create's, carries it); one this server lacks is refused now.
        let runtime = spec.runtime.trim();
        if !runtime.is_empty() {
            let rt: cleanroom_vocab::Runtime = runtime.parse().map_err(|_| {
                EngineError::new(
                    ErrorCode::RuntimeUnavailable,
                    format!("runtime {runtime:?} is not a runtime (linux, gvisor)"),
                )
            })?;
            spec.policy_yaml = cleanroom_policy::with_runtime(&spec.policy_yaml, rt)?;
        }
        let rt = cleanroom_policy::compile(&spec.policy_yaml)?
            .runtime
            .unwrap_or_else(|| self.backend.default_runtime());
        self.backend
            .capabilities_of(rt)
            .map_err(EngineError::from)?;
        spec.runtime = rt.as_str().into();
        // Everything a create would refuse is refused now, not in the warming loop.
        let (policy, key) = self.template(&spec)?;
        // A policy with `sandbox.registries` binds each sandbox to the lockfiles its create
        // supplies, which a pool's warming has none of: such a pool would never fill (and a
        // create with lockfiles is never served from a pool anyway). Refused here, at once.
        let registries = cleanroom_policy::registries::lockfile_paths(&spec.policy_yaml);
        if !registries.is_empty() {
            return Err(EngineError::new(
                ErrorCode::PolicyInvalid,
                format!(
                    "a pool cannot hold sandboxes whose policy mediates registries \
                     (sandbox.registries pins lockfiles {} per sandbox at create); \
                     create such sandboxes with `cleanroom create` or `sandbox create`",
                    registries.join(", ")
                ),
            )
            .with("field", "sandbox.registries"));
        }
        // Named volumes are their owner's and read-write into one sandbox at a time: a
        // pool's anonymous warm sandboxes cannot hold them (docs/volumes.md).
        if cleanroom_policy::compile(&spec.policy_yaml).is_ok_and(|p| !p.volumes.is_empty()) {
            return Err(EngineError::new(
                ErrorCode::VolumeMountInvalid,
                "a pool cannot hold sandboxes that mount named volumes (sandbox.volumes); \
                 create such sandboxes with `cleanroom create` or `sandbox create`",
            )
            .with("field", "sandbox.volumes"));
        }
        Ok((spec, policy, key))
    }

    /// A pool `who` may see (others: `pool_not_found`).
    pub(crate) fn visible_pool(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<Arc<PoolHandle>, EngineError> {
        lock(&self.pools.map)
            .get(id)
            .filter(|p| who.can_see(&p.owner))
            .cloned()
            .ok_or_else(|| pool_not_found(id))
    }

    pub fn list_pools(&self, who: &Principal) -> Vec<(PoolView, PoolStats)> {
        let mut pools: Vec<Arc<PoolHandle>> = lock(&self.pools.map)
            .values()
            .filter(|p| who.can_see(&p.owner))
            .cloned()
            .collect();
        pools.sort_by(|a, b| a.id.cmp(&b.id));
        pools.iter().map(|p| (view(p), self.stats_of(p))).collect()
    }

    pub fn pool_stats(
        &self,
        who: &Principal,
        id: &str,
    ) -> Result<(PoolView, PoolStats), EngineError> {
        let p = self.visible_pool(who, id)?;
        Ok((view(&p), self.stats_of(&p)))
    }

    fn stats_of(&self, p: &PoolHandle) -> PoolStats {
        let claimed = self
            .store
            .count_claimed(&p.id, &p.internal_owner())
            .unwrap_or(0);
        let st = lock(&p.state);
        let mut sorted: Vec<u64> = st.latencies.iter().copied().collect();
        sorted.sort_unstable();
        let avg = if sorted.is_empty() {
            0
        } else {
            sorted.iter().sum::<u64>() / sorted.len() as u64
        };
        let p99 = sorted
            .get((sorted.len() * 99).div_ceil(100).saturating_sub(1))
            .copied()
            .unwrap_or(0);
        let target = warm::target_ready(&p.spec, &st);
        PoolStats {
            ready: st.ready.len() as u32,
            claimed,
            warming: st.warming,
            claims_per_minute: st.claims_within(std::time::Duration::from_secs(60)) as f64,
            avg_claim_latency_us: avg,
            p99_claim_latency_us: p99,
            claims_total: st.claims_total,
            misses_total: st.misses_total,
            target_ready: target,
            replaced_dead_total: st.dead_total,
        }
    }

    /// Destroy a pool: its READY and warming sandboxes are terminated; sandboxes already
    /// claimed stay with their claimers.
    pub async fn destroy_pool(&self, who: &Principal, id: &str) -> Result<(), EngineError> {
        let p = self.visible_pool(who, id)?;
        self.destroy_pool_handle(&p).await
    }

    /// [`Engine::destroy_pool`] of a pool already found (its owner checked, or the
    /// cluster's record of it gone: `adopt`).
    pub(crate) async fn destroy_pool_handle(&self, p: &Arc<PoolHandle>) -> Result<(), EngineError> {
        let id = p.id.as_str();
        lock(&self.pools.map).remove(id);
        p.stopped.store(true, Ordering::SeqCst);
        p.wake.notify_one();
        // Drained under the state lock after `stopped` is set: a warm create finishing now
        // sees `stopped` under the same lock and terminates its sandbox instead of queueing
        // it where nobody would look again.
        let ready: Vec<String> = {
            let mut st = lock(&p.state);
            let mut ids: Vec<String> = st.ready.drain(..).map(|w| w.row.id).collect();
            ids.append(&mut st.dead);
            ids
        };
        // The pool's sandboxes go before its stored definition: a store error must not
        // leave them running, owned by a pool nobody can see.
        for sid in ready {
            if let Err(e) = self.terminate_sandbox(&sid).await {
                tracing::warn!(sandbox_id = %sid, error = %e, "pool destroy: terminate failed");
            }
        }
        self.store.delete_pool(id)?;
        Ok(())
    }

    /// Stop every pool's warming (server shutdown; the definitions stay stored).
    pub fn stop_pools(&self) {
        for p in lock(&self.pools.map).values() {
            p.stopped.store(true, Ordering::SeqCst);
            p.wake.notify_one();
        }
    }

    /// Count one claim of `p` that took `micros` server-side (see `claim`'s module doc
    /// for what is measured).
    pub(crate) fn record_claim(p: &PoolHandle, micros: u64) {
        crate::metrics::pool_hit();
        let mut st = lock(&p.state);
        st.claims_total += 1;
        let now = Instant::now();
        st.recent.push_back(now);
        // Keep exactly the claims of the longest window asked about: a minute for
        // claims/min, the autoscaler's interval for its target.
        let keep =
            std::time::Duration::from_secs(60.max(p.spec.autoscaling.interval_seconds as u64));
        if let Some(cutoff) = now.checked_sub(keep) {
            while st.recent.front().is_some_and(|t| *t < cutoff) {
                st.recent.pop_front();
            }
        }
        // Bounded whatever the claim rate (16k claims/s over a minute): beyond that the
        // oldest are dropped and claims/min reads low rather than the server growing.
        while st.recent.len() > MAX_RECENT {
            st.recent.pop_front();
        }
        st.latencies.push_back(micros);
        if st.latencies.len() > LATENCY_WINDOW {
            st.latencies.pop_front();
        }
    }
}
