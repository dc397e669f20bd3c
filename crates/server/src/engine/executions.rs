//! Executions: start one (the supervisor drives it from there), find and inspect it,
//! cancel it, feed its stdin, and stream its output from the durable log.

use super::events::EventLog;
use super::pools::pending::PendingClaim;
use super::{Engine, ExecRequest, Inspection, LiveExec, StreamItem, DEFAULT_GRACE};
use crate::engine::guest;
use crate::engine::supervisor::{self, Run};
use crate::model::error::EngineError;
use crate::model::ids;
use crate::model::status::{execution as es, sandbox as ss};
use crate::model::sync::lock;
use crate::output::execlog::{self, ExitRecord, LogReader, LogWriter};
use crate::store::{now_micros, ExecutionRow, SandboxRow};
use cleanroom_backend::ProcessSpec;
use cleanroom_vocab::ErrorCode;
use futures::stream::BoxStream;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};

/// Bytes of each stream InspectExecution returns (the tail).
const INSPECT_TAIL: u64 = 1 << 20;

impl Engine {
    /// Start a command. The execution is RUNNING when this returns.
    pub(in crate::engine) async fn create_execution(
        self: &Arc<Self>,
        req: ExecRequest,
    ) -> Result<ExecutionRow, EngineError> {
        guest::validate(&req)?;
        let sandbox = self.get_sandbox(&req.sandbox_id)?;
        self.start_in(&sandbox, req, None).await
    }

    /// [`Engine::create_execution`] in `sandbox`, a row the caller has just read or made
    /// (`RunExecution`'s ownership check, its create or claim): the sandbox is not read
    /// again on the way to the spawn. With `claim`, the sandbox is a pool's taken for the
    /// caller, and the claim is committed with the execution's start
    /// ([`super::pools::pending`]).
    pub async fn create_execution_in(
        self: &Arc<Self>,
        sandbox: &SandboxRow,
        req: ExecRequest,
        claim: Option<PendingClaim>,
    ) -> Result<ExecutionRow, EngineError> {
        guest::validate(&req)?;
        if req.sandbox_id != sandbox.id {
            return Err(EngineError::invalid("the execution names another sandbox"));
        }
        self.start_in(sandbox, req, claim).await
    }

    /// [`Engine::start_unmeasured`], measured for `/metrics` ([`crate::metrics`]).
    async fn start_in(
        self: &Arc<Self>,
        sandbox: &SandboxRow,
        req: ExecRequest,
        claim: Option<PendingClaim>,
    ) -> Result<ExecutionRow, EngineError> {
        let mut measured = crate::metrics::observe(crate::metrics::Op::Exec);
        let started = self.start_unmeasured(sandbox, req, claim).await;
        if started.is_ok() {
            measured.ok();
            // A suspend that passed its idle check between our READY check and the
            // execution becoming live froze the sandbox under it: thaw it now (a suspend
            // after this point sees the live execution and leaves it alone).
            if let Err(e) = self.wake_if_suspended(&sandbox.id, "exec").await {
                tracing::warn!(sandbox_id = %sandbox.id, error = %e, "could not resume a sandbox suspended under a starting exec");
            }
        }
        started
    }

