//! `cleanroom.v1.SnapshotService`: pause/resume, filesystem snapshots, checkpoints (their
//! translation in `api::checkpoints`). Translation only; the rules live in `engine::pause`,
//! `engine::snapshots` and `engine::checkpoints`.

use crate::api::{sandbox_msg, to_connect, ts, who, Api};
use crate::store::SnapshotRow;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};

pub(crate) fn snapshot_msg(r: &SnapshotRow) -> Snapshot {
    let limits: cleanroom_backend::Limits = serde_json::from_str(&r.limits).unwrap_or_default();
    Snapshot {
        snapshot_id: r.id.clone(),
        source_sandbox_id: r.source_sandbox_id.clone(),
        parent_snapshot_id: r.parent_id.clone(),
        policy_hash: r.policy_hash.clone(),
        image_ref: r.image_ref.clone(),
        image_digest: r.image_digest.clone(),
        limits: ResourceLimits {
            memory_bytes: limits.memory_bytes,
            pids: limits.pids,
            cpu_millis: limits.cpu_millis,
            disk_bytes: limits.disk_bytes,
            output_bytes: limits.output_bytes,
            ..Default::default()
        }
        .into(),
        size_bytes: r.size_bytes.max(0) as u64,
        file_count: r.file_count.max(0) as u64,
        content_digest: r.content_digest.clone(),
        created_at: ts(r.created_at),
        // Volumes are never captured (docs/volumes.md): said here, on every snapshot.
        volumes_not_captured: serde_json::from_str::<cleanroom_policy::CompiledPolicy>(
            &r.compiled_policy,
        )
        .map(|p| crate::api::volume_mounts(&p.volumes))
        .unwrap_or_default(),
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl SnapshotService for Api {
    async fn pause_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, PauseSandboxRequest>,
    ) -> ServiceResult<PauseSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = sbx.pause().await.map_err(to_connect)?;
        Response::ok(PauseSandboxResponse {
            sandbox: sandbox_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn resume_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ResumeSandboxRequest>,
    ) -> ServiceResult<ResumeSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = sbx.resume().await.map_err(to_connect)?;
        Response::ok(ResumeSandboxResponse {
            sandbox: sandbox_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn create_snapshot(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateSnapshotRequest>,
    ) -> ServiceResult<CreateSnapshotResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = sbx.snapshot(&who.owner()).await.map_err(to_connect)?;
        Response::ok(CreateSnapshotResponse {
            snapshot: snapshot_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn get_snapshot(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetSnapshotRequest>,
    ) -> ServiceResult<GetSnapshotResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let row = self
            .engine
            .snapshot(&who, &req.snapshot_id)
            .map_err(to_connect)?
            .into_row();
        Response::ok(GetSnapshotResponse {
            snapshot: snapshot_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn list_snapshots(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListSnapshotsRequest>,
    ) -> ServiceResult<ListSnapshotsResponse> {
        let who = who(&ctx)?;
        let rows = self.engine.owned_snapshots(&who).map_err(to_connect)?;
        Response::ok(ListSnapshotsResponse {
            snapshots: rows.iter().map(snapshot_msg).collect(),
            ..Default::default()
        })
    }

    async fn remove_snapshot(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, RemoveSnapshotRequest>,
    ) -> ServiceResult<RemoveSnapshotResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let snap = self
            .engine
            .snapshot(&who, &req.snapshot_id)
            .map_err(to_connect)?;
        snap.remove().await.map_err(to_connect)?;
        let row = snap.into_row();
        Response::ok(RemoveSnapshotResponse {
            snapshot: snapshot_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn checkpoint_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CheckpointSandboxRequest>,
    ) -> ServiceResult<CheckpointSandboxResponse> {
        let req = request.to_owned_message();
        Response::ok(self.checkpoint(&ctx, req).await?)
    }

    async fn get_checkpoint(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetCheckpointRequest>,
    ) -> ServiceResult<GetCheckpointResponse> {
        let req = request.to_owned_message();
        Response::ok(GetCheckpointResponse {
            checkpoint: self.get_checkpoint_msg(&ctx, &req.checkpoint_id)?.into(),
            ..Default::default()
        })
    }

    async fn list_checkpoints(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListCheckpointsRequest>,
    ) -> ServiceResult<ListCheckpointsResponse> {
        Response::ok(ListCheckpointsResponse {
            checkpoints: self.list_checkpoint_msgs(&ctx)?,
            ..Default::default()
        })
    }

    async fn delete_checkpoint(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DeleteCheckpointRequest>,
    ) -> ServiceResult<DeleteCheckpointResponse> {
        let req = request.to_owned_message();
        Response::ok(DeleteCheckpointResponse {
            checkpoint: self
                .delete_checkpoint_msg(&ctx, &req.checkpoint_id)
                .await?
                .into(),
            ..Default::default()
        })
    }
}
