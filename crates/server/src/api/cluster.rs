//! `cleanroom.v1.ClusterService`: the members of this server's cluster, for admins.
//! Translation only; membership is `crate::cluster`'s.

use crate::api::{to_connect, ts, who, Api};
use crate::model::error::EngineError;
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

/// Mount the service on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    ClusterServiceExt::register(api, router)
}

#[allow(refining_impl_trait)]
impl ClusterService for Api {
    async fn get_cluster_status(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, GetClusterStatusRequest>,
    ) -> ServiceResult<GetClusterStatusResponse> {
        let who = who(&ctx)?;
        if !who.is_admin() {
            return Err(to_connect(EngineError::new(
                ErrorCode::PermissionDenied,
                "cluster status is for admins",
            )));
        }
        let Some(node) = &self.cluster else {
            return Err(to_connect(EngineError::new(
                ErrorCode::ClusterDisabled,
                "this server is not a cluster member (start it with --cluster etcd=URL --node-name NAME --advertise URL)",
            )));
        };
        let members = node.members().await.map_err(to_connect)?;
        Response::ok(GetClusterStatusResponse {
            node_name: node.node_name().to_string(),
            members: members
                .into_iter()
                .map(|m| ClusterMember {
                    self_: m.info.name == node.node_name(),
                    name: m.info.name,
                    advertise: m.info.advertise,
                    version: m.info.version,
                    runtimes: m.info.runtimes,
                    sandboxes: m.info.sandboxes,
                    capacity: m.info.capacity,
                    joined_at: ts(m.info.joined_at),
                    lease_id: m.lease_id,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    }
}
