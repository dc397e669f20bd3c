//! Durable per-execution output log, the single source for live and retained streams.
//!
//! An append-only file of records `[kind: u8][len: u32 LE][payload]`. The writer appends
//! each stdout/stderr chunk and finally an exit record, then publishes the committed
//! length through a `watch` channel. Every reader — live subscriber or a client resuming
//! hours later — reads the same file from its own position and waits on the watch when it
//! catches up, so a slow client never makes the server drop or buffer retained output, and
//! a reconnecting client resumes exactly where it left off.
//!
//! Retention is bounded (see [`crate::output::quota`]): once a chunk is refused, the writer appends
//! one [`warning_code::OUTPUT_NOT_RETAINED`] warning (the *truncation marker*) and from then
//! on retains no more output; every further byte goes to the subscribers attached at that
//! moment through a bounded `broadcast` channel of [`LiveItem`]s ("live-only" output). A
//! reader switches to that channel once it has read the marker. Live-only output is never
//! on disk: a client that connects later, or falls more than [`LIVE_CAPACITY`] chunks
//! behind, misses it and is told so with an [`warning_code::OUTPUT_LIVE_DROPPED`] warning.
//! When the log is closed a second `output_not_retained` warning states the bytes dropped.
//!
//! Record *n* (1-based) has event sequence *n*. Offsets are per stream byte counts (live-only
//! chunks continue the stream's offsets). A torn record at the tail (crash mid-write) is cut
//! off by [`repair`].

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// Live-only chunks buffered for slow subscribers (each at most one read, 256 KiB).
pub const LIVE_CAPACITY: usize = 16;

/// Stable codes of warnings the log itself writes.
pub mod warning_code {
    /// Output is no longer retained (quota or server watermark); also the final count.
    pub const OUTPUT_NOT_RETAINED: &str = "output_not_retained";
    /// This client fell behind the live-only output and missed some of it.
    pub const OUTPUT_LIVE_DROPPED: &str = "output_live_dropped";
}

/// Output (or a warning) that is sent to attached subscribers but not retained.
#[derive(Debug, Clone)]
pub enum LiveItem {
    Output {
        kind: Kind,
        offset: u64,
        data: Arc<[u8]>,
    },
    Warning(WarningRecord),
}

const HEADER: usize = 5;
/// Largest payload accepted in one record (defends readers against a corrupt length).
pub const MAX_RECORD: usize = 4 << 20;

/// Record kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stdout = 1,
    Stderr = 2,
    /// JSON [`ExitRecord`].
    Exit = 3,
    /// JSON [`WarningRecord`].
    Warning = 4,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::Stdout),
            2 => Some(Kind::Stderr),
            3 => Some(Kind::Exit),
            4 => Some(Kind::Warning),
            _ => None,
        }
    }
}

/// Final record of every log.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ExitRecord {
    pub status: i32,
    pub exit_code: i32,
    pub message: String,
    /// Stable code of an end that clients should report as an error (`oom_killed`);
    /// empty for an ordinary exit, a cancel or a timeout.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
}

/// Stable codes of [`ExitRecord::code`].
pub mod exit_code {
    /// The kernel's OOM killer ended the execution: the sandbox hit its memory limit.
    pub const OOM_KILLED: &str = "oom_killed";
}

/// A warning shown to attached clients (e.g. a policy deny).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct WarningRecord {
    pub code: String,
    pub message: String,
}

/// Committed state published to readers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Committed {
    pub len: u64,
    pub closed: bool,
}

/// The single writer of a live execution's log.
pub struct LogWriter {
    file: File,
    len: u64,
    tx: watch::Sender<Committed>,
    live: broadcast::Sender<LiveItem>,
    /// Per stream (stdout, stderr): bytes seen (retained or not) and bytes not retained.
    ends: [u64; 2],
    dropped: [u64; 2],
    /// Both streams' dropped bytes, readable while the execution runs (InspectExecution).
    dropped_total: Arc<std::sync::atomic::AtomicU64>,
    /// Items handed to clients by every subscriber (see [`LogWriter::reader_progress`]).
    read_progress: Arc<std::sync::atomic::AtomicU64>,
    truncated: bool,
}

fn idx(kind: Kind) -> usize {
    if kind == Kind::Stdout {
        0
    } else {
        1
    }
}

