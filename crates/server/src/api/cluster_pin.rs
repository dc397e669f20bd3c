//! Where a create through the cluster must or should go before placement picks
//! (docs/cluster.md "Warm pools", "Snapshots"):
//!
//! - a restore (`from_snapshot`, `from_checkpoint`) goes to the host that holds the
//!   snapshot's or checkpoint's files, as etcd records it — or is refused `host_lost` when
//!   that host is gone; one the cluster has no record of is the front door's to answer
//!   (it restores it when it holds it, else `snapshot_not_found`): never placed on a host
//!   that would restore nothing;
//! - a create a warm pool of the caller's can serve right here (a READY sandbox waiting
//!   on this host) stays here when this host fits, instead of a cold create elsewhere.

use super::cluster_route::visible;
use crate::budgets::limits::RequestedLimits;
use crate::cluster::route::Pin;
use crate::cluster::{cluster_error, ClusterNode};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use cleanroom_proto::cleanroom::v1::CreateSandboxRequest;

/// What of a create request decides its pin (cloned out of the request: small).
pub(super) struct CreateShape {
    restore: Option<String>,
    pooled: Option<(String, String, RequestedLimits)>,
}

impl CreateShape {
    pub(super) fn of(c: &CreateSandboxRequest) -> CreateShape {
        let restore = [&c.from_snapshot, &c.from_checkpoint]
            .into_iter()
            .find(|s| !s.is_empty())
            .cloned();
        let l = c.limits.as_option().cloned().unwrap_or_default();
        let pooled = (!c.no_pool && c.lockfiles.is_empty() && restore.is_none()).then(|| {
            (
                c.policy_yaml.clone(),
                c.image_ref.clone(),
                RequestedLimits {
                    memory_bytes: l.memory_bytes,
                    pids: l.pids,
                    cpu_millis: l.cpu_millis,
                    disk_bytes: l.disk_bytes,
                    output_bytes: l.output_bytes,
                },
            )
        });
        CreateShape { restore, pooled }
    }
}

/// [`Pin`] with owned names.
pub(super) enum Pinned {
    Any,
    Prefer(String),
    Must { host: String, why: String },
}

impl Pinned {
    pub(super) fn pin(&self) -> Pin<'_> {
        match self {
            Pinned::Any => Pin::Any,
            Pinned::Prefer(h) => Pin::Prefer(h),
            Pinned::Must { host, why } => Pin::Must { host, why },
        }
    }
}

/// The pin of a create of `who` shaped `shape` through this member.
pub(super) async fn pin_of(
    node: &ClusterNode,
    who: &Principal,
    shape: &CreateShape,
) -> Result<Pinned, EngineError> {
    let me = node.node_name().to_string();
    if let Some(from) = &shape.restore {
        let why = format!("the files of {from}");
        let at = node
            .bindings()
            .snapshot(from)
            .await
            .map_err(cluster_error)?;
        return Ok(match at {
            // Recorded and the caller's to see: its host, wherever that is.
            Some(b) if visible(who, &b) => Pinned::Must { host: b.host, why },
            // Not the caller's, or not recorded: this host answers (not found, unless it
            // holds the files itself) — no oracle, nothing placed blind.
            _ => Pinned::Must { host: me, why },
        });
    }
    if let (Some((policy, image, limits)), Some(engine)) = (&shape.pooled, node.engine.upgrade()) {
        if engine.has_ready_match(who, policy, image, *limits) {
            return Ok(Pinned::Prefer(me));
        }
    }
    Ok(Pinned::Any)
}
