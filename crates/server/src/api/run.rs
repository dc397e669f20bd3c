//! CreateSandbox's request in engine terms ([`crate::engine::create`]) and `RunExecution`:
//! make or take a sandbox, start a command in it and stream its output in one call.
//!
//! Why one call: `cleanroom exec -- true` used five round trips (create, create execution,
//! stream, inspect for the local record, terminate), each a hand-off between the client and
//! the server that an idle machine pays wake-up latency for. Here the server chains the
//! steps itself, waits for the execution's final row before its last message (the client
//! no longer polls InspectExecution for it) and starts the teardown the caller asked for.

use crate::api::exec::{exec_request, inspect_msg, stream_event};
use crate::api::{to_connect, Api};
use crate::engine::create::{CreateSpec, Source};
use crate::engine::pools::pending::Taken;
use crate::engine::StreamItem;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::store::SandboxRow;
use cleanroom_proto::cleanroom::v1::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{ConnectError, Response, ServiceResult, ServiceStream};
use futures::stream::BoxStream;
use futures::StreamExt;
use std::time::Instant;

/// CreateSandbox's work ([`crate::engine::create`]): the sandbox and the bootstrap its
/// policy asks the client to perform before a workload.
pub(crate) async fn create(
    api: &Api,
    who: &Principal,
    req: &CreateSandboxRequest,
) -> Result<(SandboxRow, Option<Bootstrap>), ConnectError> {
    api.engine
        .create_now(who, api.caps, &create_spec(req).map_err(to_connect)?)
        .await
        .map_err(to_connect)
}

/// A `CreateSandboxRequest` in engine terms.
pub(crate) fn create_spec(req: &CreateSandboxRequest) -> Result<CreateSpec, EngineError> {
    let runtime = match req.runtime.trim() {
        "" => None,
        r => Some(r.parse::<cleanroom_vocab::Runtime>().map_err(|_| {
            EngineError::new(
                cleanroom_vocab::ErrorCode::RuntimeUnavailable,
                format!("{r:?} is not a runtime (linux, gvisor)"),
            )
            .with("field", "runtime")
        })?),
    };
    let l = req.limits.as_option().cloned().unwrap_or_default();
    if !req.from_checkpoint.is_empty() && !req.from_snapshot.is_empty() {
        return Err(
            EngineError::invalid("from_checkpoint and from_snapshot cannot both be given")
                .with("field", "from_checkpoint"),
        );
    }
    let source = if !req.from_checkpoint.is_empty() {
        Source::Checkpoint(req.from_checkpoint.clone())
    } else if req.from_snapshot.is_empty() {
        Source::Policy {
            learn: req.learn,
            lockfiles: req
                .lockfiles
                .iter()
                .map(|(k, v)| (k.clone(), v.to_vec()))
                .collect(),
            use_pools: !req.no_pool,
        }
    } else {
        Source::Snapshot(req.from_snapshot.clone())
    };
    Ok(CreateSpec {
        source,
        policy_yaml: req.policy_yaml.clone(),
        image_ref: req.image_ref.clone(),
        limits: crate::budgets::limits::RequestedLimits {
            memory_bytes: l.memory_bytes,
            pids: l.pids,
            cpu_millis: l.cpu_millis,
            disk_bytes: l.disk_bytes,
            output_bytes: l.output_bytes,
        },
        agent_public_key: req.agent_public_key.clone(),
        delegation_chain: req.delegation_chain.clone(),
        ttl_seconds: req.ttl_seconds,
        idle_timeout_seconds: req.idle_timeout_seconds,
        suspend_after_seconds: req.suspend_after_seconds,
        labels: req
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        volumes: req
            .volumes
            .iter()
            .map(|m| cleanroom_policy::VolumeMount {
                name: m.name.clone(),
                path: m.path.clone(),
                read_only: m.read_only,
            })
            .collect(),
        runtime,
        one_shot: false,
    })
}

fn event(execution_id: &str, payload: Payload) -> ExecutionStreamEvent {
    ExecutionStreamEvent {
        execution_id: execution_id.to_string(),
        sequence: 0,
        payload: Some(payload),
        ..Default::default()
    }
}

