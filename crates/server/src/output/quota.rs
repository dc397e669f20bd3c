//! How much execution output the server keeps on disk.
//!
//! Every output byte a sandbox writes is first *charged*: against its sandbox's retention
//! quota (`sandbox.resources.output_mb` / `limits.output_bytes`, default 1 GiB, shared by
//! all of its executions) and against two server-wide watermarks — the total size of all
//! output logs (`serve --output-log-max-mb`) and the free space left on the state
//! directory's filesystem (`serve --output-log-min-free-mb`). What is refused is not
//! written to the log: the execution's writer switches to live-only output (see
//! [`crate::output::execlog`]). A sandbox can therefore never fill the host's disk with output,
//! whatever its other limits are.

use crate::model::sync::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Server-wide retention settings (`serve` flags).
#[derive(Debug, Clone)]
pub struct RetentionConfig {
    /// Stop retaining output when all logs together reach this many bytes; the GC also
    /// deletes the oldest logs of stopped sandboxes beyond it.
    pub max_total_bytes: u64,
    /// Stop retaining output when the state filesystem has less free space than this.
    pub min_free_bytes: u64,
    /// Logs of finished executions of stopped sandboxes older than this are deleted.
    pub max_age: Duration,
    /// How often the GC runs.
    pub gc_interval: Duration,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            max_total_bytes: 10 << 30,
            min_free_bytes: 1 << 30,
            max_age: Duration::from_secs(7 * 24 * 3600),
            gc_interval: Duration::from_secs(60),
        }
    }
}

/// How often (in bytes charged server-wide) the free space is re-read.
const STATVFS_EVERY: u64 = 8 << 20;

/// One sandbox's retention quota and what its executions used of it.
#[derive(Debug)]
pub struct SandboxBudget {
    limit: u64,
    used: AtomicU64,
}

/// Why output stopped being retained (a [`crate::output::execlog::WarningRecord`] message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    SandboxQuota(u64),
    ServerTotal(u64),
    LowDisk(u64),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::SandboxQuota(n) => write!(
                f,
                "the sandbox's output retention quota of {n} bytes is used up (sandbox.resources.output_mb)"
            ),
            Refusal::ServerTotal(n) => write!(
                f,
                "the server's output logs reached their total cap of {n} bytes (serve --output-log-max-mb)"
            ),
            Refusal::LowDisk(n) => write!(
                f,
                "the server's state filesystem has less than {n} bytes free (serve --output-log-min-free-mb)"
            ),
        }
    }
}

/// Result of charging one chunk: retain its first `retain` bytes; `refused` says why the
/// rest is not retained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub retain: usize,
    pub refused: Option<Refusal>,
}

/// The server's retention accounting.
pub struct Retention {
    dir: PathBuf,
    cfg: Mutex<RetentionConfig>,
    /// Bytes of all output logs (recomputed from disk by every GC pass).
    total: AtomicU64,
    next_statvfs: AtomicU64,
    low_disk: std::sync::atomic::AtomicBool,
    sandboxes: Mutex<HashMap<String, Arc<SandboxBudget>>>,
}

