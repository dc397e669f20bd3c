//! Sandbox lifetimes: effective TTL, idle timeout and suspend-after, when the TTL ends,
//! when the sandbox was suspended for being idle, and why it was stopped by expiry. A
//! table of its own (one row per sandbox that has any).

use super::*;

/// Created with the rest of the schema (see [`Store::open`]).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sandbox_lifetimes (
  sandbox_id TEXT PRIMARY KEY,
  ttl_seconds INTEGER NOT NULL DEFAULT 0,
  idle_timeout_seconds INTEGER NOT NULL DEFAULT 0,
  expires_at INTEGER NOT NULL DEFAULT 0,
  stop_reason TEXT NOT NULL DEFAULT '',
  suspend_after_seconds INTEGER NOT NULL DEFAULT 0,
  suspended_at INTEGER NOT NULL DEFAULT 0
);
";

/// The reaper's partial index (every lifetime with a clock that can fire).
const WATCHED: &str = "
CREATE INDEX IF NOT EXISTS sandbox_lifetimes_watched ON sandbox_lifetimes(sandbox_id)
  WHERE expires_at > 0 OR idle_timeout_seconds > 0 OR suspend_after_seconds > 0;
DROP INDEX IF EXISTS sandbox_lifetimes_active;
";

/// Create the table, and give one from before suspend-on-idle its two columns.
pub(super) fn init(c: &rusqlite::Connection) -> rusqlite::Result<()> {
    c.execute_batch(SCHEMA)?;
    let has = c
        .prepare(
            "SELECT 1 FROM pragma_table_info('sandbox_lifetimes') WHERE name = 'suspended_at'",
        )?
        .exists([])?;
    if !has {
        c.execute_batch(
            "BEGIN;
             ALTER TABLE sandbox_lifetimes ADD COLUMN suspend_after_seconds INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE sandbox_lifetimes ADD COLUMN suspended_at INTEGER NOT NULL DEFAULT 0;
             COMMIT;",
        )?;
    }
    c.execute_batch(WATCHED)
}

/// A live sandbox the lifetime reaper must look at (it has a TTL or an idle timeout).
#[derive(Debug, Clone, PartialEq)]
pub struct LifetimeCheck {
    pub sandbox_id: String,
    /// Its status now (the reaper looks at every state where the sandbox holds resources
    /// and no teardown runs: see [`crate::engine::lifetimes`]).
    pub status: SandboxStatus,
    /// Creation time (micros): the last activity of a sandbox never used.
    pub created_at: i64,
    pub lifetime: LifetimeRow,
}

/// A sandbox's lifetime settings (all zero/empty: none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LifetimeRow {
    /// Effective TTL in seconds (0: none) — as set at creation or by the last extension.
    pub ttl_seconds: u64,
    /// Idle timeout in seconds (0: none).
    pub idle_timeout_seconds: u64,
    /// When the TTL ends, microseconds since the epoch (0: never).
    pub expires_at: i64,
    /// Why expiry stopped the sandbox (`ttl_expired`, `idle_timeout`); empty otherwise.
    pub stop_reason: String,
    /// Seconds without activity after which the sandbox is suspended (0: never).
    pub suspend_after_seconds: u64,
    /// When the reaper suspended it (micros; 0: not suspended by the reaper). Only a
    /// sandbox suspended this way is resumed by its next use; a user's pause stays.
    pub suspended_at: i64,
}

