//! Whether joining a cgroup waits for an RCU grace period on this host.
//!
//! Every sandbox's shim moves itself into its cgroups before it forks pid 1
//! ([`super::cgroup`]). A move takes the kernel's global `cgroup_threadgroup_rwsem` for
//! writing, and unless the host favours dynamic cgroup changes (the `favordynmods` mount
//! option of cgroup2 or cgroup v1, or `CONFIG_CGROUP_FAVOR_DYNMODS`), taking it from idle
//! first waits for a whole RCU grace period. Measured here (`strace -T` of the shim's first
//! `cgroup.procs` write, 16 of 16 creates, loaded 2-core VM, `CONFIG_HZ=250`): 8.6–19.6 ms,
//! against 27–86 µs with `favordynmods` — the largest single wait of a fresh create. The
//! option is host-wide (forks and exits take a slightly slower path), so the server only
//! says so at start-up; changing it is the operator's decision (docs/performance.md).

/// True when some mounted cgroup hierarchy carries `favordynmods`, which puts the global
/// rwsem in the mode where writers do not wait for a grace period. `mounts` is the text of
/// `/proc/self/mounts`.
pub fn favored(mounts: &str) -> bool {
    mounts.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let fstype = fields.nth(2);
        let options = fields.next().unwrap_or("");
        matches!(fstype, Some("cgroup" | "cgroup2"))
            && options.split(',').any(|o| o == "favordynmods")
    })
}

/// [`favored`] for this host (false when the mount table cannot be read).
pub fn host_favored() -> bool {
    std::fs::read_to_string("/proc/self/mounts")
        .map(|m| favored(&m))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::favored;

    #[test]
    fn only_a_cgroup_mount_with_the_option_counts() {
        let plain = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n\
                     cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n";
        assert!(!favored(plain));
        let v2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,relatime,nsdelegate,favordynmods 0 0\n";
        assert!(favored(v2));
        let v1 = "cgroup /x cgroup rw,relatime,favordynmods,name=x 0 0\n";
        assert!(favored(v1));
        // The word elsewhere (a path, another filesystem's options) is not the option.
        let other = "tmpfs /favordynmods tmpfs rw,favordynmods 0 0\n\
                     cgroup /sys/fs/cgroup/favordynmods cgroup rw,pids 0 0\n";
        assert!(!favored(other));
        assert!(!favored(""));
    }
}
