//! The server's descriptor table, grown once at start instead of while sandboxes are
//! being created.
//!
//! The kernel grows a process's descriptor table by doubling it when a new descriptor
//! does not fit, and in a multi-threaded process each growth waits for an **RCU grace
//! period** (`expand_fdtable` → `synchronize_rcu`) with a resize marked in progress: every
//! other thread whose new descriptor does not fit either (when the table is full: every
//! thread that opens, accepts or duplicates one) waits for it.
//! Each live sandbox costs the server about [`FDS_PER_SANDBOX`] descriptors, so a server
//! filling up crossed 64, 128, 256 … descriptors during creates and claims. Measured here
//! (`bpftrace` on `sched_switch`, a claim series against a refilling pool): both runtime
//! workers and the accepting thread off-CPU for ~10 ms in `synchronize_rcu` under
//! `expand_files`, from `openat` and `accept4`; the claim in flight took 7.2 ms instead
//! of ~0.35. A table sized for the server's sandbox cap at start pays that once, before
//! anyone waits; it is never shrunk by the kernel.
//!
//! Cost: 8 bytes of kernel memory per slot (4,096 slots, 32 KiB, for the default cap of
//! 512 sandboxes; 32,768 slots, 256 KiB, for an uncapped server). Beyond the reserve the
//! table grows as before, each doubling rarer than the last.

use std::io;
use std::os::fd::AsFd;

/// Descriptors a live sandbox costs the server: three held while it lives (its control
/// socket, its shim's pidfd, its tun device; counted on a server with 100 idle sandboxes)
/// and one for the pipes of its commands. Gateways' upstream connections come and go
/// and are not reserved for.
pub const FDS_PER_SANDBOX: usize = 4;

/// Descriptors kept for everything that is not a sandbox (API connections, the store,
/// image and registry files, the console).
const BASE_SLOTS: usize = 1024;

/// Sandboxes to size for when the server has no cap (`--max-sandboxes 0`): the scale it
/// is tested at (5,000 idle sandboxes, docs/scale.md) with some room.
const UNCAPPED_SANDBOXES: usize = 6000;

/// Slots to reserve for a server of at most `max_sandboxes` live sandboxes (0: no cap).
pub fn slots_for(max_sandboxes: u32) -> usize {
    let n = match max_sandboxes {
        0 => UNCAPPED_SANDBOXES,
        n => n as usize,
    };
    (n.saturating_mul(FDS_PER_SANDBOX) + BASE_SLOTS).next_power_of_two()
}

/// Grow this process's descriptor table to hold at least `slots` descriptors (bounded by
/// the soft `RLIMIT_NOFILE`) by duplicating a descriptor onto the highest slot and
/// closing it. Returns the table's size afterwards (`FDSize` of `/proc/self/status`).
pub fn reserve(slots: usize) -> io::Result<usize> {
    let soft = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map(|(soft, _)| usize::try_from(soft).unwrap_or(usize::MAX))
        .map_err(io::Error::from)?;
    let top = slots.min(soft);
    if top > table_size()? {
        let any = std::fs::File::open("/dev/null")?;
        let highest = libc::c_int::try_from(top - 1).map_err(io::Error::other)?;
        // The lowest free descriptor >= `highest` is `highest` itself or, if taken, a
        // higher one: either way the table now covers it. Closed at once.
        drop(crate::linux::sys::dup_at_least(any.as_fd(), highest)?);
    }
    table_size()
}

/// The current size of this process's descriptor table.
pub fn table_size() -> io::Result<usize> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    fd_size(&status).ok_or_else(|| io::Error::other("no FDSize in /proc/self/status"))
}

/// `FDSize` of a `/proc/<pid>/status` text.
pub fn fd_size(status: &str) -> Option<usize> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("FDSize:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cover_the_cap_and_the_base() {
        assert_eq!(slots_for(512), 4096);
        assert_eq!(slots_for(1), 2048);
        assert_eq!(slots_for(0), 32768);
        assert!(slots_for(5000) >= 5000 * FDS_PER_SANDBOX + BASE_SLOTS);
    }

    #[test]
    fn fd_size_is_read_from_status_text() {
        assert_eq!(fd_size("Name:\tx\nFDSize:\t256\nGroups:\n"), Some(256));
        assert_eq!(fd_size("Name:\tx\n"), None);
    }

    #[test]
    fn reserving_grows_the_table_and_leaves_no_descriptor_open() {
        // Other tests of this process may open descriptors meanwhile: only the slot the
        // reservation used is checked, not a count.
        let (soft, _) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
        let table = table_size().unwrap();
        let want = (table * 4).min(soft as usize);
        if want <= table {
            eprintln!("table of {table} already at RLIMIT_NOFILE {soft}: nothing to reserve");
            return;
        }
        let got = reserve(want).unwrap();
        assert!(got >= want, "table {got} < {want}");
        let top = libc::c_int::try_from(want - 1).unwrap();
        // SAFETY: F_GETFD only queries a descriptor number; nothing is opened or changed.
        let r = unsafe { libc::fcntl(top, libc::F_GETFD) };
        assert_eq!(
            (r, io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::EBADF)),
            "the reserving descriptor {top} was left open"
        );
    }
}