    async fn start_unmeasured(
        self: &Arc<Self>,
        sandbox: &SandboxRow,
        req: ExecRequest,
        claim: Option<PendingClaim>,
    ) -> Result<ExecutionRow, EngineError> {
        // A sandbox suspended on idle is resumed by its next exec (a console is one).
        let woken;
        let sandbox =
            if sandbox.status == ss::PAUSED && self.wake_if_suspended(&sandbox.id, "exec").await? {
                woken = self.get_sandbox(&sandbox.id)?;
                &woken
            } else {
                sandbox
            };
        if sandbox.status != ss::READY {
            return Err(super::pause::not_ready(sandbox));
        }
        let id = ids::execution_id();
        let cwd = if req.cwd.is_empty() {
            self.backend.guest_layout().workspace.to_string()
        } else {
            req.cwd.clone()
        };
        // The complete environment before anything exists: too large is the caller's
        // `invalid_argument`, not a failed launch.
        let env = guest::environment(
            guest::Sources {
                sandbox_id: &sandbox.id,
                execution_id: &id,
                policy_env: self.compiled_policy(sandbox)?.env.clone(),
                egress_env: self.egress.guest_env(&sandbox.id),
            },
            &req.env,
        )?;
        let created_at = now_micros();
        let row = ExecutionRow {
            id: id.clone(),
            sandbox_id: sandbox.id.clone(),
            status: es::RUNNING,
            command: req.command.clone(),
            exit_code: 0,
            created_at,
            started_at: created_at,
            finished_at: 0,
            message: String::new(),
            cwd: cwd.clone(),
            tty: req.tty,
            kind: if req.tty { 2 } else { 1 },
            // The caller's trace (docs/traces.md), else a new one.
            trace_id: crate::telemetry::propagate::current_trace_id()
                .map_or_else(ids::trace_id, |t| t.to_string()),
            owner: req.owner.clone(),
        };
        let spec = ProcessSpec {
            argv: req.command.clone(),
            env,
            cwd,
            stdin: req.attach_stdin && !req.tty,
            tty: req.tty.then_some(cleanroom_backend::TtySize {
                cols: req.tty_size.0,
                rows: req.tty_size.1,
            }),
        };
        // The spawn goes first and the log and the row follow while pid 1 starts the
        // command: neither is on the path to the command's start. A process never outlives
        // a missing row: a row that cannot be written stops it, and a server that dies
        // before writing it reclaims every sandbox on restart (`recover`).
        let spawned = tracing::Instrument::instrument(
            self.backend.spawn(&sandbox.id, spec),
            crate::telemetry::step("backend.spawn", &sandbox.id),
        )
        .await;
        let queued = EventLog::execution_status_row(&sandbox.id, &id, es::QUEUED, "");
        let log_path = execlog::path_for(&self.logs_dir, &id);
        let handle = match (spawned, LogWriter::create(&log_path)) {
            (Ok(h), Ok(writer)) => {
                let running = EventLog::execution_status_row(&sandbox.id, &id, es::RUNNING, "");
                let events = [&queued, &running];
                let started = match claim {
                    Some(claim) => claim.commit_with_start(&row, &events),
                    None => self
                        .store
                        .start_execution(&row, &events)
                        .map_err(Into::into),
                };
                match started {
                    Ok(seq) => self.events.committed(seq),
                    Err(e) => {
                        // No row names this execution: its log would be nobody's.
                        self.stop_unsupervised(&sandbox.id, h.id).await;
                        drop(writer);
                        let _ = std::fs::remove_file(&log_path);
                        return Err(e);
                    }
                }
                (h, writer)
            }
            (spawned, writer) => {
                let msg = match (&spawned, &writer) {
                    (Err(e), _) => format!("could not start the command: {e}"),
                    (_, Err(e)) => format!("could not create the output log: {e}"),
                    _ => unreachable!("both succeeded above"),
                };
                if let Ok(h) = &spawned {
                    self.stop_unsupervised(&sandbox.id, h.id).await;
                }
                if let Ok(writer) = writer {
                    close_failed(writer, &msg);
                }
                // The sandbox is the caller's (as when a claim came first), and the row
                // exists for the id the error names: QUEUED, then FAILED.
                if let Some(mut claim) = claim {
                    if spawned.is_ok() {
                        claim.ran_a_process();
                    }
                    claim.commit()?;
                }
                let started = self.store.start_execution(&row, &[&queued])?;
                self.events.committed(started);
                self.end_failed(&sandbox.id, &id, &msg)?;
                let err = match spawned {
                    Err(e) => EngineError::from(e),
                    Ok(_) => EngineError::internal(msg),
                };
                return Err(err.with("execution_id", &id));
            }
        };
        let (mut handle, writer) = handle;
        let pty = match handle.pty.take().map(crate::output::pty::PtyMaster::new) {
            Some(Ok(m)) => Some(Arc::new(m)),
            Some(Err(e)) => {
                // The process runs but nobody could ever read its terminal: stop it, and
                // end its row (no supervisor will).
                self.stop_unsupervised(&sandbox.id, handle.id).await;
                let msg = format!("terminal: {e}");
                close_failed(writer, &msg);
                self.end_failed(&sandbox.id, &id, &msg)?;
                return Err(EngineError::internal(msg).with("execution_id", &id));
            }
            None => None,
        };
        let (cancel_tx, cancel_rx) = watch::channel(None);
        let (done_tx, done_rx) = watch::channel(false);
        let (recorded_tx, recorded_rx) = watch::channel(supervisor::Recorded::Pending);
        let (warn_tx, warn_rx) = mpsc::unbounded_channel();
        let live = Arc::new(LiveExec {
            sandbox_id: sandbox.id.clone(),
            process: handle.id,
            has_stdin: handle.stdin.is_some(),
            stdin: tokio::sync::Mutex::new(handle.stdin),
            cancel: cancel_tx,
            commit: writer.subscribe(),
            done: done_rx,
            recorded: recorded_rx,
            sandbox_facts: Arc::new((
                sandbox.policy_hash.clone(),
                sandbox.image_ref.clone(),
                sandbox.image_digest.clone(),
            )),
            warnings: warn_tx,
            live_only: writer.live_sender(),
            read_progress: writer.progress_counter(),
            dropped: writer.dropped_counter(),
            console: pty.clone().map(|pty| super::console::Terminal {
                pty,
                process: handle.id,
            }),
        });
        lock(&self.live).insert(id.clone(), live);
        let timeout =
            (req.timeout_seconds > 0).then(|| Duration::from_secs(req.timeout_seconds.into()));
        let supervisor = supervisor::Handle {
            store: self.store.clone(),
            backend: self.backend.clone(),
            retention: self.retention.clone(),
            events: self.events.clone(),
            egress: self.egress.notes(),
        };
        let live_map = self.live.clone();
        let foreground = self.foreground.clone();
        let activity = self.activity.clone();
        activity.touch(&sandbox.id);
        let mut run = Run {
            row: row.clone(),
            process: handle.id,
            timeout,
            warnings: warn_rx,
            budget: self.retention.budget(&sandbox.id),
            recorded: recorded_tx,
        };
        // The execution's span lasts as long as its process; the gateway's decisions
        // meanwhile are its children (crate::telemetry::gateway).
        let (exec_span, traced) = crate::telemetry::gateway::execution(&sandbox.id, &id);
        tokio::spawn(tracing::Instrument::instrument(
            async move {
                let _traced = traced;
                let io = supervisor::Io {
                    stdout: match pty {
                        Some(m) => supervisor::Output::Pty(m),
                        None => supervisor::Output::Pipe(handle.stdout),
                    },
                    stderr: handle.stderr,
                    exit: handle.exit,
                };
                run.drive(&supervisor, io, writer, cancel_rx).await;
                lock(&live_map).remove(&run.row.id);
                foreground.ended();
                // Idle time counts from the end of the last execution.
                activity.touch(&run.row.sandbox_id);
                let _ = done_tx.send(true);
            },
            exec_span,
        ));
        Ok(row)
    }

