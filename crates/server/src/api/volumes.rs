//! `cleanroom.v1.VolumeService`: create, list, get and remove named volumes. Translation
//! only; the rules live in `engine::volumes`, the records and mounts in `crate::volumes`.

use crate::api::{to_connect, ts, who, Api};
use crate::engine::volumes::VolumeView;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

/// Mount the service on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    VolumeServiceExt::register(api, router)
}

fn volume_msg(v: &VolumeView) -> Volume {
    Volume {
        volume_id: v.record.id.clone(),
        name: v.record.name.clone(),
        owner: v.record.owner.clone(),
        size_bytes: v.record.size_bytes,
        created_at: ts(v.record.created_at),
        mounted_by: v.users.iter().map(|(id, _)| id.clone()).collect(),
        mounted_rw: v.users.iter().any(|(_, ro)| !ro),
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl VolumeService for Api {
    async fn create_volume(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateVolumeRequest>,
    ) -> ServiceResult<CreateVolumeResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let v = self
            .engine
            .create_volume(&who, &req.name, req.size_bytes)
            .await
            .map_err(to_connect)?;
        Response::ok(CreateVolumeResponse {
            volume: volume_msg(&v).into(),
            ..Default::default()
        })
    }

    async fn list_volumes(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListVolumesRequest>,
    ) -> ServiceResult<ListVolumesResponse> {
        let who = who(&ctx)?;
        let list = self.engine.list_volumes(&who).map_err(to_connect)?;
        Response::ok(ListVolumesResponse {
            volumes: list.iter().map(volume_msg).collect(),
            ..Default::default()
        })
    }

    async fn get_volume(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetVolumeRequest>,
    ) -> ServiceResult<GetVolumeResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let v = self
            .engine
            .get_volume(&who, &req.volume)
            .map_err(to_connect)?;
        Response::ok(GetVolumeResponse {
            volume: volume_msg(&v).into(),
            ..Default::default()
        })
    }

    async fn delete_volume(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DeleteVolumeRequest>,
    ) -> ServiceResult<DeleteVolumeResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let v = self
            .engine
            .delete_volume(&who, &req.volume)
            .await
            .map_err(to_connect)?;
        Response::ok(DeleteVolumeResponse {
            volume: volume_msg(&v).into(),
            ..Default::default()
        })
    }
}
