//! Retention GC of execution output logs.
//!
//! Logs of *finished* executions of *stopped* (or failed) sandboxes are deleted when they
//! are older than `serve --output-log-max-age-secs` (default 7 days), and — oldest first —
//! while all logs together exceed `serve --output-log-max-mb` (default 10 GiB). A deleted
//! log is marked in the store (`execution_output.expired_at`), so `InspectExecution` says
//! `output_expired` and `StreamExecution` answers the stable code `output_expired` instead
//! of an I/O error. Logs of running executions and of live sandboxes are never touched;
//! their growth is bounded by [`crate::quota`] instead.

use crate::error::{Class, EngineError};
use crate::execlog;
use crate::quota::{logs_size, Retention};
use crate::status::sandbox as ss;
use crate::store::{now_micros, Store};
use std::path::Path;

/// The error for a stream of output the GC deleted.
pub fn expired(execution_id: &str) -> EngineError {
    EngineError::new(
        Class::FailedPrecondition,
        "output_expired",
        format!(
            "the retained output of {execution_id} was deleted by the server's retention policy"
        ),
    )
    .with("execution_id", execution_id)
}

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GcReport {
    pub removed: u64,
    pub freed_bytes: u64,
    pub total_bytes: u64,
}

/// One GC pass (blocking: SQLite and file system; run it off the async runtime).
pub fn gc(store: &Store, dir: &Path, retention: &Retention) -> Result<GcReport, EngineError> {
    let cfg = retention.config();
    let max_age = i64::try_from(cfg.max_age.as_micros()).unwrap_or(i64::MAX);
    let cutoff = now_micros().saturating_sub(max_age);
    let mut report = GcReport {
        total_bytes: logs_size(dir),
        ..Default::default()
    };
    for (id, finished_at) in store.expirable_logs(&[ss::STOPPED, ss::FAILED])? {
        // Oldest first: once neither rule applies, it applies to no later log either.
        if finished_at > cutoff && report.total_bytes <= cfg.max_total_bytes {
            break;
        }
        let path = execlog::path_for(dir, &id);
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(execution_id = %id, error = %e, "could not delete output log");
                continue;
            }
        }
        store.mark_output_expired(&id)?;
        report.removed += 1;
        report.freed_bytes += size;
        report.total_bytes = report.total_bytes.saturating_sub(size);
    }
    retention.set_total(report.total_bytes);
    Ok(report)
}
