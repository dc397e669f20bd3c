//! Snapshot rows (`snap_…`, owned by a principal), which snapshot a sandbox was restored
//! from, and the compare-and-set status transition pause/resume needs.

use super::*;

const SNAPSHOT_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS snapshots (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  source_sandbox_id TEXT NOT NULL,
  parent_id TEXT NOT NULL DEFAULT '',
  policy_hash TEXT NOT NULL,
  compiled_policy TEXT NOT NULL,
  image_ref TEXT NOT NULL DEFAULT '',
  image_digest TEXT NOT NULL DEFAULT '',
  limits TEXT NOT NULL,
  size_bytes INTEGER NOT NULL,
  file_count INTEGER NOT NULL,
  content_digest TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sandbox_snapshot_info (
  sandbox_id TEXT PRIMARY KEY,
  origin TEXT NOT NULL DEFAULT '',
  limits TEXT NOT NULL DEFAULT ''
);
";

/// A stored snapshot's metadata (its files live under the server's snapshot store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRow {
    pub id: String,
    pub owner: crate::model::owner::Owner,
    pub source_sandbox_id: String,
    /// The snapshot the source sandbox was restored from (empty: none).
    pub parent_id: String,
    pub policy_hash: String,
    pub compiled_policy: String,
    pub image_ref: String,
    pub image_digest: String,
    /// The backend's `Limits` as JSON.
    pub limits: String,
    pub size_bytes: i64,
    pub file_count: i64,
    pub content_digest: String,
    pub created_at: i64,
}

const SNAP_COLS: &str = "id, owner, source_sandbox_id, parent_id, policy_hash, compiled_policy, image_ref, image_digest, limits, size_bytes, file_count, content_digest, created_at";

fn snapshot_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<SnapshotRow> {
    Ok(SnapshotRow {
        id: r.get(0)?,
        owner: r.get(1)?,
        source_sandbox_id: r.get(2)?,
        parent_id: r.get(3)?,
        policy_hash: r.get(4)?,
        compiled_policy: r.get(5)?,
        image_ref: r.get(6)?,
        image_digest: r.get(7)?,
        limits: r.get(8)?,
        size_bytes: r.get(9)?,
        file_count: r.get(10)?,
        content_digest: r.get(11)?,
        created_at: r.get(12)?,
    })
}

/// Create the snapshot tables (called by [`Store::open`]).
pub(super) fn init(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(SNAPSHOT_SCHEMA)
}

impl Store {
    /// Set a sandbox's status to `to` only if it is `from` now; false if it was not.
    pub fn transition_sandbox(
        &self,
        id: &str,
        from: SandboxStatus,
        to: SandboxStatus,
    ) -> Result<bool> {
        let moved = self.with_tx(|tx| super::write_status_on(tx, id, Some(from), to, Some("")));
        match moved {
            Ok(()) => Ok(true),
            // Another status than `from` now: the caller's race lost (still refused when
            // `from` itself may not become `to`: that is the caller's mistake).
            Err(StoreError::Transition(t)) if t.from != Some(from) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Insert a snapshot row; false when one with this id exists already (content
    /// addressed: the same content, owner and settings give the same id).
    pub fn insert_snapshot(&self, s: &SnapshotRow) -> Result<bool> {
        self.with(|c| {
            c.execute(
                &format!("INSERT OR IGNORE INTO snapshots ({SNAP_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"),
                params![
                    s.id,
                    s.owner,
                    s.source_sandbox_id,
                    s.parent_id,
                    s.policy_hash,
                    s.compiled_policy,
                    s.image_ref,
                    s.image_digest,
                    s.limits,
                    s.size_bytes,
                    s.file_count,
                    s.content_digest,
                    s.created_at
                ],
            )
            .map(|n| n == 1)
        })
    }

    pub fn get_snapshot(&self, id: &str) -> Result<Option<SnapshotRow>> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {SNAP_COLS} FROM snapshots WHERE id = ?1"),
                [id],
                snapshot_from,
            )
            .optional()
        })
    }

    pub fn list_snapshots(&self) -> Result<Vec<SnapshotRow>> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {SNAP_COLS} FROM snapshots ORDER BY created_at, id"
            ))?;
            let rows = st.query_map([], snapshot_from)?;
            rows.collect()
        })
    }

    pub fn delete_snapshot(&self, id: &str) -> Result<()> {
        self.with(|c| {
            c.execute("DELETE FROM snapshots WHERE id = ?1", [id])
                .map(drop)
        })
    }

    fn snapshot_info(&self, sandbox_id: &str, col: &str) -> Result<String> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {col} FROM sandbox_snapshot_info WHERE sandbox_id = ?1"),
                [sandbox_id],
                |r| r.get(0),
            )
            .optional()
            .map(Option::unwrap_or_default)
        })
    }

    /// The snapshot a sandbox was restored from (empty: none).
    pub fn sandbox_origin(&self, sandbox_id: &str) -> Result<String> {
        self.snapshot_info(sandbox_id, "origin")
    }

    /// The sandbox's effective limits as JSON (empty: not recorded).
    pub fn sandbox_limits(&self, sandbox_id: &str) -> Result<String> {
        self.snapshot_info(sandbox_id, "limits")
    }
}

/// A sandbox's snapshot facts: the snapshot it was restored from (`origin`, empty for a
/// fresh one) and its limits as JSON. Inside the caller's transaction (`begin_sandbox`).
pub(super) fn snapshot_info_on(
    c: &rusqlite::Connection,
    sandbox_id: &str,
    origin: &str,
    limits: &str,
) -> rusqlite::Result<()> {
    c.execute(
        "INSERT OR REPLACE INTO sandbox_snapshot_info (sandbox_id, origin, limits) VALUES (?1, ?2, ?3)",
        params![sandbox_id, origin, limits],
    )
    .map(drop)
}
