//! `cleanroom.v1.NetworkService`: translation only; the rules are in
//! [`crate::engine::network`].

use crate::api::{to_connect, who, Api};
use crate::engine::network::NetworkUpdate;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

#[allow(refining_impl_trait)]
impl NetworkService for Api {
    async fn update_sandbox_network(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, UpdateSandboxNetworkRequest>,
    ) -> ServiceResult<UpdateSandboxNetworkResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let update = NetworkUpdate {
            allow: req.allow,
            deny: req.deny,
            reset: req.reset,
            cut: req.cut,
        };
        let state = self
            .engine
            .update_network(&who, &sbx, update)
            .map_err(to_connect)?;
        Response::ok(UpdateSandboxNetworkResponse {
            effective_rules_hash: state.effective_rules_hash.clone(),
            live_allow: state.allow_list(),
            live_deny: state.deny_list(),
            policy_hash: sbx.row().policy_hash.clone(),
            ..Default::default()
        })
    }
}

/// GetSandbox's live-rules fields: the effective rules' hash and the live rules.
pub(crate) fn fill(
    engine: &crate::engine::Engine,
    sbx: &crate::engine::OwnedSandbox,
    sandbox: &mut Sandbox,
) -> Result<(), crate::model::error::EngineError> {
    if let Some(state) = engine.network_state(sbx.row())? {
        sandbox.effective_rules_hash = state.effective_rules_hash.clone();
        sandbox.live_allow = state.allow_list();
        sandbox.live_deny = state.deny_list();
    }
    Ok(())
}

/// Serve the network service on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    NetworkServiceExt::register(api, router)
}
