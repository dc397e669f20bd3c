//! Reading an execution's output log: one `StreamExecution` subscriber (the retained log
//! first, then live output) and InspectExecution's tails share the reader
//! ([`LogReader`]) and the offset cutting ([`cut`]).
//!
//! The reader follows the durable log (see [`crate::output::execlog`]) from its own position and
//! waits on the writer's commit watch when caught up. Once it has read the truncation
//! marker (`output_not_retained`), output is no longer in the file: it takes the live-only
//! chunks from the `broadcast` receiver it subscribed *before* reading anything, so nothing
//! sent after the subscription is missed unless it falls more than
//! [`execlog::LIVE_CAPACITY`] chunks behind (then it gets an `output_live_dropped` warning).
//!
//! Ordering: live-only chunks are sent before the writer commits any later record, so the
//! reader drains the live channel after reading each commit snapshot's records and before
//! emitting the exit record; no live chunk is lost behind the exit.

use crate::engine::StreamItem;
use crate::model::error::EngineError;
use crate::output::execlog::{self, warning_code, Entry, Kind, LiveItem, LogReader};
use futures::stream::BoxStream;
use futures::StreamExt;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};

/// Where a subscriber starts and whether it follows the live tail.
#[derive(Debug, Clone, Copy)]
pub struct From {
    pub after_seq: u64,
    pub stdout_offset: u64,
    pub stderr_offset: u64,
    pub follow: bool,
}

impl From {
    fn offset(&self, kind: Kind) -> u64 {
        if kind == Kind::Stdout {
            self.stdout_offset
        } else {
            self.stderr_offset
        }
    }

    /// Cut output before the requested offset; `None` when nothing is left.
    fn cut(&self, seq: u64, kind: Kind, offset: u64, data: &[u8]) -> Option<StreamItem> {
        let (offset, data) = cut(self.offset(kind), offset, data)?;
        Some(StreamItem::Output {
            seq,
            stdout: kind == Kind::Stdout,
            offset,
            data: data.to_vec(),
        })
    }
}

/// The part of a chunk at stream `offset` that lies at or after stream offset `from`, with
/// its own offset; `None` when the whole chunk lies before it.
pub fn cut(from: u64, offset: u64, data: &[u8]) -> Option<(u64, &[u8])> {
    if offset + data.len() as u64 <= from {
        return None;
    }
    let cut = (from.saturating_sub(offset) as usize).min(data.len());
    Some((offset + cut as u64, &data[cut..]))
}

/// Tail reads running at once on the blocking pool ([`read_tails_off_runtime`]).
const TAIL_READS: usize = 2;

/// A log up to this size is read in place: one buffered read, a few thousand records at
/// most, cheaper than the hand-off to another thread (the final record of every
/// `cleanroom exec` reads one).
const READ_IN_PLACE: u64 = 16 << 10;

/// [`read_tails`] on tokio's blocking pool, at most [`TAIL_READS`] at a time and one of them
/// for `owner` (the principal whose sandbox's log it is), in place for a log of at most
/// [`READ_IN_PLACE`] bytes.
///
/// Why: the work grows with the log, whose size and number of records the sandbox chose
/// (up to its output quota: 1 GiB by default). On a runtime worker, an inspect of such a
/// log stalled every call and stream sharing that worker (rule 4: nothing a sandbox does
/// may block the server's runtime); unbounded on the blocking pool, concurrent inspects
/// would each take a thread. Waiting callers queue fairly ([`crate::budgets::fair_slots`]): one
/// principal's many inspects of large logs hold one slot and queue behind their own, so
/// another principal's inspect or console attach is not starved by them.
pub async fn read_tails_off_runtime(
    path: PathBuf,
    tail: u64,
    owner: &str,
) -> std::io::Result<(Vec<u8>, Vec<u8>, u64, u64)> {
    let len = std::fs::metadata(&path)?.len();
    if len <= READ_IN_PLACE {
        return tails_below(&path, len, tail);
    }
    static SLOTS: std::sync::LazyLock<crate::budgets::fair_slots::FairSlots> =
        std::sync::LazyLock::new(|| crate::budgets::fair_slots::FairSlots::new(TAIL_READS, 1));
    let _slot = SLOTS.enter(owner).await.map_err(std::io::Error::other)?;
    tokio::task::spawn_blocking(move || tails_below(&path, len, tail))
        .await
        .map_err(std::io::Error::other)?
}

