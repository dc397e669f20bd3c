//! Client-side retained artifacts of `exec`/`console` runs and `cleanroom status`, their
//! browser (seed 000): after a run the CLI keeps what the server said about it —
//! `InspectExecution` as JSON (with the output tails) plus the non-empty tails as text — under
//! `$XDG_STATE_HOME/cleanroom/executions/<execution_id>/` (else `~/.local/state/…`),
//! private to the user (0700/0600), the newest [`KEEP`] runs at most (the oldest
//! [`PRUNE_BATCH`] are removed together when the limit is reached). Each run also records
//! the server it ran on ([`SERVER_FILE`]): `status` ([`status`]) tells runs of the server
//! the CLI talks to from other servers' runs.

use cleanroom_client::api::*;
use cleanroom_client::Client;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Runs kept at most (oldest removed first).
const KEEP: usize = 100;
/// Runs removed together once [`KEEP`] is reached. Why a batch: the directory is then
/// listed once every [`PRUNE_BATCH`] runs, not on every run — every other run checks its
/// link count only (one `stat`). Listing and removing on every `exec` cost about 0.5 ms
/// of a 7 ms `exec -- true` here (docs/performance.md).
const PRUNE_BATCH: usize = 20;
/// Bytes of each output tail kept.
const TAIL: usize = 64 * 1024;
/// A run's server endpoint (`unix:///…`, `http://…`), beside its execution.json.
const SERVER_FILE: &str = "server";

mod status;
pub use status::{status, StatusArgs};

/// The endpoint of the server this process talks to, recorded with every run it retains.
static SERVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Say which server this process's runs come from (once, before any run is recorded).
pub fn set_server(endpoint: &cleanroom_client::endpoint::Endpoint) {
    let _ = SERVER.set(endpoint.display());
}

fn write_server(dir: &Path) -> std::io::Result<()> {
    match SERVER.get() {
        Some(s) => write_private(&dir.join(SERVER_FILE), s.as_bytes()),
        None => Ok(()),
    }
}

/// Where retained runs live.
pub fn root() -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("cleanroom").join("executions")
}

fn tail(s: &str) -> &str {
    if s.len() <= TAIL {
        return s;
    }
    let mut i = s.len() - TAIL;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

fn write_private(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?
        .write_all(data)
}

/// Write a run's execution.json so that a reader (`status`, another CLI) never sees it
/// partial or without its [`SERVER_FILE`]: the server file is written first (by the
/// callers), the record goes to a staging name and is renamed into place. The open file is
/// returned so a started record can be completed in place later ([`finish`]).
fn write_record(dir: &Path, json: &[u8]) -> std::io::Result<std::fs::File> {
    let staging = dir.join(".execution.json.partial");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&staging)?;
    file.write_all(json)?;
    std::fs::rename(&staging, dir.join("execution.json"))?;
    Ok(file)
}

/// The last [`TAIL`] bytes of a run's stdout and stderr as the client received them: the
/// record's tails when the server's final record came without them (RunExecution).
#[derive(Debug, Default)]
pub struct Tails {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Tails {
    /// Append output; only the last `TAIL` bytes (plus up to 3 for a split character)
    /// are kept.
    pub fn push(&mut self, stdout: bool, data: &[u8]) {
        let buf = if stdout {
            &mut self.stdout
        } else {
            &mut self.stderr
        };
        let keep = TAIL + 3;
        if data.len() >= keep {
            buf.clear();
            buf.extend_from_slice(&data[data.len() - keep..]);
            return;
        }
        buf.extend_from_slice(data);
        if buf.len() > 2 * keep {
            buf.drain(..buf.len() - keep);
        }
    }

