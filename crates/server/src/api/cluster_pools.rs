//! Warm pools through the cluster (docs/cluster.md "Warm pools"). A pool is a cluster
//! object: created through any member (on that member first, which checks the spec as a
//! local `pool create` does), recorded in etcd, and kept warm by every member that offers
//! its runtime — `min_ready` (or the autoscaler's target) per host — under the same id
//! and owner (`crate::cluster::pools` adopts the records each tick).
//!
//! - `ClaimSandbox`: the front door's own share when it has a READY sandbox; else the
//!   claim is sent, as the caller, to up to [`CLAIM_PEERS`] other members until one has
//!   one (each checks ownership itself); the claimed sandbox is bound to its host and
//!   counted once against the claimer's cluster-wide limit (checked before the claim,
//!   and again in the binding's transaction: past it the sandbox is removed).
//! - `ListPools`, `GetPoolStats`: every member's share, summed per pool.
//! - `DestroyPool`: the record goes (only for a caller who may see it), then every
//!   member drops its share — at once when asked, else at its next look at etcd.
//!
//! Warm, unclaimed sandboxes are never bound nor counted cluster-wide: nobody can reach
//! them (`pool:` owners), and each host charges them to the pool's owner itself.

use super::cluster_create::quota_reached;
use super::cluster_route::{is_json, routed, ClusterRoute};
use crate::api::to_connect;
use crate::cluster::route::RouteError;
use crate::cluster::{cluster_error, unreachable};
use crate::identity::auth::Principal;
use crate::model::owner::Owner;
use bytes::Bytes;
use cleanroom_cluster::{Binding, Bound, MemberInfo, PoolRecord};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::interceptor::{UnaryRequest, UnaryResponse};
use connectrpc::payload::Payload;
use connectrpc::{ConnectError, Next};
use std::collections::HashMap;

/// Other members a claim is sent to, at most, when the front door has no READY sandbox:
/// a claim stays a few round trips however large the cluster.
pub const CLAIM_PEERS: usize = 4;

/// The stable code of an error (its `ErrorDetail`, as every error of the API carries).
pub(super) fn code_of(e: &ConnectError) -> String {
    e.details
        .iter()
        .find_map(|d| d.debug.as_ref()?.get("code")?.as_str().map(str::to_string))
        .or_else(|| {
            let m = e.message.as_deref()?;
            Some(m.split_once(':')?.0.to_string())
        })
        .unwrap_or_default()
}

/// Another member cannot serve this claim: try the next.
fn not_there(e: &ConnectError) -> bool {
    matches!(
        code_of(e).as_str(),
        "no_ready_sandboxes" | "pool_not_found" | "runtime_unavailable"
    )
}

fn add(into: &mut PoolStats, s: &PoolStats) {
    let (n0, n1) = (into.claims_total, s.claims_total);
    into.avg_claim_latency_us = match n0 + n1 {
        0 => 0,
        n => (into.avg_claim_latency_us * n0 + s.avg_claim_latency_us * n1) / n,
    };
    into.p99_claim_latency_us = into.p99_claim_latency_us.max(s.p99_claim_latency_us);
    into.ready += s.ready;
    into.claimed += s.claimed;
    into.warming += s.warming;
    into.claims_per_minute += s.claims_per_minute;
    into.claims_total += s.claims_total;
    into.misses_total += s.misses_total;
    into.target_ready += s.target_ready;
    into.replaced_dead_total += s.replaced_dead_total;
}

impl ClusterRoute {
    /// A `WarmPoolService` call (all but `ReleaseSandbox`, which names a sandbox).
    pub(super) async fn pools(
        &self,
        m: &str,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        match m {
            "WarmPoolService/CreatePool" => self.create_pool(req, next, who).await,
            "WarmPoolService/ClaimSandbox" => self.claim(path, req, next, who).await,
            "WarmPoolService/ListPools" | "WarmPoolService/GetPoolStats" => {
                self.pool_stats(m, path, req, next, who).await
            }
            "WarmPoolService/DestroyPool" => self.destroy_pool(path, req, next, who).await,
            _ => next.run(req).await,
        }
    }

