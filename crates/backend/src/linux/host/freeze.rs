//! Pause and resume a whole sandbox with the cgroup freezer: v1 `freezer.state`
//! (`FROZEN`/`THAWED`, the layout of this project's CI) or v2 `cgroup.freeze` (`1`/`0`,
//! confirmed by `frozen 1` in `cgroup.events`). Every process of the sandbox joined its
//! cgroups before pid 1 was forked ([`super::cgroup`]), so freezing the cgroup stops all of
//! them, including ones forked while the freeze is in progress; a frozen task gets no CPU
//! time at all. Fail closed: a freeze the kernel does not confirm within [`SETTLE`] is
//! undone and reported as an error, never reported as paused.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a freeze may take to settle (tasks in uninterruptible sleep delay it).
const SETTLE: Duration = Duration::from_secs(5);

/// The sandbox cgroup directory that can freeze it, and how.
enum Knob<'a> {
    V1(&'a Path),
    V2(&'a Path),
}

fn knob(dirs: &[PathBuf]) -> Option<Knob<'_>> {
    dirs.iter().find_map(|d| {
        if d.join("freezer.state").exists() {
            Some(Knob::V1(d))
        } else if d.join("cgroup.freeze").exists() {
            Some(Knob::V2(d))
        } else {
            None
        }
    })
}

/// Whether the sandbox with these cgroup directories can be paused.
pub fn supported(dirs: &[PathBuf]) -> bool {
    knob(dirs).is_some()
}

fn frozen(k: &Knob<'_>) -> bool {
    match k {
        Knob::V1(d) => fs::read_to_string(d.join("freezer.state"))
            .map(|s| s.trim() == "FROZEN")
            .unwrap_or(false),
        Knob::V2(d) => fs::read_to_string(d.join("cgroup.events"))
            .map(|s| s.lines().any(|l| l.trim() == "frozen 1"))
            .unwrap_or(false),
    }
}

fn set(k: &Knob<'_>, freeze: bool) -> Result<(), String> {
    let (file, value) = match k {
        Knob::V1(d) => (
            d.join("freezer.state"),
            if freeze { "FROZEN" } else { "THAWED" },
        ),
        Knob::V2(d) => (d.join("cgroup.freeze"), if freeze { "1" } else { "0" }),
    };
    fs::write(&file, value).map_err(|e| format!("write {}: {e}", file.display()))
}

/// Freeze every process of the sandbox and wait until the kernel confirms it (blocking:
/// call off the async runtime). On timeout the sandbox is thawed again and an error
/// returned.
pub fn freeze(dirs: &[PathBuf]) -> Result<(), String> {
    freeze_within(dirs, SETTLE)
}

fn freeze_within(dirs: &[PathBuf], settle: Duration) -> Result<(), String> {
    let k = knob(dirs).ok_or("no freezer cgroup for this sandbox")?;
    set(&k, true)?;
    let deadline = Instant::now() + settle;
    while !frozen(&k) {
        if Instant::now() > deadline {
            let _ = set(&k, false);
            return Err(format!(
                "the sandbox did not freeze within {}ms (thawed again)",
                settle.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// Thaw the sandbox (idempotent; a sandbox that was never frozen is left as it is).
pub fn thaw(dirs: &[PathBuf]) -> Result<(), String> {
    let k = knob(dirs).ok_or("no freezer cgroup for this sandbox")?;
    set(&k, false)
}

/// Best effort for teardown: killed processes of a frozen cgroup die only once thawed
/// (v1 keeps SIGKILL pending in a frozen cgroup).
pub fn thaw_quietly(dirs: &[PathBuf]) {
    if let Some(k) = knob(dirs) {
        let _ = set(&k, false);
    }
}

/// CPU time the sandbox has used, in nanoseconds (v1 `cpuacct.usage`, v2 `usage_usec`).
pub fn cpu_usage_nanos(dirs: &[PathBuf]) -> Option<u64> {
    dirs.iter().find_map(|d| {
        if let Ok(s) = fs::read_to_string(d.join("cpuacct.usage")) {
            return s.trim().parse().ok();
        }
        let stat = fs::read_to_string(d.join("cpu.stat")).ok()?;
        stat.lines().find_map(|l| {
            let v = l.strip_prefix("usage_usec ")?;
            v.trim().parse::<u64>().ok().map(|u| u * 1000)
        })
    })
}

#[cfg(test)]
mod tests {
    //! The file protocol of both freezer interfaces, on plain files (the real v1 freezer
    //! is exercised end to end by the CLI tests; this host has no v2 controllers).
    use super::*;

    #[test]
    fn v2_freeze_waits_for_the_kernel_and_thaw_clears_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        fs::write(dir.join("cgroup.freeze"), "0").unwrap();
        fs::write(dir.join("cgroup.events"), "populated 1\nfrozen 1\n").unwrap();
        freeze(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(fs::read_to_string(dir.join("cgroup.freeze")).unwrap(), "1");
        thaw(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(fs::read_to_string(dir.join("cgroup.freeze")).unwrap(), "0");
    }

    #[test]
    fn a_freeze_the_kernel_never_confirms_is_undone_and_fails() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        fs::write(dir.join("cgroup.freeze"), "0").unwrap();
        fs::write(dir.join("cgroup.events"), "populated 1\nfrozen 0\n").unwrap();
        let e = freeze_within(std::slice::from_ref(&dir), Duration::from_millis(50)).unwrap_err();
        assert!(e.contains("did not freeze"), "{e}");
        assert_eq!(fs::read_to_string(dir.join("cgroup.freeze")).unwrap(), "0");
    }

    #[test]
    fn v1_state_file_and_no_freezer_at_all() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        fs::write(dir.join("freezer.state"), "THAWED").unwrap();
        freeze(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("freezer.state")).unwrap(),
            "FROZEN"
        );
        thaw(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("freezer.state")).unwrap(),
            "THAWED"
        );
        let none = tempfile::tempdir().unwrap();
        let dirs = vec![none.path().to_path_buf()];
        assert!(!supported(&dirs));
        assert!(freeze(&dirs).is_err());
    }

    #[test]
    fn cpu_usage_from_either_interface() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("cpu.stat"), "usage_usec 42\nuser_usec 40\n").unwrap();
        assert_eq!(cpu_usage_nanos(&[d.path().to_path_buf()]), Some(42_000));
        let e = tempfile::tempdir().unwrap();
        fs::write(e.path().join("cpuacct.usage"), "123\n").unwrap();
        assert_eq!(cpu_usage_nanos(&[e.path().to_path_buf()]), Some(123));
    }
}
