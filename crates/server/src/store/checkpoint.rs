//! WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the
//! commit that crosses 1,000 WAL pages, on the thread that holds the store's lock: that
//! commit copies up to 4 MB into the database and fsyncs twice, and every other store call
//! (a pool claim among them) waits behind it — the p99 of any short request. Instead the
//! store's connection never checkpoints (`wal_autocheckpoint=0`) and one thread with its
//! own connection runs a PASSIVE checkpoint (never blocks readers or writers) in the first
//! [`PERIOD`] without a commit of the server's connection after some (`PRAGMA
//! data_version`), or after [`BUSY_PERIODS`] busy periods in a row. It ends when the store
//! is dropped.
//!
//! **The WAL restart is this thread's too.** Once a checkpoint has copied the whole WAL,
//! the next commit starts the WAL over: it writes a new WAL header and, with
//! `synchronous=NORMAL`, fsyncs it (3.7 ms measured on this project's disk, on a runtime
//! worker, inside the first `CreateExecution` after every idle moment). So right after a
//! complete checkpoint this thread commits a one-row write of its own ([`RESTART_SQL`]):
//! that commit restarts the WAL and pays the fsync here, and the server's next commits
//! append to the fresh WAL. It holds SQLite's write lock for that fsync, so it is done in a
//! quiet period, and a request that still meets it waits in the server connection's busy
//! handler ([`wait_briefly`]): SQLite's default one sleeps 1, 2, 5, 10 … ms, so a lock held
//! for 1.5 ms cost a waiter 3 ms (the tail of every short request, claims among them); this
//! one retries after 20 µs, doubling to 160 µs, then every 250 µs, within the same 5 s
//! bound. Test:
//! `store::tests::the_server_connection_never_restarts_the_wal`.

use rusqlite::Connection;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the thread looks.
const PERIOD: Duration = Duration::from_millis(200);

