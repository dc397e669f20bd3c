//! Making a sandbox (CreateSandbox's work, shared) and `RunExecution`: make or take a
//! sandbox, start a command in it and stream its output in one call.
//!
//! Why one call: `cleanroom exec -- true` used five round trips (create, create execution,
//! stream, inspect for the local record, terminate), each a hand-off between the client and
//! the server that an idle machine pays wake-up latency for. Here the server chains the
//! steps itself, waits for the execution's final row before its last message (the client
//! no longer polls InspectExecution for it) and starts the teardown the caller asked for.

use crate::api::{to_connect, Api};
use crate::api_exec::{exec_request, inspect_msg, stream_event};
use crate::auth::Principal;
use crate::engine::pools::pending::Taken;
use crate::engine::StreamItem;
use crate::error::EngineError;
use crate::store::SandboxRow;
use cleanroom_proto::cleanroom::v1::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{ConnectError, Response, ServiceResult, ServiceStream};
use futures::stream::BoxStream;
use futures::StreamExt;
use std::time::Instant;

/// CreateSandbox's work: validate, create or claim (or restore from a snapshot), charge the
/// image, start the lifetime clocks. Returns the sandbox and the bootstrap its policy asks
/// the client to perform before a workload.
pub(crate) async fn create(
    api: &Api,
    who: &Principal,
    req: &CreateSandboxRequest,
) -> Result<(SandboxRow, Option<Bootstrap>), ConnectError> {
    match make(api, who, req, false).await? {
        (Taken::Made(row), bootstrap) => Ok((row, bootstrap)),
        (Taken::Pending(p), bootstrap) => Ok((commit_alone(api, p, req)?, bootstrap)),
    }
}

/// [`create`], where a pool's sandbox may be only taken (`defer`, see
/// [`crate::engine::pools::pending`]): its claim is then the caller's to commit.
async fn make(
    api: &Api,
    who: &Principal,
    req: &CreateSandboxRequest,
    defer: bool,
) -> Result<(Taken, Option<Bootstrap>), ConnectError> {
    crate::engine::lifetimes::check_seconds("ttl_seconds", req.ttl_seconds)
        .and_then(|()| {
            crate::engine::lifetimes::check_seconds(
                "idle_timeout_seconds",
                req.idle_timeout_seconds,
            )
        })
        .and_then(|()| {
            crate::store::labels::check(req.labels.iter())
                .map_err(|m| EngineError::invalid(m).with("field", "labels"))
        })
        .map_err(to_connect)?;
    let l = req.limits.as_option().cloned().unwrap_or_default();
    let limits = crate::limits::RequestedLimits {
        memory_bytes: l.memory_bytes,
        pids: l.pids,
        cpu_millis: l.cpu_millis,
        disk_bytes: l.disk_bytes,
        output_bytes: l.output_bytes,
    };
    let binding = crate::attest::AgentBinding::parse(&req.agent_public_key, &req.delegation_chain)
        .map_err(to_connect)?;
    let restored = !req.from_snapshot.is_empty();
    let taken = if !restored {
        let policy_yaml = if req.learn {
            cleanroom_policy::ask::learning_yaml(&req.policy_yaml)
                .map_err(|e| to_connect(e.into()))?
        } else {
            req.policy_yaml.clone()
        };
        let lockfiles = req
            .lockfiles
            .iter()
            .map(|(k, v)| (k.clone(), v.to_vec()))
            .collect();
        api.engine
            .create_or_take(
                who,
                api.caps,
                crate::engine::pools::claim::CreateRequest {
                    policy_yaml: &policy_yaml,
                    image_ref: &req.image_ref,
                    requested: limits,
                    binding: &binding,
                    use_pools: !req.no_pool,
                    lockfiles: &lockfiles,
                },
                defer,
            )
            .await
    } else {
        crate::api_snapshots::create_from(&api.engine, who, api.caps, req, limits)
            .await
            .map(Taken::Made)
    }
    .map_err(to_connect)?;
    let finish = || -> Result<Option<Bootstrap>, ConnectError> {
        let row = match &taken {
            Taken::Pending(p) => p.row(),
            Taken::Made(row) => {
                // A restored sandbox is READY before its binding is written.
                if restored {
                    api.engine
                        .bind_sandbox(row, &binding, "")
                        .map_err(to_connect)?;
                }
                // (A pending claim's commit holds the image for the claimer, and its
                // clocks start once it is committed: a sandbox given back to its pool
                // must not carry them.)
                api.engine
                    .claim_image(who, &row.image_digest)
                    .map_err(to_connect)?;
                start_clocks(api, row, req)?;
                row
            }
        };
        crate::bootstrap::plan_stored(&row.id, &row.policy).map_err(to_connect)
    };
    match finish() {
        Ok(bootstrap) => Ok((taken, bootstrap)),
        Err(e) => {
            // A sandbox made here whose binding, image hold or clocks cannot be recorded
            // is taken down: the caller gets an error, not its id, and it must not run
            // unbounded. (A pending claim is dropped: the sandbox goes back to its pool.)
            if let Taken::Made(row) = &taken {
                let _ = api.engine.terminate_sandbox_in_background(&row.id);
            }
            Err(e)
        }
    }
}