    /// End the row of an execution no supervisor will follow: FAILED with `msg`, and its
    /// event, in one commit.
    fn end_failed(&self, sandbox_id: &str, id: &str, msg: &str) -> Result<(), EngineError> {
        let failed = EventLog::execution_status_row(sandbox_id, id, es::FAILED, msg);
        let seq = self.store.execution_ended(
            id,
            sandbox_id,
            (es::FAILED, -1, msg),
            now_micros(),
            &failed,
        )?;
        self.events.committed(seq);
        Ok(())
    }

    /// Stop a started process that no supervisor will follow (its row or log could not be
    /// written, or its terminal is unusable): nothing may run in a sandbox that the server
    /// does not account for.
    async fn stop_unsupervised(&self, sandbox_id: &str, process: u64) {
        if let Err(e) = self
            .backend
            .signal(sandbox_id, process, libc::SIGKILL)
            .await
        {
            tracing::error!(sandbox_id, error = %e, "could not stop an unsupervised process");
        }
    }

    /// Whether pool refills should wait a moment ([`super::foreground`]): a
    /// `RunExecution` call is in flight or an execution is running, or one of them ended
    /// less than [`super::foreground::SETTLE`] ago.
    pub(crate) fn foreground_busy(&self) -> bool {
        self.foreground.calls() > 0
            || !lock(&self.live).is_empty()
            || self.foreground.settling().is_some()
    }

