//! Per-sandbox resource limits with cgroups, v2 where its controllers are usable, v1
//! otherwise (hybrid hosts such as this project's CI have memory/pids/cpu on v1 only).
//!
//! The server creates the sandbox's cgroup(s) before launch; the shim moves itself in
//! before it forks pid 1, so every process of the sandbox is charged and limited from its
//! first instruction. OOM kills are read from the cgroup's counters to explain an exit.

use std::fs;
use std::path::{Path, PathBuf};

pub use crate::Limits;

/// Which cgroup layout the host offers.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Unified hierarchy with the needed controllers; the path is our parent cgroup.
    V2(PathBuf),
    /// Legacy per-controller hierarchies (parent dirs), any may be missing.
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
        cpu: Option<PathBuf>,
        /// Pause/resume (`freezer.state`); absent: the backend cannot pause.
        freezer: Option<PathBuf>,
        /// CPU accounting (`cpuacct.usage`) where it is not co-mounted with `cpu`.
        cpuacct: Option<PathBuf>,
    },
    /// No usable controllers: limits cannot be enforced.
    Unavailable,
}

const ROOT: &str = "/sys/fs/cgroup";

fn own_cgroup(controller: &str) -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        ctrls
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })
}

fn v1_parent(controller: &str, instance: &str) -> Option<PathBuf> {
    let mount = Path::new(ROOT).join(controller);
    if !mount.join("cgroup.procs").exists() {
        return None;
    }
    let own = own_cgroup(controller).unwrap_or_else(|| "/".into());
    let parent = mount
        .join(own.trim_start_matches('/'))
        .join("cleanroom")
        .join(instance);
    fs::create_dir_all(&parent).ok()?;
    Some(parent)
}

/// Stable key of one server instance (its state directory), so that several servers on
/// one host never sweep each other's sandbox cgroups. FNV-1a: stable across builds.
pub fn instance_key(state_root: &Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in state_root.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("srv-{h:016x}")
}

impl Mode {
    /// Probe the host once at server start.
    pub fn detect(instance: &str) -> Mode {
        // Pure v2 (or v2 with controllers delegated): /sys/fs/cgroup/cgroup.controllers.
        let unified = if Path::new(ROOT).join("cgroup.controllers").exists() {
            Some(PathBuf::from(ROOT))
        } else {
            None
        };
        if let Some(root) = unified {
            let ctrls = fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
            if ["memory", "pids", "cpu"]
                .iter()
                .all(|c| ctrls.split_whitespace().any(|x| x == *c))
            {
                let own = own_cgroup("").unwrap_or_else(|| "/".into());
                let parent = root.join(own.trim_start_matches('/')).join("cleanroom");
                let _ = fs::create_dir_all(&parent);
                let _ = fs::write(parent.join("cgroup.subtree_control"), "+memory +pids +cpu");
                let parent = parent.join(instance);
                if fs::create_dir_all(&parent).is_ok() {
                    // Controllers must be enabled for our children at every level we own.
                    let _ = fs::write(
                        parent
                            .parent()
                            .unwrap_or(&root)
                            .join("cgroup.subtree_control"),
                        "+memory +pids +cpu",
                    );
                    let _ = fs::write(parent.join("cgroup.subtree_control"), "+memory +pids +cpu");
                    return Mode::V2(parent);
                }
            }
        }
        let (memory, pids, cpu) = (
            v1_parent("memory", instance),
            v1_parent("pids", instance),
            v1_parent("cpu", instance),
        );
        if memory.is_none() && pids.is_none() && cpu.is_none() {
            Mode::Unavailable
        } else {
            // A `cpu,cpuacct` co-mount already accounts in the cpu directory.
            let cpuacct = v1_parent("cpuacct", instance).filter(|d| Some(d) != cpu.as_ref());
            Mode::V1 {
                memory,
                pids,
                cpu,
                freezer: v1_parent("freezer", instance),
                cpuacct,
            }
        }
    }

    /// Whether sandboxes get a freezer (pause/resume): v2 always has `cgroup.freeze`
    /// (kernel >= 5.2), v1 needs the freezer controller.
    pub fn can_freeze(&self) -> bool {
        match self {
            Mode::V2(p) => p.join("cgroup.freeze").exists() || p.join("cgroup.events").exists(),
            Mode::V1 { freezer, .. } => freezer.is_some(),
            Mode::Unavailable => false,
        }
    }

