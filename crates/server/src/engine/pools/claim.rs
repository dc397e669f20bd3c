//! Claiming and releasing pool sandboxes, and `CreateSandbox`'s transparent claim from a
//! pool whose template matches the request exactly.
//!
//! The claim path does no provisioning, reads nothing back from the store and performs
//! exactly one store transaction: pop a READY sandbox (its row is kept in memory since it
//! became READY), check its pid 1 is still alive (a dead one is skipped, terminated and
//! replaced by the warming task), sign the attestation for the claimer, then commit in
//! one transaction the owner change (conditional: still the pool's and READY, the
//! claimer's cap checked in the same statement), the claim record, the `pool.claim` event
//! and the claimer's hold on the image. Refilling is the warming task's, woken and never
//! waited for. `RunExecution`'s transparent claim makes the same writes in the command's
//! start commit, after the spawn ([`super::pending`]).
//!
//! **Durability.** The transaction is in SQLite's WAL before the answer is sent
//! (`synchronous=NORMAL`: no fsync, survives a crash or kill of the server). Nothing can
//! hand a sandbox out twice even across a crash: the READY queues live only in memory
//! and are popped under their lock (one claimer per entry), the owner change is
//! conditional on the row still being the pool's, and after any restart recovery fails
//! every sandbox of the previous process and pools are refilled with new ones — a stored
//! row is never put back in a queue. A power loss that drops the last commits takes the
//! sandboxes' processes with it.
//!
//! **What the latency in `pool stats` measures.** For `ClaimSandbox`: from the handler's
//! entry (after the transport has decoded the request) to the response message being
//! built — authentication, pool lookup, the liveness check, signing, the commit, the
//! sandbox message. For a transparent claim by `CreateSandbox`: from the start of
//! `create_or_claim` (template key included) to the commit; by `RunExecution`: the same
//! steps without the command's spawn between them — from the start of `create_or_take` to
//! the sandbox taken, plus the signing and the commit that also records the command's
//! start ([`PendingClaim`]). The spawn is the command's time, not the claim's; it is in
//! the exec rows of the bench and in `RunExecution`'s `server_time_us`.

use super::pending::{PendingClaim, Taken};
use super::{PoolHandle, TemplateKey, Warm};
use crate::budgets::limits::RequestedLimits;
use crate::engine::Engine;
use crate::identity::attest::AgentBinding;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::sync::lock;
use crate::store::{
    now_micros, ClaimCommit, ClaimOutcome, ClaimRow, EventRow, SandboxCaps, SandboxRow,
};
use std::sync::Arc;
use std::time::Instant;

/// A claimed sandbox and what the claim produced.
#[derive(Clone)]
pub struct Claimed {
    pub sandbox: SandboxRow,
    pub envelope_json: String,
    /// The pool it came from (to record the claim's latency once the answer is built).
    pub(crate) pool: Arc<PoolHandle>,
}

/// What `CreateSandbox` asks for.
#[derive(Debug, Clone, Copy)]
pub struct CreateRequest<'a> {
    pub policy_yaml: &'a str,
    pub image_ref: &'a str,
    pub requested: RequestedLimits,
    pub binding: &'a AgentBinding,
    /// Whether a matching pool may serve it (`CreateSandboxRequest.no_pool` unset).
    pub use_pools: bool,
    /// Lockfiles of the policy's `sandbox.registries` (path -> content at the repository's
    /// HEAD). A request with lockfiles is never served from a pool: its pins are bound to
    /// the policy at create.
    pub lockfiles: &'a std::collections::BTreeMap<String, Vec<u8>>,
    /// A fresh sandbox is made for one command whose end ends it
    /// ([`cleanroom_backend::SandboxSpec::one_shot`]); a pool's is never one.
    pub one_shot: bool,
}

pub(super) fn cap_reached(who: &Principal, caps: SandboxCaps) -> EngineError {
    EngineError::resource_exhausted(format!(
        "{} already has {} live sandboxes (serve --max-sandboxes-per-principal)",
        who.name, caps.per_owner
    ))
    .with("limit", caps.per_owner.to_string())
}

fn no_ready(pool_id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::NoReadySandboxes,
        format!("pool {pool_id} has no READY sandbox right now"),
    )
    .with("pool_id", pool_id)
}

impl Engine {
    /// Claim a READY sandbox of pool `pool_id` for `who`. The caller records the latency
    /// with [`Engine::claim_answered`] once its answer is built.
    pub(in crate::engine) fn claim_sandbox(
        &self,
        who: &Principal,
        pool_id: &str,
        binding: &AgentBinding,
        caps: SandboxCaps,
    ) -> Result<Claimed, EngineError> {
        let pool = self.visible_pool(who, pool_id)?;
        self.claim_from(&pool, who, binding, caps)
    }

    /// Record a `ClaimSandbox` answered `started` ago; the latency in µs.
    pub fn claim_answered(&self, c: &Claimed, started: Instant) -> u64 {
        let us = started.elapsed().as_micros() as u64;
        Self::record_claim(&c.pool, us);
        us
    }

