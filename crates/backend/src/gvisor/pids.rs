//! The pids limit of a gVisor sandbox, in two layers, because neither alone is both
//! faithful and a boundary:
//!
//! 1. **gVisor's own pids controller** counts what the limit means: the sandbox's tasks
//!    (processes and threads), as the linux runtime's cgroup does. The spec mounts the
//!    sentry's cgroupfs at `/sys/fs/cgroup`, so runsc puts the container's first process —
//!    and every process `runsc exec` starts — into the sentry cgroup named after the
//!    container; the idle init writes the limit into its `pids.max` before anything else
//!    runs in the sandbox ([`write_limit`]); the create waits until runsc reads it back
//!    ([`await_limit`]), so no execution starts before it holds (under load the init
//!    took long enough to start that a first execution forked 85 times past a limit of
//!    64). At the limit `fork`/`clone` fail with EAGAIN
//!    inside and the sandbox lives on. (`runsc write-control` cannot set `pids.max`: the
//!    2024 runsc refuses it as "control file not writable", and runsc does not apply the
//!    spec's `linux.resources.pids` to its own cgroups.) This layer is not a boundary: the
//!    sandbox's uid 0 owns those files, and (measured) may mount the same cgroupfs in a
//!    user namespace of its own and move itself to the root cgroup, out of the limit.
//! 2. **The host cgroup** of the runsc sandbox (sentry, gofer and the systrap stub
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

/// Wait (bounded) until the sandbox's init has set `limit` in gVisor's cgroup of
/// container `id`, read back with `runsc read-control`; fail closed if it never is.
pub(super) async fn await_limit(
    runsc: &super::Runsc,
    id: &str,
    limit: u64,
) -> Result<(), crate::BackendError> {
    let want = limit.to_string();
    let cgroup = format!("/{id}");
    let deadline = std::time::Instant::now() + AWAIT_LIMIT;
    loop {
        let out = runsc
            .run(&["read-control", id, "pids", &cgroup, "pids.max"])
            .await?;
        if String::from_utf8_lossy(&out).trim() == want {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(crate::BackendError::LaunchFailed(format!(
                "the sandbox's pids limit was not applied within {AWAIT_LIMIT:?}"
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// How long a create waits for the init to set the pids limit.
const AWAIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

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
