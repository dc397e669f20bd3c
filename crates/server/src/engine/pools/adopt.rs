//! Pools of a cluster (docs/cluster.md "Warm pools"): a pool created through any member
//! is recorded in etcd, and every member that offers its runtime keeps its own share warm
//! under the same id and owner. The server's cluster side (`crate::cluster::pools`) reads
//! those records and asks the engine here to start a pool it does not have yet, or to
//! drop one whose record is gone (`pool rm` through another member, or while this host
//! was away). Everything a local `pool create` checks is checked again on each host
//! (its runtime, its policy, its image): a host that cannot hold the pool says so and
//! holds none of it.

use super::{PoolHandle, PoolSpec, MAX_POOLS_PER_OWNER};
use crate::budgets::limits::RequestedLimits;
use crate::engine::Engine;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::model::owner::Owner;
use crate::model::sync::lock;
use crate::store::PoolRow;
use std::sync::Arc;

/// A pool as the cluster records it: the normalized spec `create_pool` stored.
#[derive(Debug, Clone)]
pub struct PoolDefinition {
    pub owner: String,
    pub created_at: i64,
    /// [`PoolSpec`] as JSON.
    pub spec: String,
}

impl Engine {
    /// Start pool `id` as the cluster recorded it, when this host does not hold it yet.
    /// `Ok(false)`: held already.
    pub fn adopt_pool(
        self: &Arc<Self>,
        id: &str,
        def: &PoolDefinition,
    ) -> Result<bool, EngineError> {
        if lock(&self.pools.map).contains_key(id) {
            return Ok(false);
        }
        let bad = |what: String| EngineError::invalid(format!("cluster pool {id}: {what}"));
        let owner = Owner::parse(&def.owner).map_err(|e| bad(format!("owner: {e:?}")))?;
        if owner.is_pool() || !id.starts_with("pool_") || id.len() > 64 {
            return Err(bad("not a pool a principal can own".into()));
        }
        let spec: PoolSpec =
            serde_json::from_str(&def.spec).map_err(|e| bad(format!("spec: {e}")))?;
        let (spec, policy, key) = self.checked_pool_spec(spec)?;
        let row = PoolRow {
            id: id.to_string(),
            owner,
            created_at: def.created_at,
            spec: serde_json::to_string(&spec).map_err(|e| EngineError::internal(e.to_string()))?,
        };
        if !self.store.insert_pool(&row, MAX_POOLS_PER_OWNER)? {
            return Err(EngineError::resource_exhausted(format!(
                "{} already has {MAX_POOLS_PER_OWNER} pools on this host",
                row.owner
            )));
        }
        self.start_pool(row, spec, policy, key);
        Ok(true)
    }

    /// The definition of pool `id` as this host stores it (for the cluster's record).
    pub fn pool_definition(&self, id: &str) -> Option<PoolDefinition> {
        let p = lock(&self.pools.map).get(id).cloned()?;
        Some(PoolDefinition {
            owner: p.owner.to_string(),
            created_at: p.created_at,
            spec: serde_json::to_string(&p.spec).ok()?,
        })
    }

    /// Every pool here: id and creation time (micros).
    pub fn pool_ids(&self) -> Vec<(String, i64)> {
        lock(&self.pools.map)
            .values()
            .map(|p| (p.id.clone(), p.created_at))
            .collect()
    }

    /// Destroy pool `id` whoever owns it: the cluster no longer records it.
    pub async fn drop_pool(&self, id: &str) -> Result<(), EngineError> {
        let p: Option<Arc<PoolHandle>> = lock(&self.pools.map).get(id).cloned();
        match p {
            Some(p) => self.destroy_pool_handle(&p).await,
            None => Ok(()),
        }
    }

    /// Would a create of `who` with this template be served from one of their pools here,
    /// right now (a READY sandbox waiting)? The cluster's front door then keeps the
    /// create on this host instead of placing it elsewhere.
    pub fn has_ready_match(
        &self,
        who: &Principal,
        policy_yaml: &str,
        image_ref: &str,
        requested: RequestedLimits,
    ) -> bool {
        self.matching_pool(who, policy_yaml, image_ref, requested)
            .is_some_and(|p| !lock(&p.state).ready.is_empty())
    }
}