impl LogWriter {
    /// Create a fresh log at `path`.
    pub fn create(path: &Path) -> io::Result<LogWriter> {
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)?;
        let (tx, _) = watch::channel(Committed::default());
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Ok(LogWriter {
            file,
            len: 0,
            tx,
            live,
            ends: [0; 2],
            dropped: [0; 2],
            dropped_total: Arc::default(),
            read_progress: Arc::default(),
            truncated: false,
        })
    }

    /// Subscribe to commit notifications.
    pub fn subscribe(&self) -> watch::Receiver<Committed> {
        self.tx.subscribe()
    }

    /// The live-only channel (subscribe with `.subscribe()` before reading the file).
    pub fn live_sender(&self) -> broadcast::Sender<LiveItem> {
        self.live.clone()
    }

    /// Live-only items not yet seen by every subscriber ([`LIVE_CAPACITY`] = one is lagging).
    pub fn live_backlog(&self) -> usize {
        self.live.len()
    }

    /// The counter subscribers bump for every item they hand to their client, retained or
    /// live-only: how the writer tells a client that is still reading (perhaps still the
    /// retained part, far behind the marker) from one that is stuck.
    pub fn progress_counter(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.read_progress.clone()
    }

    /// Items handed out so far by all subscribers ([`LogWriter::progress_counter`]).
    pub fn reader_progress(&self) -> u64 {
        self.read_progress
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether output has stopped being retained.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// A live counter of the bytes not retained (both streams).
    pub fn dropped_counter(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.dropped_total.clone()
    }

    /// Bytes of stdout and stderr not retained so far.
    pub fn dropped(&self) -> (u64, u64) {
        (self.dropped[0], self.dropped[1])
    }

    /// Bytes of stdout and stderr in the log: what a reader's
    /// [`LogReader::stream_ends`] finds at the end (all retained bytes come before any
    /// that are not).
    pub fn retained(&self) -> (u64, u64) {
        (
            self.ends[0] - self.dropped[0],
            self.ends[1] - self.dropped[1],
        )
    }

    fn append(&mut self, kind: Kind, payload: &[u8]) -> io::Result<()> {
        for part in payload.chunks(MAX_RECORD) {
            let mut header = [kind as u8, 0, 0, 0, 0];
            header[1..].copy_from_slice(&(part.len() as u32).to_le_bytes());
            write_all_vectored(&mut self.file, &header, part)?;
            self.len += (HEADER + part.len()) as u64;
        }
        let len = self.len;
        self.tx.send_modify(|c| c.len = len);
        Ok(())
    }

    /// Append output bytes of one stream (all retained while output is retained).
    pub fn output(&mut self, kind: Kind, data: &[u8]) -> io::Result<()> {
        let n = self.output_charged(kind, data, data.len(), "")?;
        self.live_output(kind, &data[n..]);
        Ok(())
    }

    /// Append the first `retain` bytes of `data` (none after the truncation marker) and
    /// return how many were retained. When that is less than `data.len()`, the first time
    /// writes the truncation marker (`refused` says why); the caller then hands the rest to
    /// [`LogWriter::live_output`].
    pub fn output_charged(
        &mut self,
        kind: Kind,
        data: &[u8],
        retain: usize,
        refused: &str,
    ) -> io::Result<usize> {
        let retain = if self.truncated {
            0
        } else {
            retain.min(data.len())
        };
        if retain > 0 {
            self.append(kind, &data[..retain])?;
            self.ends[idx(kind)] += retain as u64;
        }
        if retain < data.len() {
            self.truncate(refused)?;
        }
        Ok(retain)
    }

    /// Stop retaining (once): write the truncation marker, which goes into the file (not
    /// live-only) because readers switch to the live channel on it.
    pub fn truncate(&mut self, refused: &str) -> io::Result<()> {
        if self.truncated {
            return Ok(());
        }
        self.append_warning(&WarningRecord {
            code: warning_code::OUTPUT_NOT_RETAINED.into(),
            message: format!(
                "output is no longer retained: {refused}; attached clients still receive it live, but it cannot be streamed again or inspected later"
            ),
        })?;
        self.truncated = true;
        Ok(())
    }

    /// Send output that is not retained to the subscribers attached now.
    pub fn live_output(&mut self, kind: Kind, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let i = idx(kind);
        self.dropped[i] += data.len() as u64;
        self.dropped_total
            .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
        let _ = self.live.send(LiveItem::Output {
            kind,
            offset: self.ends[i],
            data: Arc::from(data),
        });
        self.ends[i] += data.len() as u64;
    }

    /// Subscribers of the live-only channel.
    pub fn live_receivers(&self) -> usize {
        self.live.receiver_count()
    }

    /// Record a warning: retained while output is, live-only after the truncation marker.
    pub fn warning(&mut self, w: &WarningRecord) -> io::Result<()> {
        if self.truncated {
            let _ = self.live.send(LiveItem::Warning(w.clone()));
            return Ok(());
        }
        self.append_warning(w)
    }

    fn append_warning(&mut self, w: &WarningRecord) -> io::Result<()> {
        self.append(
            Kind::Warning,
            &serde_json::to_vec(w).map_err(io::Error::other)?,
        )
    }

    /// Write the exit record (after the count of bytes not retained, if any), flush to
    /// disk and tell readers the log is complete.
    pub fn close(self, exit: &ExitRecord) -> io::Result<()> {
        self.close_unsynced(exit)?.sync_data()
    }

    /// [`LogWriter::close`] without the flush to disk: readers learn of the exit at once
    /// and the caller gets the file to `sync_data` off the async runtime (an fdatasync
    /// costs milliseconds on ordinary disks; it must neither delay the exit for attached
    /// clients nor block a runtime thread).
    pub fn close_unsynced(mut self, exit: &ExitRecord) -> io::Result<File> {
        if self.truncated {
            let (o, e) = self.dropped();
            let w = WarningRecord {
                code: warning_code::OUTPUT_NOT_RETAINED.into(),
                message: format!(
                    "{o} bytes of stdout and {e} bytes of stderr were not retained ({} dropped)",
                    o + e
                ),
            };
            // Best effort: the exit record below matters more.
            let _ = self.append_warning(&w);
        }
        let res = self
            .append(
                Kind::Exit,
                &serde_json::to_vec(exit).map_err(io::Error::other)?,
            )
            .and_then(|_| self.file.try_clone());
        self.tx.send_modify(|c| c.closed = true);
        res
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        // Never leave readers waiting forever, even if the writer is dropped on an error path.
        self.tx.send_modify(|c| c.closed = true);
    }
}

