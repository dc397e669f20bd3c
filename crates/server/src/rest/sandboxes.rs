//! `/v1/sandboxes…` and `/v1/checkpoints…`: seed 002's sandbox endpoints, each the same
//! `SandboxService` / `ExecutionService` / `AttestationService` handler a Connect client
//! calls ([`super::call`]).

use super::error::RestError;
use super::shapes::{self, status_name, time, CreateBody, ExecBody, RestoreBody};
use super::{call, Body, Reply, Rest};
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use base64::Engine as _;
use bytes::Bytes;
use cleanroom_proto::cleanroom::v1::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_proto::cleanroom::v1::*;
use futures::StreamExt;
use http::StatusCode;
use serde_json::{json, Value};
use std::time::Instant;

/// Bytes of each of stdout and stderr an exec answer carries; beyond it the answer says
/// `stdoutTruncated`/`stderrTruncated` (the whole output stays retained server-side as for
/// any execution, within the sandbox's output quota).
pub const MAX_EXEC_OUTPUT: usize = 4 << 20;

type R = Result<Reply, RestError>;

/// The signed attestation envelope of a sandbox (`null` when the server signs none).
async fn attestation(rest: &Rest, who: &Principal, sandbox_id: &str) -> Value {
    let req = GetAttestationRequest {
        sandbox_id: sandbox_id.to_string(),
        ..Default::default()
    };
    let got: Result<GetAttestationResponse, RestError> =
        call!(rest, who, AttestationService::get_attestation, req);
    got.ok()
        .and_then(|a| serde_json::from_str(&a.envelope_json).ok())
        .unwrap_or(Value::Null)
}

fn sandbox_json(s: &Sandbox) -> Value {
    json!({
        "sandboxId": s.sandbox_id,
        "status": status_name(s.status.to_i32()),
        "runtime": s.backend,
        "image": s.image_ref,
        "imageDigest": s.image_digest,
        "policyHash": s.policy_hash,
        "labels": s.labels,
        "poolId": s.pool_id,
        "createdAt": time(&s.created_at),
        "updatedAt": time(&s.updated_at),
    })
}

/// `POST /v1/sandboxes` → `CreateSandbox`; 201.
pub async fn create<B>(rest: &Rest, who: &Principal, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let b: CreateBody = body.json().await?;
    let req = b.spec.to_request()?;
    let made: CreateSandboxResponse = call!(rest, who, SandboxService::create_sandbox, req)?;
    let s = made.sandbox.as_option().cloned().unwrap_or_default();
    Ok(Reply::Json(
        StatusCode::CREATED,
        json!({
            "sandboxId": s.sandbox_id,
            "attestation": attestation(rest, who, &s.sandbox_id).await,
            "status": status_name(s.status.to_i32()),
            "createdAt": time(&s.created_at),
            "policyHash": s.policy_hash,
            "runtime": s.backend,
        }),
    ))
}

/// `GET /v1/sandboxes` → `ListSandboxes` (the caller's; all for an admin).
pub async fn list(rest: &Rest, who: &Principal) -> R {
    let req = ListSandboxesRequest::default();
    let l: ListSandboxesResponse = call!(rest, who, SandboxService::list_sandboxes, req)?;
    let items: Vec<Value> = l.sandboxes.iter().map(sandbox_json).collect();
    Ok(Reply::Json(StatusCode::OK, json!({ "sandboxes": items })))
}

/// `GET /v1/sandboxes/{id}/status` → `GetSandbox`.
pub async fn status(rest: &Rest, who: &Principal, id: &str) -> R {
    let req = GetSandboxRequest {
        sandbox_id: id.to_string(),
        ..Default::default()
    };
    let g: GetSandboxResponse = call!(rest, who, SandboxService::get_sandbox, req)?;
    let s = g.sandbox.as_option().cloned().unwrap_or_default();
    let usage = s.usage.as_option().map(|u| {
        json!({
            // CPU time used so far, in seconds (the kernel's counter, not a percentage).
            "cpuSeconds": u.cpu_usec as f64 / 1e6,
            "memoryBytes": u.memory_bytes,
            "diskBytes": u.filesystems.iter().map(|f| f.used_bytes).sum::<u64>(),
            "networkRxBytes": u.network_rx_bytes,
            "networkTxBytes": u.network_tx_bytes,
            "pids": u.pids,
        })
    });
    let mut out = sandbox_json(&s);
    out["resourceUsage"] = usage.unwrap_or(Value::Null);
    out["message"] = json!(s.message);
    out["expiresAt"] = time(&s.expires_at);
    Ok(Reply::Json(StatusCode::OK, out))
}

/// `DELETE /v1/sandboxes/{id}` → `TerminateSandbox`; 204.
pub async fn terminate(rest: &Rest, who: &Principal, id: &str) -> R {
    let req = TerminateSandboxRequest {
        sandbox_id: id.to_string(),
        ..Default::default()
    };
    let _: TerminateSandboxResponse = call!(rest, who, SandboxService::terminate_sandbox, req)?;
    Ok(Reply::Empty)
}