    fn text(buf: &[u8]) -> String {
        let s = String::from_utf8_lossy(&buf[buf.len().saturating_sub(TAIL + 3)..]);
        tail(&s).to_string()
    }
}

/// A run's record, written when its command has started (status RUNNING): the directory
/// and the file exist before the command ends, so that keeping the final record is one
/// write to an open file after the exit instead of a directory and a file made on ext4
/// then. A run whose client dies meanwhile keeps a record that says it was running.
pub struct Started {
    id: String,
    file: std::fs::File,
    len: usize,
}

/// Write the record of `execution`, just started. Best effort: `None` leaves the record to
/// [`record_finished`].
pub fn record_started(execution: &Execution) -> Option<Started> {
    let id = execution.execution_id.clone();
    if !is_execution_id(&id) {
        return None;
    }
    let dir = root().join(&id);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .ok()?;
    let resp = InspectExecutionResponse {
        execution: execution.clone().into(),
        ..Default::default()
    };
    let json = serde_json::to_vec_pretty(&resp).ok()?;
    write_server(&dir).ok()?;
    let file = write_record(&dir, &json).ok()?;
    Some(Started {
        id,
        file,
        len: json.len(),
    })
}

/// Keep `finished` (RunExecution's final record, which carries no tails) with the tails
/// the client saw, in the record [`record_started`] began when there is one. Best effort,
/// like [`record`].
pub fn record_finished(
    mut finished: InspectExecutionResponse,
    tails: &Tails,
    started: Option<Started>,
) {
    finished.stdout = Tails::text(&tails.stdout);
    finished.stderr = Tails::text(&tails.stderr);
    let id = finished
        .execution
        .as_option()
        .map(|e| e.execution_id.clone())
        .unwrap_or_default();
    if !is_execution_id(&id) {
        return;
    }
    match started {
        Some(s) if s.id == id => {
            if let Err(e) = finish(s, &finished) {
                eprintln!(
                    "cleanroom: warning: could not retain {id} under {}: {e}",
                    root().display()
                );
            }
        }
        _ => keep(&id, finished, false),
    }
}

/// Overwrite a started record with the final one: JSON padded with trailing spaces to at
/// least the started record's length (still one valid document, no truncation needed),
/// then the non-empty tails as text.
fn finish(s: Started, finished: &InspectExecutionResponse) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut json = serde_json::to_vec_pretty(finished).map_err(std::io::Error::other)?;
    if json.len() < s.len {
        json.resize(s.len, b' ');
    }
    s.file.write_all_at(&json, 0)?;
    write_tails(&root().join(&s.id), finished)
}

/// The tails are in execution.json too; the text files are a convenience for `less`/`grep`,
/// written only when there is something in them (fewer files to create now and to remove
/// when the run is pruned).
fn write_tails(dir: &Path, resp: &InspectExecutionResponse) -> std::io::Result<()> {
    for (name, tail) in [("stdout.txt", &resp.stdout), ("stderr.txt", &resp.stderr)] {
        if !tail.is_empty() {
            write_private(&dir.join(name), tail.as_bytes())?;
        }
    }
    Ok(())
}

/// Make room for one more run within [`KEEP`]. `exec` calls this while its RunExecution
/// call is in flight (the client waits for the server anyway), before it begins the run's
/// record ([`record_started`]).
pub fn make_room() {
    prune_beyond(&root(), KEEP - 1);
}

/// Keep what the server says about `execution_id`. Best effort: a failure here never
/// changes the command's result (it is reported on stderr).
pub async fn record(client: &Client, execution_id: &str) {
    let req = InspectExecutionRequest {
        execution_id: execution_id.to_string(),
        ..Default::default()
    };
    // The exit record reaches the stream a moment before the server's row says so (the
    // row is written right after it): ask again, soon at first, until the row has its
    // final status (bounded: about 2 s in all).
    let mut resp = InspectExecutionResponse::default();
    let mut pause = std::time::Duration::from_millis(1);
    for _ in 0..48 {
        resp = match client.executions.inspect_execution(req.clone()).await {
            Ok(r) => r.into_owned(),
            Err(_) => return,
        };
        let status = resp.execution.as_option().map(|e| e.status);
        let running = status.is_some_and(|s| {
            s == ExecutionStatus::EXECUTION_STATUS_RUNNING
                || s == ExecutionStatus::EXECUTION_STATUS_QUEUED
        });
        if !running {
            break;
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_millis(50));
    }
    resp.stdout = tail(&resp.stdout).to_string();
    resp.stderr = tail(&resp.stderr).to_string();
    keep(execution_id, resp, true);
}

/// Write one run's record and (`prune`) remove the oldest beyond [`KEEP`].
fn keep(execution_id: &str, resp: InspectExecutionResponse, prune_after: bool) {
    let dir = root().join(execution_id);
    let r = (|| -> std::io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let json = serde_json::to_vec_pretty(&resp).map_err(std::io::Error::other)?;
        write_server(&dir)?;
        write_record(&dir, &json)?;
        write_tails(&dir, &resp)
    })();
    if let Err(e) = r {
        eprintln!(
            "cleanroom: warning: could not retain {execution_id} under {}: {e}",
            dir.display()
        );
        return;
    }
    if prune_after {
        prune_beyond(&root(), KEEP);
    }
}

/// A name that can only be one retained run's directory under [`root`] (never a path).
fn is_execution_id(name: &str) -> bool {
    name.starts_with("exe_") && !name.contains(['/', '.'])
}

/// Retained execution ids, oldest first (ids are UUIDv7: they sort by time).
fn ids() -> Vec<String> {
    ids_in(&root())
}

