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
//!   root, writable ones only, one entry per path: `/tmp`, `/root` and `/workspace` are
//!   directories of one filesystem (docs/memory.md), so their entries show the same
//!   numbers (one disk cap for the three; not to be added up).

use crate::types::{FsUsage, Usage};
use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

/// Guest paths whose filesystems are reported (when writable).
const WRITABLE_CANDIDATES: [&str; 4] = ["/", "/tmp", "/root", "/workspace"];

/// The counter files read, in the order tried.
const FILES: [&str; 7] = [
    "cpu.stat",
    "cpuacct.usage",
    "memory.current",
    "memory.usage_in_bytes",
    "memory.peak",
    "memory.max_usage_in_bytes",
    "pids.current",
];

/// Which of [`FILES`] exist in the sandbox cgroups under one parent directory (one per
/// controller hierarchy of a server instance; every sandbox there has the same files).
/// Learned from the first sandbox that has any, so a usage read opens only files that
/// exist instead of trying every name in every hierarchy (`GetSandbox` reads usage, and
/// failed opens in cgroupfs are path walks too). A handful of entries per server.
static LAYOUT: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, u8>>> =
    std::sync::Mutex::new(None);

fn layout_of(dir: &Path) -> Option<u8> {
    let parent = dir.parent()?;
    let guard = LAYOUT.lock().ok()?;
    guard.as_ref()?.get(parent).copied()
}

fn remember_layout(dir: &Path, mask: u8) {
    let (Some(parent), true) = (dir.parent(), mask != 0) else {
        return;
    };
    if let Ok(mut guard) = LAYOUT.lock() {
        let map = guard.get_or_insert_with(Default::default);
        // Bounded: one entry per hierarchy root a server ever used.
        if map.len() < 64 {
            map.insert(parent.to_path_buf(), mask);
        }
    }
}

fn read_text(dir: &Path, file: &str) -> Option<String> {
    fs::read_to_string(dir.join(file)).ok()
}

fn parse_u64(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

fn stat_key(text: &str, key: &str) -> Option<u64> {
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
        let known = layout_of(d);
        let mut found = 0u8;
        let mut texts: [Option<String>; 7] = Default::default();
        for (i, text) in texts.iter_mut().enumerate() {
            if known.is_some_and(|m| m & (1 << i) == 0) {
                continue;
            }
            *text = read_text(d, FILES[i]);
            if text.is_some() {
                found |= 1 << i;
            }
        }
        if known.is_none() {
            remember_layout(d, found);
        }
        let [cpu_stat, cpuacct, mem_cur, mem_v1, peak, peak_v1, pids] = texts;
        if let Some(v) = cpu_stat.as_deref().and_then(|t| stat_key(t, "usage_usec")) {
            cpu = Some(v);
        }
        if let Some(ns) = cpuacct.as_deref().and_then(parse_u64) {
            cpu = Some(ns / 1000);
        }
        if let Some(v) = mem_cur.or(mem_v1).as_deref().and_then(parse_u64) {
            u.memory_bytes = v;
        }
        if let Some(v) = peak.or(peak_v1).as_deref().and_then(parse_u64) {
            u.memory_peak_bytes = v;
        }
        if let Some(v) = pids.as_deref().and_then(parse_u64) {
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
    let ticks = crate::linux::sys::clock_ticks();
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

/// Writable filesystems seen from pid 1's root (one entry per path; paths on one
/// filesystem repeat its numbers).
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
    let mut out = Vec::new();
    for path in WRITABLE_CANDIDATES {
        let rel = path.trim_start_matches('/');
        let rel = if rel.is_empty() { "." } else { rel };
        let Ok(fd) = crate::linux::sys::openat2(root.as_fd(), rel, how) else {
            continue;
        };
        let Ok(st) = fstatvfs(&fd) else { continue };
        if st.flags().contains(FsFlags::ST_RDONLY) {
            continue;
        }
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

    /// One sandbox cgroup directory per hierarchy, each under its own parent (as the
    /// server lays them out: `<hierarchy>/…/<instance>/<sandbox>`).
    fn sandbox_dir(root: &Path, hierarchy: &str) -> PathBuf {
        let d = root.join(hierarchy).join("sbx");
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn cgroup_files_v1_and_v2() {
        let root = tempfile::tempdir().unwrap();
        let v2 = sandbox_dir(root.path(), "unified");
        fs::write(v2.join("cpu.stat"), "usage_usec 1500\nuser_usec 1000\n").unwrap();
        fs::write(v2.join("memory.current"), "4096\n").unwrap();
        fs::write(v2.join("memory.peak"), "8192\n").unwrap();
        fs::write(v2.join("pids.current"), "3\n").unwrap();
        let u = read(std::slice::from_ref(&v2), -1, 0);
        assert_eq!(
            (u.cpu_usec, u.memory_bytes, u.memory_peak_bytes, u.pids),
            (1500, 4096, 8192, 3)
        );
        let (m, c) = (
            sandbox_dir(root.path(), "memory"),
            sandbox_dir(root.path(), "cpuacct"),
        );
        fs::write(m.join("memory.usage_in_bytes"), "100\n").unwrap();
        fs::write(m.join("memory.max_usage_in_bytes"), "200\n").unwrap();
        fs::write(c.join("cpuacct.usage"), "5000000\n").unwrap();
        let u = read(&[m.clone(), c.clone()], -1, 0);
        assert_eq!(
            (u.cpu_usec, u.memory_bytes, u.memory_peak_bytes),
            (5000, 100, 200)
        );
        assert!(u.filesystems.is_empty());
        // Later reads (the layout is known now) see new values, and a sibling sandbox
        // under the same parent is read the same way.
        fs::write(m.join("memory.usage_in_bytes"), "300\n").unwrap();
        assert_eq!(read(&[m, c], -1, 0).memory_bytes, 300);
        let m2 = root.path().join("memory").join("sbx2");
        fs::create_dir_all(&m2).unwrap();
        fs::write(m2.join("memory.usage_in_bytes"), "7\n").unwrap();
        assert_eq!(read(&[m2], -1, 0).memory_bytes, 7);
    }

    #[test]
    fn a_probe_that_finds_nothing_is_not_remembered() {
        let root = tempfile::tempdir().unwrap();
        let gone = root.path().join("pids").join("sbx");
        assert_eq!(read(std::slice::from_ref(&gone), -1, 0).pids, 0);
        fs::create_dir_all(&gone).unwrap();
        fs::write(gone.join("pids.current"), "5\n").unwrap();
        assert_eq!(read(&[gone], -1, 0).pids, 5);
    }
}