/// The last `tail` bytes of each stream plus the stream totals (stdout tail, stderr tail,
/// stdout bytes, stderr bytes). Payloads that end before the tail are skipped without
/// being read, so inspecting a huge log stays cheap.
pub fn read_tails(path: &Path, tail: u64) -> std::io::Result<(Vec<u8>, Vec<u8>, u64, u64)> {
    tails_below(path, std::fs::metadata(path)?.len(), tail)
}

/// [`read_tails`] of the log's first `len` bytes.
fn tails_below(path: &Path, len: u64, tail: u64) -> std::io::Result<(Vec<u8>, Vec<u8>, u64, u64)> {
    #[cfg(test)]
    probe::wait_for_the_runtime();
    // Pass 1 reads headers only, to learn each stream's total.
    let mut totals = LogReader::open(path)?;
    while totals.next(len, |_, _, _| true)?.is_some() {}
    let (out_end, err_end) = totals.stream_ends();
    if tail == 0 {
        return Ok((Vec::new(), Vec::new(), out_end, err_end));
    }
    let from = |k: Kind| (if k == Kind::Stdout { out_end } else { err_end }).saturating_sub(tail);
    // Pass 2 reads only the payloads that reach into the tails.
    let mut r = LogReader::open(path)?;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while let Some((_, e)) = r.next(len, |k, o, l| o + l <= from(k))? {
        if let Entry::Output { kind, offset, data } = e {
            let buf = if kind == Kind::Stdout {
                &mut out
            } else {
                &mut err
            };
            if let Some((_, rest)) = cut(from(kind), offset, &data) {
                buf.extend_from_slice(rest);
            }
        }
    }
    Ok((out, err, out_end, err_end))
}

/// Open one subscriber's stream. It reads the log when polled (no task of its own), so
/// a slow client holds back only its own reader, and dropping the stream stops it.
/// `commit`/`live` are `None` for a finished execution; `live` carries the writer's
/// progress counter, bumped for every item handed out (see
/// [`execlog::LogWriter::progress_counter`]).
pub fn open(
    reader: LogReader,
    path: PathBuf,
    commit: Option<watch::Receiver<execlog::Committed>>,
    live: Option<(broadcast::Receiver<LiveItem>, Arc<AtomicU64>)>,
    from: From,
) -> BoxStream<'static, Result<StreamItem, EngineError>> {
    let (live, progress) = live.unzip();
    let sub = Subscriber {
        reader,
        path,
        commit,
        live,
        progress,
        from,
        live_mode: false,
        last_seq: 0,
        pending: VecDeque::new(),
        state: State::Snapshot,
    };
    futures::stream::unfold(sub, |mut s| async move { s.next().await.map(|i| (i, s)) }).boxed()
}

/// Where a subscriber is.
#[derive(Clone, Copy)]
enum State {
    /// Learn how far the log is committed.
    Snapshot,
    /// Read records up to `limit`; `closed`: the log is complete.
    Reading {
        limit: u64,
        closed: bool,
    },
    /// Caught up: wait for a commit or a live-only chunk.
    Wait,
    Done,
}

struct Subscriber {
    reader: LogReader,
    path: PathBuf,
    commit: Option<watch::Receiver<execlog::Committed>>,
    live: Option<broadcast::Receiver<LiveItem>>,
    /// The writer's count of items handed out by all subscribers.
    progress: Option<Arc<AtomicU64>>,
    from: From,
    /// Live-only output comes after the marker; items carry the last file sequence.
    live_mode: bool,
    last_seq: u64,
    /// Items ready to hand out: at most one record's plus what the live channel held.
    pending: VecDeque<Result<StreamItem, EngineError>>,
    state: State,
}

/// Records a subscriber passes over (nothing to send: before where it resumes) between two
/// yields to the runtime. Why: a resume far into a log of millions of tiny records (the
/// sandbox's choice) passed over all of them in one poll of a runtime worker.
const YIELD_EVERY: u32 = 1024;

