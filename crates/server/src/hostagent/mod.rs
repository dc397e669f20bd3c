//! Seed 001's `hostagent.v1.HostAgentService`, served by every host as a compatibility
//! surface (docs/hostagent.md): a control plane written against the seed drives a
//! Cleanroom host unchanged.
//!
//! Translation only. Every call becomes the `cleanroom.v1` handler a Connect client would
//! call ([`call`]), as the caller's own principal — so ownership, quotas, capabilities,
//! bounds and stable error codes are exactly the API's (a caller never gets more through
//! this surface than through the native one: no deputy). What the seed's messages cannot
//! say is mapped as follows:
//!
//! - **ids**: a `sandbox_id` the control plane assigns is kept as the label `hostagent.id`;
//!   a create of an id the caller already has answers with that sandbox (a retried create
//!   makes one sandbox; creates of one id are serialized here); later calls accept it or
//!   the host's own `sbx_…` id, looked up among the caller's sandboxes.
//! - **templates** name a warm pool: the sandbox is claimed from it (the pool decides
//!   image, policy and limits); empty or `minimal` is a fresh default sandbox.
//! - `vcpus` → a CPU limit, `memory_mb` → a memory limit (the seed's defaults, 1 and 512,
//!   when 0), `timeout_sec` → the idle timeout; kept as labels too, so `ListSandboxes`
//!   reports what was asked.
//! - `host_ip` is empty: a sandbox has no address on the host's network (inbound traffic
//!   goes through `sandbox expose`).

mod exec;
mod files;

use crate::api::{to_connect, who, Api};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use cleanroom_proto::cleanroom::v1 as cr;
use cleanroom_proto::hostagent::v1::*;
use connectrpc::{ConnectError, RequestContext, Response, ServiceRequest, ServiceResult};
use std::collections::HashMap;
use std::sync::Arc;

/// Label holding the id a control plane assigned.
const ID_LABEL: &str = "hostagent.id";
const TEMPLATE_LABEL: &str = "hostagent.template";
const VCPUS_LABEL: &str = "hostagent.vcpus";
const MEMORY_LABEL: &str = "hostagent.memory_mb";

/// Held while a create of one assigned id runs.
type CreateLock = Arc<tokio::sync::Mutex<()>>;

/// A create's hold on its assigned id: the lock other creates of that id wait on; the map's
/// entry goes with the last holder, however the create ends.
struct CreateSlot<'a> {
    map: &'a std::sync::Mutex<HashMap<(String, String), CreateLock>>,
    key: (String, String),
    lock: CreateLock,
}

impl<'a> CreateSlot<'a> {
    fn take(
        map: &'a std::sync::Mutex<HashMap<(String, String), CreateLock>>,
        key: (String, String),
    ) -> Self {
        let lock = crate::model::sync::lock(map)
            .entry(key.clone())
            .or_default()
            .clone();
        CreateSlot { map, key, lock }
    }
}

impl Drop for CreateSlot<'_> {
    fn drop(&mut self) {
        let mut m = crate::model::sync::lock(self.map);
        // The map's reference and ours: nobody else holds or waits on it.
        if Arc::strong_count(&self.lock) <= 2 {
            m.remove(&self.key);
        }
    }
}

/// The service: the native API's handlers, and a files handler of its own.
pub struct HostAgent {
    api: Arc<Api>,
    files: Arc<crate::api::files::FileApi>,
    /// Creates with an assigned id in flight, by (principal, id): a retry waits for the
    /// first and then finds its sandbox.
    creating: std::sync::Mutex<HashMap<(String, String), CreateLock>>,
}

/// Serve `hostagent.v1.HostAgentService` on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    let files = crate::api::files::FileApi::new(api.engine.clone());
    let creating = Default::default();
    HostAgentServiceExt::register(
        Arc::new(HostAgent {
            api,
            files,
            creating,
        }),
        router,
    )
}

