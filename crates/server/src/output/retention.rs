//! Retention GC of execution output logs.
//!
//! Logs of *finished* executions of *stopped* (or failed) sandboxes are deleted when they
//! are older than `serve --output-log-max-age-secs` (default 7 days), and — oldest first —
//! while all logs together exceed `serve --output-log-max-mb` (default 10 GiB). A deleted
//! log is marked in the store (`execution_output.expired_at`), so `InspectExecution` says
//! `output_expired` and `StreamExecution` answers the stable code `output_expired` instead
//! of an I/O error. Logs of running executions and of live sandboxes are never touched;
//! their growth is bounded by [`crate::output::quota`] instead.

use crate::model::error::{EngineError, ErrorCode};
use crate::model::status::sandbox as ss;
use crate::output::execlog;
use crate::output::quota::{logs_size, Retention};
use crate::store::{now_micros, Store};
use std::path::Path;

/// The error for a stream of output the GC deleted.
pub fn expired(execution_id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::OutputExpired,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::status::execution as es;
    use crate::output::quota::RetentionConfig;
    use crate::store::SandboxRow;
    use std::time::Duration;

    fn setup(
        dir: &Path,
        store: &Store,
        sandbox: &str,
        status: crate::model::status::SandboxStatus,
        execs: &[(&str, i64, usize)],
    ) {
        store
            .insert_sandbox(
                &SandboxRow {
                    id: sandbox.into(),
                    status,
                    backend: "linux".into(),
                    policy_hash: String::new(),
                    policy: crate::store::StoredPolicy::decode("{}"),
                    created_at: 1,
                    updated_at: 1,
                    last_execution_id: String::new(),
                    active_execution_id: String::new(),
                    message: String::new(),
                    provisioned: Default::default(),
                    image_ref: String::new(),
                    image_digest: String::new(),
                    owner: "uid:0".into(),
                    labels: Default::default(),
                },
                crate::store::SandboxCaps::default(),
            )
            .unwrap();
        for (id, age_secs, size) in execs {
            store
                .insert_execution(&crate::store::execution_row_for_test(
                    id,
                    sandbox,
                    "uid:0",
                    es::QUEUED,
                ))
                .unwrap();
            store.finish_execution(id, es::SUCCEEDED, 0, "").unwrap();
            // Backdate the finish.
            let at = now_micros() - age_secs * 1_000_000;
            store.backdate_finish_for_test(id, at);
            std::fs::write(execlog::path_for(dir, id), vec![b'x'; *size]).unwrap();
        }
    }

    #[test]
    fn gc_deletes_old_and_oversized_logs_of_stopped_sandboxes_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        setup(
            &logs,
            &store,
            "sbx_live",
            ss::READY,
            &[("exe_live", 999_999, 100)],
        );
        setup(
            &logs,
            &store,
            "sbx_gone",
            ss::STOPPED,
            &[
                ("exe_old", 1000, 100),
                ("exe_mid", 50, 300),
                ("exe_new", 10, 300),
            ],
        );
        let r = Retention::new(&logs);
        r.set_config(RetentionConfig {
            max_total_bytes: 500,
            max_age: Duration::from_secs(100),
            ..Default::default()
        });
        let rep = gc(&store, &logs, &r).unwrap();
        // exe_old by age; exe_mid because 100 + 300 + 300 (+100 live) > 500.
        assert_eq!(rep.removed, 2, "{rep:?}");
        assert_eq!(rep.total_bytes, 400);
        assert_eq!(r.total(), 400);
        for (id, gone) in [
            ("exe_old", true),
            ("exe_mid", true),
            ("exe_new", false),
            ("exe_live", false),
        ] {
            assert_eq!(!execlog::path_for(&logs, id).exists(), gone, "{id}");
            assert_eq!(store.output_state(id).unwrap().expired_at > 0, gone, "{id}");
        }
        // A second pass has nothing to do.
        assert_eq!(gc(&store, &logs, &r).unwrap().removed, 0);
    }
}
