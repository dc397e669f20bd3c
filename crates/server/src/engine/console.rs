//! What the console ([`crate::console`]) may do with an interactive execution: find its
//! terminal, signal it, stream its screen from the durable log.

use super::{Engine, StreamItem};
use crate::model::error::EngineError;
use crate::output::execlog;
use crate::output::pty::PtyMaster;
use futures::stream::BoxStream;
use std::sync::Arc;

/// How much of an interactive execution's past output an attach replays first: enough to
/// redraw a full screen (a re-attach or a second viewer sees what the first one sees).
const REPLAY_TAIL: u64 = 256 * 1024;

/// The terminal of a running interactive execution.
#[derive(Debug, Clone)]
pub struct Terminal {
    pub pty: Arc<PtyMaster>,
    /// The backend's process id (its session leader's process group is signalled).
    pub process: u64,
}

/// Signals a console driver may send (anything else is refused).
pub const CONSOLE_SIGNALS: &[i32] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGKILL,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGTERM,
    libc::SIGCONT,
    libc::SIGTSTP,
    libc::SIGWINCH,
];

impl Engine {
    /// The terminal of a running interactive execution (`None` once it ended).
    pub(in crate::engine) fn terminal(&self, exec_id: &str) -> Option<Terminal> {
        self.live(exec_id).and_then(|l| l.console.clone())
    }

    /// Send an allowed signal to the process group of an interactive execution.
    pub(in crate::engine) async fn signal_terminal(
        &self,
        sandbox_id: &str,
        term: &Terminal,
        signal: i32,
    ) -> Result<(), EngineError> {
        if !CONSOLE_SIGNALS.contains(&signal) {
            return Err(EngineError::invalid(format!(
                "signal {signal} may not be sent"
            )));
        }
        self.backend
            .signal(sandbox_id, term.process, signal)
            .await
            .map_err(EngineError::from)
    }

    /// The execution's output for an attach: the last [`REPLAY_TAIL`] bytes, then live
    /// output until the exit.
    pub(in crate::engine) async fn console_stream(
        &self,
        sandbox_id: &str,
        exec_id: &str,
    ) -> Result<BoxStream<'static, Result<StreamItem, EngineError>>, EngineError> {
        let path = execlog::path_for(&self.logs_dir, exec_id);
        // The read is charged to the sandbox's owner (as an inspect's is).
        let owner = self
            .store
            .get_sandbox(sandbox_id)?
            .map(|s| s.owner.to_string())
            .unwrap_or_default();
        let (_, _, out_total, _) =
            crate::engine::outstream::read_tails_off_runtime(path, 0, &owner)
                .await
                .map_err(|e| EngineError::internal(format!("read output log: {e}")))?;
        let from = out_total.saturating_sub(REPLAY_TAIL);
        // `stderr_offset` far ahead: a terminal writes everything as stdout.
        self.stream_execution(sandbox_id, exec_id, 0, from, u64::MAX, true)
    }
}
