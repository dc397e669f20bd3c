//! Retained-output bookkeeping: bytes not retained and logs expired by retention GC.

use super::*;

/// What happened to an execution's retained output (see `crate::output::quota`, `crate::output::retention`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputState {
    /// Output bytes not retained (over quota or a server watermark).
    pub dropped_bytes: u64,
    /// When the log was deleted by retention GC (0: still there).
    pub expired_at: i64,
}

impl Store {
    pub fn set_output_dropped(&self, execution_id: &str, bytes: u64) -> Result<()> {
        self.with(|c| {
            c.prepare_cached(
                "INSERT INTO execution_output (execution_id, dropped_bytes) VALUES (?1, ?2)
                 ON CONFLICT(execution_id) DO UPDATE SET dropped_bytes = ?2",
            )?
            .execute(params![execution_id, bytes as i64])
            .map(drop)
        })
    }

    pub fn mark_output_expired(&self, execution_id: &str) -> Result<()> {
        self.with(|c| {
            c.prepare_cached(
                "INSERT INTO execution_output (execution_id, expired_at) VALUES (?1, ?2)
                 ON CONFLICT(execution_id) DO UPDATE SET expired_at = ?2",
            )?
            .execute(params![execution_id, now_micros()])
            .map(drop)
        })
    }

    pub fn output_state(&self, execution_id: &str) -> Result<OutputState> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT dropped_bytes, expired_at FROM execution_output WHERE execution_id = ?1",
            )?
            .query_row([execution_id], |r| {
                Ok(OutputState {
                    dropped_bytes: r.get::<_, i64>(0)?.max(0) as u64,
                    expired_at: r.get(1)?,
                })
            })
            .optional()
            .map(Option::unwrap_or_default)
        })
    }

    /// Finished executions of sandboxes in one of `sandbox_statuses` whose logs were not
    /// expired yet, oldest finish first: `(execution_id, finished_at)`.
    pub fn expirable_logs(&self, sandbox_statuses: &[SandboxStatus]) -> Result<Vec<(String, i64)>> {
        let list = status_list(sandbox_statuses);
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT e.id, e.finished_at FROM executions e
                 JOIN sandboxes s ON s.id = e.sandbox_id
                 LEFT JOIN execution_output o ON o.execution_id = e.id
                 WHERE e.finished_at > 0 AND s.status IN ({list})
                   AND COALESCE(o.expired_at, 0) = 0
                 ORDER BY e.finished_at, e.id"
            ))?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
    }

    #[cfg(test)]
    pub fn backdate_finish_for_test(&self, id: &str, finished_at: i64) {
        self.with(|c| {
            c.prepare_cached("UPDATE executions SET finished_at = ?2 WHERE id = ?1")?
                .execute(params![id, finished_at])
        })
        .unwrap();
    }
}
