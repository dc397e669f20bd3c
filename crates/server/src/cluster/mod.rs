//! The server's side of cluster membership (docs/cluster.md): join etcd at start (a server
//! that cannot join does not start: fail closed), report this host's load every few
//! seconds, leave at shutdown. Membership itself (leases, the record, renewal) is
//! `cleanroom_cluster`'s.

use crate::engine::Engine;
use crate::model::error::EngineError;
use cleanroom_cluster::{ClusterConfig, ClusterError, Member, MemberInfo, Membership};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often this host's record is refreshed with its load.
const REPORT_EVERY: Duration = Duration::from_secs(2);

/// This server as a cluster member.
pub struct ClusterNode {
    membership: Membership,
}

impl ClusterNode {
    /// Join the cluster as `cfg` says, with this engine's runtimes and caps.
    pub async fn join(
        cfg: ClusterConfig,
        engine: &Arc<Engine>,
        capacity: u64,
    ) -> Result<Arc<ClusterNode>, EngineError> {
        let info = MemberInfo {
            name: cfg.node_name.to_string(),
            advertise: cfg.advertise.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            runtimes: engine
                .runtimes()
                .iter()
                .map(|rt| rt.as_str().to_string())
                .collect(),
            capacity,
            sandboxes: live_sandboxes(engine),
            joined_at: crate::store::now_micros(),
        };
        let membership = Membership::join(cfg, info).await.map_err(cluster_error)?;
        let node = Arc::new(ClusterNode { membership });
        tokio::spawn(report(Arc::downgrade(&node), Arc::downgrade(engine)));
        Ok(node)
    }

    pub fn node_name(&self) -> &str {
        self.membership.node_name().as_str()
    }

    /// Every live member.
    pub async fn members(&self) -> Result<Vec<Member>, EngineError> {
        self.membership.members().await.map_err(cluster_error)
    }

    /// Leave now: renewal stops and the key goes at once (bounded).
    pub async fn leave(&self) {
        self.membership.leave().await
    }
}

fn live_sandboxes(engine: &Engine) -> u64 {
    engine
        .list_sandboxes(false)
        .map(|l| l.len() as u64)
        .unwrap_or(0)
}

async fn report(node: Weak<ClusterNode>, engine: Weak<Engine>) {
    loop {
        tokio::time::sleep(REPORT_EVERY).await;
        let (Some(node), Some(engine)) = (node.upgrade(), engine.upgrade()) else {
            return;
        };
        let n = live_sandboxes(&engine);
        node.membership.update(|i| i.sandboxes = n);
    }
}

/// A cluster failure as the API's error, with its stable code.
pub fn cluster_error(e: ClusterError) -> EngineError {
    EngineError::new(e.code(), e.to_string())
}