    fn claim_from(
        &self,
        pool: &Arc<PoolHandle>,
        who: &Principal,
        binding: &AgentBinding,
        caps: SandboxCaps,
    ) -> Result<Claimed, EngineError> {
        let from = pool.internal_owner();
        loop {
            let Some(warm) = Self::take_warm(pool) else {
                return Err(no_ready(&pool.id));
            };
            let (row, claim, event) = self.claim_parts(pool, who, binding, &warm.row);
            let outcome = self.store.commit_claim(&ClaimCommit {
                sandbox_id: &row.id,
                from: &from,
                to: &who.owner(),
                per_owner: caps.per_owner,
                at: row.updated_at,
                claim: &claim,
                event: &event,
                image_digest: &row.image_digest,
            })?;
            match outcome {
                ClaimOutcome::Committed { event_seq } => {
                    self.events.committed(event_seq);
                    pool.wake.notify_one();
                    return Ok(Claimed {
                        sandbox: row,
                        envelope_json: claim.envelope,
                        pool: pool.clone(),
                    });
                }
                // No longer the pool's READY sandbox: try the next one.
                ClaimOutcome::Gone => continue,
                // Still the pool's and READY (pristine): it goes back.
                ClaimOutcome::CapReached => {
                    lock(&pool.state).ready.push_front(warm);
                    return Err(cap_reached(who, caps));
                }
            }
        }
    }

    /// The next live READY sandbox of `pool`, out of its queue (one taker per entry), or
    /// `None` (counted as a miss). Dead ones are skipped, never handed out: the warming
    /// task terminates and replaces them. The caller wakes the warming task once the
    /// sandbox has left the pool for good (a commit): one that goes back must not have
    /// started a replacement beyond the pool's size.
    pub(super) fn take_warm(pool: &PoolHandle) -> Option<Warm> {
        loop {
            let next = lock(&pool.state).ready.pop_front();
            let Some(warm) = next else {
                lock(&pool.state).misses_total += 1;
                crate::metrics::pool_miss();
                pool.wake.notify_one();
                return None;
            };
            if warm.init.alive() {
                return Some(warm);
            }
            tracing::warn!(pool_id = %pool.id, sandbox_id = %warm.row.id, "warm sandbox's pid 1 is gone; replacing it");
            let mut st = lock(&pool.state);
            st.dead_total += 1;
            st.dead.push(warm.row.id);
            drop(st);
            pool.wake.notify_one();
        }
    }

    /// What a claim of `warm` by `who` writes (see the module doc): the sandbox's row as
    /// the claimer owns it, the binding with the attestation signed for the claimer, and
    /// the `pool.claim` event.
    pub(super) fn claim_parts(
        &self,
        pool: &PoolHandle,
        who: &Principal,
        binding: &AgentBinding,
        base: &SandboxRow,
    ) -> (SandboxRow, ClaimRow, EventRow) {
        let mut row = base.clone();
        row.owner = who.owner();
        row.updated_at = now_micros();
        let envelope = self
            .attestor()
            .map(|a| a.attest(&row, binding, &pool.id).to_json())
            .unwrap_or_default();
        let claim = ClaimRow {
            sandbox_id: row.id.clone(),
            pool_id: pool.id.clone(),
            agent: binding.agent_display(),
            chain: serde_json::to_string(&binding.chain_display()).unwrap_or_default(),
            envelope,
        };
        let event = EventRow {
            sandbox_id: row.id.clone(),
            kind: "pool.claim".into(),
            sandbox_status: row.status.number(),
            message: format!("claimed from pool {} by {}", pool.id, who.name),
            attributes: serde_json::json!({
                "pool_id": pool.id,
                "owner": who.name,
                "agent_public_key": claim.agent,
            })
            .to_string(),
            ..Default::default()
        };
        (row, claim, event)
    }

    /// `CreateSandbox`: a READY sandbox from a pool of the caller's whose template equals
    /// the request's exactly, else a fresh one. Either way bound to `binding` and attested.
    pub async fn create_or_claim(
        self: &Arc<Self>,
        who: &Principal,
        caps: SandboxCaps,
        req: CreateRequest<'_>,
    ) -> Result<SandboxRow, EngineError> {
        match self.create_or_take(who, caps, req, false).await? {
            Taken::Made(row) => Ok(row),
            Taken::Pending(p) => p.commit(),
        }
    }