impl Subscriber {
    async fn next(&mut self) -> Option<Result<StreamItem, EngineError>> {
        let mut passed_over = 0u32;
        loop {
            if let Some(item) = self.pending.pop_front() {
                if let Some(p) = &self.progress {
                    p.fetch_add(1, Ordering::Relaxed);
                }
                return Some(item);
            }
            match self.state {
                State::Done => return None,
                State::Snapshot => {
                    let (limit, closed) = match &self.commit {
                        Some(c) => {
                            let v = *c.borrow();
                            (v.len, v.closed)
                        }
                        None => (
                            std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0),
                            true,
                        ),
                    };
                    self.state = State::Reading { limit, closed };
                }
                State::Reading { limit, closed } => {
                    let from = self.from;
                    // A record up to `after_seq` is not sent: its payload is not read either.
                    let before = self.reader.seq < from.after_seq;
                    let skip = |kind: Kind, offset: u64, len: u64| {
                        before || offset + len <= from.offset(kind)
                    };
                    match self.reader.next(limit, skip) {
                        Ok(Some((seq, entry))) => {
                            self.entry(seq, entry);
                            if self.pending.is_empty() {
                                passed_over += 1;
                                if passed_over.is_multiple_of(YIELD_EVERY) {
                                    tokio::task::yield_now().await;
                                }
                            }
                        }
                        Ok(None) => {
                            if self.live_mode {
                                self.drain();
                            }
                            self.state = if closed || !self.from.follow || self.commit.is_none() {
                                State::Done
                            } else {
                                State::Wait
                            };
                        }
                        Err(e) => {
                            let msg = format!("read output log: {e}");
                            self.pending.push_back(Err(EngineError::internal(msg)));
                            self.state = State::Done;
                        }
                    }
                }
                State::Wait => {
                    let Some(c) = self.commit.as_mut() else {
                        self.state = State::Done;
                        continue;
                    };
                    let live_rx = self.live.as_mut().filter(|_| self.live_mode);
                    tokio::select! {
                        r = c.changed() => if r.is_err() {
                            // Writer gone: read whatever was committed last, then stop.
                            self.commit = None;
                        },
                        r = recv(live_rx) => match r {
                            Some(item) => {
                                if let Some(i) = live_item(item, self.last_seq, &self.from) {
                                    self.pending.push_back(Ok(i));
                                }
                            }
                            None => self.live = None,
                        },
                    }
                    self.state = State::Snapshot;
                }
            }
        }
    }

    /// One record of the log.
    fn entry(&mut self, seq: u64, entry: Entry) {
        self.last_seq = seq;
        if matches!(entry, Entry::Exit(_)) && self.live_mode {
            // Every live chunk was sent before the exit was committed.
            self.drain();
        }
        let marker =
            matches!(&entry, Entry::Warning(w) if w.code == warning_code::OUTPUT_NOT_RETAINED);
        if seq > self.from.after_seq {
            let item = match entry {
                Entry::Output { kind, offset, data } => self.from.cut(seq, kind, offset, &data),
                Entry::Exit(exit) => Some(StreamItem::Exit { seq, exit }),
                Entry::Warning(w) => Some(StreamItem::Warning {
                    seq,
                    code: w.code,
                    message: w.message,
                }),
            };
            if let Some(item) = item {
                self.pending.push_back(Ok(item));
            }
        }
        if marker && !self.live_mode {
            self.live_mode = true;
            self.drain();
        }
    }

    /// Take everything the live channel holds now (at most its capacity, plus one lag
    /// warning).
    fn drain(&mut self) {
        let Some(rx) = self.live.as_mut() else {
            return;
        };
        loop {
            let item = match rx.try_recv() {
                Ok(i) => Ok(i),
                Err(TryRecvError::Lagged(n)) => Err(n),
                Err(TryRecvError::Empty) => return,
                Err(TryRecvError::Closed) => {
                    self.live = None;
                    return;
                }
            };
            if let Some(i) = live_item(item, self.last_seq, &self.from) {
                self.pending.push_back(Ok(i));
            }
        }
    }
}

/// Receive one live item (pending forever without a receiver). `None`: channel closed.
async fn recv(rx: Option<&mut broadcast::Receiver<LiveItem>>) -> Option<Result<LiveItem, u64>> {
    let Some(rx) = rx else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(i) => Some(Ok(i)),
        Err(RecvError::Lagged(n)) => Some(Err(n)),
        Err(RecvError::Closed) => None,
    }
}

/// The stream item for one live-only chunk (or a lag); `None` when it lies before the
/// requested offset.
fn live_item(item: Result<LiveItem, u64>, seq: u64, from: &From) -> Option<StreamItem> {
    Some(match item {
        Ok(LiveItem::Output { kind, offset, data }) => from.cut(seq, kind, offset, &data)?,
        Ok(LiveItem::Warning(w)) => StreamItem::Warning {
            seq,
            code: w.code,
            message: w.message,
        },
        Err(n) => StreamItem::Warning {
            seq,
            code: warning_code::OUTPUT_LIVE_DROPPED.into(),
            message: format!(
                "this client fell behind and missed {n} chunks of output that is not retained"
            ),
        },
    })
}