/// Stops the checkpoint thread when dropped (with the store).
pub(super) struct Checkpointer {
    stop: Arc<AtomicBool>,
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Turn automatic checkpoints off on `conn` and start the checkpoint thread on `path`.
/// When the thread cannot start, automatic checkpoints stay on (correct, only slower).
pub(super) fn start(conn: &Connection, path: &Path) -> Option<Checkpointer> {
    let own = Connection::open(path).ok()?;
    own.busy_timeout(Duration::from_secs(5)).ok()?;
    own.pragma_update(None, "synchronous", "NORMAL").ok()?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("store-checkpoint".into())
        .spawn(move || run(own, flag))
        .ok()?;
    conn.pragma_update(None, "wal_autocheckpoint", 0).ok()?;
    Some(Checkpointer { stop })
}

/// Longest a store call waits for SQLite's write lock before it fails (`database is
/// locked`, an `internal` error): the same bound the default handler had.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The pause before retry number `count` (0-based) of a locked database: 20, 40, 80,
/// 160 µs, then 250 µs each; `None` once the pauses so far add up to [`LOCK_WAIT`].
pub(super) fn lock_retry_pause(count: i32) -> Option<Duration> {
    const FIRST_US: u64 = 20;
    const DOUBLINGS: u64 = 4;
    const STEADY_US: u64 = 250;
    let count = u64::try_from(count).unwrap_or(0);
    let doubled = count.min(DOUBLINGS);
    let waited_us = FIRST_US * ((1 << doubled) - 1) + count.saturating_sub(DOUBLINGS) * STEADY_US;
    if waited_us >= LOCK_WAIT.as_micros() as u64 {
        return None;
    }
    Some(Duration::from_micros(if count < DOUBLINGS {
        FIRST_US << count
    } else {
        STEADY_US
    }))
}

/// SQLite busy handler of the server's connection (see the module doc).
pub(super) fn wait_briefly(count: i32) -> bool {
    match lock_retry_pause(count) {
        Some(pause) => {
            std::thread::sleep(pause);
            true
        }
        None => false,
    }
}

/// The checkpoint thread's own table: one row it updates to restart the WAL.
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS wal_restarts (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO wal_restarts (id, n) VALUES (1, 0);";

/// The write that restarts a fully checkpointed WAL (see the module doc).
const RESTART_SQL: &str = "UPDATE wal_restarts SET n = n + 1 WHERE id = 1";

fn data_version(conn: &Connection) -> Option<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok()
}

fn run(conn: Connection, stop: Arc<AtomicBool>) {
    let mut t = Ticker::default();
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(PERIOD);
        t.tick(&conn);
    }
    // A last full pass so a stopped server leaves a small WAL.
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// Periods in a row with commits before a checkpoint is made anyway (the WAL's growth
/// under constant load is bounded by this many periods of commits).
const BUSY_PERIODS: u32 = 10;

/// When to checkpoint: in the first period without a commit of the server's connection
/// (the restart write then meets no request), or after [`BUSY_PERIODS`] busy ones.
#[derive(Default)]
struct Ticker {
    /// The server connection's `data_version` at the last look.
    seen: Option<i64>,
    /// ... when the WAL was last complete and restarted here.
    settled: Option<i64>,
    busy: u32,
}

impl Ticker {
    fn tick(&mut self, conn: &Connection) {
        let version = data_version(conn);
        let changed = version != self.seen;
        self.seen = version;
        if changed && self.settled.is_some() {
            self.busy += 1;
            if self.busy < BUSY_PERIODS {
                return; // commits are coming: wait for a quiet period
            }
        }
        if version.is_some() && version == self.settled {
            return; // nothing new: the WAL holds only our restart write, keep it so
        }
        if checkpoint_and_restart(conn) {
            self.settled = version;
            self.busy = 0;
        }
    }
}

/// Checkpoint (PASSIVE) and, when that copied the whole WAL, restart it with this
/// connection's own write. `false`: readers in the way, or a failure (look again later).
fn checkpoint_and_restart(conn: &Connection) -> bool {
    // (busy, WAL frames, frames checkpointed); PASSIVE copies what it can right now.
    let wal: rusqlite::Result<(i64, i64, i64)> =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        });
    match wal {
        Ok((0, frames, copied)) if frames > 0 && frames == copied => {
            match conn.execute(RESTART_SQL, []) {
                Ok(_) => true,
                Err(e) => {
                    tracing::warn!(error = %e, "WAL restart write failed");
                    false
                }
            }
        }
        Ok(_) => false,
        Err(e) => {
            tracing::warn!(error = %e, "WAL checkpoint failed");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The WAL header's checkpoint sequence: it grows by one each time the WAL restarts.
    fn restarts(db: &Path) -> u32 {
        let wal = std::fs::read(db.with_extension("db-wal")).unwrap();
        u32::from_be_bytes(wal[12..16].try_into().unwrap())
    }

    #[test]
    fn the_server_connection_never_restarts_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        // The server's connection, as Store::open makes it (without the thread, so the
        // steps below are exactly ordered).
        let server = Connection::open(&db).unwrap();
        server.pragma_update(None, "journal_mode", "WAL").unwrap();
        server.pragma_update(None, "synchronous", "NORMAL").unwrap();
        server.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        server.execute_batch(SCHEMA).unwrap();
        server.execute_batch("CREATE TABLE t (x INTEGER)").unwrap();
        let ckpt = Connection::open(&db).unwrap();
        let mut t = Ticker::default();
        t.tick(&ckpt); // the schema's commits: checkpointed and restarted at once
        for round in 0..5 {
            server
                .execute("INSERT INTO t VALUES (?1)", [round])
                .unwrap();
            // A period with a commit waits; the next, quiet one checkpoints and restarts.
            let before = restarts(&db);
            t.tick(&ckpt);
            assert_eq!(restarts(&db), before, "no checkpoint while commits come");
            t.tick(&ckpt);
            assert_eq!(restarts(&db), before + 1, "round {round}");
            let before = restarts(&db);
            // The server's next commit after a complete checkpoint appends to the WAL
            // the checkpoint thread restarted: no header write, no fsync of its own.
            server
                .execute("INSERT INTO t VALUES (?1)", [round])
                .unwrap();
            assert_eq!(restarts(&db), before, "round {round}");
        }
        // Once that is checkpointed too, idle periods neither checkpoint nor restart.
        t.tick(&ckpt);
        t.tick(&ckpt);
        let before = restarts(&db);
        t.tick(&ckpt);
        t.tick(&ckpt);
        assert_eq!(restarts(&db), before);
        // Under constant commits a checkpoint still comes, after BUSY_PERIODS periods.
        let before = restarts(&db);
        for i in 0..BUSY_PERIODS {
            server
                .execute("INSERT INTO t VALUES (?1)", [100 + i])
                .unwrap();
            t.tick(&ckpt);
        }
        assert_eq!(restarts(&db), before + 1);
        let n: i64 = server
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 10 + i64::from(BUSY_PERIODS));
    }

    #[test]
    fn lock_waits_start_short_and_stay_within_the_bound() {
        let us = |c: i32| lock_retry_pause(c).map(|d| d.as_micros() as u64);
        assert_eq!(us(0), Some(20));
        assert_eq!(us(1), Some(40));
        assert_eq!(us(3), Some(160));
        assert_eq!(us(4), Some(250));
        assert_eq!(us(500), Some(250));
        // Every pause granted adds up to the bound, never past it by more than one pause,
        // and then the handler gives up (the call fails instead of waiting forever).
        let mut total = 0u64;
        let mut count = 0;
        while let Some(p) = us(count) {
            total += p;
            count += 1;
            assert!(count < 100_000, "never gives up");
        }
        let bound = LOCK_WAIT.as_micros() as u64;
        assert!(total >= bound - 250 && total <= bound + 250, "{total}");
        assert_eq!(us(-1), Some(20), "a negative count is treated as the first");
    }

    #[test]
    fn the_store_waits_for_a_write_lock_another_connection_holds() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let store = crate::store::Store::open(&db).unwrap();
        let other = Connection::open(&db).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            held_rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(30));
            other.execute_batch("COMMIT").unwrap();
        });
        held_tx.send(()).unwrap();
        // Without a busy handler this fails at once with "database is locked".
        let row = crate::store::EventRow {
            seq: 0,
            sandbox_id: "sbx_x".into(),
            execution_id: String::new(),
            kind: "test".into(),
            at: 0,
            sandbox_status: 0,
            execution_status: 0,
            message: String::new(),
            attributes: "{}".into(),
        };
        store.append_event(&row).expect("waited for the lock");
        holder.join().unwrap();
    }
}