    async fn create_pool(
        &self,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let resp = next.run(req).await?;
        let id = resp
            .body
            .message::<CreatePoolResponse>()?
            .pool
            .as_option()
            .map(|p| p.pool_id.clone())
            .unwrap_or_default();
        let engine = node
            .engine
            .upgrade()
            .ok_or_else(|| to_connect(unreachable("the server is stopping".into())))?;
        let def = engine
            .pool_definition(&id)
            .ok_or_else(|| ConnectError::internal(format!("pool {id} vanished")))?;
        let rec = PoolRecord {
            owner: def.owner,
            created_at: def.created_at,
            spec: def.spec,
            host: node.node_name().to_string(),
        };
        let recorded = node.bindings().put_pool(&id, &rec).await;
        if !matches!(recorded, Ok(true)) {
            // Not a cluster object: no other member would keep it. Undo (fail closed).
            if let Err(e) = engine.drop_pool(&id).await {
                tracing::warn!(pool_id = %id, error = %e, "unrecorded pool not removed");
            }
            let e = match recorded {
                Err(e) => cluster_error(e),
                _ => crate::model::error::EngineError::internal(format!(
                    "pool id {id} is recorded already"
                )),
            };
            tracing::info!(who = %who.name, "pool create undone: {e}");
            return Err(to_connect(e));
        }
        Ok(resp)
    }

    /// The other live members with a member link, in random order (`limit` at most).
    async fn others(&self, limit: usize) -> Result<Vec<MemberInfo>, ConnectError> {
        let node = &self.0;
        let mut ms: Vec<MemberInfo> = node
            .routing_members()
            .await
            .map_err(to_connect)?
            .into_iter()
            .map(|m| m.info)
            .filter(|m| m.name != node.node_name() && !m.peer.is_empty())
            .collect();
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new();
        ms.sort_by_key(|m| seed.hash_one(&m.name));
        ms.truncate(limit);
        Ok(ms)
    }

    async fn claim(
        &self,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let body = req.payload.encoded()?;
        let owner = who.owner().to_string();
        // At the limit already: refused before anything is claimed (fails closed).
        let seen = node
            .bindings()
            .count(&owner)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        if seen.at_limit(node.per_owner) {
            return Err(to_connect(quota_reached(&who, node.per_owner)));
        }
        let me = MemberInfo {
            name: node.node_name().to_string(),
            ..Default::default()
        };
        let (resp, host) = match next.run(req).await {
            Ok(r) => (r, me),
            Err(here) if not_there(&here) => {
                let mut got = None;
                for m in self.others(CLAIM_PEERS).await? {
                    let sent = node
                        .forward_unary(&m.name, &m.peer, path, &who, body.clone(), is_json(format))
                        .await;
                    match sent {
                        Ok(b) => {
                            got = Some((UnaryResponse::new(Payload::new(b, format)), m));
                            break;
                        }
                        Err(RouteError::Owner(e)) if not_there(&e) => {}
                        Err(e) => {
                            // Unreachable or refused for another reason: the next one.
                            tracing::debug!(host = %m.name, error = %routed(e), "claim not served");
                        }
                    }
                }
                // None had one: the front door's own answer (`no_ready_sandboxes`, or
                // `pool_not_found` for a pool nobody here may see).
                got.ok_or(here)?
            }
            Err(e) => return Err(e),
        };
        let id = resp
            .body
            .message::<ClaimSandboxResponse>()?
            .sandbox
            .as_option()
            .map(|s| s.sandbox_id.clone())
            .unwrap_or_default();
        let binding = Binding {
            host: host.name.clone(),
            owner,
            created_at: crate::store::now_micros(),
        };
        let refused = match node
            .bindings()
            .bind_counted(&id, &binding, None, node.per_owner, seen)
            .await
        {
            Ok(Bound::Now | Bound::Already) => None,
            Ok(Bound::OverLimit { .. }) => Some(quota_reached(&who, node.per_owner)),
            Err(e) => Some(cluster_error(e)),
        };
        if let Some(e) = refused {
            self.undo(&id, &host, &who).await;
            return Err(to_connect(e));
        }
        node.remember(&id, &binding);
        Ok(resp)
    }