/// Run `$method` of the native `$trait` on `$svc` as `$who` with request `$msg`, encoded
/// and decoded as the Connect dispatcher would; yields the response message.
macro_rules! call {
    ($svc:expr, $who:expr, $trait:ident :: $method:ident, $msg:expr) => {{
        let msg = $msg;
        let body = crate::rest::wire(&msg);
        match $crate::hostagent::view_of(&msg, &body) {
            Err(e) => Err(e),
            Ok(view) => cleanroom_proto::cleanroom::v1::$trait::$method(
                &*$svc,
                crate::rest::context($who),
                connectrpc::ServiceRequest::from_parts(&view, &body),
            )
            .await
            .map(|r| r.body),
        }
    }};
}
pub(crate) use call;

/// `body` (the wire form of `msg`) as `M`'s view, for [`ServiceRequest::from_parts`].
pub(crate) fn view_of<'b, M: buffa::HasMessageView>(
    _msg: &M,
    body: &'b bytes::Bytes,
) -> Result<M::View<'b>, ConnectError> {
    M::decode_view(body).map_err(|e| ConnectError::internal(format!("request encoding: {e}")))
}

/// `invalid_argument` naming `field`.
fn invalid(field: &str, msg: impl Into<String>) -> ConnectError {
    to_connect(EngineError::invalid(msg).with("field", field))
}

impl HostAgent {
    /// The host's id of `id` (its own `sbx_…`, or one a control plane assigned), among
    /// what `who` may see; `sandbox_not_found` otherwise.
    async fn resolve(&self, who: &Principal, id: &str) -> Result<String, ConnectError> {
        if id.is_empty() {
            return Err(invalid("sandbox_id", "sandbox_id is required"));
        }
        if id.starts_with("sbx_") {
            return Ok(id.to_string());
        }
        // Assigned ids are per principal (an admin's too).
        let mut req = cr::ListSandboxesRequest {
            only_own: true,
            ..Default::default()
        };
        req.labels.insert(ID_LABEL.to_string(), id.to_string());
        let list: cr::ListSandboxesResponse =
            call!(self.api, who, SandboxService::list_sandboxes, req)?;
        list.sandboxes
            .first()
            .map(|s| s.sandbox_id.clone())
            .ok_or_else(|| to_connect(EngineError::sandbox_not_found(id)))
    }
}

/// The seed's status words.
fn status_word(s: i32) -> &'static str {
    use crate::model::status::SandboxStatus as S;
    match S::from_number(s) {
        Some(S::Provisioning) => "creating",
        Some(S::Ready) => "running",
        Some(S::Stopping) => "stopping",
        Some(S::Stopped) => "stopped",
        Some(S::Failed) => "failed",
        Some(S::Paused) => "paused",
        Some(S::Checkpointing) => "checkpointing",
        Some(S::Checkpointed) => "checkpointed",
        None => "unknown",
    }
}

fn seconds(
    t: &buffa::MessageField<
        buffa_types::google::protobuf::Timestamp,
        buffa::Inline<buffa_types::google::protobuf::Timestamp>,
    >,
) -> i64 {
    t.as_option().map(|t| t.seconds).unwrap_or_default()
}

fn info(s: &cr::Sandbox) -> SandboxInfo {
    let label = |k: &str| s.labels.get(k).cloned().unwrap_or_default();
    let num = |k: &str| label(k).parse::<i32>().unwrap_or_default();
    SandboxInfo {
        sandbox_id: s.sandbox_id.clone(),
        status: status_word(s.status.to_i32()).into(),
        template: label(TEMPLATE_LABEL),
        vcpus: num(VCPUS_LABEL),
        memory_mb: num(MEMORY_LABEL),
        host_ip: String::new(),
        created_at_unix: seconds(&s.created_at),
        last_active_at_unix: match seconds(&s.last_activity_at) {
            0 => seconds(&s.updated_at),
            t => t,
        },
        timeout_sec: i32::try_from(s.idle_timeout_seconds).unwrap_or(i32::MAX),
        ..Default::default()
    }
}

