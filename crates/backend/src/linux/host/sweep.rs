//! Liveness of server instances, and the sweep of what dead ones left behind.
//!
//! Each server instance (one state directory) keeps per-sandbox mountpoints under
//! `/run/cleanroom/<instance>` and cgroups under `…/cleanroom/<instance>`. A server killed
//! with SIGKILL cannot clean them, and when the next server uses another state directory,
//! its own reconciliation never looks there. So every instance holds an exclusive `flock` on
//! `/run/cleanroom/<instance>.lock` for its whole life (the kernel drops it when the process
//! dies), and a starting server sweeps every *other* instance whose lock it can take: that
//! instance is provably dead. An instance without a lock file (an older server) is left
//! alone — it may be alive.

use super::cgroup;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Held for the life of one server instance.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
    path: PathBuf,
}

impl InstanceLock {
    /// Mark `instance` (under `base`) alive. Call before creating any of its directories.
    /// Waits briefly while another server sweeps it (that holds the lock for milliseconds);
    /// fails when a live server holds it.
    pub fn acquire(base: &Path, instance: &str) -> std::io::Result<InstanceLock> {
        let path = base.join(format!("{instance}.lock"));
        std::fs::create_dir_all(base)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let file = crate::linux::sys::open_locked(&path)?;
            // A sweeper unlinks the file while holding it: a lock on an unlinked inode
            // would protect nothing, so it must still be the file at `path`.
            if let Some(file) = file.filter(|f| same_file(f, &path)) {
                return Ok(InstanceLock { _file: file, path });
            }
            if std::time::Instant::now() > deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!("{} is held by a live server", path.display()),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Remove the lock file on a clean stop (the lock itself ends with the fd).
    pub fn release(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// What one sweep removed (for the log and the tests).
#[derive(Debug, Default)]
pub struct Swept {
    pub instances: Vec<String>,
    pub killed: usize,
}

/// Sweep every dead instance other than `own` under `base` (runtime dirs) and in the
/// cgroup trees of `mode` (siblings of our own instance cgroup).
pub fn sweep_dead(base: &Path, own: &str, mode: &cgroup::Mode) -> Swept {
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir(base) else {
        return swept;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let Some(instance) = name.strip_suffix(".lock") else {
            continue;
        };
        if instance == own || !is_instance_name(instance) {
            continue;
        }
        let Ok(Some(file)) = crate::linux::sys::open_locked(&entry.path()) else {
            continue; // alive (or unreadable: not ours to judge)
        };
        if !same_file(&file, &entry.path()) {
            continue; // alive (or just swept and re-created by someone else)
        }
        // Dead: nothing of it may keep running, then its directories go.
        for dir in mode.sibling_instance_dirs(instance) {
            swept.killed += kill_cgroup_tree(&dir);
            let subdirs: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            let mut left = cgroup::remove(&subdirs);
            left.extend(cgroup::remove(std::slice::from_ref(&dir)));
            cgroup::remove_eventually(left);
        }
        let runtime = base.join(instance);
        // Its runtime tmpfs, if it had one ([`super::runtime_fs`]), goes with what is on it.
        if let Err(e) = super::runtime_fs::detach(&runtime) {
            tracing::warn!(dir = %runtime.display(), error = %e, "could not detach a dead server's runtime tmpfs");
        }
        // Mountpoints only (sandbox mounts live in their own namespaces); a symlink here
        // is not ours to follow: remove_dir_all does not follow links.
        if let Err(e) = std::fs::remove_dir_all(&runtime) {
            if e.kind() != std::io::ErrorKind::NotFound {
                // The lock file stays: the next server's sweep tries again.
                tracing::warn!(dir = %runtime.display(), error = %e, "could not sweep a dead server's runtime dir");
                continue;
            }
        }
        let _ = std::fs::remove_file(entry.path());
        tracing::info!(instance, "swept the leftovers of a dead server");
        swept.instances.push(instance.to_string());
    }
    swept
}

fn is_instance_name(s: &str) -> bool {
    s.strip_prefix("srv-")
        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// SIGKILL every process in the sandbox cgroups below `dir`. Returns how many.
fn kill_cgroup_tree(dir: &Path) -> usize {
    let mut killed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for pid in std::fs::read_to_string(d.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse::<i32>().ok())
        {
            // A process charged to a dead server's sandbox cgroup.
            if crate::linux::sys::kill(pid, nix::sys::signal::Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
        // A paused sandbox's processes die only once thawed.
        super::freeze::thaw_quietly(std::slice::from_ref(&d));
        stack.extend(
            std::fs::read_dir(&d)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir()),
        );
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_instance_is_never_swept_and_a_dead_one_is() {
        let base = tempfile::tempdir().unwrap();
        let live = InstanceLock::acquire(base.path(), "srv-00000000000000aa").unwrap();
        std::fs::create_dir_all(base.path().join("srv-00000000000000aa/sbx_1/root")).unwrap();
        // A dead instance: lock file present, nobody holds it.
        drop(InstanceLock::acquire(base.path(), "srv-00000000000000bb").unwrap());
        std::fs::create_dir_all(base.path().join("srv-00000000000000bb/sbx_2/root")).unwrap();
        // An older server without a lock file: may be alive, left alone.
        std::fs::create_dir_all(base.path().join("srv-00000000000000cc")).unwrap();
        let swept = sweep_dead(
            base.path(),
            "srv-00000000000000dd",
            &cgroup::Mode::Unavailable,
        );
        assert_eq!(swept.instances, vec!["srv-00000000000000bb".to_string()]);
        assert!(base.path().join("srv-00000000000000aa/sbx_1").exists());
        assert!(!base.path().join("srv-00000000000000bb").exists());
        assert!(base.path().join("srv-00000000000000cc").exists());
        drop(live);
    }

    #[test]
    fn a_second_holder_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let _a = InstanceLock::acquire(base.path(), "srv-01").unwrap();
        assert!(InstanceLock::acquire(base.path(), "srv-01").is_err());
    }
}