    /// Human description for `sandbox inspect`.
    pub fn describe(&self) -> String {
        match self {
            Mode::V2(_) => "v2 (memory,pids,cpu)".into(),
            Mode::V1 {
                memory,
                pids,
                cpu,
                freezer,
                cpuacct,
            } => {
                let have: Vec<&str> = [
                    ("memory", memory),
                    ("pids", pids),
                    ("cpu", cpu),
                    ("freezer", freezer),
                    ("cpuacct", cpuacct),
                ]
                .iter()
                .filter(|(_, p)| p.is_some())
                .map(|(n, _)| *n)
                .collect();
                format!("v1 ({})", have.join(","))
            }
            Mode::Unavailable => "unavailable (no limits enforced)".into(),
        }
    }

    /// Create the sandbox's cgroup(s) with `limits`; returns the directories to join.
    pub fn create(&self, sandbox_id: &str, limits: &Limits) -> Result<Vec<PathBuf>, String> {
        let write = |p: PathBuf, v: String| {
            fs::write(&p, v).map_err(|e| format!("write {}: {e}", p.display()))
        };
        let mkdir = |p: &Path| {
            fs::create_dir_all(p).map_err(|e| format!("create cgroup {}: {e}", p.display()))
        };
        let quota = |period: u64| limits.cpu_millis.saturating_mul(period) / 1000;
        match self {
            Mode::V2(parent) => {
                let dir = parent.join(sandbox_id);
                mkdir(&dir)?;
                write(dir.join("memory.max"), limits.memory_bytes.to_string())?;
                let _ = fs::write(dir.join("memory.swap.max"), "0");
                write(dir.join("pids.max"), limits.pids.to_string())?;
                write(dir.join("cpu.max"), format!("{} 100000", quota(100_000)))?;
                Ok(vec![dir])
            }
            Mode::V1 {
                memory,
                pids,
                cpu,
                freezer,
                cpuacct,
            } => {
                let mut dirs = Vec::new();
                if let Some(m) = memory {
                    let dir = m.join(sandbox_id);
                    mkdir(&dir)?;
                    write(
                        dir.join("memory.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    )?;
                    // Without swap accounting this file is absent; the memory limit still holds.
                    let _ = fs::write(
                        dir.join("memory.memsw.limit_in_bytes"),
                        limits.memory_bytes.to_string(),
                    );
                    dirs.push(dir);
                }
                if let Some(p) = pids {
                    let dir = p.join(sandbox_id);
                    mkdir(&dir)?;
                    write(dir.join("pids.max"), limits.pids.to_string())?;
                    dirs.push(dir);
                }
                if let Some(c) = cpu {
                    let dir = c.join(sandbox_id);
                    mkdir(&dir)?;
                    // A new cgroup's period is the kernel's fixed default (100 ms), the one
                    // the quota is computed for: writing it again is not free, as every
                    // bandwidth write walks all cpu cgroups of the host (tg_set_bandwidth
                    // -> __cfs_schedulable), so it grew with the number of live sandboxes.
                    write(dir.join("cpu.cfs_quota_us"), quota(100_000).to_string())?;
                    dirs.push(dir);
                }
                // No limits to write: joined for pause/resume and CPU accounting.
                for parent in [freezer, cpuacct].into_iter().flatten() {
                    let dir = parent.join(sandbox_id);
                    mkdir(&dir)?;
                    dirs.push(dir);
                }
                Ok(dirs)
            }
            Mode::Unavailable => Ok(Vec::new()),
        }
    }

    /// Directories a sandbox would have (for cleanup even after a restart).
    pub fn dirs_for(&self, sandbox_id: &str) -> Vec<PathBuf> {
        match self {
            Mode::V2(parent) => vec![parent.join(sandbox_id)],
            Mode::V1 { .. } => self
                .v1_parents()
                .into_iter()
                .map(|p| p.join(sandbox_id))
                .collect(),
            Mode::Unavailable => Vec::new(),
        }
    }

    /// This server instance's parent cgroup directories.
    pub fn instance_dirs(&self) -> Vec<PathBuf> {
        match self {
            Mode::V2(p) => vec![p.clone()],
            Mode::V1 { .. } => self.v1_parents().into_iter().cloned().collect(),
            Mode::Unavailable => Vec::new(),
        }
    }

    /// The per-controller parent directories of a v1 layout (empty otherwise).
    fn v1_parents(&self) -> Vec<&PathBuf> {
        match self {
            Mode::V1 {
                memory,
                pids,
                cpu,
                freezer,
                cpuacct,
            } => [memory, pids, cpu, freezer, cpuacct]
                .into_iter()
                .filter_map(|p| p.as_ref())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The cgroup directories another server instance would have next to ours (to sweep
    /// the leftovers of a dead one).
    pub fn sibling_instance_dirs(&self, instance: &str) -> Vec<PathBuf> {
        self.instance_dirs()
            .iter()
            .filter_map(|d| d.parent().map(|p| p.join(instance)))
            .filter(|d| d.is_dir())
            .collect()
    }

    /// Every sandbox cgroup currently present (to sweep leftovers).
    pub fn all_sandbox_dirs(&self) -> Vec<PathBuf> {
        let parents: Vec<&PathBuf> = match self {
            Mode::V2(p) => vec![p],
            Mode::V1 { .. } => self.v1_parents(),
            Mode::Unavailable => vec![],
        };
        parents
            .into_iter()
            .flat_map(|p| fs::read_dir(p).into_iter().flatten().flatten())
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("sbx_"))
            })
            .collect()
    }
}

/// The file that counts a sandbox's OOM kills: `memory.events` of a v2 cgroup or
/// `memory.oom_control` of a v1 memory cgroup, whichever of `dirs` has one (`None`: no
/// memory controller, no OOM kills to count).
///
/// Why found once: the count is read after every exit, and an open that fails (the other
/// version's file) costs as much as one that succeeds — about 40 µs each in cgroupfs here,
/// on the path from a command's exit to its result.
pub fn oom_counter(dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| [d.join("memory.events"), d.join("memory.oom_control")])
        .find(|f| oom_kills_in(f).is_some())
}

/// Cumulative OOM kills recorded in `counter` ([`oom_counter`]); 0 without one.
pub fn oom_kills(counter: Option<&Path>) -> u64 {
    counter.and_then(oom_kills_in).unwrap_or(0)
}

/// The `oom_kill` count in one counter file; `None` when it cannot be read or has none.
fn oom_kills_in(file: &Path) -> Option<u64> {
    let text = fs::read_to_string(file).ok()?;
    // Exact key match: v1's file also has `oom_kill_disable`.
    let value = text.lines().find_map(|l| {
        let mut parts = l.split_whitespace();
        (parts.next() == Some("oom_kill"))
            .then(|| parts.next())
            .flatten()
    })?;
    Some(value.parse().unwrap_or(0))
}

/// Remove a sandbox's cgroup directories (they must be empty of processes). Returns the
/// ones still busy: processes of a crashed server may linger as zombies until the host's
/// init reaps them, and a cgroup cannot be removed before that.
pub fn remove(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut busy = Vec::new();
    for d in dirs {
        let mut gone = false;
        for _ in 0..100 {
            match fs::remove_dir(d) {
                Ok(()) => gone = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => gone = true,
                // Busy while the last processes are being torn down.
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
            if gone {
                break;
            }
        }
        if !gone {
            busy.push(d.clone());
        }
    }
    busy
}

/// Keep retrying removal in the background (zombies reaped late by the host's init).
pub fn remove_eventually(dirs: Vec<PathBuf>) {
    if dirs.is_empty() {
        return;
    }
    std::thread::spawn(move || {
        let mut left = dirs;
        for _ in 0..120 {
            left.retain(|d| fs::remove_dir(d).is_err() && d.exists());
            if left.is_empty() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        tracing::warn!(?left, "sandbox cgroups still busy after a minute");
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oom_counter_is_the_file_of_whichever_version_has_one() {
        let t = tempfile::tempdir().unwrap();
        let (pids, mem, v2, odd) = (
            t.path().join("pids"),
            t.path().join("memory"),
            t.path().join("v2"),
            t.path().join("odd"),
        );
        for d in [&pids, &mem, &v2, &odd] {
            fs::create_dir(d).unwrap();
        }
        fs::write(
            mem.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
        )
        .unwrap();
        fs::write(
            v2.join("memory.events"),
            "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n",
        )
        .unwrap();
        // An old v1 kernel's file without the count is no counter.
        fs::write(
            odd.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\n",
        )
        .unwrap();

        let v1 = oom_counter(&[pids.clone(), odd.clone(), mem.clone()]);
        assert_eq!(v1, Some(mem.join("memory.oom_control")));
        assert_eq!(oom_kills(v1.as_deref()), 3);
        let v2c = oom_counter(std::slice::from_ref(&v2));
        assert_eq!(v2c, Some(v2.join("memory.events")));
        assert_eq!(oom_kills(v2c.as_deref()), 2);
        assert_eq!(oom_counter(&[pids, odd]), None);
        assert_eq!(oom_kills(None), 0);
    }
}
