//! `cleanroom.v1` Connect services over the [`Engine`].
//!
//! Pure translation: request messages in, engine calls, response messages out. Every
//! error leaves as a Connect error whose detail is a `cleanroom.v1.ErrorDetail` carrying
//! the stable code.

use crate::auth::principal_of;
use crate::engine::Engine;
use crate::error::{Class, EngineError};
use crate::store::{EventRow, ExecutionRow, SandboxCaps, SandboxRow};
use buffa_types::google::protobuf::{Struct, Timestamp, Value};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{
    ConnectError, ErrorCode, RequestContext, Response, ServiceRequest, ServiceResult, ServiceStream,
};
use futures::StreamExt;
use std::sync::Arc;

pub use crate::api_errors::ERROR_DETAIL_TYPE;

/// Convert an engine error into a Connect error with a typed detail.
pub fn to_connect(e: EngineError) -> ConnectError {
    let code = match e.class {
        Class::InvalidArgument => ErrorCode::InvalidArgument,
        Class::NotFound => ErrorCode::NotFound,
        Class::FailedPrecondition => ErrorCode::FailedPrecondition,
        Class::ResourceExhausted => ErrorCode::ResourceExhausted,
        Class::Unauthenticated => ErrorCode::Unauthenticated,
        Class::PermissionDenied => ErrorCode::PermissionDenied,
        Class::Unavailable => ErrorCode::Unavailable,
        Class::Internal => ErrorCode::Internal,
        Class::Unimplemented => ErrorCode::Unimplemented,
        Class::DeadlineExceeded => ErrorCode::DeadlineExceeded,
        Class::Canceled => ErrorCode::Canceled,
    };
    crate::api_errors::engine_error(code, e.code.as_str(), &e.message, &e.details)
}

pub(crate) fn ts(micros: i64) -> buffa::MessageField<Timestamp, buffa::Inline<Timestamp>> {
    if micros <= 0 {
        return buffa::MessageField::default();
    }
    Timestamp::from_unix(
        micros.div_euclid(1_000_000),
        (micros.rem_euclid(1_000_000) * 1000) as i32,
    )
    .into()
}

pub(crate) fn sandbox_msg(r: &SandboxRow) -> Sandbox {
    let mut info: Vec<(String, Value)> = Vec::new();
    info.extend(
        crate::engine::sandboxes::backend_info(r)
            .into_iter()
            .map(|(k, v)| (k, Value::from(v))),
    );
    Sandbox {
        sandbox_id: r.id.clone(),
        status: r.status.number().into(),
        backend: r.backend.clone(),
        policy_hash: r.policy_hash.clone(),
        created_at: ts(r.created_at),
        updated_at: ts(r.updated_at),
        last_execution_id: r.last_execution_id.clone(),
        active_execution_id: r.active_execution_id.clone(),
        message: r.message.clone(),
        image_ref: r.image_ref.clone(),
        image_digest: r.image_digest.clone(),
        backend_info: if info.is_empty() {
            Default::default()
        } else {
            info.into_iter().collect::<Struct>().into()
        },
        // A display field: a policy that cannot be decoded asks nothing here (every use
        // of it is refused, see `store::policy`).
        egress_asks: r.policy.get(&r.id).is_ok_and(|p| p.network.asks()),
        labels: r
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..Default::default()
    }
}

pub(crate) fn execution_msg(r: &ExecutionRow) -> Execution {
    Execution {
        execution_id: r.id.clone(),
        sandbox_id: r.sandbox_id.clone(),
        status: r.status.into(),
        command: r.command.clone(),
        exit_code: r.exit_code,
        started_at: ts(r.started_at),
        finished_at: ts(r.finished_at),
        tty: r.tty,
        kind: r.kind.into(),
        message: r.message.clone(),
        cwd: r.cwd.clone(),
        created_at: ts(r.created_at),
        trace_id: r.trace_id.clone(),
        ..Default::default()
    }
}

fn event_msg(e: EventRow) -> SandboxEvent {
    let attributes =
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&e.attributes)
            .ok()
            .filter(|m| !m.is_empty())
            .map(|m| {
                m.into_iter()
                    .map(|(k, v)| (k, json_value(v)))
                    .collect::<Struct>()
            });
    SandboxEvent {
        sequence: e.seq as u64,
        sandbox_id: e.sandbox_id,
        execution_id: e.execution_id,
        r#type: e.kind,
        at: ts(e.at),
        sandbox_status: e.sandbox_status.into(),
        execution_status: e.execution_status.into(),
        message: e.message,
        attributes: attributes.map(Into::into).unwrap_or_default(),
        ..Default::default()
    }
}

