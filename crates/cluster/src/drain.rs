//! Draining a member (`cleanroom node drain NAME`): an operator's mark that the member
//! takes no new sandboxes, kept in etcd at `/cleanroom/drain/<NAME>` = `{since, by}`.
//!
//! The mark is a key of its own, not a field of the member's record: the record is the
//! member's (it rewrites it as its load changes, and it vanishes with its lease), the mark
//! is the operator's. So a member cannot undo its drain by reporting, and a drained host
//! that restarts stays drained until `node undrain`. Readers of the membership join the two
//! ([`crate::Membership::members`] reads both in one transaction) and placement skips a
//! drained member ([`crate::placement::fits`]). The sandboxes it holds are untouched: they
//! end as their owners end them.

use crate::membership::{deadline, PREFIX};
use crate::{ClusterError, Membership, NodeName};
use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use serde::{Deserialize, Serialize};

/// Where drain marks live in etcd.
pub const DRAIN: &str = "/cleanroom/drain/";

/// Who drained a member, and since when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainMark {
    /// Micros since the epoch.
    pub since: i64,
    /// The principal that drained it.
    pub by: String,
}

pub(crate) fn drain_key(node: &str) -> String {
    format!("{DRAIN}{node}")
}

impl Membership {
    /// Drain live member `node`: placement skips it from now on. Idempotent: draining a
    /// drained member keeps its first mark (`since`, `by`), which is returned.
    /// `not a member` (`invalid_argument`) when no live member has that name: a typo must not
    /// leave a mark that silently drains a host that joins later.
    pub async fn drain(
        &self,
        node: &NodeName,
        mark: &DrainMark,
    ) -> Result<DrainMark, ClusterError> {
        let member = format!("{PREFIX}{node}");
        let key = drain_key(node.as_str());
        let value = serde_json::to_vec(mark).map_err(|e| ClusterError::Invalid(e.to_string()))?;
        let txn = Txn::new()
            .when([
                Compare::create_revision(member.clone(), CompareOp::Greater, 0),
                Compare::create_revision(key.clone(), CompareOp::Equal, 0),
            ])
            .and_then([TxnOp::put(key.clone(), value, None)])
            .or_else([TxnOp::get(member, None), TxnOp::get(key, None)]);
        let done = deadline(self.cfg.timeout, "drain member", || {
            let (mut c, t) = (self.client.clone(), txn.clone());
            async move { c.txn(t).await }
        })
        .await?;
        if done.succeeded() {
            return Ok(mark.clone());
        }
        let mut found = done.op_responses().into_iter().map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        });
        let (is_member, existing) = (found.next().flatten(), found.next().flatten());
        if is_member.is_none() {
            return Err(ClusterError::NotMember(node.to_string()));
        }
        // Already drained: the first mark stands (one that does not parse is replaced).
        match existing.and_then(|v| serde_json::from_slice::<DrainMark>(&v).ok()) {
            Some(first) => Ok(first),
            None => {
                let v =
                    serde_json::to_vec(mark).map_err(|e| ClusterError::Invalid(e.to_string()))?;
                let k = drain_key(node.as_str());
                deadline(self.cfg.timeout, "drain member", || {
                    let (mut c, k, v) = (self.client.clone(), k.clone(), v.clone());
                    async move { c.put(k, v, None).await }
                })
                .await?;
                Ok(mark.clone())
            }
        }
    }

    /// Undrain `node` (live or not: a departed host's mark can be cleared too). Whether it
    /// was drained.
    pub async fn undrain(&self, node: &NodeName) -> Result<bool, ClusterError> {
        let key = drain_key(node.as_str());
        let r = deadline(self.cfg.timeout, "undrain member", || {
            let (mut c, k) = (self.client.clone(), key.clone());
            async move { c.delete(k, None).await }
        })
        .await?;
        Ok(r.deleted() > 0)
    }
}
