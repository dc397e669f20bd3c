//! `cleanroom.v1.ClusterService`: the members of this server's cluster, and draining them
//! (`node drain|undrain`), for admins. Translation only; membership and drain marks are
//! `crate::cluster`'s and `cleanroom_cluster`'s.

use crate::api::{to_connect, ts, who, Api};
use crate::cluster::{cluster_error, ClusterNode};
use crate::model::error::EngineError;
use cleanroom_cluster::{DrainMark, Member, NodeName};
use cleanroom_proto::cleanroom::v1::*;
use cleanroom_vocab::ErrorCode;
use connectrpc::{ConnectError, RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

/// Mount the service on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    ClusterServiceExt::register(api, router)
}

/// The caller's name when it is an admin on a cluster member (every call here needs both):
/// `permission_denied` first (a non-admin learns nothing, not even whether this server is a
/// member), then `cluster_disabled`.
fn admin_on_member<'a>(
    api: &'a Api,
    ctx: &RequestContext,
    what: &str,
) -> Result<(String, &'a Arc<ClusterNode>), ConnectError> {
    let who = who(ctx)?;
    if !who.is_admin() {
        return Err(to_connect(EngineError::new(
            ErrorCode::PermissionDenied,
            format!("{what} is for admins"),
        )));
    }
    let Some(node) = &api.cluster else {
        return Err(to_connect(EngineError::new(
            ErrorCode::ClusterDisabled,
            "this server is not a cluster member (start it with --cluster etcd=URL --node-name NAME --advertise URL)",
        )));
    };
    Ok((who.name.clone(), node))
}

fn node_name(name: &str) -> Result<NodeName, ConnectError> {
    NodeName::parse(name).map_err(|e| to_connect(cluster_error(e)))
}

fn member(m: Member, me: &str) -> ClusterMember {
    ClusterMember {
        self_: m.info.name == me,
        draining: m.drain.is_some(),
        draining_since: m.drain.as_ref().map(|d| ts(d.since)).unwrap_or_default(),
        drained_by: m.drain.map(|d| d.by).unwrap_or_default(),
        name: m.info.name,
        advertise: m.info.advertise,
        version: m.info.version,
        runtimes: m.info.runtimes,
        sandboxes: m.info.sandboxes,
        capacity: m.info.capacity,
        load_average: f64::from(m.info.load_tenths) / 10.0,
        joined_at: ts(m.info.joined_at),
        lease_id: m.lease_id,
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl ClusterService for Api {
    async fn get_cluster_status(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, GetClusterStatusRequest>,
    ) -> ServiceResult<GetClusterStatusResponse> {
        let (_, node) = admin_on_member(self, &ctx, "cluster status")?;
        let members = node.members().await.map_err(to_connect)?;
        Response::ok(GetClusterStatusResponse {
            node_name: node.node_name().to_string(),
            members: members
                .into_iter()
                .map(|m| member(m, node.node_name()))
                .collect(),
            ..Default::default()
        })
    }

    async fn drain_node(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DrainNodeRequest>,
    ) -> ServiceResult<DrainNodeResponse> {
        let (by, node) = admin_on_member(self, &ctx, "node drain")?;
        let name = node_name(request.name)?;
        let mark = DrainMark {
            since: crate::store::now_micros(),
            by,
        };
        node.membership()
            .drain(&name, &mark)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        tracing::info!(node = %name, "drained: no new placements");
        let now = node.members().await.map_err(to_connect)?;
        let Some(m) = now.into_iter().find(|m| m.info.name == name.as_str()) else {
            // It left between the drain and this read: the mark stands; say so.
            return Err(to_connect(cluster_error(
                cleanroom_cluster::ClusterError::NotMember(name.to_string()),
            )));
        };
        Response::ok(DrainNodeResponse {
            member: member(m, node.node_name()).into(),
            ..Default::default()
        })
    }

    async fn undrain_node(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, UndrainNodeRequest>,
    ) -> ServiceResult<UndrainNodeResponse> {
        let (_, node) = admin_on_member(self, &ctx, "node undrain")?;
        let name = node_name(request.name)?;
        let was_draining = node
            .membership()
            .undrain(&name)
            .await
            .map_err(|e| to_connect(cluster_error(e)))?;
        tracing::info!(node = %name, was_draining, "undrained");
        Response::ok(UndrainNodeResponse {
            was_draining,
            ..Default::default()
        })
    }
}