    /// [`Engine::create_or_claim`] for a caller that starts a command in the sandbox right
    /// away (`RunExecution`): with `defer`, a pool's sandbox is only taken out of its queue
    /// here, and the claim is committed together with the command's start, after the
    /// spawn ([`PendingClaim`]): the signing and the commit are off the way to the
    /// command. A fresh sandbox is made (and committed) as by `create_or_claim`.
    pub(in crate::engine) async fn create_or_take(
        self: &Arc<Self>,
        who: &Principal,
        caps: SandboxCaps,
        req: CreateRequest<'_>,
        defer: bool,
    ) -> Result<Taken, EngineError> {
        let CreateRequest {
            policy_yaml,
            image_ref,
            requested,
            binding,
            use_pools,
            lockfiles,
            one_shot,
        } = req;
        let t0 = Instant::now();
        if use_pools && lockfiles.is_empty() {
            if let Some(pool) = self.matching_pool(who, policy_yaml, image_ref, requested) {
                if defer {
                    // Taken for the pool's own owner (a transparent claim only matches
                    // the caller's pools): no per-principal cap applies.
                    if let Some(warm) = Self::take_warm(&pool) {
                        return Ok(Taken::Pending(PendingClaim::new(
                            self.clone(),
                            pool,
                            warm,
                            who.clone(),
                            binding.clone(),
                            caps,
                            t0,
                        )));
                    }
                } else {
                    match self.claim_from(&pool, who, binding, caps) {
                        Ok(c) => {
                            Self::record_claim(&pool, t0.elapsed().as_micros() as u64);
                            return Ok(Taken::Made(c.sandbox));
                        }
                        // Empty pool: fall through to a fresh sandbox (counted as a miss).
                        Err(e) if e.code == ErrorCode::NoReadySandboxes => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        // The binding and attestation are written with the sandbox's READY commit.
        self.create_sandbox_with_lockfiles(
            &who.owner(),
            caps,
            policy_yaml,
            image_ref,
            requested,
            (lockfiles, Some(binding), one_shot),
        )
        .await
        .map(Taken::Made)
    }

    /// A pool of `who`'s whose template equals the request's (`None` when the request
    /// does not even compile: the fresh create reports that error).
    pub(super) fn matching_pool(
        &self,
        who: &Principal,
        policy_yaml: &str,
        image_ref: &str,
        requested: RequestedLimits,
    ) -> Option<Arc<PoolHandle>> {
        let candidates: Vec<Arc<PoolHandle>> = lock(&self.pools.map)
            .values()
            .filter(|p| who.owns(&p.owner) && !p.stopped.load(std::sync::atomic::Ordering::SeqCst))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return None;
        }
        // A pool whose policy text is the request's has the request's policy, compiled
        // already; any other text is compiled once to compare its key.
        let mut compiled: Option<Option<TemplateKey>> = None;
        candidates.into_iter().find(|p| {
            let key = if p.spec.policy_yaml == policy_yaml {
                self.template_key_of(&p.policy, image_ref, requested).ok()
            } else {
                compiled
                    .get_or_insert_with(|| {
                        self.template_key(policy_yaml, image_ref, requested).ok()
                    })
                    .clone()
            };
            key.as_ref() == Some(&p.key)
        })
    }

    /// Give a claimed sandbox back: it is destroyed (a pristine one takes its slot).
    pub async fn release_sandbox(
        &self,
        who: &Principal,
        sandbox_id: &str,
        reusable: bool,
    ) -> Result<SandboxRow, EngineError> {
        let row = self.owned_sandbox(who, sandbox_id)?;
        let claim = self
            .store
            .get_claim(sandbox_id)?
            .filter(|c| !c.pool_id.is_empty())
            .ok_or_else(|| {
                EngineError::invalid(format!("sandbox {sandbox_id} was not claimed from a pool"))
            })?;
        let pool = lock(&self.pools.map).get(&claim.pool_id).cloned();
        let reuse = reusable && pool.as_ref().is_some_and(|p| p.spec.reusable);
        self.events.record(EventRow {
            sandbox_id: row.id.clone(),
            kind: "pool.release".into(),
            sandbox_status: row.status.number(),
            message: format!("released to pool {} by {}", claim.pool_id, who.name),
            attributes: serde_json::json!({
                "pool_id": claim.pool_id,
                "reusable": reuse,
            })
            .to_string(),
            ..Default::default()
        });
        let out = self.terminate_sandbox(sandbox_id).await?;
        if let Some(p) = pool {
            p.wake.notify_one();
        }
        Ok(out)
    }

    /// Record `binding` on the sandbox and sign its attestation; the envelope JSON.
    pub(crate) fn bind_sandbox(
        &self,
        row: &SandboxRow,
        binding: &AgentBinding,
        pool_id: &str,
    ) -> Result<String, EngineError> {
        let claim = self.binding_row(row, binding, pool_id);
        self.store.put_claim(&claim)?;
        Ok(claim.envelope)
    }

    /// What [`Engine::bind_sandbox`] records: the binding and the signed attestation of
    /// the sandbox's identity (id, owner, policy hash, image digest: all known before it is
    /// READY, so a fresh sandbox's is written with its READY commit).
    pub(crate) fn binding_row(
        &self,
        row: &SandboxRow,
        binding: &AgentBinding,
        pool_id: &str,
    ) -> ClaimRow {
        ClaimRow {
            sandbox_id: row.id.clone(),
            pool_id: pool_id.into(),
            agent: binding.agent_display(),
            chain: serde_json::to_string(&binding.chain_display()).unwrap_or_default(),
            envelope: self
                .attestor()
                .map(|a| {
                    let ckpt = self.restored_checkpoint_digest(&row.id);
                    a.attest_restored(row, binding, pool_id, &ckpt).to_json()
                })
                .unwrap_or_default(),
        }
    }
}