fn ids_in(root: &Path) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| is_execution_id(n))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// With more than `limit` runs under `root`, remove the oldest down to
/// `KEEP - PRUNE_BATCH`. Usually one `stat`: where a directory's link count is 2 plus its
/// subdirectories (ext4, xfs, tmpfs…) and says there are 1 to `limit` of them, nothing is
/// listed. A link count of 2 or less says nothing for sure (btrfs reports 1, ext4 past
/// 65,000 subdirectories too, and SMB or many FUSE filesystems 2 for every directory), so
/// the directory is listed — cheap when it is really empty.
fn prune_beyond(root: &Path, limit: usize) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(root) else {
        return; // nothing retained yet
    };
    let subdirs = meta.nlink().checked_sub(2).filter(|n| *n > 0);
    if subdirs.is_some_and(|n| n <= limit as u64) {
        return;
    }
    let ids = ids_in(root);
    if ids.len() > limit {
        let keep = KEEP - PRUNE_BATCH;
        for id in &ids[..ids.len().saturating_sub(keep)] {
            let _ = std::fs::remove_dir_all(root.join(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_started_record_is_finished_in_place_and_stays_one_valid_document() {
        let state = tempfile::tempdir().unwrap();
        // This test's process alone (nextest runs each test in its own process).
        std::env::set_var("XDG_STATE_HOME", state.path());
        let exe = |command: &[&str], status| Execution {
            execution_id: "exe_0123456789abcdef".into(),
            command: command.iter().map(|c| c.to_string()).collect(),
            status: buffa::EnumValue::Known(status),
            ..Default::default()
        };
        let path = root().join("exe_0123456789abcdef/execution.json");
        let read = || -> InspectExecutionResponse {
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
        };
        // A long command line started, a shorter final record: padded, still valid.
        let long = ["x".repeat(4000)];
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        let started = record_started(&exe(&long, ExecutionStatus::EXECUTION_STATUS_RUNNING));
        assert_eq!(
            read().execution.as_option().unwrap().status,
            buffa::EnumValue::Known(ExecutionStatus::EXECUTION_STATUS_RUNNING),
            "the started record says the run is running"
        );
        let finished = InspectExecutionResponse {
            execution: exe(&["true"], ExecutionStatus::EXECUTION_STATUS_SUCCEEDED).into(),
            ..Default::default()
        };
        let mut tails = Tails::default();
        tails.push(true, b"out\n");
        record_finished(finished, &tails, started);
        let got = read();
        let e = got.execution.as_option().unwrap();
        assert_eq!(
            (e.status, e.command.as_slice(), got.stdout.as_str()),
            (
                buffa::EnumValue::Known(ExecutionStatus::EXECUTION_STATUS_SUCCEEDED),
                &["true".to_string()][..],
                "out\n"
            )
        );
        assert_eq!(
            std::fs::read_to_string(root().join("exe_0123456789abcdef/stdout.txt")).unwrap(),
            "out\n"
        );
    }

    fn runs(root: &Path, n: usize) {
        for i in 0..n {
            std::fs::create_dir_all(root.join(format!("exe_{i:05}"))).unwrap();
        }
    }

    #[test]
    fn pruning_waits_for_the_limit_then_removes_a_batch_of_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("executions");
        prune_beyond(&root, KEEP - 1); // no directory yet: nothing to do
        runs(&root, KEEP - 1);
        // A foreign file and directory: never removed, never counted as runs.
        std::fs::write(root.join("notes"), "x").unwrap();
        std::fs::create_dir(root.join("mine")).unwrap();
        prune_beyond(&root, KEEP - 1);
        assert_eq!(
            ids_in(&root).len(),
            KEEP - 1,
            "room for one more: nothing removed"
        );
        runs(&root, KEEP);
        prune_beyond(&root, KEEP - 1);
        let left = ids_in(&root);
        assert_eq!(left.len(), KEEP - PRUNE_BATCH);
        assert_eq!(left.first().unwrap(), &format!("exe_{:05}", PRUNE_BATCH));
        assert_eq!(left.last().unwrap(), &format!("exe_{:05}", KEEP - 1));
        assert!(root.join("notes").exists() && root.join("mine").is_dir());
        // Below the limit again: the next runs only stat the directory.
        prune_beyond(&root, KEEP - 1);
        assert_eq!(ids_in(&root).len(), KEEP - PRUNE_BATCH);
    }

    #[test]
    fn more_runs_than_the_link_count_says_are_still_pruned() {
        // 150 runs: whatever the filesystem's link count says, the bound holds afterwards.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("executions");
        runs(&root, KEEP + 50);
        prune_beyond(&root, KEEP);
        assert_eq!(ids_in(&root).len(), KEEP - PRUNE_BATCH);
    }
}