    /// Wait until [`Engine::foreground_busy`] is false, or at most `max`.
    pub(crate) async fn foreground_quiet(&self, max: Duration) {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            // Registered before the check: an end in between still wakes us.
            let ended = self.foreground.next_end();
            let now = tokio::time::Instant::now();
            if !self.foreground_busy() || now >= deadline {
                return;
            }
            let left = deadline - now;
            let pause = self.foreground.settling().map_or(left, |s| s.min(left));
            tokio::select! {
                _ = ended => {}
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    fn find_execution(&self, sandbox_id: &str, exec_id: &str) -> Result<ExecutionRow, EngineError> {
        if !ids::looks_valid(exec_id, "exe_") {
            return Err(EngineError::execution_not_found(exec_id));
        }
        let row = self
            .store
            .get_execution(exec_id)?
            .ok_or_else(|| EngineError::execution_not_found(exec_id))?;
        if !sandbox_id.is_empty() && row.sandbox_id != sandbox_id {
            return Err(EngineError::execution_not_found(exec_id).with("sandbox_id", sandbox_id));
        }
        Ok(row)
    }

    pub(in crate::engine) fn get_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<ExecutionRow, EngineError> {
        self.find_execution(sandbox_id, exec_id)
    }

    /// Resolve `--sandbox-id X --last`.
    pub(in crate::engine) fn last_execution(
        &self,
        sandbox_id: &str,
    ) -> Result<ExecutionRow, EngineError> {
        let sbx = self.get_sandbox(sandbox_id)?;
        if sbx.last_execution_id.is_empty() {
            return Err(EngineError::new(
                ErrorCode::ExecutionNotFound,
                format!("sandbox {sandbox_id} has no executions"),
            )
            .with("sandbox_id", sandbox_id));
        }
        self.find_execution(sandbox_id, &sbx.last_execution_id)
    }

    pub(in crate::engine) async fn inspect_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<Inspection, EngineError> {
        self.inspect_with_tails(sandbox_id, exec_id, INSPECT_TAIL)
            .await
    }

    /// Wait until the execution's result is in the store (its row has the final status,
    /// exit code and times: the exit event reaches streams a moment before; the output
    /// log's flush to disk may still be running), then inspect it
    /// without output tails (RunExecution's `finished`: its caller saw the output).
    pub(crate) async fn settled_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<Inspection, EngineError> {
        if let Some(l) = self.live(exec_id) {
            let mut recorded = l.recorded.clone();
            let facts = l.sandbox_facts.clone();
            drop(l);
            // Err: the supervisor is gone without saying so; the row is as final as it gets.
            let stored = recorded
                .wait_for(|r| !matches!(r, supervisor::Recorded::Pending))
                .await
                .map(|r| r.clone());
            // The result as the supervisor stored it: no read of the store or the log.
            if let Ok(supervisor::Recorded::Stored(s)) = stored {
                if sandbox_id.is_empty() || s.row.sandbox_id == sandbox_id {
                    let (policy_hash, image_ref, image_digest) = (*facts).clone();
                    return Ok(Inspection {
                        execution: s.row.clone(),
                        stdout_tail: Vec::new(),
                        stderr_tail: Vec::new(),
                        stdout_bytes: s.stdout_bytes,
                        stderr_bytes: s.stderr_bytes,
                        policy_hash,
                        log_path: execlog::path_for(&self.logs_dir, exec_id),
                        image_ref,
                        image_digest,
                        output: crate::store::OutputState {
                            dropped_bytes: s.dropped_bytes,
                            expired_at: 0,
                        },
                    });
                }
            }
        }
        self.inspect_with_tails(sandbox_id, exec_id, 0).await
    }

    async fn inspect_with_tails(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        tail: u64,
    ) -> Result<Inspection, EngineError> {
        let execution = self.find_execution(sandbox_id, exec_id)?;
        let sandbox = self.store.get_sandbox(&execution.sandbox_id)?;
        let (image_ref, image_digest) = sandbox
            .as_ref()
            .map(|s| (s.image_ref.clone(), s.image_digest.clone()))
            .unwrap_or_default();
        let log_path = execlog::path_for(&self.logs_dir, exec_id);
        let mut output = self.store.output_state(exec_id)?;
        if let Some(l) = self.live(exec_id) {
            output.dropped_bytes = l.dropped.load(std::sync::atomic::Ordering::Relaxed);
        }
        let (stdout_tail, stderr_tail, stdout_bytes, stderr_bytes) = if output.expired_at > 0 {
            Default::default()
        } else {
            // Charged to the sandbox's owner: only its owner (or an admin) inspects it.
            let owner = sandbox
                .as_ref()
                .map_or(&execution.owner, |s| &s.owner)
                .to_string();
            crate::engine::outstream::read_tails_off_runtime(log_path.clone(), tail, &owner)
                .await
                .unwrap_or_default()
        };
        Ok(Inspection {
            execution,
            stdout_tail,
            stderr_tail,
            stdout_bytes,
            stderr_bytes,
            policy_hash: sandbox.map(|s| s.policy_hash).unwrap_or_default(),
            log_path,
            image_ref,
            image_digest,
            output,
        })
    }

    /// SIGTERM now, SIGKILL after `grace`. No-op for finished executions.
    pub(in crate::engine) fn cancel_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        grace: Option<Duration>,
    ) -> Result<ExecutionRow, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        if let Some(l) = self.live(exec_id) {
            l.cancel(
                es::CANCELED,
                "canceled by client",
                grace.unwrap_or(DEFAULT_GRACE),
            );
        }
        Ok(row)
    }