/// Output collected for an exec answer, bounded.
#[derive(Default)]
struct Collected {
    data: Vec<u8>,
    truncated: bool,
}

impl Collected {
    fn push(&mut self, d: &[u8]) {
        let room = MAX_EXEC_OUTPUT.saturating_sub(self.data.len());
        if d.len() > room {
            self.truncated = true;
        }
        self.data.extend_from_slice(&d[..d.len().min(room)]);
    }
}

fn exec_status(s: i32) -> &'static str {
    use buffa::Enumeration as _;
    match ExecutionStatus::from_i32(s) {
        Some(ExecutionStatus::EXECUTION_STATUS_SUCCEEDED) => "Succeeded",
        Some(ExecutionStatus::EXECUTION_STATUS_FAILED) => "Failed",
        Some(ExecutionStatus::EXECUTION_STATUS_CANCELED) => "Canceled",
        Some(ExecutionStatus::EXECUTION_STATUS_TIMED_OUT) => "TimedOut",
        _ => "Unknown",
    }
}

/// `POST /v1/sandboxes/{id}/exec` → `RunExecution` in the sandbox, followed to its end.
/// A caller that goes away leaves the execution running, as a Connect caller's would.
pub async fn exec<B>(rest: &Rest, who: &Principal, id: &str, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let b: ExecBody = body.json().await?;
    let c = b.command;
    let mut command = vec![c.program];
    command.extend(c.args);
    let req = RunExecutionRequest {
        execution: CreateExecutionRequest {
            sandbox_id: id.to_string(),
            command,
            env: c.env.into_iter().collect(),
            cwd: c.cwd,
            timeout_seconds: c.timeout_seconds,
            kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    };
    let mut events = call!(rest, who, ExecutionService::run_execution, req)?;
    let (mut stdout, mut stderr) = (Collected::default(), Collected::default());
    let mut execution_id = String::new();
    let mut exit: Option<ExecutionExit> = None;
    while let Some(ev) = events.next().await {
        let ev = ev.map_err(RestError::from)?;
        if execution_id.is_empty() {
            execution_id = ev.execution_id.clone();
        }
        match ev.payload {
            Some(Payload::Output(o)) => {
                if o.stream == OutputStream::OUTPUT_STREAM_STDERR {
                    stderr.push(&o.data);
                } else {
                    stdout.push(&o.data);
                }
            }
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    let Some(x) = exit else {
        return Err(
            EngineError::internal("the execution's stream ended without its exit")
                .with("execution_id", execution_id)
                .into(),
        );
    };
    let b64 = |c: &Collected| base64::engine::general_purpose::STANDARD.encode(&c.data);
    Ok(Reply::Json(
        StatusCode::OK,
        json!({
            "executionId": execution_id,
            "stdout": b64(&stdout),
            "stderr": b64(&stderr),
            "stdoutTruncated": stdout.truncated,
            "stderrTruncated": stderr.truncated,
            "exitCode": x.exit_code,
            "status": exec_status(x.status.to_i32()),
            "code": x.code,
            "message": x.message,
            "durationMs": started.elapsed().as_millis() as u64,
        }),
    ))
}

/// `POST /v1/sandboxes/{id}/checkpoint` → `SnapshotService.CheckpointSandbox`: a memory
/// checkpoint of the caller's READY sandbox, stopped once checkpointed as over Connect
/// (docs/checkpoints.md). A runtime without `checkpoint_restore` (linux) answers
/// `409 backend_capability_mismatch`.
pub async fn checkpoint(rest: &Rest, who: &Principal, id: &str) -> R {
    let req = CheckpointSandboxRequest {
        sandbox_id: id.to_string(),
        ..Default::default()
    };
    let c: CheckpointSandboxResponse = call!(rest, who, SnapshotService::checkpoint_sandbox, req)?;
    Ok(Reply::Json(
        StatusCode::OK,
        json!({ "checkpointId": c.checkpoint_id, "sizeBytes": c.size_bytes }),
    ))
}

/// `POST /v1/checkpoints/{id}/restore` → `CreateSandbox` with `from_checkpoint` (the
/// checkpoint must be the caller's); `nhiOverride` binds the restored copy to that agent.
pub async fn restore<B>(rest: &Rest, who: &Principal, id: &str, body: Body<B>) -> R
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let b: RestoreBody = body.json().await?;
    let req = CreateSandboxRequest {
        from_checkpoint: id.to_string(),
        agent_public_key: shapes::agent(&b.nhi_override, "nhiOverride")?,
        ..Default::default()
    };
    let made: CreateSandboxResponse = call!(rest, who, SandboxService::create_sandbox, req)?;
    let s = made.sandbox.as_option().cloned().unwrap_or_default();
    Ok(Reply::Json(
        StatusCode::CREATED,
        json!({
            "sandboxId": s.sandbox_id,
            "attestation": attestation(rest, who, &s.sandbox_id).await,
            "status": status_name(s.status.to_i32()),
            "createdAt": time(&s.created_at),
            "policyHash": s.policy_hash,
            "runtime": s.backend,
        }),
    ))
}
