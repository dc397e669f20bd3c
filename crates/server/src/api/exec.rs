//! `ExecutionService`: executions through the API — create, attach, inspect, cancel, stdin,
//! stream, and `RunExecution` (in `api_run`) — translated to the engine's calls.

use crate::api::{execution_msg, to_connect, ts, who, Api};
use crate::engine::{ExecRequest, StreamItem};
use buffa_types::google::protobuf::{Struct, Value};
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult, ServiceStream};
use futures::StreamExt;
use std::time::Duration;

#[allow(refining_impl_trait)]
impl ExecutionService for Api {
    async fn create_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CreateExecutionRequest>,
    ) -> ServiceResult<CreateExecutionResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = sbx
            .create_execution(exec_request(req, &who))
            .await
            .map_err(to_connect)?;
        Response::ok(CreateExecutionResponse {
            execution: execution_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn attach_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, AttachExecutionRequest>,
    ) -> ServiceResult<AttachExecutionResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let ticket = crate::console::attach(
            &self.engine,
            self.console.as_deref(),
            &who,
            &req.sandbox_id,
            &req.execution_id,
        )
        .map_err(to_connect)?;
        Response::ok(AttachExecutionResponse {
            session_id: ticket.session_id,
            session_token: ticket.token,
            expires_at: ts(crate::console::unix_micros(ticket.expires_at)),
            quic_endpoint: ticket.endpoint,
            alpn: ticket.alpn,
            server_cert_pin_sha256: ticket.cert_pin_sha256,
            ..Default::default()
        })
    }

    async fn get_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, GetExecutionRequest>,
    ) -> ServiceResult<GetExecutionResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let row = self
            .engine
            .execution(&who, &req.sandbox_id, &req.execution_id)
            .map_err(to_connect)?
            .into_row();
        Response::ok(GetExecutionResponse {
            execution: execution_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn inspect_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, InspectExecutionRequest>,
    ) -> ServiceResult<InspectExecutionResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let exe = if req.execution_id.is_empty() && req.last {
            self.engine
                .sandbox(&who, &req.sandbox_id)
                .and_then(|sbx| sbx.last_execution())
        } else {
            self.engine
                .execution(&who, &req.sandbox_id, &req.execution_id)
        }
        .map_err(to_connect)?;
        let i = exe.inspect().await.map_err(to_connect)?;
        Response::ok(inspect_msg(i))
    }

    async fn cancel_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CancelExecutionRequest>,
    ) -> ServiceResult<CancelExecutionResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let exe = self
            .engine
            .execution(&who, &req.sandbox_id, &req.execution_id)
            .map_err(to_connect)?;
        let grace = (req.grace_seconds > 0).then(|| Duration::from_secs(req.grace_seconds.into()));
        let row = if req.interrupt {
            exe.interrupt().await
        } else {
            exe.cancel(grace)
        }
        .map_err(to_connect)?;
        Response::ok(CancelExecutionResponse {
            execution: execution_msg(&row).into(),
            ..Default::default()
        })
    }

    async fn write_execution_stdin(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, WriteExecutionStdinRequest>,
    ) -> ServiceResult<WriteExecutionStdinResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let exe = self
            .engine
            .execution(&who, &req.sandbox_id, &req.execution_id)
            .map_err(to_connect)?;
        let n = exe.write_stdin(&req.data).await.map_err(to_connect)?;
        Response::ok(WriteExecutionStdinResponse {
            bytes_written: n,
            ..Default::default()
        })
    }

    async fn close_execution_stdin(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, CloseExecutionStdinRequest>,
    ) -> ServiceResult<CloseExecutionStdinResponse> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        self.engine
            .execution(&who, &req.sandbox_id, &req.execution_id)
            .map_err(to_connect)?
            .close_stdin()
            .await
            .map_err(to_connect)?;
        Response::ok(CloseExecutionStdinResponse::default())
    }

    async fn run_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, RunExecutionRequest>,
    ) -> ServiceResult<ServiceStream<ExecutionStreamEvent>> {
        // The call's server time is measured from here (`server_time_us` on `finished`).
        let entered = std::time::Instant::now();
        let who = who(&ctx)?;
        crate::api::run::run_execution(self, who, request.to_owned_message(), entered).await
    }

    async fn stream_execution(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, StreamExecutionRequest>,
    ) -> ServiceResult<ServiceStream<ExecutionStreamEvent>> {
        let who = who(&ctx)?;
        let req = request.to_owned_message();
        let exe = self
            .engine
            .execution(&who, &req.sandbox_id, &req.execution_id)
            .map_err(to_connect)?;
        let exec_id = exe.id().to_string();
        let items = exe
            .stream(
                req.after_sequence,
                (req.stdout_offset, req.stderr_offset),
                !req.no_follow,
            )
            .map_err(to_connect)?;
        Response::ok(Box::pin(items.map(move |item| {
            item.map_err(to_connect)
                .map(|item| stream_event(&exec_id, item))
        })))
    }
}

