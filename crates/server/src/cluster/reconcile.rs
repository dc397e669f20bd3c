//! The host's side of keeping etcd's bindings (and the owners' cluster-wide counts) true,
//! every few seconds, and a restarted host taking its sandboxes back from `LOST`.
//!
//! Placement binds what it places and `rm` through the cluster unbinds what it ends
//! (`crate::api::cluster_route`), each with the owner's count in the same transaction.
//! What is left to the host: sandboxes made here by a path that did not go through
//! placement (a `RunExecution` create, a pool claim, a restore), sandboxes that ended by
//! themselves (TTL, idle, failure), and whatever a front door that died between the
//! create and its binding (or the end and its unbinding) left undone. So the host does not
//! write a binding a second time (that doubled etcd's writes per create): a sandbox it has
//! not seen bound, or a bound one that ended, waits [`GRACE`] (longer than a front door's
//! bounded binding write), then one read-only transaction per tick checks every such
//! sandbox at once, and only what is still missing (or still bound) is written.
//!
//! At start, the host reads the bindings that name it (a host restarted after a crash:
//! its sandboxes were `LOST` to the other members): each that it still holds gets a
//! `host_returned` event with its real status (this server's recovery ended every one it
//! could not keep: `FAILED`, "server restarted…"), and every one that is no longer live is
//! unbound like any ended sandbox — its owner's count goes down.

use super::ClusterNode;
use crate::engine::Engine;
use crate::model::status::sandbox as ss;
use crate::store::EventRow;
use cleanroom_cluster::{Binding, Bound, Count};
use std::collections::{HashMap, HashSet};
use std::sync::Weak;
use std::time::{Duration, Instant};

/// How often this host's record is refreshed with its load (and its bindings checked).
pub(super) const REPORT_EVERY: Duration = Duration::from_secs(2);

/// How long a sandbox may stay unbound (or an ended one bound) before the host checks:
/// longer than the etcd deadline of the front door that placed (or removed) it.
pub(crate) const GRACE: Duration = Duration::from_secs(4);

#[derive(Default)]
struct State {
    /// Live here and known bound in etcd.
    bound: HashSet<String>,
    /// Live here, not known bound: since when.
    unbound: HashMap<String, Instant>,
    /// Bound, no longer live here: since when.
    ended: HashMap<String, Instant>,
    /// The bindings naming this host were read (once, at start).
    returned: bool,
    /// This host's share of the cluster's warm pools.
    pools: super::pools::PoolShare,
}

/// The reporting task: runs until the node or the engine is dropped.
pub(super) async fn report(node: Weak<ClusterNode>, engine: Weak<Engine>) {
    let mut st = State::default();
    loop {
        let (Some(node), Some(engine)) = (node.upgrade(), engine.upgrade()) else {
            return;
        };
        if !st.returned {
            match returned(&node, &engine).await {
                Ok(mine) => {
                    st.bound = mine;
                    st.returned = true;
                }
                Err(e) => tracing::warn!(error = %e, "could not read this host's bindings"),
            }
        }
        let live = engine.list_sandboxes(false).unwrap_or_default();
        let n = live.len() as u64;
        let load = load_tenths();
        node.membership.update(|i| {
            i.sandboxes = n;
            i.load_tenths = load;
        });
        if st.returned {
            tick(&mut st, &node, &live).await;
        }
        super::pools::sync(&mut st.pools, &node, &engine).await;
        drop((node, engine));
        tokio::time::sleep(REPORT_EVERY).await;
    }
}

/// This host's 1-minute load average in tenths, to the nearest 5 (0 when unreadable).
fn load_tenths() -> u32 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let one: f64 = text
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    // Bounded: a nonsense value cannot overflow the record.
    ((one.clamp(0.0, 100_000.0) * 2.0).round() * 5.0) as u32
}

/// A restarted host's sandboxes: the bindings that name it, each with a `host_returned`
/// event when this host has its row (its real status is what callers see from now on).
async fn returned(node: &ClusterNode, engine: &Engine) -> Result<HashSet<String>, String> {
    let me = node.node_name().to_string();
    // One range read of this host's index, not a scan of every binding.
    let all = node
        .bindings
        .on_host(&me)
        .await
        .map_err(|e| e.to_string())?;
    let mut mine = HashSet::new();
    for (id, b) in all.into_iter().filter(|(_, b)| b.host == me) {
        if let Ok(Some(row)) = engine.store.get_sandbox(&id) {
            let status = row.status;
            let why = if row.message.is_empty() {
                String::new()
            } else {
                format!(": {}", row.message)
            };
            engine.events.record(EventRow {
                sandbox_id: id.clone(),
                kind: "host_returned".into(),
                sandbox_status: status.number(),
                message: format!(
                    "host_returned: its host {me} rejoined the cluster; the sandbox is {}{why}",
                    status.name()
                ),
                ..Default::default()
            });
        }
        node.remember(&id, &b);
        mine.insert(id);
    }
    Ok(mine)
}

async fn tick(st: &mut State, node: &ClusterNode, live: &[crate::store::SandboxRow]) {
    let now = Instant::now();
    let ids: HashSet<&str> = live.iter().map(|s| s.id.as_str()).collect();
    // A create under way is bound by its front door once it answers: not yet ours to do.
    // A pool's warm sandbox is nobody's to reach (a `pool:` owner): bound when claimed.
    for s in live
        .iter()
        .filter(|s| s.status != ss::PROVISIONING && !s.owner.is_pool())
    {
        if !st.bound.contains(&s.id) {
            st.unbound.entry(s.id.clone()).or_insert(now);
        }
    }
    for id in st.bound.iter().filter(|id| !ids.contains(id.as_str())) {
        st.ended.entry(id.clone()).or_insert(now);
    }
    st.unbound
        .retain(|id, _| ids.contains(id.as_str()) && !st.bound.contains(id));
    st.ended.retain(|id, _| !ids.contains(id.as_str()));
    let due = |m: &HashMap<String, Instant>| -> Vec<String> {
        m.iter()
            .filter(|(_, at)| now.duration_since(**at) >= GRACE)
            .map(|(id, _)| id.clone())
            .collect()
    };
    let (new, gone) = (due(&st.unbound), due(&st.ended));
    if new.is_empty() && gone.is_empty() {
        return;
    }
    let ask: Vec<String> = new.iter().chain(gone.iter()).cloned().collect();
    let present = match node.bindings.which_bound(&ask).await {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(error = %e, "bindings not checked this round");
            return;
        }
    };
    let me = node.node_name().to_string();
    let rows: HashMap<&str, &crate::store::SandboxRow> =
        live.iter().map(|s| (s.id.as_str(), s)).collect();
    for id in new {
        let Some(s) = rows.get(id.as_str()) else {
            continue;
        };
        let b = Binding {
            host: me.clone(),
            owner: s.owner.to_string(),
            created_at: s.created_at,
        };
        let done = present.contains(&id)
            || matches!(
                node.bindings
                    .bind_counted(&id, &b, None, 0, Count::default())
                    .await,
                Ok(Bound::Now | Bound::Already)
            );
        if done {
            node.remember(&id, &b);
            st.unbound.remove(&id);
            st.bound.insert(id);
        }
    }
    for id in gone {
        let owner = node.known(&id).map(|b| b.owner);
        let done = !present.contains(&id)
            || node
                .bindings
                .unbind_counted(&id, owner.as_deref())
                .await
                .is_ok();
        if done {
            node.forget(&id);
            st.ended.remove(&id);
            st.bound.remove(&id);
        }
    }
}
