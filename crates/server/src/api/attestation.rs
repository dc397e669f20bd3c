//! `AttestationService`: a sandbox's signed attestation and the server's public key.

use crate::api::{to_connect, who, Api};
use crate::model::error::{Class, EngineError, ErrorCode};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};

#[allow(refining_impl_trait)]
impl AttestationService for Api {
    async fn get_attestation(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetAttestationRequest>,
    ) -> ServiceResult<GetAttestationResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let envelope_json = self
            .engine
            .get_attestation(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let env: Option<cleanroom_attest::Envelope> = serde_json::from_str(&envelope_json).ok();
        let statement_json = env
            .as_ref()
            .and_then(|e| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(&e.payload)
                    .ok()
            })
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .unwrap_or_default();
        let key_id = env
            .and_then(|e| e.signatures.first().map(|s| s.keyid.clone()))
            .unwrap_or_default();
        Response::ok(GetAttestationResponse {
            envelope_json,
            statement_json,
            key_id,
            ..Default::default()
        })
    }

    async fn get_attestation_public_key(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, GetAttestationPublicKeyRequest>,
    ) -> ServiceResult<GetAttestationPublicKeyResponse> {
        who(&ctx)?;
        let pk = self.engine.attestation_public_key().ok_or_else(|| {
            to_connect(
                EngineError::new(
                    ErrorCode::BackendUnavailable,
                    "this server has no attestation key",
                )
                // A setting of this server, not a passing outage: no retry will help.
                .in_class(Class::FailedPrecondition),
            )
        })?;
        Response::ok(GetAttestationPublicKeyResponse {
            public_key_pem: cleanroom_attest::public_key_pem(&pk),
            key_id: cleanroom_attest::key::key_id(&pk),
            ..Default::default()
        })
    }
}
