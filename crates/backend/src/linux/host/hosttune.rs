//! Host tuning a root server applies once at start: cgroup migrations without an RCU grace
//! period.
//!
//! Every sandbox joins its cgroups by writing `cgroup.procs` (cgroup v1 has no
//! `CLONE_INTO_CGROUP`). By default the kernel guards migrations with a global per-CPU
//! rwsem whose write side waits for an RCU grace period whenever it was idle: measured
//! here, the first `cgroup.procs` write of a sandbox took 6.7–10.5 ms (the next four
//! 30–200 µs), and a sandbox created seconds after the previous one paid it every time.
//! Mounting cgroup2 with `favordynmods` (Linux ≥ 6.0) trades that for slightly dearer
//! fork/exit; Linux ≥ 6.18 then switches migrations to a per-thread-group rwsem for good.
//! Measured after it: the same first write 0.3–0.5 ms (docs/performance.md).
//!
//! What is changed, exactly: only the `favordynmods` flag of the existing cgroup2
//! superblock, through `fspick` + `fsconfig(FSCONFIG_CMD_RECONFIGURE)` — the superblock's
//! other options are passed back unchanged (a cgroup2 reconfigure sets exactly the flags
//! it is given) and the mount's own flags (nosuid, nodev, …) are not touched. Nothing is
//! mounted, and nothing is done when no cgroup2 is mounted, when the option is already
//! on, or when `cleanroom serve --keep-cgroup-options` says so. Any failure leaves the
//! host as it was and is only logged: this is speed, not isolation.

use std::io;

/// The cgroup2 option this module turns on.
pub const FAVOR_DYNMODS: &str = "favordynmods";

/// What [`favor_dynamic_cgroups`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tuning {
    /// The option was already on (`mount` is the cgroup2 mount point).
    AlreadyOn { mount: String },
    /// This call turned it on.
    Enabled { mount: String },
    /// Nothing was changed, and why.
    Unchanged { reason: String },
}

/// One cgroup2 mount of `/proc/self/mountinfo`: its mount point and superblock options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cgroup2Mount {
    pub mount_point: String,
    pub super_options: Vec<String>,
}

