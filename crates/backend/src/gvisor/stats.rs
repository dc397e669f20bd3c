//! A gVisor sandbox's resource usage, from the two places that know it: the host cgroup
//! runsc puts the sandbox in (CPU time, memory and its peak: what the limits are enforced
//! on — the sentry, the gofer and the scratch tmpfs' pages; the CPU time includes the
//! sentry's own platform work, ≈ 35 ms/s here even while every task is stopped), and the
//! sentry for the number of tasks (`runsc events --stats`: the host cgroup counts the
//! sentry's threads, not the sandbox's processes). The writable directories' use is the
//! scratch tmpfs' (one filesystem for the three, like the linux runtime's).

use super::{bundle::CGROUP_PARENT, scratch, GvisorBackend};
use crate::{BackendError, FsUsage, Usage};
use std::path::PathBuf;

/// The sandbox's directory under one cgroup v1 controller, or under the v2 hierarchy.
fn cgroup_file(controller: &str, sandbox_id: &str, file: &str) -> PathBuf {
    let mut p = PathBuf::from("/sys/fs/cgroup");
    if !controller.is_empty() {
        p.push(controller);
    }
    p.join(CGROUP_PARENT).join(sandbox_id).join(file)
}

fn read_u64(controller: &str, sandbox_id: &str, file: &str) -> Option<u64> {
    std::fs::read_to_string(cgroup_file(controller, sandbox_id, file))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// CPU time of the sandbox's cgroup (v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec`):
/// the host's cost of the sandbox, its kernel included.
pub(super) fn cgroup_cpu_nanos(sandbox_id: &str) -> Option<u64> {
    read_u64("cpuacct", sandbox_id, "cpuacct.usage")
        .or_else(|| read_u64("cpu,cpuacct", sandbox_id, "cpuacct.usage"))
        .or_else(|| {
            let text = std::fs::read_to_string(cgroup_file("", sandbox_id, "cpu.stat")).ok()?;
            text.lines()
                .find_map(|l| l.strip_prefix("usage_usec "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|us| us.saturating_mul(1000))
        })
}

/// Memory charged now and its peak (v1, else v2).
fn cgroup_memory(sandbox_id: &str) -> (u64, u64) {
    let now = read_u64("memory", sandbox_id, "memory.usage_in_bytes")
        .or_else(|| read_u64("", sandbox_id, "memory.current"));
    let peak = read_u64("memory", sandbox_id, "memory.max_usage_in_bytes")
        .or_else(|| read_u64("", sandbox_id, "memory.peak"));
    (now.unwrap_or(0), peak.or(now).unwrap_or(0))
}

impl GvisorBackend {
    /// `Backend::usage` (see the module doc).
    pub(super) async fn sandbox_usage(&self, sandbox_id: &str) -> Result<Usage, BackendError> {
        let sbx = self.get(sandbox_id)?;
        if sbx.is_released() {
            // Suspended with its memory released (hibernate.rs): no process, no memory, no
            // CPU; its files are in the saved image.
            return Ok(Usage::default());
        }
        let out = self.runsc.run(&["events", "--stats", sandbox_id]).await?;
        let stats: serde_json::Value = serde_json::from_slice(&out)
            .map_err(|e| BackendError::Unavailable(format!("runsc events: {e}")))?;
        let pids = stats["data"]["pids"]["current"].as_u64().unwrap_or(0);
        let (memory_bytes, memory_peak_bytes) = cgroup_memory(sandbox_id);
        let cpu_nanos = cgroup_cpu_nanos(sandbox_id)
            .or_else(|| stats["data"]["cpu"]["usage"]["total"].as_u64())
            .unwrap_or(0);
        let filesystems = match sbx.scratch.usage() {
            Some((used, size)) => scratch::DIRS
                .iter()
                .map(|(_, _, path)| FsUsage {
                    path: (*path).to_string(),
                    used_bytes: used,
                    size_bytes: size,
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(Usage {
            cpu_usec: cpu_nanos / 1000,
            memory_bytes,
            memory_peak_bytes,
            pids,
            filesystems,
        })
    }
}
