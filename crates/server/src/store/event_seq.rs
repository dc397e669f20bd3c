//! Event numbers per sandbox. A sandbox's events are numbered 1, 2, 3 … within that
//! sandbox (`sandbox_seq`), and that number is the only one a caller sees (the
//! `sequence` of `StreamSandboxEvents`, `--after`). The table's own row number is
//! server-wide: handing it out told every principal how busy every other principal's
//! sandboxes were (the gap between two of your own events is everyone's activity), so
//! it stays inside the store (it only wakes tails).
//!
//! The number is taken in the INSERT itself (the largest of the sandbox's plus one, read
//! over the unique index), and every write goes through the store's one connection, so
//! two events of a sandbox can never share a number.

use rusqlite::Connection;

/// Appends one event: parameters as in [`super::EventRow`], `?1` the sandbox.
pub(super) const INSERT: &str = "INSERT INTO events (sandbox_id, execution_id, kind, at, sandbox_status, execution_status, message, attributes, sandbox_seq)
 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,
   (SELECT COALESCE(MAX(sandbox_seq), 0) + 1 FROM events WHERE sandbox_id = ?1))";

/// Give a database from before per-sandbox numbers the column, number its events in
/// their order, and index them (unique: a second event with a sandbox's number fails).
pub(super) fn init(c: &Connection) -> rusqlite::Result<()> {
    let has = c
        .prepare("SELECT 1 FROM pragma_table_info('events') WHERE name = 'sandbox_seq'")?
        .exists([])?;
    if !has {
        // One transaction: a crash leaves either the old table or a numbered one.
        c.execute_batch(
            "BEGIN;
             ALTER TABLE events ADD COLUMN sandbox_seq INTEGER NOT NULL DEFAULT 0;
             UPDATE events SET sandbox_seq = n.n
               FROM (SELECT seq, ROW_NUMBER() OVER (PARTITION BY sandbox_id ORDER BY seq) AS n FROM events) AS n
              WHERE events.seq = n.seq;
             COMMIT;",
        )?;
    }
    c.execute_batch(
        "CREATE UNIQUE INDEX IF NOT EXISTS events_by_sandbox_seq ON events(sandbox_id, sandbox_seq);",
    )
}