/// The first cgroup2 mount in `mountinfo` text (fields: … mount point is the 5th; after
/// the ` - ` separator come fs type, source and the superblock options).
pub(crate) fn find_cgroup2(mountinfo: &str) -> Option<Cgroup2Mount> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut r = right.split(' ');
        if r.next()? != "cgroup2" {
            return None;
        }
        let _source = r.next()?;
        let super_options = r
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|o| !o.is_empty())
            .map(str::to_string)
            .collect();
        let mount_point = unescape(left.split(' ').nth(4)?);
        Some(Cgroup2Mount {
            mount_point,
            super_options,
        })
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\\ooo` octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let oct = b
                .get(i + 1..i + 4)
                .and_then(|o| std::str::from_utf8(o).ok());
            if let Some(v) = oct.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The flags to reconfigure with: every superblock option the mount has now (the VFS's
/// own `rw`/`ro` excepted: a reconfigure that names neither keeps it), with favordynmods
/// present or absent as asked.
pub(crate) fn reconfigure_flags(current: &[String], favor: bool) -> Vec<String> {
    let mut flags: Vec<String> = current
        .iter()
        .filter(|o| !matches!(o.as_str(), "rw" | "ro" | FAVOR_DYNMODS))
        .cloned()
        .collect();
    if favor {
        flags.push(FAVOR_DYNMODS.to_string());
    }
    flags
}

/// The host's cgroup2 mount as mountinfo shows it now.
fn current() -> Result<Cgroup2Mount, String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read mountinfo: {e}"))?;
    find_cgroup2(&text).ok_or_else(|| "no cgroup2 mount".to_string())
}

/// Whether the host's cgroup2 superblock has favordynmods on (`None`: no cgroup2 mount).
pub fn favors_dynamic_cgroups() -> Option<bool> {
    current()
        .ok()
        .map(|m| m.super_options.iter().any(|o| o == FAVOR_DYNMODS))
}

/// Set or clear favordynmods on the host's cgroup2 superblock, every other option kept.
/// Clearing exists for tests (and operators undoing it); on Linux >= 6.18 migrations stay
/// on the per-thread-group rwsem until reboot either way.
pub fn set_favor_dynmods(favor: bool) -> Result<String, String> {
    let m = current()?;
    apply(&m, favor)?;
    Ok(m.mount_point)
}

/// Reconfigure the superblock `m` was read from with favordynmods as asked.
fn apply(m: &Cgroup2Mount, favor: bool) -> Result<(), String> {
    reconfigure(&m.mount_point, &reconfigure_flags(&m.super_options, favor))
        .map_err(|e| format!("reconfigure {}: {e}", m.mount_point))
}

/// Turn `favordynmods` on for the host's cgroup2 superblock (see the module doc).
pub fn favor_dynamic_cgroups() -> Tuning {
    let m = match current() {
        Ok(m) => m,
        Err(reason) => return Tuning::Unchanged { reason },
    };
    if m.super_options.iter().any(|o| o == FAVOR_DYNMODS) {
        return Tuning::AlreadyOn {
            mount: m.mount_point,
        };
    }
    if let Err(reason) = apply(&m, true) {
        return Tuning::Unchanged { reason };
    }
    // The kernel applies root flags only from the initial cgroup namespace: check.
    match favors_dynamic_cgroups() {
        Some(true) => Tuning::Enabled {
            mount: m.mount_point,
        },
        _ => Tuning::Unchanged {
            reason: "the kernel kept the option off (not the initial cgroup namespace?)".into(),
        },
    }
}

/// `fspick` the mount's superblock, set each flag, reconfigure.
fn reconfigure(mount_point: &str, flags: &[String]) -> io::Result<()> {
    use crate::linux::sys;
    use std::os::fd::AsFd;
    let fs = sys::fspick(std::path::Path::new(mount_point))?;
    for flag in flags {
        let key = std::ffi::CString::new(flag.as_str())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in option"))?;
        sys::fsconfig(fs.as_fd(), sys::FSCONFIG_SET_FLAG, Some(&key))?;
    }
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_CMD_RECONFIGURE, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
25 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
40 25 0:35 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:12 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

    #[test]
    fn finds_the_cgroup2_mount_and_its_superblock_options() {
        let m = find_cgroup2(HYBRID).expect("cgroup2");
        assert_eq!(m.mount_point, "/sys/fs/cgroup/unified");
        assert_eq!(
            m.super_options,
            ["rw", "nsdelegate", "memory_recursiveprot"]
        );
        assert_eq!(
            find_cgroup2("31 25 0:26 / /x rw - cgroup cgroup rw,memory\n"),
            None
        );
        assert_eq!(find_cgroup2("garbage\n\n - \n"), None);
    }

    #[test]
    fn keeps_every_other_option_and_sets_favordynmods_once() {
        let cur: Vec<String> = ["rw", "nsdelegate", "memory_recursiveprot"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            reconfigure_flags(&cur, true),
            ["nsdelegate", "memory_recursiveprot", "favordynmods"]
        );
        let on: Vec<String> = ["rw", "favordynmods", "nsdelegate"]
            .map(String::from)
            .to_vec();
        assert_eq!(reconfigure_flags(&on, true), ["nsdelegate", "favordynmods"]);
        assert_eq!(reconfigure_flags(&on, false), ["nsdelegate"]);
    }

    #[test]
    fn mount_points_are_unescaped() {
        let line = "40 25 0:35 / /sys/fs/cg\\040two rw - cgroup2 cgroup2 rw\n";
        assert_eq!(find_cgroup2(line).expect("m").mount_point, "/sys/fs/cg two");
    }
}
