//! `cleanroom.v1.ApprovalService`: translation only; the rules are in
//! [`crate::engine::approvals`].

use crate::api::{to_connect, Api};
use crate::identity::auth::principal_of;
use crate::model::error::EngineError;
use buffa_types::google::protobuf::Timestamp;
use cleanroom_egress::approval::{PendingRequest, Remember};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::time::{SystemTime, UNIX_EPOCH};

fn ts(t: SystemTime) -> buffa::MessageField<Timestamp, buffa::Inline<Timestamp>> {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    Timestamp::from_unix(
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        d.subsec_nanos() as i32,
    )
    .into()
}

fn request_msg(sandbox_id: &str, r: &PendingRequest) -> EgressRequest {
    EgressRequest {
        request_id: r.request_id.clone(),
        sandbox_id: sandbox_id.to_string(),
        host: r.host.clone(),
        port: r.port.into(),
        protocol: r.protocol.to_string(),
        created_at: ts(r.created_at),
        expires_at: ts(r.expires_at),
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl ApprovalService for Api {
    async fn list_egress_requests(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ListEgressRequestsRequest>,
    ) -> ServiceResult<ListEgressRequestsResponse> {
        let who = principal_of(&ctx).map_err(to_connect)?;
        let req = request.to_owned_message();
        let l = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .and_then(|sbx| self.engine.list_egress_requests(&sbx))
            .map_err(to_connect)?;
        Response::ok(ListEgressRequestsResponse {
            requests: l
                .requests
                .iter()
                .map(|r| request_msg(&req.sandbox_id, r))
                .collect(),
            approved: l.approved,
            refused: l.refused,
            ..Default::default()
        })
    }

    async fn decide_egress(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DecideEgressRequest>,
    ) -> ServiceResult<DecideEgressResponse> {
        let who = principal_of(&ctx).map_err(to_connect)?;
        let req = request.to_owned_message();
        let allow = match req.verdict.as_known() {
            Some(EgressVerdict::EGRESS_VERDICT_ALLOW) => true,
            Some(EgressVerdict::EGRESS_VERDICT_DENY) => false,
            _ => {
                return Err(to_connect(EngineError::invalid(
                    "verdict must be ALLOW or DENY",
                )))
            }
        };
        let remember = match req.remember.as_known() {
            Some(EgressRemember::EGRESS_REMEMBER_SANDBOX) => Remember::Sandbox,
            Some(
                EgressRemember::EGRESS_REMEMBER_ONCE | EgressRemember::EGRESS_REMEMBER_UNSPECIFIED,
            ) => Remember::Once,
            None => return Err(to_connect(EngineError::invalid("unknown remember value"))),
        };
        let r = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .and_then(|sbx| {
                self.engine
                    .decide_egress(&who, &sbx, &req.request_id, allow, remember)
            })
            .map_err(to_connect)?;
        Response::ok(DecideEgressResponse {
            request: request_msg(&req.sandbox_id, &r).into(),
            ..Default::default()
        })
    }
}
