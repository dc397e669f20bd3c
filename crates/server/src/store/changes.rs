//! Sandboxes changed since a moment: what `ListSandboxesRequest.changed_since` reads
//! (docs/api.md), so a live list (the web console) re-reads what changed — not every row
//! — each time something happens.
//!
//! "Changed" is the row's `updated_at`, which every write to a sandbox row stamps: a status
//! change (pause, suspend and stop included), the executions it records, a pool claim's new
//! owner, a stop's message. The rows are read over an index on it, so an answer costs what
//! changed, not how many sandboxes there are.
//!
//! Every answer says where the next one starts ([`Changes::cursor`]): the store's clock at
//! the read, less [`SLACK_MICROS`]. A few writers stamp a row before they reach the store's
//! lock (a create stamps its row, then may wait for volume admission; a claim stamps its
//! new owner), so the next answer looks a little further back and may repeat a row or two
//! rather than miss one. A `since` the store cannot honour — none, or one after its own
//! clock (the clock stepped back, or a made-up time) — gets every row, marked
//! [`Changes::complete`].

use super::{now_micros, sandbox_from, SandboxRow, Store, SANDBOX_COLS};

/// Created with the store: the range read below.
pub(super) const SCHEMA: &str =
    "CREATE INDEX IF NOT EXISTS sandboxes_by_updated ON sandboxes(updated_at);";

/// How far before its read an answer's cursor lies (see the module doc).
pub const SLACK_MICROS: i64 = 10_000_000;

/// The rows changed since a moment, and where the next read starts.
#[derive(Debug)]
pub struct Changes {
    /// Oldest first (by creation).
    pub rows: Vec<SandboxRow>,
    /// Pass as the next `since` (micros).
    pub cursor: i64,
    /// Every row, not only changed ones: the reader replaces what it holds.
    pub complete: bool,
}

impl Store {
    /// The sandboxes whose row changed at or after `since` (micros; `None`: every row).
    pub fn sandboxes_changed_since(&self, since: Option<i64>) -> super::Result<Changes> {
        self.with(|c| {
            let now = now_micros();
            let since = since.filter(|t| *t > 0 && *t <= now);
            let mut st = c.prepare_cached(&format!(
                "SELECT {SANDBOX_COLS} FROM sandboxes WHERE updated_at >= ?1 ORDER BY created_at, id"
            ))?;
            let rows = st
                .query_map([since.unwrap_or(i64::MIN)], |r| {
                    sandbox_from(&self.policies, r)
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Changes {
                rows,
                cursor: now - SLACK_MICROS,
                complete: since.is_none(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::status::SandboxStatus;

    fn row(id: &str, at: i64) -> SandboxRow {
        let mut r = crate::store::tests::row(id, "alice", SandboxStatus::Provisioning);
        r.created_at = at;
        r.updated_at = at;
        r
    }

    #[test]
    fn only_rows_written_since_the_moment_come_back_and_a_status_write_counts() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("state.db")).unwrap();
        let old = now_micros() - 3_600_000_000;
        for id in ["sbx_a", "sbx_b", "sbx_c"] {
            s.insert_sandbox(&row(id, old), Default::default()).unwrap();
        }
        let all = s.sandboxes_changed_since(None).unwrap();
        assert!(all.complete);
        assert_eq!(all.rows.len(), 3);
        // Nothing written since: nothing comes back, and the cursor is before "now".
        let since = old + 1;
        let none = s.sandboxes_changed_since(Some(since)).unwrap();
        assert!(!none.complete && none.rows.is_empty(), "{none:?}");
        assert!(none.cursor <= now_micros() - SLACK_MICROS);
        s.set_sandbox_status("sbx_b", SandboxStatus::Ready, "")
            .unwrap();
        let one = s.sandboxes_changed_since(Some(since)).unwrap();
        let ids: Vec<&str> = one.rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["sbx_b"]);
        assert!(!one.complete);
        // A moment after the store's clock is one it cannot honour: every row.
        let future = s.sandboxes_changed_since(Some(now_micros() + 3_600_000_000));
        let future = future.unwrap();
        assert!(future.complete && future.rows.len() == 3);
    }

    #[test]
    fn the_read_goes_over_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("state.db")).unwrap();
        let plan: String = s
            .with(|c| {
                c.query_row(
                    "EXPLAIN QUERY PLAN SELECT id FROM sandboxes WHERE updated_at >= 5",
                    [],
                    |r| r.get(3),
                )
            })
            .unwrap();
        assert!(plan.contains("sandboxes_by_updated"), "{plan}");
    }
}
