//! `/v1/warm-pools…`: seed 002's warm pool endpoints, each the same `WarmPoolService`
//! handler a Connect client calls ([`super::call`]).

use super::error::RestError;
use super::shapes::{self, ClaimBody, PoolBody, ReleaseBody};
use super::{call, Body, Reply, Rest};
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use bytes::Bytes;
use cleanroom_proto::cleanroom::v1::*;
use http::StatusCode;
use serde_json::{json, Value};

type R = Result<Reply, RestError>;

/// `POST /v1/warm-pools` → `CreatePool`; 201 with the pool's id and name.
pub async fn create<B>(rest: &Rest, who: &Principal, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let b: PoolBody = body.json().await?;
    let c = b.config;
    let t = c.template.to_request()?;
    let a = c.auto_scaling.unwrap_or(shapes::AutoScaling {
        enabled: false,
        headroom_factor: 0.0,
        interval_seconds: 0,
    });
    let req = CreatePoolRequest {
        name: c.pool_id,
        template: PoolTemplate {
            policy_yaml: t.policy_yaml,
            image_ref: t.image_ref,
            limits: t.limits,
            runtime: t.runtime,
            ..Default::default()
        }
        .into(),
        min_ready: c.min_ready,
        max_ready: c.max_ready,
        max_age_seconds: c.max_age_seconds,
        reusable: c.reusable,
        autoscaling: Autoscaling {
            enabled: a.enabled,
            headroom_factor: a.headroom_factor,
            interval_seconds: a.interval_seconds,
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
    let made: CreatePoolResponse = call!(rest, who, WarmPoolService::create_pool, req)?;
    let p = made.pool.as_option().cloned().unwrap_or_default();
    Ok(Reply::Json(
        StatusCode::CREATED,
        json!({"poolId": p.pool_id, "name": p.name, "policyHash": p.policy_hash}),
    ))
}

/// `GET /v1/warm-pools/{id}/stats` → `GetPoolStats`.
pub async fn stats(rest: &Rest, who: &Principal, id: &str) -> R {
    let req = GetPoolStatsRequest {
        pool_id: id.to_string(),
        ..Default::default()
    };
    let g: GetPoolStatsResponse = call!(rest, who, WarmPoolService::get_pool_stats, req)?;
    let s = g.stats.as_option().cloned().unwrap_or_default();
    Ok(Reply::Json(
        StatusCode::OK,
        json!({
            "readyCount": s.ready,
            "claimedCount": s.claimed,
            "warmingCount": s.warming,
            "claimsPerMinute": s.claims_per_minute,
            "avgClaimLatencyMs": s.avg_claim_latency_us / 1000,
            "p99ClaimLatencyMs": s.p99_claim_latency_us / 1000,
            "claimsTotal": s.claims_total,
            "missesTotal": s.misses_total,
        }),
    ))
}

/// `POST /v1/warm-pools/{id}/claim` → `ClaimSandbox`.
pub async fn claim<B>(rest: &Rest, who: &Principal, id: &str, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let b: ClaimBody = body.json().await?;
    let req = ClaimSandboxRequest {
        pool_id: id.to_string(),
        agent_public_key: shapes::agent(&b.agent_nhi, "agentNhi")?,
        delegation_chain: shapes::chain(&b.delegation_chain, "delegationChain")?,
        ..Default::default()
    };
    let c: ClaimSandboxResponse = call!(rest, who, WarmPoolService::claim_sandbox, req)?;
    let s = c.sandbox.as_option().cloned().unwrap_or_default();
    Ok(Reply::Json(
        StatusCode::OK,
        json!({
            "sandboxId": s.sandbox_id,
            "attestation": serde_json::from_str::<Value>(&c.attestation_envelope_json).unwrap_or(Value::Null),
            "claimLatencyMs": c.claim_latency_us / 1000,
        }),
    ))
}

/// `POST /v1/warm-pools/{id}/release/{sandboxId}` → `ReleaseSandbox`; 204. The sandbox
/// must have been claimed from that pool.
pub async fn release<B>(rest: &Rest, who: &Principal, id: &str, sbx: &str, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let b: ReleaseBody = body.json().await?;
    let get = GetSandboxRequest {
        sandbox_id: sbx.to_string(),
        ..Default::default()
    };
    let g: GetSandboxResponse = call!(rest, who, SandboxService::get_sandbox, get)?;
    let pool = g
        .sandbox
        .as_option()
        .map(|s| s.pool_id.clone())
        .unwrap_or_default();
    let pool_named = pool == id || {
        let req = GetPoolStatsRequest {
            pool_id: id.to_string(),
            ..Default::default()
        };
        let p: Result<GetPoolStatsResponse, RestError> =
            call!(rest, who, WarmPoolService::get_pool_stats, req);
        p.ok()
            .and_then(|p| p.pool.as_option().map(|p| p.pool_id == pool))
            .unwrap_or(false)
    };
    if !pool_named {
        return Err(EngineError::new(
            ErrorCode::InvalidArgument,
            format!("sandbox {sbx} was not claimed from pool {id}"),
        )
        .with("sandbox_id", sbx)
        .with("pool_id", id)
        .into());
    }
    let req = ReleaseSandboxRequest {
        sandbox_id: sbx.to_string(),
        reusable: b.reusable,
        ..Default::default()
    };
    let _: ReleaseSandboxResponse = call!(rest, who, WarmPoolService::release_sandbox, req)?;
    Ok(Reply::Empty)
}

/// `DELETE /v1/warm-pools/{id}` → `DestroyPool`; 204.
pub async fn destroy(rest: &Rest, who: &Principal, id: &str) -> R {
    let req = DestroyPoolRequest {
        pool_id: id.to_string(),
        ..Default::default()
    };
    let _: DestroyPoolResponse = call!(rest, who, WarmPoolService::destroy_pool, req)?;
    Ok(Reply::Empty)
}
