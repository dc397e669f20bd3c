//! Durable state: sandboxes, executions and the event log, in one SQLite database.
//!
//! SQLite in WAL mode with `synchronous=NORMAL`: every committed transaction survives a
//! crash or kill of the server (it is in the WAL before the call returns), and the database
//! is never corrupted; only a power loss can drop the last few commits. FULL (an fsync per
//! commit) measured ~3 ms slower per `exec -- true` for no gain against process crashes.
//! The store knows nothing about RPC types: rows are plain structs, statuses are the proto
//! enum numbers, times are microseconds since the Unix epoch (UTC).

use crate::model::owner::Owner;
use crate::model::status::SandboxStatus;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;
use std::sync::Mutex;

/// Store failures: the database's (reported as `internal`), or a status write the state
/// machine refuses (`sandbox_not_ready`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state store: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error(transparent)]
    Transition(#[from] IllegalTransition),
}

/// A status write [`SandboxStatus::can_become`] refuses (or a sandbox that is not there).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox {id} is {}; it cannot become {}", from.map(|s| s.name()).unwrap_or("gone"), to.name())]
pub struct IllegalTransition {
    pub id: String,
    /// `None`: no such sandbox row.
    pub from: Option<SandboxStatus>,
    pub to: SandboxStatus,
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A sandbox row.
#[derive(Debug, Clone)]
pub struct SandboxRow {
    pub id: String,
    pub status: SandboxStatus,
    pub backend: String,
    pub policy_hash: String,
    /// The compiled policy, decoded once when the row was read (see [`policy`]).
    pub policy: StoredPolicy,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_execution_id: String,
    pub active_execution_id: String,
    pub message: String,
    /// The backend's provision record, decoded once when the row was read (see
    /// [`provision`]; none until provisioned).
    pub provisioned: StoredProvision,
    /// Image the root was built from (empty: host view) and its pinned digest.
    pub image_ref: String,
    pub image_digest: String,
    /// Owning principal (see [`crate::identity::auth`]); rows from before ownership existed are
    /// owned by [`Owner::Legacy`], which only admins see.
    pub owner: Owner,
    /// CreateSandboxRequest.labels (stored as a JSON object, see [`labels`]).
    pub labels: std::collections::BTreeMap<String, String>,
}

/// An execution row.
#[derive(Debug, Clone)]
pub struct ExecutionRow {
    pub id: String,
    pub sandbox_id: String,
    pub status: i32,
    pub command: Vec<String>,
    pub exit_code: i32,
    pub created_at: i64,
    pub started_at: i64,
    pub finished_at: i64,
    pub message: String,
    pub cwd: String,
    pub tty: bool,
    pub kind: i32,
    pub trace_id: String,
    /// Principal that started it (the sandbox's owner or an admin).
    pub owner: Owner,
}

/// One event; `seq` is assigned by the store: the event's number within its sandbox
/// (1, 2, 3 …), never a server-wide counter (see [`event_seq`]).
#[derive(Debug, Clone, Default)]
pub struct EventRow {
    pub seq: i64,
    pub sandbox_id: String,
    pub execution_id: String,
    pub kind: String,
    pub at: i64,
    pub sandbox_status: i32,
    pub execution_status: i32,
    pub message: String,
    /// JSON object of structured attributes.
    pub attributes: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sandboxes (
  id TEXT PRIMARY KEY,
  status INTEGER NOT NULL,
  backend TEXT NOT NULL,
  policy_hash TEXT NOT NULL,
  compiled_policy TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_execution_id TEXT NOT NULL DEFAULT '',
  active_execution_id TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  provisioned TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS executions (
  id TEXT PRIMARY KEY,
  sandbox_id TEXT NOT NULL,
  status INTEGER NOT NULL,
  command TEXT NOT NULL,
  exit_code INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  started_at INTEGER NOT NULL DEFAULT 0,
  finished_at INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  cwd TEXT NOT NULL DEFAULT '',
  tty INTEGER NOT NULL DEFAULT 0,
  kind INTEGER NOT NULL DEFAULT 1,
  trace_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS sandboxes_by_status ON sandboxes(status);
CREATE INDEX IF NOT EXISTS executions_by_sandbox ON executions(sandbox_id, created_at);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  sandbox_id TEXT NOT NULL,
  execution_id TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL,
  at INTEGER NOT NULL,
  sandbox_status INTEGER NOT NULL DEFAULT 0,
  execution_status INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  attributes TEXT NOT NULL DEFAULT '{}',
  sandbox_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_by_sandbox ON events(sandbox_id, seq);
CREATE TABLE IF NOT EXISTS execution_output (
  execution_id TEXT PRIMARY KEY,
  dropped_bytes INTEGER NOT NULL DEFAULT 0,
  expired_at INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS image_owners (
  digest TEXT NOT NULL,
  owner TEXT NOT NULL,
  PRIMARY KEY (digest, owner)
);
";

/// Owner recorded for rows created before ownership existed ([`Owner::Legacy`]'s text):
/// `legacy:` is no principal's name (token and certificate names cannot contain `:`), so
/// only admins see them.
pub const LEGACY_OWNER: &str = "legacy:";

/// Server-wide caps on live (not STOPPED/FAILED) sandboxes; 0 means unlimited.
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxCaps {
    pub per_owner: u32,
    pub total: u32,
}

/// Which sandbox cap a create would exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapHit {
    PerOwner(u32),
    Total(u32),
}

/// The state store. Calls are short and synchronous; a mutex serializes writers.
pub struct Store {
    conn: Mutex<Connection>,
    /// WAL checkpoints run off the request path ([`checkpoint`]).
    _checkpoint: Option<checkpoint::Checkpointer>,
    /// Stored policies decoded once ([`policy`]).
    policies: PolicyCache,
}

/// Current time in microseconds since the epoch.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

const SANDBOX_COLS: &str = "id, status, backend, policy_hash, compiled_policy, created_at, updated_at, last_execution_id, active_execution_id, message, provisioned, image_ref, image_digest, owner, labels";

/// Columns added after the first schema, with their default for existing rows; added to
/// older databases on open.
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    ("sandboxes", "image_ref", ""),
    ("sandboxes", "image_digest", ""),
    ("sandboxes", "owner", LEGACY_OWNER),
    ("executions", "owner", LEGACY_OWNER),
    ("sandboxes", "labels", "{}"),
];
const EXEC_COLS: &str = "id, sandbox_id, status, command, exit_code, created_at, started_at, finished_at, message, cwd, tty, kind, trace_id, owner";

/// `1,2,3` for an `IN (...)` clause. Only integers (status numbers) are ever formatted
/// into SQL text; everything else is bound as a parameter.
fn status_list(statuses: &[SandboxStatus]) -> String {
    let numbers: Vec<i32> = statuses.iter().map(|s| s.number()).collect();
    sql_int_list(&numbers)
}

/// `1,2,3` for an `IN (...)` clause (execution status numbers).
fn sql_int_list(values: &[i32]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn sandbox_from(policies: &PolicyCache, r: &rusqlite::Row<'_>) -> rusqlite::Result<SandboxRow> {
    Ok(SandboxRow {
        id: r.get(0)?,
        status: status_from(r, 1)?,
        backend: r.get(2)?,
        policy_hash: r.get(3)?,
        policy: policies.decode(r.get(4)?),
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        last_execution_id: r.get(7)?,
        active_execution_id: r.get(8)?,
        message: r.get(9)?,
        provisioned: StoredProvision::decode(&r.get::<_, String>(10)?),
        image_ref: r.get(11)?,
        image_digest: r.get(12)?,
        owner: r.get(13)?,
        labels: labels::decode(&r.get::<_, String>(14)?),
    })
}

/// A stored sandbox status; a number that is no status is a corrupt row, not a guess.
fn status_from(r: &rusqlite::Row<'_>, col: usize) -> rusqlite::Result<SandboxStatus> {
    let n: i32 = r.get(col)?;
    SandboxStatus::from_number(n).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            col,
            rusqlite::types::Type::Integer,
            format!("{n} is no sandbox status").into(),
        )
    })
}

fn exec_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<ExecutionRow> {
    let cmd: String = r.get(3)?;
    Ok(ExecutionRow {
        id: r.get(0)?,
        sandbox_id: r.get(1)?,
        status: r.get(2)?,
        command: serde_json::from_str(&cmd).unwrap_or_default(),
        exit_code: r.get(4)?,
        created_at: r.get(5)?,
        started_at: r.get(6)?,
        finished_at: r.get(7)?,
        message: r.get(8)?,
        cwd: r.get(9)?,
        tty: r.get::<_, i64>(10)? != 0,
        kind: r.get(11)?,
        trace_id: r.get(12)?,
        owner: r.get(13)?,
    })
}

fn event_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<EventRow> {
    Ok(EventRow {
        seq: r.get(0)?,
        sandbox_id: r.get(1)?,
        execution_id: r.get(2)?,
        kind: r.get(3)?,
        at: r.get(4)?,
        sandbox_status: r.get(5)?,
        execution_status: r.get(6)?,
        message: r.get(7)?,
        attributes: r.get(8)?,
    })
}

/// Run a statement through the connection's prepared-statement cache: the hot path
/// (create, status changes, events) runs the same few statements over and over, and
/// parsing them again each time cost more than running them.
fn exec(c: &Connection, sql: &str, p: impl rusqlite::Params) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(p)
}

