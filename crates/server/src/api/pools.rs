//! Connect services of warm pools (`WarmPoolService`) and attestations
//! (`AttestationService`) over the [`Engine`](crate::engine::Engine): translation only, like [`crate::api`].

use crate::api::{sandbox_msg, to_connect, ts, who, Api};
use crate::engine::pools::{PoolSpec, PoolStats as EnginePoolStats, PoolView};
use crate::identity::attest::AgentBinding;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

/// Register both services on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    let router = WarmPoolServiceExt::register(api.clone(), router);
    AttestationServiceExt::register(api, router)
}

/// `sandbox` with the agent identity, delegation chain and pool bound to it.
pub fn with_identity(sbx: &crate::engine::OwnedSandbox, mut sandbox: Sandbox) -> Sandbox {
    let id = sbx.identity();
    sandbox.agent_public_key = id.agent_public_key;
    sandbox.delegation_chain = id.delegation_chain;
    sandbox.pool_id = id.pool_id;
    sandbox
}

fn pool_msg(v: &PoolView) -> Pool {
    let s = &v.spec;
    Pool {
        pool_id: v.id.clone(),
        name: s.name.clone(),
        owner: v.owner.to_string(),
        template: PoolTemplate {
            policy_yaml: s.policy_yaml.clone(),
            image_ref: s.image_ref.clone(),
            limits: ResourceLimits {
                memory_bytes: s.memory_bytes,
                pids: s.pids,
                cpu_millis: s.cpu_millis,
                disk_bytes: s.disk_bytes,
                output_bytes: s.output_bytes,
                ..Default::default()
            }
            .into(),
            runtime: s.runtime.clone(),
            ..Default::default()
        }
        .into(),
        min_ready: s.min_ready,
        max_ready: s.max_ready,
        max_age_seconds: s.max_age_seconds,
        reusable: s.reusable,
        autoscaling: Autoscaling {
            enabled: s.autoscaling.enabled,
            headroom_factor: s.autoscaling.headroom_factor,
            interval_seconds: s.autoscaling.interval_seconds,
            ..Default::default()
        }
        .into(),
        policy_hash: v.policy_hash.clone(),
        image_digest: v.image_digest.clone(),
        created_at: ts(v.created_at),
        ..Default::default()
    }
}

fn stats_msg(s: &EnginePoolStats) -> PoolStats {
    PoolStats {
        ready: s.ready,
        claimed: s.claimed,
        warming: s.warming,
        claims_per_minute: s.claims_per_minute,
        avg_claim_latency_us: s.avg_claim_latency_us,
        p99_claim_latency_us: s.p99_claim_latency_us,
        claims_total: s.claims_total,
        misses_total: s.misses_total,
        target_ready: s.target_ready,
        replaced_dead_total: s.replaced_dead_total,
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl WarmPoolService for Api {
    async fn create_pool(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreatePoolRequest>,
    ) -> ServiceResult<CreatePoolResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let t = req.template.as_option().cloned().unwrap_or_default();
        let l = t.limits.as_option().cloned().unwrap_or_default();
        let a = req.autoscaling.as_option().cloned().unwrap_or_default();
        let spec = PoolSpec {
            name: req.name,
            policy_yaml: t.policy_yaml,
            image_ref: t.image_ref,
            memory_bytes: l.memory_bytes,
            pids: l.pids,
            cpu_millis: l.cpu_millis,
            disk_bytes: l.disk_bytes,
            output_bytes: l.output_bytes,
            runtime: t.runtime,
            min_ready: req.min_ready,
            max_ready: req.max_ready,
            max_age_seconds: req.max_age_seconds,
            reusable: req.reusable,
            autoscaling: crate::engine::pools::Autoscaling {
                enabled: a.enabled,
                headroom_factor: a.headroom_factor,
                interval_seconds: a.interval_seconds,
            },
        };
        let v = self.engine.create_pool(&who, spec).map_err(to_connect)?;
        Response::ok(CreatePoolResponse {
            pool: pool_msg(&v).into(),
            ..Default::default()
        })
    }

    async fn list_pools(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListPoolsRequest>,
    ) -> ServiceResult<ListPoolsResponse> {
        let who = who(&ctx)?;
        let list = self.engine.list_pools(&who);
        Response::ok(ListPoolsResponse {
            pools: list.iter().map(|(v, _)| pool_msg(v)).collect(),
            stats: list.iter().map(|(_, s)| stats_msg(s)).collect(),
            ..Default::default()
        })
    }

    async fn get_pool_stats(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetPoolStatsRequest>,
    ) -> ServiceResult<GetPoolStatsResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let (v, s) = self
            .engine
            .pool_stats(&who, &req.pool_id)
            .map_err(to_connect)?;
        Response::ok(GetPoolStatsResponse {
            pool: pool_msg(&v).into(),
            stats: stats_msg(&s).into(),
            ..Default::default()
        })
    }

    async fn claim_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ClaimSandboxRequest>,
    ) -> ServiceResult<ClaimSandboxResponse> {
        // The whole server-side claim is measured from here to the built answer (see
        // `engine::pools::claim`): `pool stats` reports what a claimer waits for.
        let started = std::time::Instant::now();
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let binding = AgentBinding::parse(&req.agent_public_key, &req.delegation_chain)
            .map_err(to_connect)?;
        // One store transaction hands the sandbox over, records the claim and event, and
        // gives the claimer its hold on the image.
        // Its lifetime clocks start at the claim, as for every sandbox a caller gets.
        let c = self
            .engine
            .claim_with_clocks(&who, &req.pool_id, &binding, self.caps)
            .map_err(to_connect)?;
        // The identity just bound, without reading it back.
        let mut sandbox = sandbox_msg(&c.sandbox);
        sandbox.agent_public_key = binding.agent_display();
        sandbox.delegation_chain = binding.chain_display();
        sandbox.pool_id = req.pool_id;
        let mut answer = ClaimSandboxResponse {
            sandbox: sandbox.into(),
            attestation_envelope_json: c.envelope_json.clone(),
            ..Default::default()
        };
        answer.claim_latency_us = self.engine.claim_answered(&c, started);
        Response::ok(answer)
    }

    async fn release_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ReleaseSandboxRequest>,
    ) -> ServiceResult<ReleaseSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let row = self
            .engine
            .release_sandbox(&who, &req.sandbox_id, req.reusable)
            .await
            .map_err(to_connect)?;
        Response::ok(ReleaseSandboxResponse {
            sandbox: sandbox_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn destroy_pool(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DestroyPoolRequest>,
    ) -> ServiceResult<DestroyPoolResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        self.engine
            .destroy_pool(&who, &req.pool_id)
            .await
            .map_err(to_connect)?;
        Response::ok(DestroyPoolResponse::default())
    }
}
