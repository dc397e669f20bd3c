//! The running-execution driver: one [`Run`] per execution pumps its output into the
//! durable log (within the sandbox's retention quota), enforces its timeout and cancel,
//! and records the final status.
//!
//! It sees only a narrow [`Handle`] (the store, the backend's `signal`, the retention
//! quotas and the event log), never the whole engine, so it can be reasoned about (and
//! tested) on its own.

use crate::engine::events::EventLog;
use crate::model::status::execution as es;
use crate::output::execlog::{self, ExitRecord, Kind, LogWriter, WarningRecord};
use crate::output::quota::{Retention, SandboxBudget};
use crate::store::{now_micros, ExecutionRow, Store};
use cleanroom_backend::{Backend, ExitStatus};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// Grace between SIGTERM and SIGKILL when none is requested.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
/// After the main process exits, how long output from lingering children is still read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// How long an ended execution waits for gateway decisions still being recorded.
const SETTLE_WARNINGS: Duration = Duration::from_millis(500);
const READ_CHUNK: usize = 256 * 1024;
/// How long live-only output waits for a slow attached client (see `wait_for_live_readers`).
const LIVE_STALL: Duration = Duration::from_secs(2);

/// A read buffer's first size: most commands print little, and zeroing two buffers of
/// [`READ_CHUNK`] for every execution showed in the server's profile.
const FIRST_READ: usize = 16 * 1024;

/// A stream's read buffer: [`FIRST_READ`] bytes, doubling up to [`READ_CHUNK`] each time
/// a read fills it.
struct ReadBuf(Vec<u8>);

impl ReadBuf {
    fn new() -> Self {
        ReadBuf(vec![0; FIRST_READ])
    }

    /// After a read of `n` bytes into the buffer.
    fn read(&mut self, n: usize) {
        if n == self.0.len() && n < READ_CHUNK {
            self.0.resize((n * 2).min(READ_CHUNK), 0);
        }
    }
}

/// Why an execution is being stopped (cancel, timeout, sandbox termination) and how.
#[derive(Debug)]
pub struct Cancel {
    /// The execution status it ends with.
    pub status: i32,
    pub message: String,
    /// Time between SIGTERM and SIGKILL; zero sends SIGKILL at once.
    pub grace: Duration,
}

/// What a supervisor may touch of the server.
#[derive(Clone)]
pub struct Handle {
    pub store: Arc<Store>,
    pub backend: Arc<dyn Backend>,
    pub retention: Arc<Retention>,
    pub events: Arc<EventLog>,
    /// Gateway decisions on their way to becoming warnings.
    pub egress: super::egress_notes::NoteSender,
}

/// Where a process's stdout comes from: its pipe, or (interactive executions) its
/// terminal, whose output is recorded as stdout.
pub enum Output {
    Pipe(pipe::Receiver),
    Pty(Arc<crate::output::pty::PtyMaster>),
}

impl Output {
    async fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Output::Pipe(p) => p.read(buf).await,
            Output::Pty(m) => m.read(buf).await,
        }
    }
}

/// A started process's stdio and exit, as the backend handed them back.
pub struct Io {
    pub stdout: Output,
    pub stderr: pipe::Receiver,
    pub exit: tokio::sync::oneshot::Receiver<ExitStatus>,
}

/// Pacing of live-only output (see `wait_for_live_readers`).
#[derive(Debug, Default)]
struct LiveWait {
    waited_for_first_reader: bool,
    stalled: bool,
}