/// What CreateExecution and RunExecution ask for, as the engine takes it.
pub(crate) fn exec_request(
    req: CreateExecutionRequest,
    who: &crate::identity::auth::Principal,
) -> ExecRequest {
    ExecRequest {
        sandbox_id: req.sandbox_id,
        command: req.command,
        env: req.env.into_iter().collect(),
        cwd: req.cwd,
        timeout_seconds: req.timeout_seconds,
        attach_stdin: req.attach_stdin,
        tty: req.tty || req.kind == ExecutionKind::EXECUTION_KIND_INTERACTIVE,
        owner: who.owner(),
        tty_size: crate::console::tty_size(req.tty_cols, req.tty_rows),
    }
}

/// InspectExecution's answer (RunExecution's `finished` too, with empty tails).
pub(crate) fn inspect_msg(i: crate::engine::Inspection) -> InspectExecutionResponse {
    let observability: Struct = [
        (
            "stdout_bytes".to_string(),
            Value::from(i.stdout_bytes as f64),
        ),
        (
            "stderr_bytes".to_string(),
            Value::from(i.stderr_bytes as f64),
        ),
        (
            "output_log".to_string(),
            Value::from(i.log_path.display().to_string()),
        ),
    ]
    .into_iter()
    .collect();
    InspectExecutionResponse {
        message: i.execution.message.clone(),
        stdout: String::from_utf8_lossy(&i.stdout_tail).into_owned(),
        stderr: String::from_utf8_lossy(&i.stderr_tail).into_owned(),
        trace_id: i.execution.trace_id.clone(),
        policy_hash: i.policy_hash,
        image_ref: i.image_ref,
        image_digest: i.image_digest,
        stdout_bytes: i.stdout_bytes,
        stderr_bytes: i.stderr_bytes,
        retained_bytes_dropped: i.output.dropped_bytes,
        output_truncated: i.output.dropped_bytes > 0,
        output_expired: i.output.expired_at > 0,
        launched_vm: false,
        observability: observability.into(),
        execution: execution_msg(&i.execution).into(),
        ..Default::default()
    }
}

pub(crate) fn stream_event(exec_id: &str, item: StreamItem) -> ExecutionStreamEvent {
    use cleanroom_proto::cleanroom::v1::__buffa::oneof::execution_stream_event::Payload;
    let (sequence, payload) = match item {
        StreamItem::Output {
            seq,
            stdout,
            offset,
            data,
        } => (
            seq,
            Payload::from(OutputChunk {
                stream: if stdout {
                    OutputStream::OUTPUT_STREAM_STDOUT
                } else {
                    OutputStream::OUTPUT_STREAM_STDERR
                }
                .into(),
                offset,
                data,
                ..Default::default()
            }),
        ),
        StreamItem::Exit { seq, exit } => (
            seq,
            Payload::from(ExecutionExit {
                status: exit.status.into(),
                exit_code: exit.exit_code,
                message: exit.message,
                code: exit.code,
                ..Default::default()
            }),
        ),
        StreamItem::Warning { seq, code, message } => (
            seq,
            Payload::from(Warning {
                code,
                message,
                ..Default::default()
            }),
        ),
    };
    ExecutionStreamEvent {
        execution_id: exec_id.to_string(),
        sequence,
        payload: Some(payload),
        ..Default::default()
    }
}