impl Store {
    /// Record (or replace) a sandbox's lifetime settings; the stop reason is kept.
    pub fn set_lifetime(&self, sandbox_id: &str, l: &LifetimeRow) -> Result<()> {
        let ttl = i64::try_from(l.ttl_seconds).unwrap_or(i64::MAX);
        let idle = i64::try_from(l.idle_timeout_seconds).unwrap_or(i64::MAX);
        let suspend = i64::try_from(l.suspend_after_seconds).unwrap_or(i64::MAX);
        self.with(|c| {
            c.prepare_cached("INSERT INTO sandbox_lifetimes (sandbox_id, ttl_seconds, idle_timeout_seconds, expires_at, suspend_after_seconds, suspended_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(sandbox_id) DO UPDATE SET ttl_seconds = ?2, idle_timeout_seconds = ?3, expires_at = ?4, suspend_after_seconds = ?5, suspended_at = ?6")?
                .execute(params![sandbox_id, ttl, idle, l.expires_at, suspend, l.suspended_at],
            )
            .map(drop)
        })
    }

    /// Mark the sandbox suspended by the reaper at `at` (micros), or not suspended (0).
    pub fn set_suspended_at(&self, sandbox_id: &str, at: i64) -> Result<()> {
        self.with(|c| {
            c.prepare_cached(
                "UPDATE sandbox_lifetimes SET suspended_at = ?2 WHERE sandbox_id = ?1",
            )?
            .execute(params![sandbox_id, at])
            .map(drop)
        })
    }

    /// A sandbox's lifetime (defaults when it has none).
    pub fn lifetime(&self, sandbox_id: &str) -> Result<LifetimeRow> {
        self.with(|c| {
            c.prepare_cached("SELECT ttl_seconds, idle_timeout_seconds, expires_at, stop_reason, suspend_after_seconds, suspended_at FROM sandbox_lifetimes WHERE sandbox_id = ?1")?
                .query_row([sandbox_id], |r| lifetime_row(r, 0))
            .optional()
            .map(Option::unwrap_or_default)
        })
    }

    /// Sandboxes in any of `statuses` that have a TTL or an idle timeout, with their
    /// lifetimes: one query over indexes (the partial index of lifetimes that can expire,
    /// sandboxes by status): sandboxes without a lifetime (the common case) are never read.
    pub fn lifetimes_to_check(&self, statuses: &[SandboxStatus]) -> Result<Vec<LifetimeCheck>> {
        let list = status_list(statuses);
        self.with(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT l.sandbox_id, s.status, s.created_at, l.ttl_seconds, l.idle_timeout_seconds, l.expires_at, l.stop_reason, l.suspend_after_seconds, l.suspended_at
                 FROM sandbox_lifetimes l
                 JOIN sandboxes s ON s.id = l.sandbox_id
                 WHERE (l.expires_at > 0 OR l.idle_timeout_seconds > 0 OR l.suspend_after_seconds > 0) AND s.status IN ({list})"
            ))?;
            let rows = st.query_map([], |r| {
                Ok(LifetimeCheck {
                    sandbox_id: r.get(0)?,
                    status: status_from(r, 1)?,
                    created_at: r.get(2)?,
                    lifetime: lifetime_row(r, 3)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Record why expiry stopped the sandbox (the first reason wins).
    pub fn set_stop_reason(&self, sandbox_id: &str, reason: &str) -> Result<()> {
        self.with(|c| {
            c.prepare_cached(
                "INSERT INTO sandbox_lifetimes (sandbox_id, stop_reason) VALUES (?1, ?2)
                 ON CONFLICT(sandbox_id) DO UPDATE SET stop_reason = ?2 WHERE stop_reason = ''",
            )?
            .execute(params![sandbox_id, reason])
            .map(drop)
        })
    }
}

/// A [`LifetimeRow`] from six columns starting at `at`: ttl, idle, expires_at, stop
/// reason, suspend-after, suspended_at.
fn lifetime_row(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<LifetimeRow> {
    Ok(LifetimeRow {
        ttl_seconds: r.get::<_, i64>(at)?.max(0) as u64,
        idle_timeout_seconds: r.get::<_, i64>(at + 1)?.max(0) as u64,
        expires_at: r.get(at + 2)?,
        stop_reason: r.get(at + 3)?,
        suspend_after_seconds: r.get::<_, i64>(at + 4)?.max(0) as u64,
        suspended_at: r.get(at + 5)?,
    })
}
