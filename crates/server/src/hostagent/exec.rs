//! `Exec` and `ExecStream`: one native `RunExecution` each (a batch execution in the
//! sandbox, output retained as for any execution), its events translated.

use super::{call, invalid, HostAgent};
use crate::identity::auth::Principal;
use cleanroom_proto::cleanroom::v1 as cr;
use cleanroom_proto::cleanroom::v1::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_proto::hostagent::v1::__buffa::oneof::{exec_stream_data, exec_stream_response};
use cleanroom_proto::hostagent::v1::*;
use connectrpc::{ConnectError, Response, ServiceResult, ServiceStream};
use futures::StreamExt;

/// Bytes of each of stdout and stderr `Exec` answers with (its message has no way to say
/// "truncated" but stderr: a note is appended there). `ExecStream` carries everything.
pub const MAX_COLLECTED: usize = 4 << 20;
/// The seed's default command timeout.
const DEFAULT_TIMEOUT_SEC: i32 = 30;

/// The native request for `cmd args` with the seed's timeout rule (0: 30 s).
fn request(
    id: String,
    cmd: String,
    args: Vec<String>,
    timeout_sec: i32,
) -> Result<cr::RunExecutionRequest, ConnectError> {
    if cmd.is_empty() {
        return Err(invalid("cmd", "cmd is required"));
    }
    let timeout = match timeout_sec {
        0 => DEFAULT_TIMEOUT_SEC,
        t if t < 0 => return Err(invalid("timeout_sec", "timeout_sec must not be negative")),
        t => t,
    };
    let mut command = vec![cmd];
    command.extend(args);
    Ok(cr::RunExecutionRequest {
        execution: cr::CreateExecutionRequest {
            sandbox_id: id,
            command,
            timeout_seconds: u32::try_from(timeout).unwrap_or(30),
            kind: cr::ExecutionKind::EXECUTION_KIND_BATCH.into(),
            ..Default::default()
        }
        .into(),
        ..Default::default()
    })
}

/// An exit the seed can carry: the code, and for an execution that did not exit on its
/// own (timed out, canceled, failed to start) its message as `error`.
fn end_of(x: &cr::ExecutionExit) -> (i32, String) {
    let clean = x.status.to_i32() == cr::ExecutionStatus::EXECUTION_STATUS_SUCCEEDED as i32
        || (x.status.to_i32() == cr::ExecutionStatus::EXECUTION_STATUS_FAILED as i32
            && x.code.is_empty());
    let error = if clean {
        String::new()
    } else if x.code.is_empty() {
        x.message.clone()
    } else {
        format!("{}: {}", x.code, x.message)
    };
    (x.exit_code, error)
}

/// `Exec`: the output collected (bounded), the exit code.
pub(super) async fn collected(
    svc: &HostAgent,
    who: &Principal,
    id: String,
    cmd: String,
    args: Vec<String>,
    timeout_sec: i32,
) -> ServiceResult<ExecResponse> {
    let req = request(id, cmd, args, timeout_sec)?;
    let mut events = call!(svc.api, who, ExecutionService::run_execution, req)?;
    let (mut out, mut err, mut cut) = (Vec::new(), Vec::new(), false);
    let mut exit = None;
    while let Some(ev) = events.next().await {
        match ev?.payload {
            Some(Payload::Output(o)) => {
                let to = if o.stream == cr::OutputStream::OUTPUT_STREAM_STDERR {
                    &mut err
                } else {
                    &mut out
                };
                let room = MAX_COLLECTED.saturating_sub(to.len());
                cut |= o.data.len() > room;
                to.extend_from_slice(&o.data[..o.data.len().min(room)]);
            }
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    let x = exit
        .ok_or_else(|| ConnectError::internal("the execution's stream ended without its exit"))?;
    let (code, error) = end_of(&x);
    if cut {
        err.extend_from_slice(
            format!("\n[cleanroom: output past {MAX_COLLECTED} bytes per stream not included; ExecStream carries all of it]\n").as_bytes(),
        );
    }
    if !error.is_empty() {
        err.extend_from_slice(format!("\n[cleanroom: {error}]\n").as_bytes());
    }
    Response::ok(ExecResponse {
        stdout: out,
        stderr: err,
        exit_code: code,
        ..Default::default()
    })
}

/// `ExecStream`: `start` (pid 0: an execution has an id, not a host pid), then output as
/// it comes, then `end`.
pub(super) async fn streamed(
    svc: &HostAgent,
    who: &Principal,
    id: String,
    cmd: String,
    args: Vec<String>,
    timeout_sec: i32,
) -> ServiceResult<ServiceStream<ExecStreamResponse>> {
    let req = request(id, cmd, args, timeout_sec)?;
    let events = call!(svc.api, who, ExecutionService::run_execution, req)?;
    let start = futures::stream::once(async {
        Ok(ExecStreamResponse {
            event: Some(exec_stream_response::Event::Start(Box::default())),
            ..Default::default()
        })
    });
    let rest = events.filter_map(|ev| async move {
        let event = match ev {
            Err(e) => return Some(Err(e)),
            Ok(ev) => match ev.payload {
                Some(Payload::Output(o)) => {
                    let data = o.data.to_vec();
                    let output = if o.stream == cr::OutputStream::OUTPUT_STREAM_STDERR {
                        exec_stream_data::Output::Stderr(data)
                    } else {
                        exec_stream_data::Output::Stdout(data)
                    };
                    exec_stream_response::Event::Data(Box::new(ExecStreamData {
                        output: Some(output),
                        ..Default::default()
                    }))
                }
                Some(Payload::Exit(x)) => {
                    let (exit_code, error) = end_of(&x);
                    exec_stream_response::Event::End(Box::new(ExecStreamEnd {
                        exit_code,
                        error,
                        ..Default::default()
                    }))
                }
                _ => return None,
            },
        };
        Some(Ok(ExecStreamResponse {
            event: Some(event),
            ..Default::default()
        }))
    });
    Response::ok(Box::pin(start.chain(rest)) as ServiceStream<ExecStreamResponse>)
}
