//! Which host owns which sandbox, and create idempotency, in etcd.
//!
//! - `/cleanroom/sandboxes/<id>` = `{host, owner, created_at}`: written once the host made
//!   the sandbox (its id is the host's to choose), read by any member to route a call for
//!   it, removed when it is terminated through the cluster. The owner principal is kept so
//!   that a member can answer for a sandbox whose host is gone (`LOST`) without telling
//!   anyone else that it exists (no oracle).
//! - `/cleanroom/idempotency/<sha256(owner, key)>` = `{host, sandbox_id}`: a create with an
//!   idempotency key claims it first, in a transaction that succeeds only if no claim
//!   exists; the claim lives under the front door's member lease until the sandbox exists
//!   (a front door that dies mid-create leaves no stale claim), then is rewritten with the
//!   sandbox id in the same transaction as the binding. A retried create finds the claim
//!   and answers with the sandbox already made: one sandbox, however often it is retried.
//!
//! - `/cleanroom/by-host/<host>/<id>` = the binding again, in the same transactions: the
//!   per-host index a restarted host reads its own bindings from (one range read).
//!
//! Binding and unbinding also keep the owner's cluster-wide count (`crate::quota`).
//!
//! Every call is bounded ([`crate::membership`]'s deadline) and fails closed with
//! `cluster_unavailable`: without quorum nothing is placed.

use crate::membership::deadline;
use crate::ClusterError;
use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::time::Duration;

pub const SANDBOXES: &str = "/cleanroom/sandboxes/";
pub const IDEMPOTENCY: &str = "/cleanroom/idempotency/";
/// `/cleanroom/by-host/<host>/<id>`: written and deleted in the transactions that write
/// and delete `/cleanroom/sandboxes/<id>` (a node name has no `/`).
pub const BY_HOST: &str = "/cleanroom/by-host/";

/// A sandbox's host and owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    pub host: String,
    /// The owner principal's name (as the host stores it).
    pub owner: String,
    /// Micros since the epoch.
    pub created_at: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct IdemRecord {
    host: String,
    #[serde(default)]
    sandbox_id: String,
}

/// What a create with an idempotency key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is now ours: create.
    New,
    /// A create with this key is under way (on `host`), not finished yet.
    Pending { host: String },
    /// Done before: this sandbox, on this host.
    Done { sandbox_id: String, host: String },
}

/// The bindings and idempotency records (cheap to clone: an etcd client handle).
#[derive(Clone)]
pub struct Bindings {
    pub(crate) client: Client,
    pub(crate) timeout: Duration,
}

fn idem_key(owner: &str, key: &str) -> String {
    let mut h = Sha256::new();
    h.update(owner.as_bytes());
    h.update([0]);
    h.update(key.as_bytes());
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("{IDEMPOTENCY}{hex}")
}

pub(crate) fn sandbox_key(id: &str) -> String {
    format!("{SANDBOXES}{id}")
}

/// The per-host index entry of sandbox `id` on `host` (the binding's value again): a
/// host's own bindings are one range read ([`Bindings::on_host`]), not a scan of all.
pub(crate) fn host_key(host: &str, id: &str) -> String {
    format!("{BY_HOST}{host}/{id}")
}

/// The finished idempotency claim of `(owner, key)`: `id` on `host` (written with the
/// binding, in its transaction).
pub(crate) fn idem_record(
    owner: &str,
    key: &str,
    host: &str,
    id: &str,
) -> Result<TxnOp, ClusterError> {
    let rec = serde_json::to_vec(&IdemRecord {
        host: host.to_string(),
        sandbox_id: id.to_string(),
    })
    .map_err(|e| ClusterError::Invalid(e.to_string()))?;
    Ok(TxnOp::put(idem_key(owner, key), rec, None))
}

impl Bindings {
    pub(crate) fn new(client: Client, timeout: Duration) -> Self {
        Bindings { client, timeout }
    }

    /// Claim `key` for `owner` on behalf of `host`, under `lease` until [`Bindings::bind`].
    pub async fn claim(
        &self,
        owner: &str,
        key: &str,
        host: &str,
        lease: i64,
    ) -> Result<Claim, ClusterError> {
        let k = idem_key(owner, key);
        let rec = serde_json::to_vec(&IdemRecord {
            host: host.to_string(),
            sandbox_id: String::new(),
        })
        .map_err(|e| ClusterError::Invalid(e.to_string()))?;
        let txn = Txn::new()
            .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                k.clone(),
                rec,
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(k, None)]);
        let done = deadline(self.timeout, "claim idempotency key", || {
            let (mut c, t) = (self.client.clone(), txn.clone());
            async move { c.txn(t).await }
        })
        .await?;
        if done.succeeded() {
            return Ok(Claim::New);
        }
        let found = done.op_responses().into_iter().find_map(|r| match r {
            etcd_client::TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        });
        // Gone between the compare and the get (its front door's lease expired): claim
        // again on the next try; say pending now.
        let rec: IdemRecord = found
            .and_then(|v| serde_json::from_slice(&v).ok())
            .unwrap_or_default();
        Ok(if rec.sandbox_id.is_empty() {
            Claim::Pending { host: rec.host }
        } else {
            Claim::Done {
                sandbox_id: rec.sandbox_id,
                host: rec.host,
            }
        })
    }

    /// Give up a claim (the create failed: a retry may try again).
    pub async fn release(&self, owner: &str, key: &str) -> Result<(), ClusterError> {
        let k = idem_key(owner, key);
        deadline(self.timeout, "release idempotency key", || {
            let mut c = self.client.clone();
            let k = k.clone();
            async move { c.delete(k, None).await }
        })
        .await
        .map(|_| ())
    }

    /// The binding of `id`, if any.
    pub async fn lookup(&self, id: &str) -> Result<Option<Binding>, ClusterError> {
        let k = sandbox_key(id);
        let r = deadline(self.timeout, "look up sandbox", || {
            let mut c = self.client.clone();
            let k = k.clone();
            async move { c.get(k, None).await }
        })
        .await?;
        Ok(r.kvs()
            .first()
            .and_then(|kv| serde_json::from_slice(kv.value()).ok()))
    }

    /// The bindings that name `host` (one range read of its index), as `(id, binding)`.
    pub async fn on_host(&self, host: &str) -> Result<Vec<(String, Binding)>, ClusterError> {
        let prefix = format!("{BY_HOST}{host}/");
        let r = deadline(self.timeout, "list a host's sandboxes", || {
            let (mut c, p) = (self.client.clone(), prefix.clone());
            async move { c.get(p, Some(GetOptions::new().with_prefix())).await }
        })
        .await?;
        Ok(r.kvs()
            .iter()
            .filter_map(|kv| {
                let id = std::str::from_utf8(kv.key()).ok()?.strip_prefix(&prefix)?;
                Some((id.to_string(), serde_json::from_slice(kv.value()).ok()?))
            })
            .collect())
    }

    /// Every binding, as `(id, binding)`.
    pub async fn all(&self) -> Result<Vec<(String, Binding)>, ClusterError> {
        let r = deadline(self.timeout, "list sandboxes", || {
            let mut c = self.client.clone();
            async move {
                c.get(SANDBOXES, Some(GetOptions::new().with_prefix()))
                    .await
            }
        })
        .await?;
        Ok(r.kvs()
            .iter()
            .filter_map(|kv| {
                let id = std::str::from_utf8(kv.key())
                    .ok()?
                    .strip_prefix(SANDBOXES)?;
                Some((id.to_string(), serde_json::from_slice(kv.value()).ok()?))
            })
            .collect())
    }
}