/// `RunExecution` (see the proto).
pub(crate) async fn run_execution(
    api: &Api,
    who: Principal,
    req: RunExecutionRequest,
    entered: Instant,
) -> ServiceResult<ServiceStream<ExecutionStreamEvent>> {
    // Foreground from here until the stream is dropped: pool refills (among them the one
    // this call's claim starts) wait a moment for it (crate::engine::foreground).
    let busy = api.engine.foreground.enter();
    let mut exec = req.execution.as_option().cloned().unwrap_or_default();
    let made = exec.sandbox_id.is_empty();
    let mut spec =
        create_spec(&req.create.as_option().cloned().unwrap_or_default()).map_err(to_connect)?;
    // Its sandbox ends with the command: a runtime may start it with the command
    // (gvisor: one runsc invocation, `gvisor/oneshot.rs`); never one taken from a pool.
    spec.one_shot = made && req.terminate_on_exit;
    let (row, bootstrap, mut unseen, mut pending) = if made {
        // A request refused anyway is refused before a sandbox is made or taken.
        crate::engine::guest::validate(&exec_request(exec.clone(), &who)).map_err(to_connect)?;
        let (taken, bootstrap) = api
            .engine
            .create(&who, api.caps, &spec, true)
            .await
            .map_err(to_connect)?;
        let (row, pending) = match taken {
            Taken::Made(row) => (row, None),
            Taken::Pending(p) => (p.row().clone(), Some(p)),
        };
        exec.sandbox_id = row.id.clone();
        // From here until `started` is handed over, any way out (an error below, the
        // caller going away while this handler waits) tears a terminate_on_exit sandbox
        // down: nobody else knows it. A pool's sandbox not yet claimed is its pending
        // claim's to give back instead (armed once the claim is committed).
        let unseen = Unseen(
            (req.terminate_on_exit && pending.is_none()).then(|| (api.clone(), row.id.clone())),
        );
        (row, bootstrap, unseen, pending)
    } else {
        if req.create.is_set() || req.terminate_on_exit {
            return Err(to_connect(EngineError::invalid(
                "RunExecution: `create` and `terminate_on_exit` are for a sandbox the call makes; \
                 leave execution.sandbox_id empty to make one",
            )));
        }
        let sbx = api
            .engine
            .sandbox(&who, &exec.sandbox_id)
            .map_err(to_connect)?;
        (sbx.into_row(), None, Unseen(None), None)
    };
    let started = |execution: Option<&crate::store::ExecutionRow>| RunStarted {
        sandbox: api.sandbox_out(&row).into(),
        created: made,
        bootstrap: bootstrap.clone().into(),
        execution: execution.map(crate::api::execution_msg).into(),
        ..Default::default()
    };
    if bootstrap.is_some() {
        // The client performs the bootstrap first (it holds the repository), then
        // CreateExecution: nothing is started, nothing is torn down here.
        if let Some(p) = pending.take() {
            api.engine.commit_alone(p, &spec).map_err(to_connect)?;
        }
        unseen.0 = None;
        let first = event("", Payload::from(started(None)));
        return Response::ok(Box::pin(futures::stream::iter([Ok(first)])));
    }
    // A refused command names the sandbox made for it (torn down with `terminate_on_exit`).
    let fail = |e: EngineError| match made {
        true => to_connect(e.with("sandbox_id", &row.id)),
        false => to_connect(e),
    };
    let claimed_now = pending.is_some();
    let execution = match api
        .engine
        .create_execution_in(&row, exec_request(exec, &who), pending)
        .await
    {
        Ok(execution) => execution,
        Err(e) => {
            if claimed_now {
                api.engine
                    .settle_failed_claim(&who, &row, &spec, req.terminate_on_exit);
            }
            return Err(fail(e));
        }
    };
    if claimed_now {
        if req.terminate_on_exit {
            unseen.0 = Some((api.clone(), row.id.clone()));
        }
        // Unrecorded clocks would leave the sandbox unbounded: fail closed, and take the
        // sandbox (the caller's since the commit, unknown to them yet) down with its command.
        if let Err(e) = api.engine.start_clocks(&row, &spec) {
            let _ = api.engine.terminate_sandbox_in_background(&row.id);
            return Err(to_connect(e));
        }
    }
    let items = api.engine.stream_started(&execution).map_err(fail)?;
    let first = event(&execution.id, Payload::from(started(Some(&execution))));
    let run = Run {
        terminate_on_exit: unseen.0.is_some(),
        unseen,
        api: api.clone(),
        sandbox_id: row.id.clone(),
        exec_id: execution.id.clone(),
        first: Some(first),
        items,
        phase: Phase::Started,
        entered,
        _busy: busy,
    };
    Response::ok(Box::pin(futures::stream::unfold(run, Run::next)))
}

