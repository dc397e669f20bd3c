//! The server's side of the cluster (docs/cluster.md): join etcd at start (a server that
//! cannot join does not start: fail closed), report this host's load every few seconds,
//! keep etcd's sandbox → host bindings true for the sandboxes this host holds, and leave at
//! shutdown. Membership itself (leases, the record, renewal), bindings and placement are
//! `cleanroom_cluster`'s; the member link is [`peer`]; where a call goes is [`route`]; a
//! console ticket from another host is made reachable by [`ticket`].

mod known;
pub mod peer;
mod pools;
mod reconcile;
pub mod route;
pub mod ticket;

/// The cluster identity's files (`cleanroom cluster init|issue`), for the CLI.
pub use cleanroom_cluster::identity;
pub use cleanroom_cluster::NodeName;

use crate::engine::Engine;
use crate::model::error::EngineError;
use cleanroom_cluster::identity::NodeIdentity;
use cleanroom_cluster::{
    Binding, Bindings, ClusterConfig, ClusterError, Member, MemberInfo, Membership,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use reconcile::REPORT_EVERY;

/// How old a member list read from etcd may be when a call for another host's sandbox is
/// routed with it ([`ClusterNode::routing_members`]). Reading every member record per
/// forwarded call cost an etcd transaction each (measured: +1.8 ms p50 per forwarded
/// `exec --in`, release, quiet). A lease lives 5 s; a list this old delays `LOST` by at
/// most this much, and a host that died meanwhile answers nothing on its link, so the
/// call fails `unavailable` instead: nothing reaches a host the list no longer names.
/// Placement never uses it (a create reads etcd: fail closed without its quorum).
const ROUTING_MEMBERS_MAX_AGE: Duration = Duration::from_millis(500);

/// This server as a cluster member.
pub struct ClusterNode {
    membership: Membership,
    bindings: Bindings,
    pub(crate) peers: peer::PeerClient,
    pub(crate) engine: Weak<Engine>,
    /// Bindings this member read or wrote (a sandbox never moves): routing keeps working
    /// for them while etcd has no quorum. Bounded ([`known::KNOWN_MAX`], least recently
    /// used first).
    known: Mutex<known::Known>,
    /// The member links last read from etcd, for the same reason.
    links: Mutex<HashMap<String, String>>,
    /// Placements this front door made, per host, since that host last reported.
    recent: Mutex<HashMap<String, (u64, Instant)>>,
    /// The last member list read from etcd and when (routing only).
    read: Mutex<Option<(Instant, Vec<Member>)>>,
    /// A principal's limit of live sandboxes across the cluster (this front door's
    /// `--max-sandboxes-per-principal`; 0: none), checked in the binding transaction.
    pub(crate) per_owner: u32,
}

impl ClusterNode {
    /// Join the cluster as `cfg` says, with this engine's runtimes and caps; `peer` is the
    /// bound member link (`https://HOST:PORT`).
    pub async fn join(
        cfg: ClusterConfig,
        identity: &NodeIdentity,
        peer: String,
        engine: &Arc<Engine>,
        capacity: u64,
        per_owner: u32,
    ) -> Result<Arc<ClusterNode>, EngineError> {
        let info = MemberInfo {
            name: cfg.node_name.to_string(),
            advertise: cfg.advertise.clone(),
            peer,
            version: env!("CARGO_PKG_VERSION").to_string(),
            runtimes: engine
                .runtimes()
                .iter()
                .map(|rt| rt.as_str().to_string())
                .collect(),
            capacity,
            sandboxes: live_sandboxes(engine),
            joined_at: crate::store::now_micros(),
            load_tenths: 0,
            draining: false,
        };
        let peers = peer::PeerClient::new(identity)?;
        let membership = Membership::join(cfg, info).await.map_err(cluster_error)?;
        let node = Arc::new(ClusterNode {
            bindings: membership.bindings(),
            membership,
            peers,
            engine: Arc::downgrade(engine),
            known: Mutex::new(known::Known::new(known::KNOWN_MAX)),
            links: Mutex::default(),
            recent: Mutex::default(),
            read: Mutex::default(),
            per_owner,
        });
        tokio::spawn(reconcile::report(
            Arc::downgrade(&node),
            Arc::downgrade(engine),
        ));
        Ok(node)
    }

    pub fn node_name(&self) -> &str {
        self.membership.node_name().as_str()
    }

    /// Every live member (and the member links remembered for when etcd does not answer).
    pub async fn members(&self) -> Result<Vec<Member>, EngineError> {
        Ok(self.members_and_count(None).await?.0)
    }

    /// [`Self::members`] and `owner`'s cluster-wide count, read in one etcd transaction.
    pub async fn members_and_count(
        &self,
        owner: Option<&str>,
    ) -> Result<(Vec<Member>, cleanroom_cluster::Count), EngineError> {
        let (m, count) = self
            .membership
            .members_and_count(owner)
            .await
            .map_err(cluster_error)?;
        let mut links = lock(&self.links);
        links.clear();
        links.extend(m.iter().map(|m| (m.info.name.clone(), m.info.peer.clone())));
        drop(links);
        *lock(&self.read) = Some((Instant::now(), m.clone()));
        Ok((m, count))
    }

    /// [`Self::members`] for routing a call: the last list read, when it is younger than
    /// [`ROUTING_MEMBERS_MAX_AGE`], else a fresh one.
    pub async fn routing_members(&self) -> Result<Vec<Member>, EngineError> {
        if let Some((at, m)) = lock(&self.read).as_ref() {
            if at.elapsed() < ROUTING_MEMBERS_MAX_AGE {
                return Ok(m.clone());
            }
        }
        self.members().await
    }

    /// The membership itself (drain marks: `node drain`).
    pub(crate) fn membership(&self) -> &Membership {
        &self.membership
    }

    pub(crate) fn bindings(&self) -> &Bindings {
        &self.bindings
    }

    pub(crate) fn lease(&self) -> i64 {
        self.membership.lease()
    }

    /// The remembered member link of `host`.
    pub(crate) fn link_of(&self, host: &str) -> Option<String> {
        lock(&self.links)
            .get(host)
            .cloned()
            .filter(|l| !l.is_empty())
    }

    pub(crate) fn remember(&self, id: &str, b: &Binding) {
        lock(&self.known).insert(id, b);
    }

    pub(crate) fn forget(&self, id: &str) {
        lock(&self.known).remove(id);
    }

    pub(crate) fn known(&self, id: &str) -> Option<Binding> {
        lock(&self.known).get(id)
    }

    /// Placements made on `host` recently (they count against its room until it reports).
    pub(crate) fn recent(&self, host: &str) -> u64 {
        lock(&self.recent)
            .get(host)
            .filter(|(_, at)| at.elapsed() < REPORT_EVERY * 2)
            .map(|(n, _)| *n)
            .unwrap_or(0)
    }

    pub(crate) fn placed(&self, host: &str) {
        let mut r = lock(&self.recent);
        let e = r.entry(host.to_string()).or_insert((0, Instant::now()));
        if e.1.elapsed() >= REPORT_EVERY * 2 {
            *e = (0, Instant::now());
        }
        e.0 += 1;
    }

    /// Leave now: renewal stops and the key goes at once (bounded).
    pub async fn leave(&self) {
        self.membership.leave().await
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn live_sandboxes(engine: &Engine) -> u64 {
    engine
        .list_sandboxes(false)
        .map(|l| l.len() as u64)
        .unwrap_or(0)
}

/// Load this node's identity (fail closed: `cluster_identity_invalid`) and bind the member
/// link: the identity, the listener and the link's URL for the member record.
pub async fn bind_member_link(
    cfg: &ClusterConfig,
) -> Result<(NodeIdentity, tokio::net::TcpListener, String), EngineError> {
    let (Some(dir), Some(addr)) = (&cfg.tls_dir, cfg.listen) else {
        return Err(cluster_error(ClusterError::Identity(
            "--cluster needs --cluster-tls DIR and --cluster-listen HOST:PORT".into(),
        )));
    };
    let identity = NodeIdentity::load(dir, &cfg.node_name).map_err(cluster_error)?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        EngineError::new(
            cleanroom_vocab::ErrorCode::InvalidArgument,
            format!("--cluster-listen {addr}: {e}"),
        )
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| EngineError::internal(format!("member link: {e}")))?;
    Ok((identity, listener, format!("https://{bound}")))
}

/// A member that cannot be reached (or broke off): `unavailable`, nothing retried elsewhere.
pub(crate) fn unreachable(message: String) -> EngineError {
    EngineError::new(cleanroom_vocab::ErrorCode::Unavailable, message)
}

/// A cluster failure as the API's error, with its stable code.
pub fn cluster_error(e: ClusterError) -> EngineError {
    EngineError::new(e.code(), e.to_string())
}
