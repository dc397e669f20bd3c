//! Each host's share of the cluster's warm pools (docs/cluster.md "Warm pools"): every
//! few seconds the host reads the pool records (one range read) and starts, under the
//! same id and owner, every pool it does not hold yet — pools created through other
//! members, and all of them on a host that joins or comes back — and drops every pool
//! whose record is gone (removed through another member, maybe while this host was away).
//! A host that cannot hold a pool (a runtime it lacks, an image it cannot pull) logs why
//! once and holds none of it; the others keep theirs.
//!
//! A host in a cluster keeps no pool of its own beside these: a pool it holds without a
//! record (older than [`super::reconcile::GRACE`], so never one whose record its front door
//! is still writing) is dropped — `pool rm` through any member must win over a host that
//! was away when it was asked.

use super::ClusterNode;
use crate::engine::pools::adopt::PoolDefinition;
use crate::engine::Engine;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Pools this host could not start, and why (not tried again while the record stays).
#[derive(Default)]
pub(super) struct PoolShare {
    refused: HashMap<String, String>,
}

/// One look at etcd's pools (a failed read changes nothing here: fail closed means no
/// pool is dropped for want of an answer).
pub(super) async fn sync(share: &mut PoolShare, node: &ClusterNode, engine: &Arc<Engine>) {
    let records = match node.bindings.pools().await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(error = %e, "pools not synced this round");
            return;
        }
    };
    let ids: HashSet<&str> = records.iter().map(|(id, _)| id.as_str()).collect();
    share.refused.retain(|id, _| ids.contains(id.as_str()));
    for (id, rec) in &records {
        if share.refused.contains_key(id) {
            continue;
        }
        let def = PoolDefinition {
            owner: rec.owner.clone(),
            created_at: rec.created_at,
            spec: rec.spec.clone(),
        };
        match engine.adopt_pool(id, &def) {
            Ok(true) => {
                tracing::info!(pool_id = %id, owner = %rec.owner, "cluster pool: this host's share started")
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(pool_id = %id, error = %e, "cluster pool: this host cannot hold a share");
                share.refused.insert(id.clone(), e.to_string());
            }
        }
    }
    let grace = super::reconcile::GRACE.as_micros() as i64;
    let now = crate::store::now_micros();
    for (id, created_at) in engine.pool_ids() {
        if !ids.contains(id.as_str()) && now.saturating_sub(created_at) > grace {
            tracing::info!(pool_id = %id, "cluster pool removed: this host's share dropped");
            if let Err(e) = engine.drop_pool(&id).await {
                tracing::warn!(pool_id = %id, error = %e, "cluster pool share not dropped");
            }
        }
    }
}