/// Write header and payload with as few syscalls as possible (usually one writev), no copy.
fn write_all_vectored(file: &mut File, mut header: &[u8], mut payload: &[u8]) -> io::Result<()> {
    while !header.is_empty() || !payload.is_empty() {
        let n = file.write_vectored(&[io::IoSlice::new(header), io::IoSlice::new(payload)])?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        let from_header = n.min(header.len());
        header = &header[from_header..];
        payload = &payload[n - from_header..];
    }
    Ok(())
}

/// One decoded record.
#[derive(Debug, Clone)]
pub enum Entry {
    Output {
        kind: Kind,
        offset: u64,
        data: Vec<u8>,
    },
    Exit(ExitRecord),
    Warning(WarningRecord),
}

/// Bytes a [`LogReader`] reads at a time.
const READ_BUF: usize = 16 << 10;

/// Sequential reader that tracks sequence numbers and per-stream offsets.
///
/// Buffered: a record costs no system call of its own. Why: a sandbox decides how many
/// records its output becomes (a process writing one byte at a time makes one record per
/// write), and every reader — a stream, the tails and totals of an inspect, the final
/// record of `RunExecution`, recovery — walks all of them. Unbuffered, that was a seek and
/// a read per record header (and one more per payload): seconds of a runtime worker for a
/// log of a few million tiny records. The log is append-only and its bytes never change
/// once written, so buffered bytes past the committed length are never stale, only short.
pub struct LogReader {
    file: io::BufReader<File>,
    /// Whether `file` is positioned at `pos`. False after an incomplete record or an
    /// error, which may leave it anywhere: the next call seeks.
    at_pos: bool,
    pos: u64,
    pub seq: u64,
    stdout_off: u64,
    stderr_off: u64,
}

