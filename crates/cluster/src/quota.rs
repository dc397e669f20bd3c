//! The cluster-wide sandbox count of each principal, kept in the same etcd transactions
//! that write and delete sandbox bindings: a binding and its owner's count can never
//! disagree, and a create past the limit is refused by the transaction that would record
//! it (two front doors racing for a principal's last slot: one transaction wins, the
//! other's compare fails and it reads the new count).
//!
//! - `/cleanroom/quota/<sha256(owner)>` = the owner's number of bindings, in decimal (the
//!   key is gone at zero). Each write compares the count's `mod_revision` with the one
//!   read (optimistic concurrency: etcd has no increment), and the binding's existence.
//! - [`Bindings::bind_counted`]: put the binding and count + 1, only if the sandbox is not
//!   bound yet (a second binder — the host's reconciliation after the front door's
//!   placement — never counts it twice) and, with a limit, only below it.
//! - [`Bindings::unbind_counted`]: delete the binding and count - 1, only if the binding is
//!   still there (the front door's `rm` and the host's reconciliation may both try).
//!
//! Every call is bounded (the membership's deadline, a few optimistic rounds) and fails
//! closed with `cluster_unavailable`.

use crate::bindings::{host_key, idem_record, sandbox_key};
use crate::membership::deadline;
use crate::{Binding, Bindings, ClusterError};
use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse, TxnResponse};
use sha2::{Digest, Sha256};

pub const QUOTA: &str = "/cleanroom/quota/";

/// Optimistic rounds before a contended count gives up (`cluster_unavailable`).
const ROUNDS: usize = 16;

/// The key of `owner`'s count.
pub fn quota_key(owner: &str) -> String {
    let hex: String = Sha256::digest(owner.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{QUOTA}{hex}")
}

/// A principal's count as read, with the revision a write compares against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub n: u64,
    /// 0: no key (a count of zero).
    pub mod_revision: i64,
}

impl Count {
    /// From a key's value and `mod_revision` (`None`: no key). An unreadable value counts
    /// as full (fail closed: a damaged count refuses creates rather than lifting the limit).
    pub fn from_kv(kv: Option<(&[u8], i64)>) -> Count {
        match kv {
            None => Count::default(),
            Some((v, rev)) => Count {
                n: std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(u64::MAX),
                mod_revision: rev,
            },
        }
    }

    /// Is a principal with this count at `limit` (0: no limit)?
    pub fn at_limit(&self, limit: u32) -> bool {
        limit > 0 && self.n >= u64::from(limit)
    }
}

/// What [`Bindings::bind_counted`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Bound and counted now.
    Now,
    /// Bound before (by another binder): counted then, not again.
    Already,
    /// Refused: the owner has `n` sandboxes, the limit.
    OverLimit { n: u64 },
}

fn count_op(owner: &str, n: u64) -> TxnOp {
    let k = quota_key(owner);
    if n == 0 {
        TxnOp::delete(k, None)
    } else {
        TxnOp::put(k, n.to_string(), None)
    }
}

/// The gets of a failed compare's `or_else`: (the binding's kv, the count).
fn fresh(resp: &TxnResponse) -> (Option<(Vec<u8>, i64)>, Count) {
    let mut gets = resp.op_responses().into_iter().filter_map(|r| match r {
        TxnOpResponse::Get(g) => Some(g),
        _ => None,
    });
    let binding = gets.next().and_then(|g| {
        g.kvs()
            .first()
            .map(|kv| (kv.value().to_vec(), kv.mod_revision()))
    });
    let count = gets
        .next()
        .map(|g| Count::from_kv(g.kvs().first().map(|kv| (kv.value(), kv.mod_revision()))))
        .unwrap_or_default();
    (binding, count)
}

impl Bindings {
    /// `owner`'s count now (one read).
    pub async fn count(&self, owner: &str) -> Result<Count, ClusterError> {
        let k = quota_key(owner);
        let r = deadline(self.timeout, "read quota count", || {
            let mut c = self.client.clone();
            let k = k.clone();
            async move { c.get(k, None).await }
        })
        .await?;
        Ok(Count::from_kv(
            r.kvs().first().map(|kv| (kv.value(), kv.mod_revision())),
        ))
    }

    async fn txn(&self, what: &str, txn: Txn) -> Result<TxnResponse, ClusterError> {
        deadline(self.timeout, what, || {
            let (mut c, t) = (self.client.clone(), txn.clone());
            async move { c.txn(t).await }
        })
        .await
    }

