//! Snapshots and checkpoints through the cluster (docs/cluster.md "Snapshots"): their
//! files stay on the host that took them, so the cluster records where each is
//! (`/cleanroom/snapshots/<id>`, with its owner) when it is taken through any member, and
//! sends every call that names one — `GetSnapshot`, `RemoveSnapshot`, `GetCheckpoint`,
//! `DeleteCheckpoint`, and a restore (`super::cluster_pin`) — to that host, as the caller
//! (the host checks ownership itself). A record etcd cannot write fails the call and the
//! snapshot is removed again: nothing exists that a restore through another member would
//! silently miss.

use super::cluster_route::{is_json, routed, sandbox_id_of, visible, ClusterRoute};
use crate::api::to_connect;
use crate::cluster::{cluster_error, unreachable};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use bytes::Bytes;
use cleanroom_cluster::Binding;
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::interceptor::{UnaryRequest, UnaryResponse};
use connectrpc::payload::Payload;
use connectrpc::{ConnectError, Next};

/// Calls that name a snapshot or checkpoint (field 1) and nothing else.
pub(super) const BY_ARTIFACT: &[&str] = &[
    "SnapshotService/GetSnapshot",
    "SnapshotService/RemoveSnapshot",
    "SnapshotService/GetCheckpoint",
    "SnapshotService/DeleteCheckpoint",
];

/// The id a `CreateSnapshot` or `CheckpointSandbox` answer names.
pub(super) fn taken_id(m: &str, resp: &UnaryResponse) -> Result<Option<String>, ConnectError> {
    let id = match m {
        "SnapshotService/CreateSnapshot" => resp
            .body
            .message::<CreateSnapshotResponse>()?
            .snapshot
            .as_option()
            .map(|s| s.snapshot_id.clone()),
        "SnapshotService/CheckpointSandbox" => Some(
            resp.body
                .message::<CheckpointSandboxResponse>()?
                .checkpoint_id
                .clone(),
        ),
        _ => None,
    };
    Ok(id.filter(|s| !s.is_empty()))
}

impl ClusterRoute {
    /// Record snapshot or checkpoint `id`, just taken on `host` by `who`; when etcd cannot
    /// record it, it is removed again and the call fails (`cluster_unavailable`).
    pub(super) async fn record_taken(
        &self,
        m: &str,
        id: &str,
        host: &str,
        link: Option<&str>,
        who: &Principal,
    ) -> Result<(), ConnectError> {
        let node = &self.0;
        let b = Binding {
            host: host.to_string(),
            owner: who.owner().to_string(),
            created_at: crate::store::now_micros(),
        };
        let Err(e) = node.bindings().put_snapshot(id, &b).await else {
            return Ok(());
        };
        let (path, body) = if m == "SnapshotService/CheckpointSandbox" {
            let r = DeleteCheckpointRequest {
                checkpoint_id: id.to_string(),
                ..Default::default()
            };
            (
                "/cleanroom.v1.SnapshotService/DeleteCheckpoint",
                buffa::Message::encode_to_vec(&r),
            )
        } else {
            let r = RemoveSnapshotRequest {
                snapshot_id: id.to_string(),
                ..Default::default()
            };
            (
                "/cleanroom.v1.SnapshotService/RemoveSnapshot",
                buffa::Message::encode_to_vec(&r),
            )
        };
        match link {
            Some(link) => {
                let _ = node
                    .forward_unary(host, link, path, who, Bytes::from(body), false)
                    .await;
            }
            None => {
                if let Some(engine) = node.engine.upgrade() {
                    let removed = if path.ends_with("DeleteCheckpoint") {
                        engine.delete_checkpoint(who, id).await.map(drop)
                    } else {
                        match engine.snapshot(who, id) {
                            Ok(snap) => snap.remove().await,
                            Err(e) => Err(e),
                        }
                    };
                    if let Err(e) = removed {
                        tracing::warn!(id, error = %e, "unrecorded snapshot not removed");
                    }
                }
            }
        }
        Err(to_connect(cluster_error(e)))
    }

    /// A call naming snapshot or checkpoint `m`'s field 1: on the host etcd records for
    /// it, else here (a snapshot the cluster did not record is this host's to answer).
    pub(super) async fn by_artifact(
        &self,
        m: &str,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let node = &self.0;
        let format = req.payload.format();
        let body = req.payload.encoded()?;
        let Some(id) = sandbox_id_of(&body, is_json(format)) else {
            return next.run(req).await;
        };
        let at = node
            .bindings()
            .snapshot(&id)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        let removal = m.ends_with("RemoveSnapshot") || m.ends_with("DeleteCheckpoint");
        let resp = match at {
            Some(b) if b.host != node.node_name() && visible(&who, &b) => {
                let members = node.routing_members().await.map_err(to_connect)?;
                let Some(owner) = members.into_iter().find(|x| x.info.name == b.host) else {
                    return Err(to_connect(
                        EngineError::new(
                            ErrorCode::HostLost,
                            format!(
                                "{id} is on host {}, which left the cluster (its membership lease expired)",
                                b.host
                            ),
                        )
                        .with("host", b.host.clone()),
                    ));
                };
                if owner.info.peer.is_empty() {
                    return Err(to_connect(unreachable(format!(
                        "member {} has no member link",
                        b.host
                    ))));
                }
                let got = node
                    .forward_unary(&b.host, &owner.info.peer, path, &who, body, is_json(format))
                    .await
                    .map_err(routed)?;
                UnaryResponse::new(Payload::new(got, format))
            }
            _ => next.run(req).await?,
        };
        if removal {
            if let Err(e) = node.bindings().delete_snapshot(&id).await {
                tracing::warn!(id, error = %e, "removed, but its cluster record stays");
            }
        }
        Ok(resp)
    }
}
