//! Sandbox lifetimes: effective TTL and idle timeout, when the TTL ends, and why the
//! sandbox was stopped by expiry. A table of its own (one row per sandbox that has any).

use super::*;

/// Created with the rest of the schema (see [`Store::open`]).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sandbox_lifetimes (
  sandbox_id TEXT PRIMARY KEY,
  ttl_seconds INTEGER NOT NULL DEFAULT 0,
  idle_timeout_seconds INTEGER NOT NULL DEFAULT 0,
  expires_at INTEGER NOT NULL DEFAULT 0,
  stop_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS sandbox_lifetimes_active ON sandbox_lifetimes(sandbox_id)
  WHERE expires_at > 0 OR idle_timeout_seconds > 0;
";

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
}

impl Store {
    /// Record (or replace) a sandbox's lifetime settings; the stop reason is kept.
    pub fn set_lifetime(&self, sandbox_id: &str, l: &LifetimeRow) -> Result<()> {
        let ttl = i64::try_from(l.ttl_seconds).unwrap_or(i64::MAX);
        let idle = i64::try_from(l.idle_timeout_seconds).unwrap_or(i64::MAX);
        self.with(|c| {
            c.prepare_cached("INSERT INTO sandbox_lifetimes (sandbox_id, ttl_seconds, idle_timeout_seconds, expires_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(sandbox_id) DO UPDATE SET ttl_seconds = ?2, idle_timeout_seconds = ?3, expires_at = ?4")?
                .execute(params![sandbox_id, ttl, idle, l.expires_at],
            )
            .map(drop)
        })
    }

    /// A sandbox's lifetime (defaults when it has none).
    pub fn lifetime(&self, sandbox_id: &str) -> Result<LifetimeRow> {
        self.with(|c| {
            c.prepare_cached("SELECT ttl_seconds, idle_timeout_seconds, expires_at, stop_reason FROM sandbox_lifetimes WHERE sandbox_id = ?1")?
                .query_row([sandbox_id],
                |r| {
                    Ok(LifetimeRow {
                        ttl_seconds: r.get::<_, i64>(0)?.max(0) as u64,
                        idle_timeout_seconds: r.get::<_, i64>(1)?.max(0) as u64,
                        expires_at: r.get(2)?,
                        stop_reason: r.get(3)?,
                    })
                },
            )
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
                "SELECT l.sandbox_id, s.status, s.created_at, l.ttl_seconds, l.idle_timeout_seconds, l.expires_at, l.stop_reason
                 FROM sandbox_lifetimes l
                 JOIN sandboxes s ON s.id = l.sandbox_id
                 WHERE (l.expires_at > 0 OR l.idle_timeout_seconds > 0) AND s.status IN ({list})"
            ))?;
            let rows = st.query_map([], |r| {
                Ok(LifetimeCheck {
                    sandbox_id: r.get(0)?,
                    status: status_from(r, 1)?,
                    created_at: r.get(2)?,
                    lifetime: LifetimeRow {
                        ttl_seconds: r.get::<_, i64>(3)?.max(0) as u64,
                        idle_timeout_seconds: r.get::<_, i64>(4)?.max(0) as u64,
                        expires_at: r.get(5)?,
                        stop_reason: r.get(6)?,
                    },
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