/// Whether the runtime can run other tasks while [`read_tails`] runs (see the test).
#[cfg(test)]
mod probe {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    pub static ARMED: AtomicBool = AtomicBool::new(false);
    pub static PINGED: AtomicBool = AtomicBool::new(false);
    pub static STARVED: AtomicBool = AtomicBool::new(false);

    /// Armed: wait (at most 5 s) for a task of the runtime to ping; record if none could.
    pub fn wait_for_the_runtime() {
        if !ARMED.load(Ordering::SeqCst) {
            return;
        }
        PINGED.store(false, Ordering::SeqCst);
        for _ in 0..5000 {
            if PINGED.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        STARVED.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::probe::{ARMED, PINGED, STARVED};
    use crate::output::execlog::{ExitRecord, Kind, LogReader, LogWriter};
    use futures::StreamExt;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A finished log of `n` stdout records of `size` bytes each, then the exit.
    fn log(dir: &std::path::Path, n: u64, size: usize) -> std::path::PathBuf {
        let p = dir.join("x.log");
        let mut w = LogWriter::create(&p).unwrap();
        let chunk = vec![b'x'; size];
        for _ in 0..n {
            w.output(Kind::Stdout, &chunk).unwrap();
        }
        w.close(&ExitRecord::default()).unwrap();
        p
    }

    /// A stream of the finished log at `p` resuming after record `after_seq`.
    fn resume(
        p: &std::path::Path,
        after_seq: u64,
    ) -> futures::stream::BoxStream<
        'static,
        Result<crate::engine::StreamItem, crate::model::error::EngineError>,
    > {
        let from = super::From {
            after_seq,
            stdout_offset: 0,
            stderr_offset: 0,
            follow: false,
        };
        super::open(
            LogReader::open(p).unwrap(),
            p.to_path_buf(),
            None,
            None,
            from,
        )
    }

    #[test]
    fn a_resume_far_into_a_log_of_tiny_records_lets_the_runtime_run_other_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let n = 100_000;
        let p = log(dir.path(), n, 1);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        static TURNS: AtomicU64 = AtomicU64::new(0);
        let first = rt.block_on(async {
            let other = tokio::spawn(async {
                loop {
                    TURNS.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                }
            });
            let first = resume(&p, n).next().await;
            other.abort();
            first
        });
        assert!(
            matches!(first, Some(Ok(crate::engine::StreamItem::Exit { seq, .. })) if seq == n + 1),
            "the exit comes after every passed-over record"
        );
        assert!(
            TURNS.load(Ordering::SeqCst) >= 10,
            "another task ran only {} times while {n} records were passed over",
            TURNS.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn a_resume_does_not_read_the_payloads_it_passes_over() {
        let dir = tempfile::tempdir().unwrap();
        let (n, size) = (64, 256 << 10);
        let p = log(dir.path(), n, size);
        let read_bytes = || -> u64 {
            let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
            io.lines()
                .find_map(|l| l.strip_prefix("rchar: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let before = read_bytes();
        let items: Vec<_> = rt.block_on(resume(&p, n - 1).collect());
        let read = read_bytes() - before;
        assert_eq!(items.len(), 2, "the last chunk and the exit");
        // Each record passed over costs at most one buffer fill (16 KiB), not its payload.
        assert!(
            read < n * size as u64 / 8,
            "{read} bytes read to resume at the last of {n} chunks of {size} bytes"
        );
    }

    #[test]
    fn tails_are_read_while_the_runtime_runs_other_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.log");
        let mut w = LogWriter::create(&p).unwrap();
        // Past what is read in place.
        let big = vec![b'x'; super::READ_IN_PLACE as usize];
        w.output(Kind::Stdout, &big).unwrap();
        w.output(Kind::Stdout, b"hello").unwrap();
        w.close(&ExitRecord::default()).unwrap();
        // One runtime thread: a read on it would keep the pinger from running.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        ARMED.store(true, Ordering::SeqCst);
        let tails = rt.block_on(async {
            let pinger = tokio::spawn(async {
                loop {
                    PINGED.store(true, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            });
            let tails = super::read_tails_off_runtime(p.clone(), 3, "t")
                .await
                .unwrap();
            pinger.abort();
            tails
        });
        assert!(
            !STARVED.load(Ordering::SeqCst),
            "the runtime could not run another task while the tails were read"
        );
        assert_eq!(
            tails,
            (b"llo".to_vec(), Vec::new(), super::READ_IN_PLACE + 5, 0)
        );
    }
}