/// Where a run's stream is.
enum Phase {
    Started,
    Events,
    Finished,
    Done,
}

/// A `terminate_on_exit` sandbox made for the call whose id the caller has not been handed
/// yet: dropped armed (a refusal, or the caller went away before `started`), it is torn
/// down — nobody could reach it.
struct Unseen(Option<(Api, String)>);

impl Drop for Unseen {
    fn drop(&mut self) {
        if let Some((api, sandbox_id)) = self.0.take() {
            let _ = api.engine.terminate_sandbox_in_background(&sandbox_id);
        }
    }
}

/// The run's response stream. It is polled by the connection itself (no task of its own:
/// an event of the execution reaches the caller with no extra hand-off between threads),
/// and dropped when the caller goes away (a detach, a crash): then the execution and its
/// sandbox are left as they are, exactly as when it followed with StreamExecution —
/// except before `started` was handed over ([`Unseen`]).
struct Run {
    api: Api,
    sandbox_id: String,
    exec_id: String,
    first: Option<ExecutionStreamEvent>,
    items: BoxStream<'static, Result<StreamItem, EngineError>>,
    unseen: Unseen,
    terminate_on_exit: bool,
    phase: Phase,
    /// When the handler was entered: `finished` carries the server's time since.
    entered: Instant,
    /// This call as foreground work, until the stream is dropped.
    _busy: crate::engine::foreground::Busy,
}

type Item = Result<ExecutionStreamEvent, ConnectError>;

impl Run {
    async fn next(mut self) -> Option<(Item, Run)> {
        match self.phase {
            Phase::Started => {
                self.phase = Phase::Events;
                let first = self.first.take()?;
                // Handed to the caller's stream: from here on the caller knows the sandbox.
                self.unseen.0 = None;
                Some((Ok(first), self))
            }
            Phase::Events => match self.items.next().await {
                Some(Ok(item)) => {
                    if matches!(item, StreamItem::Exit { .. }) {
                        self.phase = Phase::Finished;
                    }
                    Some((Ok(stream_event(&self.exec_id, item)), self))
                }
                Some(Err(e)) => {
                    self.phase = Phase::Done;
                    Some((Err(to_connect(e)), self))
                }
                None => None,
            },
            Phase::Finished => {
                self.phase = Phase::Done;
                // Polled for more after the exit: the caller is still attached.
                let finished = match self
                    .api
                    .engine
                    .settled_execution(&self.sandbox_id, &self.exec_id)
                    .await
                {
                    // Without tails (`settled_execution` reads none): the caller has the
                    // output already.
                    Ok(i) => Ok(event(&self.exec_id, Payload::from(inspect_msg(i)))),
                    Err(e) => Err(to_connect(e)),
                };
                if self.terminate_on_exit {
                    let _ = self
                        .api
                        .engine
                        .terminate_sandbox_after_foreground(&self.sandbox_id);
                }
                // Measured last: everything the server does before the message leaves.
                let finished = finished.map(|mut f| {
                    f.server_time_us = self.entered.elapsed().as_micros() as u64;
                    f
                });
                Some((finished, self))
            }
            Phase::Done => None,
        }
    }
}
