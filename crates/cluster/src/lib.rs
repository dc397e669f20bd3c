//! Cluster membership on etcd (issue 34, docs/cluster.md): every `cleanroom serve
//! --cluster etcd=URL…` registers itself under `/cleanroom/members/<node>` with a lease
//! of a few seconds, kept alive while it runs. A host that dies stops renewing and its
//! key disappears within the lease's TTL; a restarted host registers again under the same
//! name once the old lease is gone. etcd is the coordination engine; each host stays the
//! authority for its own sandboxes.
//!
//! This crate knows etcd and the member record; it knows nothing of the API or the
//! engine (the server fills [`MemberInfo`] and asks for [`Membership::members`]).

mod bindings;
mod config;
mod drain;
pub mod identity;
mod member;
mod membership;
mod objects;
pub mod placement;
mod quota;

pub use bindings::{Binding, Bindings, Claim};
pub use config::{ClusterConfig, NodeName};
pub use drain::DrainMark;
pub use member::{Member, MemberInfo};
pub use membership::Membership;
pub use objects::PoolRecord;
pub use quota::{quota_key, Bound, Count};

/// Why a cluster operation failed, each with a stable code.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// etcd cannot be reached or did not answer in time: fail closed.
    #[error("the cluster's etcd is unavailable: {0}")]
    Unavailable(String),
    /// Another live member holds this node name.
    #[error("node name {0:?} is held by another live member (its lease has not expired)")]
    NameTaken(String),
    /// A cluster CA or node identity that is missing, unreadable, too open, or does not
    /// verify: the server does not start (fail closed).
    #[error("cluster identity: {0}")]
    Identity(String),
    /// A malformed setting (`--cluster`, `--node-name`, `--advertise`).
    #[error("{0}")]
    Invalid(String),
    /// A node name that no live member holds (`node drain NAME`).
    #[error("no live cluster member is named {0:?} (cleanroom cluster status lists them)")]
    NotMember(String),
}

impl ClusterError {
    /// The stable error code (one vocabulary: `cleanroom_vocab`).
    pub fn code(&self) -> cleanroom_vocab::ErrorCode {
        use cleanroom_vocab::ErrorCode;
        match self {
            ClusterError::Unavailable(_) => ErrorCode::ClusterUnavailable,
            ClusterError::NameTaken(_) => ErrorCode::NodeNameTaken,
            ClusterError::Invalid(_) | ClusterError::NotMember(_) => ErrorCode::InvalidArgument,
            ClusterError::Identity(_) => ErrorCode::ClusterIdentityInvalid,
        }
    }
}

impl From<etcd_client::Error> for ClusterError {
    fn from(e: etcd_client::Error) -> Self {
        ClusterError::Unavailable(e.to_string())
    }
}