    /// `ListPools` or `GetPoolStats`: this member's answer and every other live member's,
    /// each pool's statistics summed over its shares. A member that cannot answer fails
    /// the call (`unavailable`), as `ListSandboxes` does: no silent partial sums.
    async fn pool_stats(
        &self,
        m: &str,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let list = m == "WarmPoolService/ListPools";
        // The members are asked in protobuf, whatever the caller's encoding.
        let body = Bytes::from(if list {
            buffa::Message::encode_to_vec(req.payload.message::<ListPoolsRequest>()?)
        } else {
            buffa::Message::encode_to_vec(req.payload.message::<GetPoolStatsRequest>()?)
        });
        let here = match next.run(req).await {
            Ok(r) if list => {
                let r: ListPoolsResponse = r.body.take_message()?;
                Ok((r.pools, r.stats))
            }
            Ok(r) => {
                let r: GetPoolStatsResponse = r.body.take_message()?;
                Ok((
                    r.pool.into_option().into_iter().collect(),
                    r.stats.into_option().into_iter().collect(),
                ))
            }
            Err(e) => Err(e),
        };
        let others = self.others(usize::MAX).await?;
        let answers = futures::future::join_all(others.iter().map(|o| {
            let body = body.clone();
            let who = &who;
            async move {
                node.forward_unary(&o.name, &o.peer, path, who, body, false)
                    .await
            }
        }))
        .await;
        let decode = |b: &[u8]| -> Result<(Vec<Pool>, Vec<PoolStats>), ConnectError> {
            let bad = |e: String| ConnectError::internal(format!("member answer: {e}"));
            if list {
                let r: ListPoolsResponse =
                    buffa::Message::decode_from_slice(b).map_err(|e| bad(e.to_string()))?;
                Ok((r.pools, r.stats))
            } else {
                let r: GetPoolStatsResponse =
                    buffa::Message::decode_from_slice(b).map_err(|e| bad(e.to_string()))?;
                Ok((
                    r.pool.into_option().into_iter().collect(),
                    r.stats.into_option().into_iter().collect(),
                ))
            }
        };
        let mut pools: Vec<Pool> = Vec::new();
        let mut stats: Vec<PoolStats> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut merge = |ps: Vec<Pool>, ss: Vec<PoolStats>| {
            for (p, s) in ps.into_iter().zip(ss) {
                match at.get(&p.pool_id) {
                    Some(&i) => add(&mut stats[i], &s),
                    None => {
                        at.insert(p.pool_id.clone(), pools.len());
                        pools.push(p);
                        stats.push(s);
                    }
                }
            }
        };
        let mut first_error = None;
        match here {
            Ok((p, s)) => merge(p, s),
            Err(e) if not_there(&e) => first_error = Some(e),
            Err(e) => return Err(e),
        }
        for a in answers {
            match a {
                Ok(b) => {
                    let (p, s) = decode(&b)?;
                    merge(p, s);
                }
                Err(RouteError::Owner(e)) if not_there(&e) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(routed(e)),
            }
        }
        if list {
            let out = ListPoolsResponse {
                pools,
                stats,
                ..Default::default()
            };
            return Ok(UnaryResponse::new(Payload::from_message(out, format)));
        }
        match (pools.pop(), stats.pop()) {
            (Some(p), Some(s)) => Ok(UnaryResponse::new(Payload::from_message(
                GetPoolStatsResponse {
                    pool: p.into(),
                    stats: s.into(),
                    ..Default::default()
                },
                format,
            ))),
            _ => Err(first_error
                .unwrap_or_else(|| ConnectError::internal("no member answered".to_string()))),
        }
    }

    async fn destroy_pool(
        &self,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let body = req.payload.encoded()?;
        let id = req.payload.message::<DestroyPoolRequest>()?.pool_id.clone();
        let rec = node
            .bindings()
            .pool(&id)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        let Some(rec) = rec.filter(|r| Owner::parse(&r.owner).is_ok_and(|o| who.can_see(&o)))
        else {
            // Not a cluster pool the caller may see: this host's answer (pool_not_found).
            return next.run(req).await;
        };
        node.bindings()
            .delete_pool(&id)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        tracing::info!(pool_id = %id, owner = %rec.owner, by = %who.name, "cluster pool removed");
        // Each member drops its share now (as the caller: each checks), or at its next
        // look at etcd if it cannot be asked.
        let here = next.run(req).await;
        let others = self.others(usize::MAX).await.unwrap_or_default();
        let json = is_json(format);
        futures::future::join_all(others.iter().map(|o| {
            let body = body.clone();
            let who = &who;
            async move {
                if let Err(e) = node
                    .forward_unary(&o.name, &o.peer, path, who, body, json)
                    .await
                {
                    tracing::debug!(host = %o.name, error = %routed(e), "pool share not dropped now");
                }
            }
        }))
        .await;
        match here {
            Err(e) if !not_there(&e) => Err(e),
            _ => Ok(UnaryResponse::new(Payload::from_message(
                DestroyPoolResponse::default(),
                format,
            ))),
        }
    }
}