/// The sandbox's lifetime clocks (TTL, idle timeout) as the request, its policy or the
/// server's defaults set them, and the request's labels (checked in [`make`]): both are
/// the caller's, so a pool's sandbox gets them only once its claim is committed.
fn start_clocks(
    api: &Api,
    row: &SandboxRow,
    req: &CreateSandboxRequest,
) -> Result<(), ConnectError> {
    if !req.labels.is_empty() {
        let labels = req
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        api.engine
            .store
            .set_sandbox_labels(&row.id, &labels)
            .map_err(|e| to_connect(e.into()))?;
    }
    api.engine
        .init_lifetime(row, req.ttl_seconds, req.idle_timeout_seconds)
        .map_err(to_connect)
}

/// Commit a pending claim made without a command, and start its clocks.
fn commit_alone(
    api: &Api,
    p: crate::engine::pools::pending::PendingClaim,
    req: &CreateSandboxRequest,
) -> Result<SandboxRow, ConnectError> {
    let row = p.commit().map_err(to_connect)?;
    start_clocks(api, &row, req)?;
    Ok(row)
}

/// A pooled `RunExecution` whose command could not be started may have committed its claim
/// all the same (a process ran, or the failure was recorded as the caller's execution): the
/// sandbox is then the caller's, unknown to them but by the error's `sandbox_id`. It is torn
/// down as `terminate_on_exit` asks, or else gets its lifetime clocks — never left running
/// unbounded and charged to its owner. A claim given back to its pool is the pool's again.
fn settle_failed_claim(
    api: &Api,
    who: &Principal,
    row: &SandboxRow,
    req: &CreateSandboxRequest,
    terminate_on_exit: bool,
) {
    let claimed = api
        .engine
        .get_sandbox(&row.id)
        .is_ok_and(|now| now.owner == who.name);
    if claimed && (terminate_on_exit || start_clocks(api, row, req).is_err()) {
        if let Err(e) = api.engine.terminate_sandbox_in_background(&row.id) {
            tracing::warn!(sandbox_id = %row.id, error = %e, "could not tear down the sandbox of a failed start");
        }
    }
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
    let create_req = req.create.as_option().cloned().unwrap_or_default();
    let (row, bootstrap, mut unseen, mut pending) = if made {
        // A request refused anyway is refused before a sandbox is made or taken.
        crate::guest::validate(&exec_request(exec.clone(), &who)).map_err(to_connect)?;
        let (taken, bootstrap) = make(api, &who, &create_req, true).await?;
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
            commit_alone(api, p, &create_req)?;
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
                settle_failed_claim(api, &who, &row, &create_req, req.terminate_on_exit);
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
        if let Err(e) = start_clocks(api, &row, &create_req) {
            let _ = api.engine.terminate_sandbox_in_background(&row.id);
            return Err(e);
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