    /// SIGINT to the execution's process, as a terminal's Ctrl-C: no escalation and no
    /// cancel recorded, so the process decides (a shell script that traps it goes on, and
    /// can still be detached from and re-attached to; one that dies of it ends with 130).
    /// A later cancel still works. No-op for finished executions.
    pub(in crate::engine) async fn interrupt_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<ExecutionRow, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        if let Some(l) = self.live(exec_id) {
            // Gone meanwhile: nothing to interrupt.
            let _ = self
                .backend
                .signal(&l.sandbox_id, l.process, libc::SIGINT)
                .await;
        }
        Ok(row)
    }

    pub(in crate::engine) async fn write_stdin(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        data: &[u8],
    ) -> Result<u64, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        let not_open = || {
            EngineError::new(
                ErrorCode::StdinClosed,
                "stdin is not open for this execution",
            )
            .with("execution_id", &row.id)
        };
        let live = self.live(exec_id).ok_or_else(not_open)?;
        if !live.has_stdin {
            return Err(EngineError::new(
                ErrorCode::StdinNotAttached,
                "execution was created without attach_stdin",
            ));
        }
        let mut guard = live.stdin.lock().await;
        let w = guard.as_mut().ok_or_else(not_open)?;
        match w.write_all(data).await {
            Ok(()) => Ok(data.len() as u64),
            // The command stopped reading (exited or closed stdin): that's its choice.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                *guard = None;
                Err(not_open())
            }
            Err(e) => Err(EngineError::internal(format!("write stdin: {e}"))),
        }
    }

    pub(in crate::engine) async fn close_stdin(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<(), EngineError> {
        self.find_execution(sandbox_id, exec_id)?;
        if let Some(live) = self.live(exec_id) {
            live.stdin.lock().await.take();
        }
        Ok(())
    }

    /// Stream an execution's output from its durable log: retained part first, then live.
    pub(in crate::engine) fn stream_execution(
        &self,
        sandbox_id: &str,
        exec_id: &str,
        after_seq: u64,
        stdout_offset: u64,
        stderr_offset: u64,
        follow: bool,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        let row = self.find_execution(sandbox_id, exec_id)?;
        if self.store.output_state(&row.id)?.expired_at > 0 {
            return Err(crate::output::retention::expired(&row.id));
        }
        let from = crate::engine::outstream::From {
            after_seq,
            stdout_offset,
            stderr_offset,
            follow,
        };
        self.open_stream(&row.id, from)
    }

    /// The whole output of an execution this caller has just started (`RunExecution`):
    /// it exists and its log cannot have expired, so neither is looked up.
    pub fn stream_started(
        &self,
        started: &ExecutionRow,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        let from = crate::engine::outstream::From {
            after_seq: 0,
            stdout_offset: 0,
            stderr_offset: 0,
            follow: true,
        };
        self.open_stream(&started.id, from)
    }

    fn open_stream(
        &self,
        exec_id: &str,
        from: crate::engine::outstream::From,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        let path = execlog::path_for(&self.logs_dir, exec_id);
        let reader = LogReader::open(&path)
            .map_err(|e| EngineError::internal(format!("open output log: {e}")))?;
        // Subscribe to live-only output before reading anything (see `outstream`).
        let (commit, live) = match self.live(exec_id) {
            Some(l) => (
                Some(l.commit.clone()),
                Some((l.live_only.subscribe(), l.read_progress.clone())),
            ),
            None => (None, None),
        };
        Ok(crate::engine::outstream::open(
            reader, path, commit, live, from,
        ))
    }
}

/// Close the log of an execution that ends before it ran (or without a supervisor): its
/// exit record says FAILED with `msg`, so that readers of the log see why.
fn close_failed(writer: LogWriter, msg: &str) {
    let _ = writer.close(&ExitRecord {
        status: es::FAILED,
        exit_code: -1,
        message: msg.into(),
        ..Default::default()
    });
}
