//! Memory checkpoints on the wire (`SnapshotService.CheckpointSandbox`, `GetCheckpoint`,
//! `ListCheckpoints`, `DeleteCheckpoint`). Translation only; the rules live in
//! `engine::checkpoints`.

use crate::api::{to_connect, ts, who, Api};
use crate::engine::checkpoints::CheckpointInfo;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{ConnectError, RequestContext};

pub(crate) fn checkpoint_msg(c: &CheckpointInfo) -> Checkpoint {
    let m = &c.manifest;
    let limits: cleanroom_backend::Limits = serde_json::from_str(&m.limits).unwrap_or_default();
    Checkpoint {
        checkpoint_id: c.id.clone(),
        source_sandbox_id: m.source_sandbox_id.clone(),
        runtime: m.runtime.clone(),
        runtime_version: m.runtime_version.clone(),
        policy_hash: m.policy_hash.clone(),
        image_ref: m.image_ref.clone(),
        image_digest: m.image_digest.clone(),
        limits: ResourceLimits {
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpu_millis: limits.cpu_millis,
            disk_bytes: limits.disk_bytes,
            output_bytes: limits.output_bytes,
            ..Default::default()
        }
        .into(),
        size_bytes: m.size_bytes(),
        file_count: m.files.len() as u64,
        content_digest: c.content_digest.clone(),
        created_at: ts(m.created_at),
        dropped: m.dropped.clone(),
        ..Default::default()
    }
}

impl Api {
    pub(crate) async fn checkpoint(
        &self,
        ctx: &RequestContext,
        req: CheckpointSandboxRequest,
    ) -> Result<CheckpointSandboxResponse, ConnectError> {
        let who = who(ctx)?;
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let info = sbx
            .checkpoint(&who.owner(), req.leave_running)
            .await
            .map_err(to_connect)?;
        Ok(CheckpointSandboxResponse {
            checkpoint_id: info.id.clone(),
            size_bytes: info.manifest.size_bytes(),
            checkpoint: checkpoint_msg(&info).into(),
            ..Default::default()
        })
    }

    pub(crate) fn get_checkpoint_msg(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Checkpoint, ConnectError> {
        let who = who(ctx)?;
        let info = self.engine.owned_checkpoint(&who, id).map_err(to_connect)?;
        Ok(checkpoint_msg(&info))
    }

    pub(crate) fn list_checkpoint_msgs(
        &self,
        ctx: &RequestContext,
    ) -> Result<Vec<Checkpoint>, ConnectError> {
        let who = who(ctx)?;
        Ok(self
            .engine
            .owned_checkpoints(&who)
            .iter()
            .map(checkpoint_msg)
            .collect())
    }

    pub(crate) async fn delete_checkpoint_msg(
        &self,
        ctx: &RequestContext,
        id: &str,
    ) -> Result<Checkpoint, ConnectError> {
        let who = who(ctx)?;
        let info = self
            .engine
            .delete_checkpoint(&who, id)
            .await
            .map_err(to_connect)?;
        Ok(checkpoint_msg(&info))
    }
}
