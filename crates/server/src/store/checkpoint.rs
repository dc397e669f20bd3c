//! WAL checkpoints off the request path. SQLite's automatic checkpoint runs inside the
//! commit that crosses 1,000 WAL pages, on the thread that holds the store's lock: that
//! commit copies up to 4 MB into the database and fsyncs twice, and every other store call
//! (a pool claim among them) waits behind it — the p99 of any short request. Instead the
//! store's connection never checkpoints (`wal_autocheckpoint=0`) and one thread with its
//! own connection runs a PASSIVE checkpoint (never blocks readers or writers) every
//! [`PERIOD`] (a no-op when nothing new is in the WAL). It ends when the store is dropped.

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
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("store-checkpoint".into())
        .spawn(move || run(own, flag))
        .ok()?;
    conn.pragma_update(None, "wal_autocheckpoint", 0).ok()?;
    Some(Checkpointer { stop })
}

fn run(conn: Connection, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(PERIOD);
        // (busy, WAL frames, frames checkpointed); PASSIVE copies what it can right now.
        let wal: rusqlite::Result<(i64, i64, i64)> =
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            });
        if let Err(e) = wal {
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    }
    // A last full pass so a stopped server leaves a small WAL.
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
}