/// [`exec`] for a one-row query.
fn query_row<T>(
    c: &Connection,
    sql: &str,
    p: impl rusqlite::Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    c.prepare_cached(sql)?.query_row(p, f)
}

impl Store {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Short retries instead of SQLite's 1, 2, 5 … ms sleeps (checkpoint.rs).
        conn.busy_handler(Some(checkpoint::wait_briefly))?;
        conn.set_prepared_statement_cache_capacity(64);
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(changes::SCHEMA)?;
        lifetimes::init(&conn)?;
        conn.execute_batch(network::SCHEMA)?;
        event_seq::init(&conn)?;
        snapshots::init(&conn)?;
        for (table, col, default) in ADDED_COLUMNS {
            let has: bool = conn
                .prepare(&format!(
                    "SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1"
                ))?
                .exists([col])?;
            if !has {
                conn.execute_batch(&format!(
                    "ALTER TABLE {table} ADD COLUMN {col} TEXT NOT NULL DEFAULT '{default}'"
                ))?;
            }
        }
        // After the owner column exists (added above on older databases).
        conn.execute_batch(
            "CREATE INDEX IF NOT EXISTS sandboxes_by_owner_status ON sandboxes(owner, status);",
        )?;
        conn.execute_batch(pools::POOL_SCHEMA)?;
        conn.execute_batch(checkpoint::SCHEMA)?;
        let checkpoint = checkpoint::start(&conn, path);
        Ok(Store {
            conn: Mutex::new(conn),
            _checkpoint: checkpoint,
            policies: PolicyCache::default(),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        // A poisoned lock only means another thread panicked mid-call; SQLite itself keeps
        // the database consistent, so carry on with the connection.
        let guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        Ok(f(&guard)?)
    }

    /// Run `f` in a write transaction, committed only when `f` succeeds (a refused
    /// status write rolls back whatever `f` wrote before it).
    fn with_tx<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let tx = write_transaction(&guard)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Insert a new sandbox unless that would exceed `caps` (counted in the same locked
    /// transaction, so concurrent creates cannot both slip under a cap). Tests only: it
    /// writes whatever status the row carries, past the one status writer; the server
    /// begins a sandbox with [`Store::begin_sandbox`] (PROVISIONING with its event).
    #[cfg(test)]
    pub(crate) fn insert_sandbox(
        &self,
        s: &SandboxRow,
        caps: SandboxCaps,
    ) -> Result<Option<CapHit>> {
        self.with(|c| insert_sandbox_on(c, s, caps))
    }

    pub fn get_sandbox(&self, id: &str) -> Result<Option<SandboxRow>> {
        self.with(|c| {
            query_row(
                c,
                &format!("SELECT {SANDBOX_COLS} FROM sandboxes WHERE id = ?1"),
                [id],
                |r| sandbox_from(&self.policies, r),
            )
            .optional()
        })
    }

    pub fn list_sandboxes(&self) -> Result<Vec<SandboxRow>> {
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {SANDBOX_COLS} FROM sandboxes ORDER BY created_at, id"
            ))?;
            let rows = st.query_map([], |r| sandbox_from(&self.policies, r))?;
            rows.collect()
        })
    }

    /// Move a sandbox to `status` (refused unless the state machine allows it).
    pub fn set_sandbox_status(&self, id: &str, status: SandboxStatus, message: &str) -> Result<()> {
        self.with_tx(|tx| write_status_on(tx, id, None, status, Some(message)))
    }

    /// Add why a STOPPED sandbox stopped, when its final write said nothing (a teardown
    /// that someone else began). Not a transition: the status stays STOPPED.
    pub fn annotate_stopped(&self, id: &str, message: &str) -> Result<()> {
        self.with(|c| {
            exec(
                c,
                "UPDATE sandboxes SET message = ?2, updated_at = ?3 WHERE id = ?1 AND status = ?4 AND message = ''",
                params![id, message, now_micros(), SandboxStatus::Stopped.number()],
            )
            .map(drop)
        })
    }

    pub fn set_sandbox_executions(&self, id: &str, last: &str, active: &str) -> Result<()> {
        self.with(|c| set_sandbox_executions_on(c, id, last, active))
    }

    pub fn insert_execution(&self, e: &ExecutionRow) -> Result<()> {
        self.with(|c| insert_execution_on(c, e))
    }

    pub fn get_execution(&self, id: &str) -> Result<Option<ExecutionRow>> {
        self.with(|c| {
            query_row(
                c,
                &format!("SELECT {EXEC_COLS} FROM executions WHERE id = ?1"),
                [id],
                exec_from,
            )
            .optional()
        })
    }

    pub fn executions_with_status(&self, statuses: &[i32]) -> Result<Vec<ExecutionRow>> {
        let list = sql_int_list(statuses);
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT {EXEC_COLS} FROM executions WHERE status IN ({list}) ORDER BY created_at"
            ))?;
            let rows = st.query_map([], exec_from)?;
            rows.collect()
        })
    }

    pub fn finish_execution(
        &self,
        id: &str,
        status: i32,
        exit_code: i32,
        message: &str,
    ) -> Result<()> {
        self.with(|c| finish_execution_on(c, id, (status, exit_code, message), now_micros()))
    }

    /// Append an event and return its row number (server-wide: only for waking tails,
    /// never shown to a caller).
    pub fn append_event(&self, e: &EventRow) -> Result<i64> {
        self.with(|c| append_event_on(c, e))
    }

    /// Append events in their order in one transaction and return the last one's row
    /// number: a burst of gateway decisions pays one commit, not one each (measured in
    /// release: ~30 µs an event in batches of 100 against ~90–130 µs committed one by one).
    pub fn append_events(&self, events: &[EventRow]) -> Result<i64> {
        self.with_tx(|tx| {
            let mut last = 0;
            for e in events {
                last = append_event_on(tx, e)?;
            }
            Ok(last)
        })
    }

    /// Events of one sandbox after `after_seq`, oldest first.
    pub fn events_after(
        &self,
        sandbox_id: &str,
        after_seq: i64,
        limit: i64,
    ) -> Result<Vec<EventRow>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT sandbox_seq, sandbox_id, execution_id, kind, at, sandbox_status, execution_status, message, attributes FROM events WHERE sandbox_id = ?1 AND sandbox_seq > ?2 ORDER BY sandbox_seq LIMIT ?3",
            )?;
            let rows = st.query_map(params![sandbox_id, after_seq, limit], event_from)?;
            rows.collect()
        })
    }
}