/// A non-negative `i32` field, or `invalid_argument` naming it.
fn non_negative(v: i32, field: &str) -> Result<u64, ConnectError> {
    u64::try_from(v).map_err(|_| invalid(field, format!("{field} must not be negative")))
}

#[allow(refining_impl_trait)]
impl HostAgentService for HostAgent {
    async fn create_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateSandboxRequest>,
    ) -> ServiceResult<CreateSandboxResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        // The seed's defaults: 1 vCPU, 512 MB.
        let vcpus = match non_negative(req.vcpus, "vcpus")? {
            0 => 1,
            n => n,
        };
        let memory_mb = match non_negative(req.memory_mb, "memory_mb")? {
            0 => 512,
            n => n,
        };
        let timeout = non_negative(req.timeout_sec, "timeout_sec")?;
        // One create per assigned id and principal: a retry after a timeout waits for the
        // first and answers with its sandbox.
        let slot = (!req.sandbox_id.is_empty())
            .then(|| CreateSlot::take(&self.creating, (who.name.clone(), req.sandbox_id.clone())));
        let _held = match &slot {
            Some(s) => Some(s.lock.lock().await),
            None => None,
        };
        if !req.sandbox_id.is_empty() {
            if let Ok(existing) = self.resolve(&who, &req.sandbox_id).await {
                let r: cr::GetSandboxResponse = call!(
                    self.api,
                    &who,
                    SandboxService::get_sandbox,
                    cr::GetSandboxRequest {
                        sandbox_id: existing.clone(),
                        ..Default::default()
                    }
                )?;
                let status = r
                    .sandbox
                    .as_option()
                    .map(|s| s.status.to_i32())
                    .unwrap_or_default();
                return Response::ok(CreateSandboxResponse {
                    sandbox_id: existing,
                    status: status_word(status).into(),
                    host_ip: String::new(),
                    ..Default::default()
                });
            }
        }
        let sandbox = if req.template.is_empty() || req.template == "minimal" {
            let limits = cr::ResourceLimits {
                cpu_millis: vcpus * 1000,
                memory_bytes: memory_mb << 20,
                ..Default::default()
            };
            let mut create = cr::CreateSandboxRequest {
                limits: limits.into(),
                idle_timeout_seconds: timeout,
                ..Default::default()
            };
            let labels = &mut create.labels;
            if !req.sandbox_id.is_empty() {
                labels.insert(ID_LABEL.to_string(), req.sandbox_id.clone());
            }
            labels.insert(TEMPLATE_LABEL.to_string(), req.template.clone());
            labels.insert(VCPUS_LABEL.to_string(), vcpus.to_string());
            labels.insert(MEMORY_LABEL.to_string(), memory_mb.to_string());
            let r: cr::CreateSandboxResponse =
                call!(self.api, &who, SandboxService::create_sandbox, create)?;
            r.sandbox.into_option().unwrap_or_default()
        } else {
            if !req.sandbox_id.is_empty() {
                return Err(invalid(
                    "sandbox_id",
                    "a sandbox claimed from a template's warm pool keeps the pool's id: leave sandbox_id empty",
                ));
            }
            let claim = cr::ClaimSandboxRequest {
                pool_id: req.template.clone(),
                ..Default::default()
            };
            let r: cr::ClaimSandboxResponse =
                call!(self.api, &who, WarmPoolService::claim_sandbox, claim)?;
            r.sandbox.into_option().unwrap_or_default()
        };
        Response::ok(CreateSandboxResponse {
            sandbox_id: sandbox.sandbox_id.clone(),
            status: status_word(sandbox.status.to_i32()).into(),
            host_ip: String::new(),
            ..Default::default()
        })
    }

    async fn destroy_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, DestroySandboxRequest>,
    ) -> ServiceResult<DestroySandboxResponse> {
        let who = who(&ctx)?;
        let id = self.resolve(&who, request.sandbox_id).await?;
        let req = cr::TerminateSandboxRequest {
            sandbox_id: id,
            ..Default::default()
        };
        let _: cr::TerminateSandboxResponse =
            call!(self.api, &who, SandboxService::terminate_sandbox, req)?;
        Response::ok(DestroySandboxResponse::default())
    }

    async fn pause_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, PauseSandboxRequest>,
    ) -> ServiceResult<PauseSandboxResponse> {
        let who = who(&ctx)?;
        let id = self.resolve(&who, request.sandbox_id).await?;
        let req = cr::PauseSandboxRequest {
            sandbox_id: id,
            ..Default::default()
        };
        let _: cr::PauseSandboxResponse =
            call!(self.api, &who, SnapshotService::pause_sandbox, req)?;
        Response::ok(PauseSandboxResponse::default())
    }

    async fn resume_sandbox(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ResumeSandboxRequest>,
    ) -> ServiceResult<ResumeSandboxResponse> {
        let who = who(&ctx)?;
        let id = self.resolve(&who, request.sandbox_id).await?;
        let req = cr::ResumeSandboxRequest {
            sandbox_id: id,
            ..Default::default()
        };
        let _: cr::ResumeSandboxResponse =
            call!(self.api, &who, SnapshotService::resume_sandbox, req)?;
        Response::ok(ResumeSandboxResponse::default())
    }

    async fn exec(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ExecRequest>,
    ) -> ServiceResult<ExecResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let id = self.resolve(&who, &req.sandbox_id).await?;
        exec::collected(self, &who, id, req.cmd, req.args, req.timeout_sec).await
    }

    async fn list_sandboxes(
        &self,
        ctx: RequestContext,
        _request: ServiceRequest<'_, ListSandboxesRequest>,
    ) -> ServiceResult<ListSandboxesResponse> {
        let who = who(&ctx)?;
        let req = cr::ListSandboxesRequest {
            only_own: true,
            ..Default::default()
        };
        let list: cr::ListSandboxesResponse =
            call!(self.api, &who, SandboxService::list_sandboxes, req)?;
        Response::ok(ListSandboxesResponse {
            sandboxes: list.sandboxes.iter().map(info).collect(),
            ..Default::default()
        })
    }

    async fn write_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, WriteFileRequest>,
    ) -> ServiceResult<WriteFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let id = self.resolve(&who, &req.sandbox_id).await?;
        let mut upload = files::Upload::new(self, &who, id, req.path);
        upload.push(req.content.to_vec()).await?;
        upload.finish().await?;
        Response::ok(WriteFileResponse::default())
    }

    async fn read_file(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ReadFileRequest>,
    ) -> ServiceResult<ReadFileResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let id = self.resolve(&who, &req.sandbox_id).await?;
        let content = files::read_whole(self, &who, id, req.path).await?;
        Response::ok(ReadFileResponse {
            content,
            ..Default::default()
        })
    }

    async fn exec_stream(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ExecStreamRequest>,
    ) -> ServiceResult<connectrpc::ServiceStream<ExecStreamResponse>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let id = self.resolve(&who, &req.sandbox_id).await?;
        exec::streamed(self, &who, id, req.cmd, req.args, req.timeout_sec).await
    }

    async fn write_file_stream(
        &self,
        ctx: RequestContext,
        requests: connectrpc::InboundStream<WriteFileStreamRequest>,
    ) -> ServiceResult<WriteFileStreamResponse> {
        let who = who(&ctx)?;
        files::write_stream(self, &who, requests).await?;
        Response::ok(WriteFileStreamResponse::default())
    }

    async fn read_file_stream(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, ReadFileStreamRequest>,
    ) -> ServiceResult<connectrpc::ServiceStream<ReadFileStreamResponse>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let id = self.resolve(&who, &req.sandbox_id).await?;
        files::read_stream(self, &who, id, req.path).await
    }
}
