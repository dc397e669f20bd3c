//! Joining, staying and leaving: a lease, a key under it, and a task that renews the
//! lease (and rewrites the record when the host's numbers change) until the server stops.
//!
//! Registration is one transaction: the key is written only if no key of that name
//! exists, so two live hosts can never share a name; a host restarted after a crash waits
//! (up to twice the lease TTL) for its old key to expire with its old lease. When the
//! lease is lost anyway (etcd unreachable for longer than the TTL), the task registers
//! again as soon as etcd answers. Every etcd call has a deadline: nothing here can hang
//! the server (rule 4).

use crate::{ClusterConfig, ClusterError, Member, MemberInfo};
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::Code as tonic_code;

/// Where members live in etcd.
pub const PREFIX: &str = "/cleanroom/members/";

/// This host's membership; dropping it (or [`Membership::leave`]) stops renewing.
pub struct Membership {
    pub(crate) cfg: ClusterConfig,
    pub(crate) client: Client,
    info: Arc<Mutex<(MemberInfo, bool)>>,
    lease: Arc<std::sync::atomic::AtomicI64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One etcd call, retried while etcd answers "unavailable" (a dead member the client's
/// balancer still tries: the next attempt goes to another), all within `d`. Past `d` it
/// fails closed with `cluster_unavailable`.
pub(crate) async fn deadline<T, F, Fut>(
    d: Duration,
    what: &str,
    mut f: F,
) -> Result<T, ClusterError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
{
    let end = tokio::time::Instant::now() + d;
    loop {
        let left = end.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(left, f()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) if retryable(&e) && left > Duration::from_millis(100) => {
                tracing::debug!(error = %e, what, "etcd call failed; retrying");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(Err(e)) => return Err(ClusterError::Unavailable(format!("{what}: {e}"))),
            Err(_) => {
                return Err(ClusterError::Unavailable(format!(
                    "{what}: no answer within {d:?}"
                )))
            }
        }
    }
}

/// Errors another attempt (through another member) may not have.
fn retryable(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::TransportError(_) => true,
        etcd_client::Error::GRpcStatus(s) => matches!(
            s.code(),
            tonic_code::Unavailable | tonic_code::DeadlineExceeded
        ),
        _ => false,
    }
}

fn key(cfg: &ClusterConfig) -> String {
    format!("{PREFIX}{}", cfg.node_name)
}

/// Write the key under a new lease if no key of that name exists: `Some(lease)`, else
/// `None` (the lease just granted is revoked).
async fn register(
    client: &mut Client,
    cfg: &ClusterConfig,
    info: &MemberInfo,
) -> Result<Option<i64>, ClusterError> {
    let ttl = cfg.lease_ttl.as_secs().max(1) as i64;
    let lease = deadline(cfg.timeout, "lease grant", || {
        let mut c = client.clone();
        async move { c.lease_grant(ttl, None).await }
    })
    .await?
    .id();
    let value = serde_json::to_vec(info).map_err(|e| ClusterError::Invalid(e.to_string()))?;
    let k = key(cfg);
    let txn = Txn::new()
        .when([Compare::create_revision(k.clone(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            k,
            value,
            Some(PutOptions::new().with_lease(lease)),
        )]);
    let done = deadline(cfg.timeout, "register", || {
        let (mut c, t) = (client.clone(), txn.clone());
        async move { c.txn(t).await }
    })
    .await?;
    if done.succeeded() {
        return Ok(Some(lease));
    }
    let _ = deadline(cfg.timeout, "lease revoke", || {
        let mut c = client.clone();
        async move { c.lease_revoke(lease).await }
    })
    .await;
    Ok(None)
}

impl Membership {
    /// Connect to etcd and register `info` under this host's name. Fails closed
    /// (`cluster_unavailable`) when etcd does not answer, `node_name_taken` when a live
    /// member holds the name past twice the lease TTL.
    pub async fn join(cfg: ClusterConfig, info: MemberInfo) -> Result<Self, ClusterError> {
        let opts = ConnectOptions::new()
            .with_connect_timeout(cfg.timeout)
            .with_timeout(cfg.timeout)
            .with_keep_alive(Duration::from_secs(2), cfg.timeout);
        let mut client = deadline(cfg.timeout, "connect", || {
            Client::connect(cfg.endpoints.clone(), Some(opts.clone()))
        })
        .await?;
        let give_up = tokio::time::Instant::now() + cfg.lease_ttl * 2;
        let lease = loop {
            if let Some(l) = register(&mut client, &cfg, &info).await? {
                break l;
            }
            if tokio::time::Instant::now() >= give_up {
                return Err(ClusterError::NameTaken(cfg.node_name.to_string()));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        tracing::info!(node = %cfg.node_name, lease, "joined the cluster");
        let info = Arc::new(Mutex::new((info, false)));
        let lease = Arc::new(std::sync::atomic::AtomicI64::new(lease));
        let task = tokio::spawn(renew(
            client.clone(),
            cfg.clone(),
            info.clone(),
            lease.clone(),
        ));
        Ok(Membership {
            cfg,
            client,
            info,
            lease,
            task,
        })
    }

    /// Change this host's record (its load); written at the next renewal when it changed.
    pub fn update(&self, f: impl FnOnce(&mut MemberInfo)) {
        let mut g = self.info.lock().unwrap_or_else(|p| p.into_inner());
        let before = g.0.clone();
        f(&mut g.0);
        if g.0 != before {
            g.1 = true;
        }
    }

    /// The sandbox bindings and idempotency records, over this membership's etcd client.
    pub fn bindings(&self) -> crate::Bindings {
        crate::Bindings::new(self.client.clone(), self.cfg.timeout)
    }

    /// The lease this host's key lives under now (records that must vanish with this host
    /// live under it too).
    pub fn lease(&self) -> i64 {
        self.lease.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This host's name.
    pub fn node_name(&self) -> &crate::NodeName {
        &self.cfg.node_name
    }

    /// Every live member (this one included), by name, with its drain mark (both read in one
    /// transaction: one consistent view). A record that does not parse is left out with a
    /// warning (another version's, or damaged): it is not a member we can route to.
    pub async fn members(&self) -> Result<Vec<Member>, ClusterError> {
        Ok(self.members_and_count(None).await?.0)
    }

    /// [`Self::members`] and, in the same read transaction, `owner`'s cluster-wide sandbox
    /// count (placement: no extra etcd round for the quota's early check).
    pub async fn members_and_count(
        &self,
        owner: Option<&str>,
    ) -> Result<(Vec<Member>, crate::Count), ClusterError> {
        let mut ops = vec![
            TxnOp::get(PREFIX, Some(GetOptions::new().with_prefix())),
            TxnOp::get(crate::drain::DRAIN, Some(GetOptions::new().with_prefix())),
        ];
        if let Some(o) = owner {
            ops.push(TxnOp::get(crate::quota_key(o), None));
        }
        let txn = Txn::new().and_then(ops);
        let resp = deadline(self.cfg.timeout, "list members", || {
            let (mut c, t) = (self.client.clone(), txn.clone());
            async move { c.txn(t).await }
        })
        .await?;
        let mut gets = resp.op_responses().into_iter().filter_map(|r| match r {
            etcd_client::TxnOpResponse::Get(g) => Some(g),
            _ => None,
        });
        let (records, marks, count) = (gets.next(), gets.next(), gets.next());
        let count = crate::Count::from_kv(
            count
                .as_ref()
                .and_then(|g| g.kvs().first())
                .map(|kv| (kv.value(), kv.mod_revision())),
        );
        let marks: std::collections::HashMap<String, crate::DrainMark> = marks
            .iter()
            .flat_map(|g| g.kvs())
            .filter_map(|kv| {
                let name = std::str::from_utf8(kv.key())
                    .ok()?
                    .strip_prefix(crate::drain::DRAIN)?;
                Some((name.to_string(), serde_json::from_slice(kv.value()).ok()?))
            })
            .collect();
        let mut out: Vec<Member> = records
            .iter()
            .flat_map(|g| g.kvs())
            .filter_map(|kv| match serde_json::from_slice::<MemberInfo>(kv.value()) {
                Ok(mut info) => {
                    let drain = marks.get(&info.name).cloned();
                    info.draining = drain.is_some();
                    Some(Member {
                        info,
                        lease_id: kv.lease(),
                        drain,
                    })
                }
                Err(e) => {
                    tracing::warn!(key = %String::from_utf8_lossy(kv.key()), error = %e, "unreadable member record");
                    None
                }
            })
            .collect();
        out.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        Ok((out, count))
    }

    /// Leave now: stop renewing and revoke the lease (the key goes at once, not after the
    /// TTL). Bounded by the etcd timeout; a failure only means the key expires later.
    pub async fn leave(&self) {
        self.task.abort();
        let lease = self.lease.load(std::sync::atomic::Ordering::Relaxed);
        let revoke = deadline(self.cfg.timeout, "leave", || {
            let mut c = self.client.clone();
            async move { c.lease_revoke(lease).await }
        });
        if let Err(e) = revoke.await {
            tracing::warn!(error = %e, "could not revoke the membership lease; it expires by itself");
        }
    }
}

/// Renew the lease every third of its TTL, rewriting the record when it changed; register
/// again when the lease was lost.
async fn renew(
    mut client: Client,
    cfg: ClusterConfig,
    info: Arc<Mutex<(MemberInfo, bool)>>,
    lease: Arc<std::sync::atomic::AtomicI64>,
) {
    use std::sync::atomic::Ordering::Relaxed;
    let every = (cfg.lease_ttl / 3).max(Duration::from_millis(300));
    loop {
        let id = lease.load(Relaxed);
        let keep = deadline(cfg.timeout, "keep alive", || {
            let mut c = client.clone();
            async move { c.lease_keep_alive(id).await }
        });
        let alive = match keep.await {
            Ok((mut keeper, mut stream)) => loop {
                tokio::time::sleep(every).await;
                let sent = tokio::time::timeout(cfg.timeout, keeper.keep_alive()).await;
                if !matches!(sent, Ok(Ok(()))) {
                    break true;
                }
                match tokio::time::timeout(cfg.timeout, stream.message()).await {
                    Ok(Ok(Some(r))) if r.ttl() > 0 => {}
                    Ok(Ok(_)) => break false,
                    _ => break true,
                }
                let changed = {
                    let mut g = info.lock().unwrap_or_else(|p| p.into_inner());
                    std::mem::take(&mut g.1).then(|| g.0.clone())
                };
                if let Some(now) = changed {
                    if let Ok(v) = serde_json::to_vec(&now) {
                        let put = deadline(cfg.timeout, "update", || {
                            let (mut c, v, k) = (client.clone(), v.clone(), key(&cfg));
                            async move { c.put(k, v, Some(PutOptions::new().with_lease(id))).await }
                        });
                        if let Err(e) = put.await {
                            tracing::warn!(error = %e, "could not update the member record");
                            info.lock().unwrap_or_else(|p| p.into_inner()).1 = true;
                        }
                    }
                }
            },
            Err(_) => true,
        };
        if alive {
            // etcd did not answer: try the same lease again shortly (it may still live).
            tokio::time::sleep(Duration::from_millis(500)).await;
            let ttl = deadline(cfg.timeout, "lease ttl", || {
                let mut c = client.clone();
                async move { c.lease_time_to_live(id, None).await }
            })
            .await;
            if !matches!(ttl, Ok(ref t) if t.ttl() <= 0) {
                continue;
            }
        }
        // The lease is gone (and our key with it): register again once etcd answers.
        tracing::warn!(node = %cfg.node_name, "membership lease lost; registering again");
        let record = info.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
        loop {
            match register(&mut client, &cfg, &record).await {
                Ok(Some(l)) => {
                    lease.store(l, Relaxed);
                    tracing::info!(node = %cfg.node_name, lease = l, "registered again");
                    break;
                }
                Ok(None) | Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        }
    }
}