/// [`Store::insert_sandbox`] on a connection (or inside a caller's transaction).
fn insert_sandbox_on(
    c: &Connection,
    s: &SandboxRow,
    caps: SandboxCaps,
) -> rusqlite::Result<Option<CapHit>> {
    use crate::model::status::sandbox as ss;
    // STOPPED and FAILED are adjacent: "live" is two index ranges (sandboxes_by_status,
    // sandboxes_by_owner_status), so a count reads live rows only, not every sandbox
    // the server ever ran.
    debug_assert_eq!(ss::FAILED.number(), ss::STOPPED.number() + 1);
    let live = format!(
        "(status < {} OR status > {})",
        ss::STOPPED.number(),
        ss::FAILED.number()
    );
    let count = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> rusqlite::Result<u32> {
        query_row(c, sql, p, |r| r.get(0))
    };
    if caps.per_owner > 0
            // Charged to the owner's account: their sandboxes and their pools'.
            && count(&pools::account_live_sql("?1"), &[&s.owner])? >= caps.per_owner
    {
        return Ok(Some(CapHit::PerOwner(caps.per_owner)));
    }
    if caps.total > 0
        && count(&format!("SELECT COUNT(*) FROM sandboxes WHERE {live}"), &[])? >= caps.total
    {
        return Ok(Some(CapHit::Total(caps.total)));
    }
    exec(c,
            &format!("INSERT INTO sandboxes ({SANDBOX_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)"),
            params![
                s.id,
                s.status.number(),
                s.backend,
                s.policy_hash,
                s.policy.canonical_json(),
                s.created_at,
                s.updated_at,
                s.last_execution_id,
                s.active_execution_id,
                s.message,
                s.provisioned.text(),
                s.image_ref,
                s.image_digest,
                s.owner,
                labels::encode(&s.labels)
            ],
        )
        .map(|_| None)
}