    /// Record that `id` lives on `b.host` and count it against `b.owner` (and finish the
    /// idempotency claim, if any) in one transaction; with `limit` > 0, only while the
    /// owner has fewer. `seen`: the count the caller read (placement reads it with the
    /// members); a stale one costs one more round, never a wrong count.
    pub async fn bind_counted(
        &self,
        id: &str,
        b: &Binding,
        idempotency: Option<(&str, &str)>,
        limit: u32,
        seen: Count,
    ) -> Result<Bound, ClusterError> {
        let value = serde_json::to_vec(b).map_err(|e| ClusterError::Invalid(e.to_string()))?;
        let idem = idempotency
            .map(|(owner, key)| idem_record(owner, key, &b.host, id))
            .transpose()?;
        let (sk, qk) = (sandbox_key(id), quota_key(&b.owner));
        let mut count = seen;
        for _ in 0..ROUNDS {
            if count.at_limit(limit) {
                return Ok(Bound::OverLimit { n: count.n });
            }
            let mut ops = vec![
                TxnOp::put(sk.clone(), value.clone(), None),
                TxnOp::put(host_key(&b.host, id), value.clone(), None),
                count_op(&b.owner, count.n.saturating_add(1)),
            ];
            ops.extend(idem.clone());
            let txn = Txn::new()
                .when([
                    Compare::create_revision(sk.clone(), CompareOp::Equal, 0),
                    Compare::mod_revision(qk.clone(), CompareOp::Equal, count.mod_revision),
                ])
                .and_then(ops)
                .or_else([TxnOp::get(sk.clone(), None), TxnOp::get(qk.clone(), None)]);
            let resp = self.txn("bind sandbox", txn).await?;
            if resp.succeeded() {
                return Ok(Bound::Now);
            }
            let (bound, c) = fresh(&resp);
            if bound.is_some() {
                // Bound by another binder (counted then); finish the claim all the same.
                if let Some(op) = idem.clone() {
                    self.txn("finish idempotency claim", Txn::new().and_then([op]))
                        .await?;
                }
                return Ok(Bound::Already);
            }
            count = c;
        }
        Err(ClusterError::Unavailable(format!(
            "bind sandbox {id}: the owner's count kept changing ({ROUNDS} rounds)"
        )))
    }

    /// Forget `id` and take it off its owner's count, in one transaction. `false`: it was
    /// not bound (someone else unbound it first: counted down once, by them).
    /// `owner`: who the caller believes owns it (a binding it read before): then the
    /// binding and the count are read in one transaction.
    pub async fn unbind_counted(
        &self,
        id: &str,
        owner: Option<&str>,
    ) -> Result<bool, ClusterError> {
        let sk = sandbox_key(id);
        let mut gets = vec![TxnOp::get(sk.clone(), None)];
        gets.extend(owner.map(|o| TxnOp::get(quota_key(o), None)));
        let r = self
            .txn("look up sandbox", Txn::new().and_then(gets))
            .await?;
        let (found, hinted) = fresh(&r);
        let Some((value, rev)) = found else {
            return Ok(false);
        };
        let same = |v: &[u8]| {
            owner.is_some()
                && serde_json::from_slice::<Binding>(v)
                    .is_ok_and(|b| Some(b.owner.as_str()) == owner)
        };
        let mut count: Option<Count> = same(&value).then_some(hinted);
        let mut binding = Some((value, rev));
        for _ in 0..ROUNDS {
            let Some((value, rev)) = binding.take() else {
                return Ok(false);
            };
            // A binding that does not parse has no owner to count down (nor host index
            // entry to find): removed alone.
            let parsed = serde_json::from_slice::<Binding>(&value).ok();
            let owner = parsed.as_ref().map(|b| b.owner.clone());
            let c = match (count, &owner) {
                (Some(c), _) => c,
                (None, Some(o)) => self.count(o).await?,
                (None, None) => Count::default(),
            };
            let mut when = vec![Compare::mod_revision(sk.clone(), CompareOp::Equal, rev)];
            let mut ops = vec![TxnOp::delete(sk.clone(), None)];
            ops.extend(parsed.map(|b| TxnOp::delete(host_key(&b.host, id), None)));
            let mut orelse = vec![TxnOp::get(sk.clone(), None)];
            if let Some(o) = &owner {
                let qk = quota_key(o);
                when.push(Compare::mod_revision(
                    qk.clone(),
                    CompareOp::Equal,
                    c.mod_revision,
                ));
                ops.push(count_op(o, c.n.saturating_sub(1)));
                orelse.push(TxnOp::get(qk, None));
            }
            let resp = self
                .txn(
                    "unbind sandbox",
                    Txn::new().when(when).and_then(ops).or_else(orelse),
                )
                .await?;
            if resp.succeeded() {
                return Ok(true);
            }
            let (b, c) = fresh(&resp);
            binding = b;
            count = Some(c);
        }
        Err(ClusterError::Unavailable(format!(
            "unbind sandbox {id}: the owner's count kept changing ({ROUNDS} rounds)"
        )))
    }

    /// Which of `ids` are bound (one read-only transaction per 64; keys only).
    pub async fn which_bound(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashSet<String>, ClusterError> {
        let mut out = std::collections::HashSet::new();
        for chunk in ids.chunks(64) {
            let gets: Vec<TxnOp> = chunk
                .iter()
                .map(|id| {
                    TxnOp::get(
                        sandbox_key(id),
                        Some(etcd_client::GetOptions::new().with_keys_only()),
                    )
                })
                .collect();
            let resp = self
                .txn("check bindings", Txn::new().and_then(gets))
                .await?;
            for (id, r) in chunk.iter().zip(resp.op_responses()) {
                if let TxnOpResponse::Get(g) = r {
                    if !g.kvs().is_empty() {
                        out.insert(id.clone());
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_reads_its_value_and_a_damaged_one_is_full() {
        assert_eq!(Count::from_kv(None), Count::default());
        let c = Count::from_kv(Some((b"3", 17)));
        assert_eq!((c.n, c.mod_revision), (3, 17));
        assert!(c.at_limit(3) && !c.at_limit(4) && !c.at_limit(0));
        assert!(Count::from_kv(Some((b"x", 2))).at_limit(1_000_000));
        assert_ne!(quota_key("alice"), quota_key("alice2"));
        assert!(quota_key("a/b").starts_with(QUOTA));
    }
}