fn json_value(v: serde_json::Value) -> Value {
    match v {
        serde_json::Value::String(s) => Value::from(s),
        serde_json::Value::Number(n) => Value::from(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::Bool(b) => Value::from(b),
        other => Value::from(other.to_string()),
    }
}

/// Both services share one engine.
#[derive(Clone)]
pub struct Api {
    pub engine: Arc<Engine>,
    /// Caps on live sandboxes (per principal, server-wide).
    pub caps: SandboxCaps,
}

/// The authenticated caller of a handler's request (see [`crate::auth`]).
pub(crate) fn who(ctx: &RequestContext) -> Result<crate::auth::Principal, ConnectError> {
    principal_of(ctx).map_err(to_connect)
}

#[allow(refining_impl_trait)]
impl SandboxService for Api {
    async fn create_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateSandboxRequest>,
    ) -> ServiceResult<CreateSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let (row, bootstrap) = crate::api_run::create(self, &who, &req).await?;
        Response::ok(CreateSandboxResponse {
            sandbox: self.sandbox_out(&row).into(),
            bootstrap: bootstrap.into(),
            ..Default::default()
        })
    }

    async fn get_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetSandboxRequest>,
    ) -> ServiceResult<GetSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let mut sandbox = self.sandbox_live(&sbx).await;
        (sandbox.egress_approved, sandbox.egress_refused) =
            sbx.effective_egress().map_err(to_connect)?;
        Response::ok(GetSandboxResponse {
            sandbox: crate::api_pools::with_identity(&sbx, sandbox).into(),
            ..Default::default()
        })
    }

    async fn list_sandboxes(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ListSandboxesRequest>,
    ) -> ServiceResult<ListSandboxesResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let rows = self
            .engine
            .owned_sandboxes(&who, req.include_stopped)
            .map_err(to_connect)?;
        Response::ok(ListSandboxesResponse {
            sandboxes: rows
                .iter()
                .filter(|r| !req.only_own || r.owner == who.name)
                .filter(|r| crate::store::labels::matches(&r.labels, req.labels.iter()))
                .map(|r| self.sandbox_out(r))
                .collect(),
            ..Default::default()
        })
    }

    async fn download_sandbox_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DownloadSandboxFileRequest>,
    ) -> ServiceResult<DownloadSandboxFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let f = sbx
            .download_file(&req.path, req.max_bytes)
            .await
            .map_err(to_connect)?;
        Response::ok(DownloadSandboxFileResponse {
            path: req.path,
            content: f.content,
            size: f.size,
            truncated: f.truncated,
            ..Default::default()
        })
    }

    async fn terminate_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, TerminateSandboxRequest>,
    ) -> ServiceResult<TerminateSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = match req.background {
            true => sbx.terminate_in_background(),
            false => sbx.terminate().await,
        }
        .map_err(to_connect)?;
        Response::ok(TerminateSandboxResponse {
            sandbox: self.sandbox_out(&row).into(),
            ..Default::default()
        })
    }

    async fn stream_sandbox_events(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, StreamSandboxEventsRequest>,
    ) -> ServiceResult<ServiceStream<SandboxEvent>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let rows = sbx
            .stream_events(req.after_sequence, req.follow)
            .map_err(to_connect)?;
        Response::ok(Box::pin(rows.map(|r| Ok(event_msg(r)))))
    }
}

fn image_msg(r: cleanroom_image::ImageRecord) -> Image {
    Image {
        digest: r.digest,
        reference: r.reference,
        manifest_digest: r.manifest_digest,
        config_digest: r.config_digest,
        layers: r.layers,
        size: r.size,
        pulled_at: ts(r.pulled_at.saturating_mul(1_000_000)),
        ..Default::default()
    }
}

#[allow(refining_impl_trait)]
impl ImageService for Api {
    async fn pull_image(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, PullImageRequest>,
    ) -> ServiceResult<PullImageResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let rec = self
            .engine
            .pull_image(&req.image_ref)
            .await
            .map_err(to_connect)?;
        self.engine
            .claim_image(&who, &rec.digest)
            .map_err(to_connect)?;
        Response::ok(PullImageResponse {
            image: image_msg(rec).into(),
            ..Default::default()
        })
    }

    async fn list_images(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListImagesRequest>,
    ) -> ServiceResult<ListImagesResponse> {
        let who = who(&ctx)?;
        let list = self.engine.owned_images(&who).map_err(to_connect)?;
        Response::ok(ListImagesResponse {
            images: list.into_iter().map(image_msg).collect(),
            ..Default::default()
        })
    }

    async fn remove_image(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, RemoveImageRequest>,
    ) -> ServiceResult<RemoveImageResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let rec = self
            .engine
            .remove_owned_image(&who, &req.digest)
            .map_err(to_connect)?;
        Response::ok(RemoveImageResponse {
            image: image_msg(rec).into(),
            ..Default::default()
        })
    }
}
