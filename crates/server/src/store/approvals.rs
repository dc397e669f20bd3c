//! Event queries for egress approvals (the effective allow set is derived from events).

use super::{event_from, EventRow, Result, Store};
use rusqlite::params;

/// Most decision events read for one sandbox (each is one principal's answer; the open
/// requests per sandbox are capped, so this is far beyond any real sandbox).
const MAX_DECISIONS: i64 = 100_000;

impl Store {
    /// A sandbox's events of one type, oldest first.
    pub fn events_of_kind(&self, sandbox_id: &str, kind: &str) -> Result<Vec<EventRow>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT sandbox_seq, sandbox_id, execution_id, kind, at, sandbox_status, execution_status, message, attributes FROM events WHERE sandbox_id = ?1 AND kind = ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = st.query_map(params![sandbox_id, kind, MAX_DECISIONS], event_from)?;
            rows.collect()
        })
    }
}