/// Before each live-only chunk is sent: the supervisor stops reading the sandbox's pipes
/// (so the guest blocks on write, as with any slow reader) until
/// * the first time, a subscriber is attached: `cleanroom exec` subscribes right after
///   `CreateExecution` returns, and output nobody is attached to is simply gone;
/// * the next send would not evict a chunk an attached client has not taken yet.
///
/// A client that is reading is waited for however far behind it is: one still reading
/// the retained part of the log (up to the quota, perhaps a gigabyte behind when the
/// marker was written) takes no live-only chunk until it reaches the marker, yet it is
/// keeping up. So the wait ends only when no subscriber handed its client anything for
/// [`LIVE_STALL`] ([`LogWriter::reader_progress`]); a client stuck that long is let go (it
/// lags and is told so) until it has caught up again. Live delivery therefore never
/// depends on retention. `interrupted` (a cancel or the timeout arrived) ends the wait at
/// once, so the supervisor handles those without delay.
async fn wait_for_live_readers(
    writer: &LogWriter,
    st: &mut LiveWait,
    interrupted: impl Fn() -> bool,
) {
    if !st.waited_for_first_reader {
        st.waited_for_first_reader = true;
        let until = Instant::now() + LIVE_STALL;
        while writer.live_receivers() == 0 && Instant::now() < until && !interrupted() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let full = execlog::LIVE_CAPACITY - 1;
    if st.stalled {
        if writer.live_backlog() < execlog::LIVE_CAPACITY / 2 {
            st.stalled = false;
        } else {
            return;
        }
    }
    let mut seen = writer.reader_progress();
    let mut until = Instant::now() + LIVE_STALL;
    while writer.live_backlog() >= full && !interrupted() {
        let now = writer.reader_progress();
        if now != seen {
            seen = now;
            until = Instant::now() + LIVE_STALL;
        }
        if Instant::now() >= until {
            tracing::debug!(
                backlog = writer.live_backlog(),
                "a client made no progress on live-only output; not waiting for it"
            );
            st.stalled = true;
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Whether a wait for live readers must end now: a cancel arrived or the timeout passed
/// (and neither is being handled yet).
fn interrupted(
    cancel_rx: &watch::Receiver<Option<Arc<Cancel>>>,
    stopping: bool,
    deadline: Instant,
) -> impl Fn() -> bool + '_ {
    move || !stopping && (cancel_rx.has_changed().unwrap_or(true) || Instant::now() >= deadline)
}

/// A finished execution as its supervisor committed it: what `RunExecution`'s final record
/// is made of, without reading back the store or the log.
#[derive(Debug)]
pub struct Settled {
    /// The row as stored (the started row with the result).
    pub row: ExecutionRow,
    /// Bytes of stdout and stderr in the log, and bytes not retained.
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub dropped_bytes: u64,
}

/// The supervisor's word on an execution's result.
#[derive(Debug, Clone, Default)]
pub enum Recorded {
    #[default]
    Pending,
    /// In the store, as given.
    Stored(Arc<Settled>),
    /// The store refused it: readers read what the store has.
    Unstored,
}

/// One running execution's supervisor: pumps output into the log, enforces timeout and
/// cancel, records the final status.
pub struct Run {
    /// The execution's row as it was committed when it started (its id and sandbox's).
    pub row: ExecutionRow,
    pub process: u64,
    pub timeout: Option<Duration>,
    /// Egress denies, failures and notices to record in the output log as warnings.
    pub warnings: mpsc::UnboundedReceiver<WarningRecord>,
    /// The sandbox's output retention quota.
    pub budget: Arc<SandboxBudget>,
    /// Told once the result is in the store.
    pub recorded: watch::Sender<Recorded>,
}

impl Run {
    /// Drive the execution to its end and record the result (log exit record, store row,
    /// `execution.status` event).
    pub async fn drive(
        &mut self,
        handle: &Handle,
        io: Io,
        mut writer: LogWriter,
        mut cancel_rx: watch::Receiver<Option<Arc<Cancel>>>,
    ) {
        let Io {
            mut stdout,
            mut stderr,
            exit: mut exit_rx,
        } = io;
        let (mut out_buf, mut err_buf) = (ReadBuf::new(), ReadBuf::new());
        let (mut out_open, mut err_open) = (true, true);
        let mut exit: Option<Option<ExitStatus>> = None;
        let mut reason: Option<Arc<Cancel>> = None;
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = self.timeout.map(|t| Instant::now() + t).unwrap_or(far);
        let mut kill_at = far;
        let mut drain_until = far;
        let mut write_error: Option<String> = None;
        let mut live_wait = LiveWait::default();
        let budget = self.budget.clone();
        // Retain what the quota allows; returns where the live-only rest starts.
        let record = |w: &mut LogWriter, kind: Kind, data: &[u8], err: &mut Option<String>| {
            if err.is_some() {
                return data.len();
            }
            // Charge only while retaining: after the marker nothing more is kept.
            let charge = if w.truncated() {
                crate::output::quota::Charge {
                    retain: 0,
                    refused: None,
                }
            } else {
                handle.retention.charge(&budget, data.len())
            };
            let why = charge.refused.map(|r| r.to_string()).unwrap_or_default();
            match w.output_charged(kind, data, charge.retain, &why) {
                Ok(n) => n,
                Err(e) => {
                    *err = Some(format!("output log write failed: {e}"));
                    data.len()
                }
            }
        };
        // Warnings are charged like output (an allowed sandbox can cause denies for days);
        // refused ones are live-only.
        let warn = |writer: &mut LogWriter, w: &WarningRecord, err: &mut Option<String>| {
            if err.is_some() {
                return;
            }
            let len = w.code.len() + w.message.len() + 32;
            let res = if writer.truncated() {
                Ok(())
            } else {
                match handle.retention.charge(&budget, len).refused {
                    Some(r) => writer.truncate(&r.to_string()),
                    None => Ok(()),
                }
            };
            if let Err(e) = res.and_then(|_| writer.warning(w)) {
                *err = Some(format!("output log write failed: {e}"));
            }
        };
        loop {
            if exit.is_some() && !out_open && !err_open {
                break;
            }
            tokio::select! {
                r = stdout.read(&mut out_buf.0), if out_open => match r {
                    Ok(n) if n > 0 => {
                        let kept = record(&mut writer, Kind::Stdout, &out_buf.0[..n], &mut write_error);
                        if kept < n {
                            wait_for_live_readers(&writer, &mut live_wait, interrupted(&cancel_rx, reason.is_some(), deadline)).await;
                            writer.live_output(Kind::Stdout, &out_buf.0[kept..n]);
                        }
                        out_buf.read(n);
                    }
                    _ => out_open = false,
                },
                r = stderr.read(&mut err_buf.0), if err_open => match r {
                    Ok(n) if n > 0 => {
                        let kept = record(&mut writer, Kind::Stderr, &err_buf.0[..n], &mut write_error);
                        if kept < n {
                            wait_for_live_readers(&writer, &mut live_wait, interrupted(&cancel_rx, reason.is_some(), deadline)).await;
                            writer.live_output(Kind::Stderr, &err_buf.0[kept..n]);
                        }
                        err_buf.read(n);
                    }
                    _ => err_open = false,
                },
                r = &mut exit_rx, if exit.is_none() => {
                    exit = Some(r.ok());
                    drain_until = Instant::now() + DRAIN_AFTER_EXIT;
                }
                _ = tokio::time::sleep_until(deadline), if reason.is_none() && exit.is_none() && deadline < far => {
                    let secs = self.timeout.map(|t| t.as_secs()).unwrap_or(0);
                    reason = Some(Arc::new(Cancel { status: es::TIMED_OUT, message: format!("timed out after {secs}s"), grace: DEFAULT_GRACE }));
                    kill_at = self.terminate(handle, reason.as_ref()).await;
                }
                r = cancel_rx.changed(), if reason.is_none() && exit.is_none() => {
                    if r.is_ok() {
                        reason = cancel_rx.borrow().clone();
                        kill_at = self.terminate(handle, reason.as_ref()).await;
                    }
                }
                _ = tokio::time::sleep_until(kill_at), if kill_at < far && exit.is_none() => {
                    let _ = handle.backend.signal(&self.row.sandbox_id, self.process, libc::SIGKILL).await;
                    kill_at = far;
                }
                Some(w) = self.warnings.recv() => {
                    warn(&mut writer, &w, &mut write_error);
                }
                _ = tokio::time::sleep_until(drain_until), if drain_until < far => break,
            }
        }

        // Decisions the gateway made before the process ended may still be on their way
        // to this execution's warnings (crate::engine::egress_notes): wait for them,
        // boundedly, so an `exec` whose command failed on a refused connection says why.
        handle.egress.settled(SETTLE_WARNINGS).await;
        while let Ok(w) = self.warnings.try_recv() {
            warn(&mut writer, &w, &mut write_error);
        }

        // A cancel (or sandbox termination) whose kill ended the process before this loop
        // saw the request still names the reason: the end was not the guest's doing. A
        // process that exited on its own keeps its own result.
        let killed = match &exit {
            Some(Some(st)) => st.signal.is_some(),
            _ => true,
        };
        if reason.is_none() && killed {
            reason = cancel_rx.borrow().clone();
        }
        let oom = matches!(&exit, Some(Some(st)) if st.oom_killed) && reason.is_none();
        let (status, exit_code, mut message) = match (exit.flatten(), &reason) {
            (Some(st), Some(r)) => (r.status, st.shell_code(), r.message.clone()),
            (Some(st), None) if st.oom_killed => (
                es::FAILED,
                st.shell_code(),
                "killed by the OOM killer: the sandbox reached its memory limit".to_string(),
            ),
            (Some(st), None) => {
                let code = st.shell_code();
                let msg = match st.signal {
                    Some(sig) => format!("killed by signal {sig}"),
                    None if code == 0 => String::new(),
                    None => format!("exited with code {code}"),
                };
                (
                    if code == 0 { es::SUCCEEDED } else { es::FAILED },
                    code,
                    msg,
                )
            }
            (None, Some(r)) => (r.status, 137, r.message.clone()),
            (None, None) => (
                es::FAILED,
                137,
                "sandbox stopped while the execution was running".to_string(),
            ),
        };
        if let Some(e) = write_error {
            message = if message.is_empty() {
                e
            } else {
                format!("{message}; {e}")
            };
        }
        let writer_dropped = writer.dropped();
        let (stdout_bytes, stderr_bytes) = writer.retained();
        let closed = writer.close_unsynced(&ExitRecord {
            status,
            exit_code,
            message: message.clone(),
            code: if oom {
                execlog::exit_code::OOM_KILLED.into()
            } else {
                String::new()
            },
        });

        let (out_dropped, err_dropped) = writer_dropped;
        if out_dropped + err_dropped > 0 {
            if let Err(e) = handle
                .store
                .set_output_dropped(&self.row.id, out_dropped + err_dropped)
            {
                tracing::error!(execution_id = %self.row.id, error = %e, "could not record dropped output");
            }
        }
        let event =
            EventLog::execution_status_row(&self.row.sandbox_id, &self.row.id, status, &message);
        let finished_at = now_micros();
        let recorded = match handle.store.execution_ended(
            &self.row.id,
            &self.row.sandbox_id,
            (status, exit_code, &message),
            finished_at,
            &event,
        ) {
            Ok(seq) => {
                handle.events.committed(seq);
                let mut row = self.row.clone();
                (row.status, row.exit_code, row.finished_at) = (status, exit_code, finished_at);
                row.message = message;
                Recorded::Stored(Arc::new(Settled {
                    row,
                    stdout_bytes,
                    stderr_bytes,
                    dropped_bytes: out_dropped + err_dropped,
                }))
            }
            Err(e) => {
                tracing::error!(execution_id = %self.row.id, error = %e, "could not record execution result");
                Recorded::Unstored
            }
        };
        self.recorded.send_replace(recorded);
        // The log's flush to disk, off the runtime's threads, after the result is recorded
        // (the store itself commits without fsync: synchronous=NORMAL). The supervisor
        // ends, and `done` fires, only once the log is durable.
        let synced = match closed {
            Ok(file) => tokio::task::spawn_blocking(move || file.sync_data())
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e))),
            Err(e) => Err(e),
        };
        if let Err(e) = synced {
            tracing::error!(execution_id = %self.row.id, error = %e, "could not finish output log");
        }
    }

    /// Send SIGTERM (or SIGKILL with zero grace); returns when SIGKILL is due.
    async fn terminate(&self, handle: &Handle, reason: Option<&Arc<Cancel>>) -> Instant {
        let grace = reason.map(|r| r.grace).unwrap_or(DEFAULT_GRACE);
        let sig = if grace.is_zero() {
            libc::SIGKILL
        } else {
            libc::SIGTERM
        };
        let _ = handle
            .backend
            .signal(&self.row.sandbox_id, self.process, sig)
            .await;
        Instant::now() + grace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_buffer_grows_only_while_reads_fill_it_and_stops_at_the_chunk() {
        let mut b = ReadBuf::new();
        assert_eq!(b.0.len(), FIRST_READ);
        b.read(FIRST_READ - 1);
        assert_eq!(b.0.len(), FIRST_READ, "a partial read does not grow it");
        while b.0.len() < READ_CHUNK {
            let before = b.0.len();
            b.read(before);
            assert_eq!(b.0.len(), (before * 2).min(READ_CHUNK));
        }
        b.read(READ_CHUNK);
        assert_eq!(b.0.len(), READ_CHUNK);
    }
}
