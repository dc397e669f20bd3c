//! A sandbox's resource usage, from kernel counters only — nothing the sandbox writes is
//! parsed as the server, and no path is resolved through the sandbox's tree except with
//! `openat2(RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS)` from its own root.
//!
//! * cgroup v2: `cpu.stat` `usage_usec`, `memory.current`, `memory.peak`, `pids.current`;
//! * cgroup v1: `cpuacct.usage` (ns), `memory.usage_in_bytes`,
//!   `memory.max_usage_in_bytes`, `pids.current` — whichever controller directories the
//!   sandbox has;
//! * without CPU accounting (v1 hosts where `cpuacct` is not joined): the sum over the
//!   sandbox's processes of `utime + stime + cutime + cstime` from `/proc/<pid>/stat` —
//!   every process reaped inside the sandbox is folded into its reaper's `cutime`;
//! * filesystems: `fstatvfs` of `/`, `/tmp`, `/root`, `/workspace` opened from pid 1's
//!   root, writable ones only, one entry per filesystem.

use crate::types::{FsUsage, Usage};
use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

/// Guest paths whose filesystems are reported (when writable).
const WRITABLE_CANDIDATES: [&str; 4] = ["/", "/tmp", "/root", "/workspace"];

fn read_u64(dir: &Path, file: &str) -> Option<u64> {
    fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
}

fn stat_key(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = fs::read_to_string(dir.join(file)).ok()?;
    text.lines().find_map(|l| {
        let mut p = l.split_whitespace();
        (p.next() == Some(key))
            .then(|| p.next()?.parse().ok())
            .flatten()
    })
}

/// Usage of the sandbox whose cgroup directories are `dirs` and whose pid 1 is `init_pid`
/// (checked against `init_start` so a reused pid is never read).
pub fn read(dirs: &[PathBuf], init_pid: i32, init_start: u64) -> Usage {
    let mut u = Usage::default();
    let mut cpu = None;
    for d in dirs {
        if let Some(v) = stat_key(d, "cpu.stat", "usage_usec") {
            cpu = Some(v);
        }
        if let Some(ns) = read_u64(d, "cpuacct.usage") {
            cpu = Some(ns / 1000);
        }
        if let Some(v) =
            read_u64(d, "memory.current").or_else(|| read_u64(d, "memory.usage_in_bytes"))
        {
            u.memory_bytes = v;
        }
        if let Some(v) =
            read_u64(d, "memory.peak").or_else(|| read_u64(d, "memory.max_usage_in_bytes"))
        {
            u.memory_peak_bytes = v;
        }
        if let Some(v) = read_u64(d, "pids.current") {
            u.pids = v;
        }
    }
    u.cpu_usec = cpu.unwrap_or_else(|| proc_cpu_usec(dirs));
    if super::procinfo::is_same_process(init_pid, init_start) {
        u.filesystems = filesystems(init_pid);
        if !super::procinfo::is_same_process(init_pid, init_start) {
            u.filesystems.clear();
        }
    }
    u
}

/// CPU time of the processes listed in the sandbox's cgroup, with their reaped children.
fn proc_cpu_usec(dirs: &[PathBuf]) -> u64 {
    // SAFETY: sysconf takes an integer and returns one.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let Some(procs) = dirs
        .iter()
        .find_map(|d| fs::read_to_string(d.join("cgroup.procs")).ok())
    else {
        return 0;
    };
    let total: u64 = procs
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|s| stat_cpu_ticks(&s))
        .sum();
    total.saturating_mul(1_000_000) / ticks
}

/// `utime + stime + cutime + cstime` (fields 14–17) of a `/proc/<pid>/stat` line. The
/// command name (field 2) may hold anything the process chose, parentheses included, so
/// fields are counted after the *last* `)`.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field n is f[n - 3].
    let get = |n: usize| f.get(n - 3)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
    Some(get(14)? + get(15)? + get(16)? + get(17)?)
}

/// Writable filesystems seen from pid 1's root (one entry each).
fn filesystems(init_pid: i32) -> Vec<FsUsage> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    use nix::sys::statvfs::{fstatvfs, FsFlags};
    let Ok(root) = fs::File::open(format!("/proc/{init_pid}/root")) else {
        return Vec::new();
    };
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(
            ResolveFlag::RESOLVE_IN_ROOT
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for path in WRITABLE_CANDIDATES {
        let rel = path.trim_start_matches('/');
        let rel = if rel.is_empty() { "." } else { rel };
        let Ok(fd) = super::sys::openat2(root.as_fd(), rel, how) else {
            continue;
        };
        let Ok(st) = fstatvfs(&fd) else { continue };
        if st.flags().contains(FsFlags::ST_RDONLY) || seen.contains(&st.filesystem_id()) {
            continue;
        }
        seen.push(st.filesystem_id());
        let frag = st.fragment_size().max(1);
        let size = st.blocks().saturating_mul(frag);
        let free = st.blocks_free().saturating_mul(frag);
        out.push(FsUsage {
            path: path.to_string(),
            used_bytes: size.saturating_sub(free),
            size_bytes: size,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_line_with_hostile_comm() {
        // comm "a) 1 2 (" tries to shift the fields.
        let line = "42 (a) 1 2 () S 1 42 42 0 -1 4194560 100 0 0 0 7 3 5 1 20 0 1 0 100 0 0";
        assert_eq!(stat_cpu_ticks(line), Some(7 + 3 + 5 + 1));
        assert_eq!(stat_cpu_ticks("garbage"), None);
        assert_eq!(stat_cpu_ticks("1 (x) S 1"), None);
    }

    #[test]
    fn cgroup_files_v1_and_v2() {
        let v2 = tempfile::tempdir().unwrap();
        fs::write(
            v2.path().join("cpu.stat"),
            "usage_usec 1500\nuser_usec 1000\n",
        )
        .unwrap();
        fs::write(v2.path().join("memory.current"), "4096\n").unwrap();
        fs::write(v2.path().join("memory.peak"), "8192\n").unwrap();
        fs::write(v2.path().join("pids.current"), "3\n").unwrap();
        let u = read(&[v2.path().to_path_buf()], -1, 0);
        assert_eq!(
            (u.cpu_usec, u.memory_bytes, u.memory_peak_bytes, u.pids),
            (1500, 4096, 8192, 3)
        );
        let (m, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        fs::write(m.path().join("memory.usage_in_bytes"), "100\n").unwrap();
        fs::write(m.path().join("memory.max_usage_in_bytes"), "200\n").unwrap();
        fs::write(c.path().join("cpuacct.usage"), "5000000\n").unwrap();
        let u = read(&[m.path().to_path_buf(), c.path().to_path_buf()], -1, 0);
        assert_eq!(
            (u.cpu_usec, u.memory_bytes, u.memory_peak_bytes),
            (5000, 100, 200)
        );
        assert!(u.filesystems.is_empty());
    }
}