/// The one writer of a sandbox's status. Reads the current status inside the caller's
/// transaction and refuses (with nothing written) a transition
/// [`SandboxStatus::can_become`] does not allow, or one from another status than
/// `expect` when given (a compare-and-set: pause and resume). `message`: `None` keeps
/// the row's message, `Some` replaces it.
pub(super) fn write_status_on(
    c: &Connection,
    id: &str,
    expect: Option<SandboxStatus>,
    to: SandboxStatus,
    message: Option<&str>,
) -> Result<()> {
    let current: Option<i32> =
        query_row(c, "SELECT status FROM sandboxes WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()?;
    let from = current.and_then(SandboxStatus::from_number);
    let allowed = from.is_some_and(|f| f.can_become(to) && expect.is_none_or(|e| e == f));
    if !allowed {
        return Err(IllegalTransition {
            id: id.to_string(),
            from,
            to,
        }
        .into());
    }
    exec(
        c,
        "UPDATE sandboxes SET status = ?2, message = COALESCE(?3, message), updated_at = ?4 WHERE id = ?1",
        params![id, to.number(), message, now_micros()],
    )?;
    Ok(())
}

/// A write transaction that takes the write lock when it begins (`BEGIN IMMEDIATE`), waiting
/// through the busy handler. A deferred one that reads first (a cap count) and writes after
/// fails at once with "database is locked" when another connection (the checkpoint thread)
/// committed in between: SQLite cannot retry an upgrade from a stale snapshot.
fn write_transaction(c: &Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    rusqlite::Transaction::new_unchecked(c, rusqlite::TransactionBehavior::Immediate)
}

fn insert_execution_on(c: &Connection, e: &ExecutionRow) -> rusqlite::Result<()> {
    let cmd = serde_json::to_string(&e.command).unwrap_or_else(|_| "[]".into());
    exec(c,
                &format!("INSERT INTO executions ({EXEC_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)"),
                params![
                    e.id,
                    e.sandbox_id,
                    e.status,
                    cmd,
                    e.exit_code,
                    e.created_at,
                    e.started_at,
                    e.finished_at,
                    e.message,
                    e.cwd,
                    e.tty as i64,
                    e.kind,
                    e.trace_id,
                    e.owner
                ],
            )
            .map(drop)
}

fn set_sandbox_executions_on(
    c: &Connection,
    id: &str,
    last: &str,
    active: &str,
) -> rusqlite::Result<()> {
    exec(c,
        "UPDATE sandboxes SET last_execution_id = ?2, active_execution_id = ?3, updated_at = ?4 WHERE id = ?1",
        params![id, last, active, now_micros()],
    )
    .map(drop)
}

/// Clear `active_execution_id` only if it still names `exec_id`.
fn clear_active_execution_on(c: &Connection, id: &str, exec_id: &str) -> rusqlite::Result<()> {
    exec(c,
        "UPDATE sandboxes SET active_execution_id = '', updated_at = ?3 WHERE id = ?1 AND active_execution_id = ?2",
        params![id, exec_id, now_micros()],
    )
    .map(drop)
}

fn finish_execution_on(
    c: &Connection,
    id: &str,
    (status, exit_code, message): (i32, i32, &str),
    finished_at: i64,
) -> rusqlite::Result<()> {
    exec(c,
        "UPDATE executions SET status = ?2, exit_code = ?3, message = ?4, finished_at = ?5 WHERE id = ?1",
        params![id, status, exit_code, message, finished_at],
    )
    .map(drop)
}

fn append_event_on(c: &Connection, e: &EventRow) -> rusqlite::Result<i64> {
    exec(
        c,
        event_seq::INSERT,
        params![
            e.sandbox_id,
            e.execution_id,
            e.kind,
            e.at,
            e.sandbox_status,
            e.execution_status,
            e.message,
            if e.attributes.is_empty() {
                "{}"
            } else {
                e.attributes.as_str()
            }
        ],
    )?;
    Ok(c.last_insert_rowid())
}

mod approvals;
mod changes;
pub use changes::{Changes, SLACK_MICROS};
mod checkpoint;
mod counts;
mod event_seq;
mod images;
pub mod labels;
mod lifetimes;
pub mod network;
mod output;
pub mod policy;
pub use lifetimes::{LifetimeCheck, LifetimeRow};
use policy::PolicyCache;
pub use policy::{StoredPolicy, UndecodablePolicy};
pub mod provision;
pub use provision::{StoredProvision, UndecodableProvision};
mod snapshots;
pub use output::OutputState;
pub use snapshots::SnapshotRow;
mod pools;
mod provisioning;
mod runs;
pub use pools::{ClaimCommit, ClaimOutcome, ClaimRow, PoolRow};

#[cfg(test)]
mod owner_tests;
#[cfg(test)]
mod status_tests;
#[cfg(test)]
mod tests;

/// An execution of `true` in `sandbox_id` with `status`, as tests insert them.
#[cfg(test)]
pub(crate) fn execution_row_for_test(
    id: &str,
    sandbox_id: &str,
    owner: &str,
    status: i32,
) -> ExecutionRow {
    ExecutionRow {
        id: id.into(),
        sandbox_id: sandbox_id.into(),
        status,
        command: vec!["true".into()],
        exit_code: 0,
        created_at: 1,
        started_at: 1,
        finished_at: 0,
        message: String::new(),
        cwd: "/".into(),
        tty: false,
        kind: 1,
        trace_id: String::new(),
        owner: owner.into(),
    }
}
