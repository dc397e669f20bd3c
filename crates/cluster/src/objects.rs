//! Cluster objects that are not sandboxes, in etcd (docs/cluster.md "Warm pools",
//! "Snapshots"):
//!
//! - `/cleanroom/pools/<id>` = `{owner, created_at, spec, host}`: a warm pool, recorded by
//!   the front door that created it (on its own host first: that checks the spec), read by
//!   every member each tick so that each keeps its own share warm under the same id and
//!   owner; deleted by `pool rm` through any member (each host drops its share when it
//!   sees the record gone). No lease: a pool outlives every host.
//! - `/cleanroom/snapshots/<id>` = `{host, owner, created_at}` (a [`Binding`]): the host
//!   that holds a snapshot's files, so that `create --from snap_…` through any member is
//!   sent there (or refused when that host is gone), never placed on a host that has no
//!   such snapshot.
//!
//! Every call is bounded (the membership's deadline) and fails closed with
//! `cluster_unavailable`.

use crate::membership::deadline;
use crate::{Binding, Bindings, ClusterError};
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};

pub const POOLS: &str = "/cleanroom/pools/";
pub const SNAPSHOTS: &str = "/cleanroom/snapshots/";

/// A pool as the cluster records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolRecord {
    /// The owning principal (as hosts store owners).
    pub owner: String,
    /// Micros since the epoch.
    pub created_at: i64,
    /// The normalized pool spec, as JSON (the server's; this crate does not read it).
    pub spec: String,
    /// The member it was created through.
    pub host: String,
}

impl Bindings {
    async fn put_new(&self, what: &str, key: String, value: Vec<u8>) -> Result<bool, ClusterError> {
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value, None)]);
        let r = deadline(self.timeout, what, || {
            let (mut c, t) = (self.client.clone(), txn.clone());
            async move { c.txn(t).await }
        })
        .await?;
        Ok(r.succeeded())
    }

    async fn get_one(&self, what: &str, key: String) -> Result<Option<Vec<u8>>, ClusterError> {
        let r = deadline(self.timeout, what, || {
            let (mut c, k) = (self.client.clone(), key.clone());
            async move { c.get(k, None).await }
        })
        .await?;
        Ok(r.kvs().first().map(|kv| kv.value().to_vec()))
    }

    async fn delete_one(&self, what: &str, key: String) -> Result<bool, ClusterError> {
        let r = deadline(self.timeout, what, || {
            let (mut c, k) = (self.client.clone(), key.clone());
            async move { c.delete(k, None).await }
        })
        .await?;
        Ok(r.deleted() > 0)
    }

    /// Record pool `id` (only if no record of that id exists: `false` otherwise).
    pub async fn put_pool(&self, id: &str, rec: &PoolRecord) -> Result<bool, ClusterError> {
        let v = serde_json::to_vec(rec).map_err(|e| ClusterError::Invalid(e.to_string()))?;
        self.put_new("record pool", format!("{POOLS}{id}"), v).await
    }

    /// The record of pool `id`, if any (an unreadable one: none).
    pub async fn pool(&self, id: &str) -> Result<Option<PoolRecord>, ClusterError> {
        Ok(self
            .get_one("look up pool", format!("{POOLS}{id}"))
            .await?
            .and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// Forget pool `id`. `false`: there was no record.
    pub async fn delete_pool(&self, id: &str) -> Result<bool, ClusterError> {
        self.delete_one("remove pool", format!("{POOLS}{id}")).await
    }

    /// Every pool record (one range read), as `(id, record)`; unreadable ones are left out.
    pub async fn pools(&self) -> Result<Vec<(String, PoolRecord)>, ClusterError> {
        let r = deadline(self.timeout, "list pools", || {
            let mut c = self.client.clone();
            async move { c.get(POOLS, Some(GetOptions::new().with_prefix())).await }
        })
        .await?;
        Ok(r.kvs()
            .iter()
            .filter_map(|kv| {
                let id = std::str::from_utf8(kv.key()).ok()?.strip_prefix(POOLS)?;
                Some((id.to_string(), serde_json::from_slice(kv.value()).ok()?))
            })
            .collect())
    }

    /// Record that snapshot `id` is held by `b.host` (overwrites: a snapshot never moves,
    /// a second write says the same).
    pub async fn put_snapshot(&self, id: &str, b: &Binding) -> Result<(), ClusterError> {
        let v = serde_json::to_vec(b).map_err(|e| ClusterError::Invalid(e.to_string()))?;
        let k = format!("{SNAPSHOTS}{id}");
        deadline(self.timeout, "record snapshot", || {
            let (mut c, k, v) = (self.client.clone(), k.clone(), v.clone());
            async move { c.put(k, v, None).await }
        })
        .await
        .map(|_| ())
    }

    /// Where snapshot `id` is held, if the cluster recorded it.
    pub async fn snapshot(&self, id: &str) -> Result<Option<Binding>, ClusterError> {
        Ok(self
            .get_one("look up snapshot", format!("{SNAPSHOTS}{id}"))
            .await?
            .and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// Forget snapshot `id` (removed on its host).
    pub async fn delete_snapshot(&self, id: &str) -> Result<bool, ClusterError> {
        self.delete_one("remove snapshot", format!("{SNAPSHOTS}{id}"))
            .await
    }
}
