//! Claiming and releasing pool sandboxes, and `CreateSandbox`'s transparent claim from a
//! pool whose template matches the request exactly.
//!
//! The claim path does no provisioning and no blocking work: pop an id, one conditional
//! UPDATE that hands the sandbox to the claimer (and checks their cap in the same
//! statement), sign the attestation, record the claim and its event.

use super::{PoolHandle, TemplateKey};
use crate::attest::AgentBinding;
use crate::auth::Principal;
use crate::engine::Engine;
use crate::error::{Class, EngineError, ErrorCode};
use crate::limits::RequestedLimits;
use crate::store::{ClaimRow, EventRow, SandboxCaps, SandboxRow};
use crate::sync::lock;
use std::sync::Arc;
use std::time::Instant;

/// A claimed sandbox and what the claim produced.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub sandbox: SandboxRow,
    pub envelope_json: String,
    pub latency_us: u64,
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
}

fn no_ready(pool_id: &str) -> EngineError {
    EngineError::new(
        Class::Unavailable,
        ErrorCode::NoReadySandboxes,
        format!("pool {pool_id} has no READY sandbox right now"),
    )
    .with("pool_id", pool_id)
}

impl Engine {
    /// Claim a READY sandbox of pool `pool_id` for `who`.
    pub fn claim_sandbox(
        &self,
        who: &Principal,
        pool_id: &str,
        binding: &AgentBinding,
        caps: SandboxCaps,
    ) -> Result<Claimed, EngineError> {
        let t0 = Instant::now();
        let pool = self.visible_pool(who, pool_id)?;
        self.claim_from(&pool, who, binding, caps, t0)
    }

    fn claim_from(
        &self,
        pool: &Arc<PoolHandle>,
        who: &Principal,
        binding: &AgentBinding,
        caps: SandboxCaps,
        t0: Instant,
    ) -> Result<Claimed, EngineError> {
        let from = pool.internal_owner();
        let row = loop {
            let next = lock(&pool.state).ready.pop_front();
            let Some((id, at)) = next else {
                lock(&pool.state).misses_total += 1;
                pool.wake.notify_one();
                return Err(no_ready(&pool.id));
            };
            if self
                .store
                .transfer_sandbox(&id, &from, &who.name, caps.per_owner)?
            {
                break self.get_sandbox(&id)?;
            }
            // Not handed over: either the caller is at their cap (the sandbox is still the
            // pool's and READY: put it back) or the sandbox is gone (try the next one).
            let still_ours = self
                .store
                .get_sandbox(&id)?
                .is_some_and(|s| s.owner == from && s.status == crate::status::sandbox::READY);
            if still_ours {
                lock(&pool.state).ready.push_front((id, at));
                return Err(EngineError::resource_exhausted(format!(
                    "{} already has {} live sandboxes (serve --max-sandboxes-per-principal)",
                    who.name, caps.per_owner
                ))
                .with("limit", caps.per_owner.to_string()));
            }
        };
        let envelope_json = self.bind_sandbox(&row, binding, &pool.id)?;
        self.events.record(EventRow {
            sandbox_id: row.id.clone(),
            kind: "pool.claim".into(),
            sandbox_status: row.status,
            message: format!("claimed from pool {} by {}", pool.id, who.name),
            attributes: serde_json::json!({
                "pool_id": pool.id,
                "owner": who.name,
                "agent_public_key": binding.agent_display(),
            })
            .to_string(),
            ..Default::default()
        });
        let latency_us = t0.elapsed().as_micros() as u64;
        Self::record_latency(pool, latency_us);
        pool.wake.notify_one();
        Ok(Claimed {
            sandbox: row,
            envelope_json,
            latency_us,
        })
    }

    /// `CreateSandbox`: a READY sandbox from a pool of the caller's whose template equals
    /// the request's exactly, else a fresh one. Either way bound to `binding` and attested.
    pub async fn create_or_claim(
        &self,
        who: &Principal,
        caps: SandboxCaps,
        req: CreateRequest<'_>,
    ) -> Result<SandboxRow, EngineError> {
        let CreateRequest {
            policy_yaml,
            image_ref,
            requested,
            binding,
            use_pools,
            lockfiles,
        } = req;
        let t0 = Instant::now();
        if use_pools && lockfiles.is_empty() {
            if let Some(pool) = self.matching_pool(who, policy_yaml, image_ref, requested) {
                match self.claim_from(&pool, who, binding, caps, t0) {
                    Ok(c) => return Ok(c.sandbox),
                    // Empty pool: fall through to a fresh sandbox (counted as a miss).
                    Err(e) if e.code == ErrorCode::NoReadySandboxes => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let row = self
            .create_sandbox_with_lockfiles(
                &who.name,
                caps,
                policy_yaml,
                image_ref,
                requested,
                lockfiles,
            )
            .await?;
        self.bind_sandbox(&row, binding, "")?;
        Ok(row)
    }

    /// A pool of `who`'s whose template equals the request's (`None` when the request
    /// does not even compile: the fresh create reports that error).
    fn matching_pool(
        &self,
        who: &Principal,
        policy_yaml: &str,
        image_ref: &str,
        requested: RequestedLimits,
    ) -> Option<Arc<PoolHandle>> {
        let candidates: Vec<Arc<PoolHandle>> = lock(&self.pools.map)
            .values()
            .filter(|p| p.owner == who.name && !p.stopped.load(std::sync::atomic::Ordering::SeqCst))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let key: TemplateKey = self.template_key(policy_yaml, image_ref, requested).ok()?;
        candidates.into_iter().find(|p| p.key == key)
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
            sandbox_status: row.status,
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
        let envelope = self
            .attestor()
            .map(|a| a.attest(row, binding, pool_id).to_json())
            .unwrap_or_default();
        self.store.put_claim(&ClaimRow {
            sandbox_id: row.id.clone(),
            pool_id: pool_id.into(),
            agent: binding.agent_display(),
            chain: serde_json::to_string(&binding.chain_display()).unwrap_or_default(),
            envelope: envelope.clone(),
        })?;
        Ok(envelope)
    }
}
