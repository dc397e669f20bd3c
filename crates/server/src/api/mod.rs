//! `cleanroom.v1` Connect services over the [`Engine`], one file per proto service
//! (`sandboxes`, `images`, `exec`, `snapshots`, `pools`, `attestation`, `approvals`,
//! `lifetime`, `files`, `volumes`; `run` is `RunExecution` and the create request's translation,
//! `errors` the error details every answer carries). This file: the shared translation.
//!
//! Pure translation: request messages in, engine calls, response messages out. Every
//! error leaves as a Connect error whose detail is a `cleanroom.v1.ErrorDetail` carrying
//! the stable code.

pub mod approvals;
pub mod attestation;
pub mod checkpoints;
pub mod cluster;
mod cluster_create;
mod cluster_lists;
mod cluster_pin;
mod cluster_pools;
pub mod cluster_route;
mod cluster_run;
mod cluster_snapshots;
pub mod errors;
pub mod exec;
pub mod files;
pub mod images;
pub mod interceptor;
pub mod lifetime;
pub mod network;
pub mod pools;
pub mod run;
pub mod sandboxes;
pub mod snapshots;
pub mod volumes;

use crate::engine::Engine;
use crate::identity::auth::principal_of;
use crate::model::error::{Class, EngineError};
use crate::store::{EventRow, ExecutionRow, SandboxCaps, SandboxRow};
use buffa_types::google::protobuf::{Struct, Timestamp, Value};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{ConnectError, ErrorCode, RequestContext};
use std::sync::Arc;

pub use crate::api::errors::ERROR_DETAIL_TYPE;

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
    crate::api::errors::engine_error(code, e.code.as_str(), &e.message, &e.details)
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
        owner: r.owner.to_string(),
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
        volumes: r
            .policy
            .get(&r.id)
            .map(|p| volume_mounts(&p.volumes))
            .unwrap_or_default(),
        ..Default::default()
    }
}

/// A compiled policy's volume mounts as messages.
pub(crate) fn volume_mounts(v: &[cleanroom_policy::VolumeMount]) -> Vec<VolumeMount> {
    v.iter()
        .map(|m| VolumeMount {
            name: m.name.clone(),
            path: m.path.clone(),
            read_only: m.read_only,
            ..Default::default()
        })
        .collect()
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

pub(crate) fn event_msg(e: EventRow) -> SandboxEvent {
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
    /// The console endpoint's ticket broker, when it runs: the API issues tickets, the
    /// engine knows nothing of the console (no import cycle between them).
    pub console: Option<Arc<crate::console::Broker>>,
    /// This server's cluster membership (`serve --cluster`), if any.
    pub cluster: Option<Arc<crate::cluster::ClusterNode>>,
    /// The exposed ports GetSandbox lists (served by the inbound layer above this one).
    pub exposures: Option<Arc<dyn ExposureLister>>,
}

/// The exposed ports of a sandbox, for GetSandbox: implemented by the server's inbound
/// layer, which sits above the API (it routes its own URLs and calls the API's
/// authentication), so the API knows it only by this trait.
pub trait ExposureLister: Send + Sync {
    /// The live exposures of `sandbox_id` (its owner's to see: the caller checked).
    fn exposures(&self, sandbox_id: &str) -> Vec<cleanroom_proto::cleanroom::v1::SandboxExposure>;
}

/// The authenticated caller of a handler's request (see [`crate::identity::auth`]).
pub(crate) fn who(ctx: &RequestContext) -> Result<crate::identity::auth::Principal, ConnectError> {
    principal_of(ctx).map_err(to_connect)
}