impl LogReader {
    pub fn open(path: &Path) -> io::Result<LogReader> {
        Ok(LogReader {
            file: io::BufReader::with_capacity(READ_BUF, File::open(path)?),
            at_pos: true,
            pos: 0,
            seq: 0,
            stdout_off: 0,
            stderr_off: 0,
        })
    }

    /// Read the next record entirely below `limit` bytes. `Ok(None)` = nothing complete yet.
    /// `skip_payload` lets resumption skip output it will not send without reading it.
    pub fn next(
        &mut self,
        limit: u64,
        skip_payload: impl Fn(Kind, u64, u64) -> bool,
    ) -> io::Result<Option<(u64, Entry)>> {
        if self.pos + HEADER as u64 > limit {
            return Ok(None);
        }
        if !self.at_pos {
            self.file.seek(SeekFrom::Start(self.pos))?;
        }
        // Until this record has been read entirely.
        self.at_pos = false;
        let mut hdr = [0u8; HEADER];
        self.file.read_exact(&mut hdr)?;
        let kind = Kind::from_u8(hdr[0])
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "corrupt log record"))?;
        let len = u32::from_le_bytes([hdr[1], hdr[2], hdr[3], hdr[4]]) as u64;
        if len as usize > MAX_RECORD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "corrupt log record length",
            ));
        }
        if self.pos + HEADER as u64 + len > limit {
            return Ok(None);
        }
        // The record is complete: it counts as read from here on, even if its payload turns
        // out unreadable (as before buffering: `repair` keeps it, a reader moves past it).
        self.pos += HEADER as u64 + len;
        self.seq += 1;
        let entry = match kind {
            Kind::Stdout | Kind::Stderr => {
                let off = if kind == Kind::Stdout {
                    &mut self.stdout_off
                } else {
                    &mut self.stderr_off
                };
                let offset = *off;
                *off += len;
                let data = if skip_payload(kind, offset, len) {
                    self.file.seek_relative(len as i64)?;
                    Vec::new()
                } else {
                    let mut data = vec![0u8; len as usize];
                    self.file.read_exact(&mut data)?;
                    data
                };
                self.at_pos = true;
                Entry::Output { kind, offset, data }
            }
            Kind::Exit | Kind::Warning => {
                let mut data = vec![0u8; len as usize];
                self.file.read_exact(&mut data)?;
                self.at_pos = true;
                if kind == Kind::Exit {
                    Entry::Exit(serde_json::from_slice(&data).map_err(io::Error::other)?)
                } else {
                    Entry::Warning(serde_json::from_slice(&data).map_err(io::Error::other)?)
                }
            }
        };
        Ok(Some((self.seq, entry)))
    }
}

impl LogReader {
    /// Byte totals of stdout and stderr read so far.
    pub fn stream_ends(&self) -> (u64, u64) {
        (self.stdout_off, self.stderr_off)
    }
}

/// Scan a log left by a previous server: truncate a torn tail record, and report whether it
/// ends with an exit record (which one) plus the stdout/stderr byte totals.
pub fn repair(path: &Path) -> io::Result<(Option<ExitRecord>, u64, u64)> {
    let len = std::fs::metadata(path)?.len();
    let mut r = LogReader::open(path)?;
    let mut exit = None;
    loop {
        match r.next(len, |_, _, _| true) {
            Ok(Some((_, Entry::Exit(e)))) => exit = Some(e),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    if r.pos < len {
        OpenOptions::new().write(true).open(path)?.set_len(r.pos)?;
    }
    Ok((exit, r.stdout_off, r.stderr_off))
}

/// Append an exit record to a log that has none (execution interrupted by a restart).
pub fn append_exit(path: &Path, exit: &ExitRecord) -> io::Result<()> {
    let payload = serde_json::to_vec(exit).map_err(io::Error::other)?;
    let mut f = OpenOptions::new().append(true).create(true).open(path)?;
    let mut rec = vec![Kind::Exit as u8];
    rec.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    rec.extend_from_slice(&payload);
    f.write_all(&rec)?;
    f.sync_data()
}

/// Where an execution's log lives.
pub fn path_for(dir: &Path, execution_id: &str) -> PathBuf {
    dir.join(format!("{execution_id}.log"))
}

#[cfg(test)]
#[path = "execlog_tests.rs"]
mod tests;
