//! Lists of what lives on the host that made it — `ListSnapshots` and `ListCheckpoints` —
//! answered for the whole cluster by any member (docs/cluster.md "Snapshots"): this host's
//! answer and every other live member's, each asked as the caller (its host filters by
//! owner itself). Without this, a snapshot taken through one member was missing from the
//! list another member gave, though every call naming it worked there.
//!
//! A member that cannot answer fails the list (its error, as for `ListSandboxes`): a silent
//! partial list would read as "gone". Snapshots are content-addressed, so two hosts can
//! hold the same id; it is listed once (this host's first).

use super::cluster_route::{routed, ClusterRoute};
use crate::api::to_connect;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use bytes::Bytes;
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::interceptor::{UnaryRequest, UnaryResponse};
use connectrpc::payload::Payload;
use connectrpc::{ConnectError, Next};

/// The lists answered for the whole cluster.
pub(super) const EVERYWHERE: &[&str] = &[
    "SnapshotService/ListSnapshots",
    "SnapshotService/ListCheckpoints",
];

impl ClusterRoute {
    /// `m` (one of [`EVERYWHERE`]): this host's answer merged with every other member's.
    pub(super) async fn list_everywhere(
        &self,
        m: &str,
        path: &str,
        req: UnaryRequest,
        next: Next<'_>,
        who: Principal,
    ) -> Result<UnaryResponse, ConnectError> {
        let format = req.payload.format();
        let resp = next.run(req).await?;
        let answers = self.members_answers(path, &who).await?;
        let unreadable = |host: &str, e: buffa::DecodeError| {
            to_connect(
                EngineError::new(
                    ErrorCode::Internal,
                    format!("member {host} answered {m} with an unreadable list: {e}"),
                )
                .with("host", host.to_string()),
            )
        };
        let mut seen = std::collections::HashSet::new();
        if m.ends_with("ListCheckpoints") {
            let mut out: ListCheckpointsResponse = resp.body.take_message()?;
            for (host, b) in answers {
                let r: ListCheckpointsResponse =
                    buffa::Message::decode_from_slice(&b).map_err(|e| unreadable(&host, e))?;
                out.checkpoints.extend(r.checkpoints);
            }
            out.checkpoints
                .retain(|c| seen.insert(c.checkpoint_id.clone()));
            return Ok(UnaryResponse::new(Payload::from_message(out, format)));
        }
        let mut out: ListSnapshotsResponse = resp.body.take_message()?;
        for (host, b) in answers {
            let r: ListSnapshotsResponse =
                buffa::Message::decode_from_slice(&b).map_err(|e| unreadable(&host, e))?;
            out.snapshots.extend(r.snapshots);
        }
        out.snapshots.retain(|s| seen.insert(s.snapshot_id.clone()));
        Ok(UnaryResponse::new(Payload::from_message(out, format)))
    }

    /// Every other live member's answer to `path` with an empty request, as `who`.
    async fn members_answers(
        &self,
        path: &str,
        who: &Principal,
    ) -> Result<Vec<(String, Bytes)>, ConnectError> {
        let node = &self.0;
        let members = node.members().await.map_err(to_connect)?;
        let others = members
            .iter()
            .filter(|m| m.info.name != node.node_name() && !m.info.peer.is_empty());
        let answers = futures::future::join_all(others.map(|m| async move {
            let got = node
                .forward_unary(&m.info.name, &m.info.peer, path, who, Bytes::new(), false)
                .await;
            (m.info.name.clone(), got)
        }))
        .await;
        answers
            .into_iter()
            .map(|(host, got)| got.map(|b| (host, b)).map_err(routed))
            .collect()
    }
}
