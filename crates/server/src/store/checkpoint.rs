//! WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the
//! commit that crosses 1,000 WAL pages, on the thread that holds the store's lock: that
//! commit copies up to 4 MB into the database and fsyncs twice, and every other store call
//! (a pool claim among them) waits behind it — the p99 of any short request. Instead the
//! store's connection never checkpoints (`wal_autocheckpoint=0`) and one thread with its
//! own connection runs a PASSIVE checkpoint (never blocks readers or writers) every
//! [`PERIOD`] when the server's connection committed something since the last one
//! (`PRAGMA data_version`). It ends when the store is dropped.
//!
//! **The WAL restart is this thread's too.** Once a checkpoint has copied the whole WAL,
//! the next commit starts the WAL over: it writes a new WAL header and, with
//! `synchronous=NORMAL`, fsyncs it (3.7 ms measured on this project's disk, on a runtime
//! worker, inside the first `CreateExecution` after every idle moment). So right after a
//! complete checkpoint this thread commits a one-row write of its own ([`RESTART_SQL`]):
//! that commit restarts the WAL and pays the fsync here, and the server's next commits
//! append to the fresh WAL. Test: `store::tests::the_server_connection_never_restarts_the_wal`.

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

/// The checkpoint thread's own table: one row it updates to restart the WAL.
pub(super) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS wal_restarts (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO wal_restarts (id, n) VALUES (1, 0);";

/// The write that restarts a fully checkpointed WAL (see the module doc).
const RESTART_SQL: &str = "UPDATE wal_restarts SET n = n + 1 WHERE id = 1";

fn data_version(conn: &Connection) -> Option<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok()
}

fn run(conn: Connection, stop: Arc<AtomicBool>) {
    // What the server's connection had committed when the WAL was last complete and
    // restarted; `None`: look at once.
    let mut settled = None;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(PERIOD);
        step(&conn, &mut settled);
    }
    // A last full pass so a stopped server leaves a small WAL.
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}

/// One period: checkpoint what the server's connection committed since `settled`, and
/// restart the WAL here when the checkpoint was complete.
fn step(conn: &Connection, settled: &mut Option<i64>) {
    let version = data_version(conn);
    if version.is_some() && version == *settled {
        return; // nothing new: the WAL holds only our restart write, keep it so
    }
    // (busy, WAL frames, frames checkpointed); PASSIVE copies what it can right now.
    let wal: rusqlite::Result<(i64, i64, i64)> =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        });
    match wal {
        Ok((0, frames, copied)) if frames > 0 && frames == copied => {
            match conn.execute(RESTART_SQL, []) {
                Ok(_) => *settled = version,
                Err(e) => tracing::warn!(error = %e, "WAL restart write failed"),
            }
        }
        Ok(_) => {} // readers in the way or nothing yet: look again next period
        Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed"),
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
        let mut settled = None;
        for round in 0..5 {
            server
                .execute("INSERT INTO t VALUES (?1)", [round])
                .unwrap();
            step(&ckpt, &mut settled);
            let before = restarts(&db);
            // The server's next commit after a complete checkpoint appends to the WAL
            // the checkpoint thread restarted: no header write, no fsync of its own.
            server
                .execute("INSERT INTO t VALUES (?1)", [round])
                .unwrap();
            assert_eq!(restarts(&db), before, "round {round}");
        }
        // Once that is checkpointed too, idle periods neither checkpoint nor restart.
        step(&ckpt, &mut settled);
        let before = restarts(&db);
        step(&ckpt, &mut settled);
        step(&ckpt, &mut settled);
        assert_eq!(restarts(&db), before);
        let n: i64 = server
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 10);
    }
}