/// Free bytes (for unprivileged users) of the filesystem holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let st = nix::sys::statvfs::statvfs(dir).ok()?;
    Some((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}

/// Sum of the sizes of the `*.log` files in `dir`.
pub fn logs_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

impl Retention {
    /// Accounting for the logs in `dir` (their current size is read now).
    pub fn new(dir: &Path) -> Retention {
        Retention {
            dir: dir.to_path_buf(),
            cfg: Mutex::new(RetentionConfig::default()),
            total: AtomicU64::new(logs_size(dir)),
            next_statvfs: AtomicU64::new(0),
            low_disk: false.into(),
            sandboxes: Mutex::new(HashMap::new()),
        }
    }

    pub fn set_config(&self, cfg: RetentionConfig) {
        *lock(&self.cfg) = cfg;
        self.next_statvfs.store(0, Ordering::Relaxed);
    }

    pub fn config(&self) -> RetentionConfig {
        lock(&self.cfg).clone()
    }

    /// Register a new sandbox's quota.
    pub fn add_sandbox(&self, sandbox_id: &str, limit: u64) {
        lock(&self.sandboxes).insert(
            sandbox_id.to_string(),
            Arc::new(SandboxBudget {
                limit,
                used: AtomicU64::new(0),
            }),
        );
    }

    /// Forget a stopped sandbox (its logs stay until the GC deletes them).
    pub fn remove_sandbox(&self, sandbox_id: &str) {
        lock(&self.sandboxes).remove(sandbox_id);
    }

    /// The sandbox's budget. A sandbox this server did not register (impossible after a
    /// restart: those are reclaimed) gets the default quota, never "unlimited".
    pub fn budget(&self, sandbox_id: &str) -> Arc<SandboxBudget> {
        lock(&self.sandboxes)
            .entry(sandbox_id.to_string())
            .or_insert_with(|| {
                Arc::new(SandboxBudget {
                    limit: cleanroom_backend::Limits::default().output_bytes,
                    used: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// Set the total after a GC pass measured it.
    pub fn set_total(&self, bytes: u64) {
        self.total.store(bytes, Ordering::Relaxed);
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Account for bytes written that were not charged (warning and exit records).
    pub fn add_overhead(&self, bytes: u64) {
        self.total.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Charge `len` output bytes of `budget`'s sandbox. The server-wide watermarks refuse
    /// the whole chunk; the sandbox quota retains the prefix that still fits.
    pub fn charge(&self, budget: &SandboxBudget, len: usize) -> Charge {
        let cfg = self.config();
        let total = self.total.load(Ordering::Relaxed);
        if total.saturating_add(len as u64) > cfg.max_total_bytes {
            return Charge {
                retain: 0,
                refused: Some(Refusal::ServerTotal(cfg.max_total_bytes)),
            };
        }
        if total >= self.next_statvfs.load(Ordering::Relaxed) {
            self.next_statvfs
                .store(total + STATVFS_EVERY, Ordering::Relaxed);
            // An unreadable filesystem counts as full: fail closed.
            let low = free_bytes(&self.dir).is_none_or(|f| f < cfg.min_free_bytes);
            self.low_disk.store(low, Ordering::Relaxed);
        }
        if self.low_disk.load(Ordering::Relaxed) {
            return Charge {
                retain: 0,
                refused: Some(Refusal::LowDisk(cfg.min_free_bytes)),
            };
        }
        let mut retain = 0u64;
        let _ = budget
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                retain = (len as u64).min(budget.limit.saturating_sub(used));
                Some(used + retain)
            });
        self.total.fetch_add(retain, Ordering::Relaxed);
        Charge {
            retain: retain as usize,
            refused: (retain < len as u64).then_some(Refusal::SandboxQuota(budget.limit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_quota_retains_the_fitting_prefix_then_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = Retention::new(dir.path());
        r.set_config(RetentionConfig {
            min_free_bytes: 0,
            ..Default::default()
        });
        r.add_sandbox("a", 100);
        let b = r.budget("a");
        assert_eq!(r.charge(&b, 60).retain, 60);
        let c = r.charge(&b, 60);
        assert_eq!(c.retain, 40);
        assert_eq!(c.refused, Some(Refusal::SandboxQuota(100)));
        assert_eq!(r.charge(&b, 1).retain, 0);
        // Another sandbox has its own quota.
        r.add_sandbox("b", 10);
        assert_eq!(r.charge(&r.budget("b"), 5).retain, 5);
        assert_eq!(r.total(), 105);
    }

    #[test]
    fn server_watermarks_refuse_whole_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let r = Retention::new(dir.path());
        r.set_config(RetentionConfig {
            max_total_bytes: 50,
            min_free_bytes: 0,
            ..Default::default()
        });
        let b = r.budget("x");
        assert_eq!(r.charge(&b, 40).retain, 40);
        let c = r.charge(&b, 20);
        assert_eq!((c.retain, c.refused), (0, Some(Refusal::ServerTotal(50))));
        r.set_config(RetentionConfig {
            min_free_bytes: u64::MAX,
            ..Default::default()
        });
        let c = r.charge(&b, 1);
        assert_eq!(c.refused, Some(Refusal::LowDisk(u64::MAX)));
    }
}
