//! `cleanroom.v1.InboundService`: translation only; the rules are in [`super::Inbound`].
//! Also the [`crate::api::ExposureLister`] that fills GetSandbox's `exposures`.

use super::{Inbound, Issued};
use crate::api::{to_connect, who};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;
use std::time::Duration;

/// The service's handler.
pub struct InboundApi(pub Arc<Inbound>);

fn wire(i: Issued) -> SandboxExposure {
    SandboxExposure {
        id: i.exposure.id,
        sandbox_id: i.exposure.sandbox_id,
        port: u32::from(i.exposure.port),
        path: i.path,
        url: i.url,
        token: i.token,
        created_at: i.exposure.created_at,
        expires_at: i.exposure.expires_at,
        created_by: i.exposure.created_by,
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl InboundService for InboundApi {
    async fn expose_sandbox_port(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ExposeSandboxPortRequest>,
    ) -> ServiceResult<ExposeSandboxPortResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let ttl = (req.ttl_seconds > 0).then(|| Duration::from_secs(req.ttl_seconds));
        let issued = self
            .0
            .expose(&who, &req.sandbox_id, req.port, ttl)
            .map_err(to_connect)?;
        Response::ok(ExposeSandboxPortResponse {
            exposure: wire(issued).into(),
            ..Default::default()
        })
    }

    async fn unexpose_sandbox_port(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, UnexposeSandboxPortRequest>,
    ) -> ServiceResult<UnexposeSandboxPortResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let gone = self
            .0
            .unexpose(&who, &req.sandbox_id, &req.target)
            .map_err(to_connect)?;
        let removed = gone
            .into_iter()
            .map(|e| SandboxExposure {
                id: e.id,
                sandbox_id: e.sandbox_id,
                port: u32::from(e.port),
                created_at: e.created_at,
                expires_at: e.expires_at,
                created_by: e.created_by,
                ..Default::default()
            })
            .collect();
        Response::ok(UnexposeSandboxPortResponse {
            removed,
            ..Default::default()
        })
    }

    async fn list_sandbox_exposures(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ListSandboxExposuresRequest>,
    ) -> ServiceResult<ListSandboxExposuresResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let list = self.0.list(&who, &req.sandbox_id).map_err(to_connect)?;
        Response::ok(ListSandboxExposuresResponse {
            exposures: list.into_iter().map(wire).collect(),
            ..Default::default()
        })
    }
}

impl crate::api::ExposureLister for Inbound {
    fn exposures(&self, sandbox_id: &str) -> Vec<SandboxExposure> {
        self.list_unchecked(sandbox_id)
            .into_iter()
            .map(wire)
            .collect()
    }
}

/// Serve the inbound service on `router`.
pub fn register(inbound: Arc<Inbound>, router: connectrpc::Router) -> connectrpc::Router {
    InboundServiceExt::register(Arc::new(InboundApi(inbound)), router)
}
