//! The pids limit of a gVisor sandbox, in layers, because no single one is both
//! faithful and a boundary:
//!
//! 1. **`RLIMIT_NPROC`** on every process the sandbox starts with (its init and each
//!    `runsc exec`, [`rlimits`]) enforces what the limit means: gVisor counts a uid's
//!    tasks (processes and threads) across its kernel, and every process of a sandbox
//!    runs as its uid 0 without capabilities, so the count is the sandbox's, as the
//!    linux runtime's pids cgroup counts it. At the limit `fork`/`clone` fail with
//!    EAGAIN inside and the sandbox lives on. The hard limit is set before the process
//!    runs, so there is no window, and it cannot be raised (no `CAP_SYS_RESOURCE`;
//!    measured: refused even after `unshare(CLONE_NEWUSER)`). It is not a boundary
//!    either: gVisor, like Linux, does not apply it to a task holding capabilities in a
//!    user namespace of its own (measured: a process that unshares one forks on).
//! 2. **gVisor's own pids controller** only shows the limit: the spec mounts the
//!    sentry's cgroupfs at `/sys/fs/cgroup` and the idle init writes the limit into
//!    the container's `pids.max` ([`write_limit`]), so `pids.max` and `pids.current`
//!    read inside as under the linux runtime. It does not enforce it: the runsc we use
//!    (20240729) charges a fork to whichever of the task's seven cgroups its map yields
//!    first (`Task.chargeLocked` returns after the first), so the pids cgroup sees about
//!    one fork in seven (measured: forks went 3–32 past a limit of 64, more under load).
//!    The sandbox's uid 0 also owns those files. So nothing waits for it.
//! 3. **The host cgroup** of the runsc sandbox (sentry, gofer and the systrap stub
//!    processes) is the boundary: its `pids.max` is [`host_limit`]. Measured under
//!    systrap: ≈ 20–30 host tasks for an idle sandbox (the Go runtimes of sentry and
//!    gofer) and ≈ 2 more per sandbox process (a stub process and its thread; a thread of
//!    the sandbox adds almost none). A sandbox that escaped layer 1 and forks on reaches
//!    it, the sentry cannot make a host task and dies: the whole sandbox ends, bounded,
//!    and the host and the server are unaffected.

use std::path::Path;

/// The word after [`super::bundle::INIT_ARG`] (and before the limit) with which the idle
/// init sets the pids limit.
pub const PIDS_ARG: &str = "pids";
/// Where the sentry's pids controller of the container is seen from inside.
const PIDS_MAX: &str = "/sys/fs/cgroup/pids/pids.max";
/// gVisor's largest `pids.max` (Linux's `PID_MAX_LIMIT` on 64-bit).
const SENTRY_MAX: u64 = 4 * 1024 * 1024;
/// Host tasks a sandbox needs besides its processes' (sentry, gofer; measured ≈ 20–30
/// idle, more under load as their Go runtimes add threads).
const HOST_BASE: u64 = 128;
/// Host tasks per sandbox process, with room (measured ≈ 1.7 under systrap).
const HOST_PER_TASK: u64 = 2;

/// The spec's mount of the sentry's cgroupfs (see the module doc).
pub fn cgroup_mount() -> serde_json::Value {
    serde_json::json!({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                       "options": ["nosuid", "noexec", "nodev"]})
}

/// The sentry's limit for a sandbox limit of `pids` tasks.
pub fn sentry_limit(pids: u64) -> u64 {
    pids.clamp(1, SENTRY_MAX)
}

/// The host cgroup's `pids.max` for a sandbox limit of `pids` tasks: above what the
/// sandbox's own `pids` tasks need on the host, so layer 1 answers first.
pub fn host_limit(pids: u64) -> u64 {
    pids.saturating_mul(HOST_PER_TASK).saturating_add(HOST_BASE)
}

/// In the sandbox's idle init: write `limit` (the argument after [`PIDS_ARG`]) into the
/// container's `pids.max`. A failure is reported on stderr (runsc's `/dev/null`) and the
/// init idles on: the host layer still bounds the sandbox.
pub fn write_limit(limit: &str) {
    let ok = limit.parse::<u64>().is_ok_and(|n| n > 0 && n <= SENTRY_MAX);
    if !ok {
        eprintln!("cleanroom-init: invalid pids limit {limit:?}");
        return;
    }
    if let Err(e) = std::fs::write(Path::new(PIDS_MAX), limit.as_bytes()) {
        eprintln!("cleanroom-init: {PIDS_MAX}: {e}");
    }
}

/// The `rlimits` of a process spec (the init's and every execution's) for a sandbox
/// limit of `pids` tasks: layer 1 of the module doc.
pub fn rlimits(pids: u64) -> serde_json::Value {
    let n = sentry_limit(pids);
    serde_json::json!([{"type": "RLIMIT_NPROC", "hard": n, "soft": n}])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_layer_sits_above_the_sentry_layer() {
        for pids in [4, 64, 1024, 1 << 20] {
            assert!(host_limit(pids) > HOST_PER_TASK * sentry_limit(pids));
        }
        assert_eq!(host_limit(u64::MAX), u64::MAX);
        assert_eq!(sentry_limit(u64::MAX), SENTRY_MAX);
        assert_eq!(sentry_limit(0), 1);
    }
}
