//! Processes in a gVisor sandbox: each one is a `runsc exec` of ours, given the process's
//! spec as a file (never its environment on a command line) and the server's pipes as its
//! stdio — the sentry writes into them directly. Its exit is `runsc exec`'s; signals go
//! to the process group of the pid the process has inside the sandbox (as the linux
//! runtime sends them), through the in-sandbox signal helper ([`super::init`]); a paused
//! sandbox (which runs no new process until resumed) gets `runsc kill --pid` instead.

use super::bundle::no_capabilities;
use super::GvisorBackend;
use crate::{BackendError, ExitStatus, ProcessHandle, ProcessId, ProcessSpec};
use serde_json::json;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// How long the in-sandbox signal helper may take before the signal goes on without it.
const HELPER_DEADLINE: Duration = Duration::from_secs(5);

/// `runsc exec`'s exit code when it failed itself (or its process exited with 128).
const RUNSC_FAILED: i32 = 128;

/// How long a signal waits for a just-started process's in-sandbox pid to be known.
const PID_WAIT: Duration = Duration::from_secs(5);

impl GvisorBackend {
    /// `Backend::spawn` (see the module doc).
    pub(super) async fn start_process(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError> {
        let sbx = self.get(sandbox_id)?;
        // Held until the execution is counted in `procs` (hibernate.rs).
        let _gate = sbx.gate.read().await;
        if sbx.is_released() {
            return Err(BackendError::Unavailable(
                "the sandbox is suspended with its memory released; resume it first".into(),
            ));
        }
        if spec.argv.is_empty() {
            return Err(BackendError::LaunchFailed("empty command".into()));
        }
        let id = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let procs = sbx.bundle.procs();
        let spec_path = procs.join(format!("{id}.json"));
        let pid_path = procs.join(format!("{id}.pid"));
        let process = process_json(&spec, &spec.argv, sbx.pids);
        write_private(&spec_path, process.to_string().as_bytes())?;
        let (out_r, out_w) = pipe_pair()?;
        let (err_r, err_w) = pipe_pair()?;
        // A terminal execution: all its I/O goes through the terminal (console.rs); its
        // pipes are at EOF at once.
        let pty = match spec.tty {
            Some(size) => Some(super::console::open_pty(size)?),
            None => None,
        };
        let dup = |fd: &OwnedFd| {
            fd.try_clone()
                .map(Stdio::from)
                .map_err(|e| BackendError::io("dup terminal", e))
        };
        let (in_child, out_child, err_child, stdin_host) = match &pty {
            Some((_, replica)) => (dup(replica)?, dup(replica)?, dup(replica)?, None),
            None if spec.stdin => {
                let (r, w) = pipe_pair()?;
                (
                    Stdio::from(r),
                    Stdio::from(out_w),
                    Stdio::from(err_w),
                    Some(w),
                )
            }
            None => (Stdio::null(), Stdio::from(out_w), Stdio::from(err_w), None),
        };
        let mut cmd = self.runsc.command();
        cmd.arg("exec")
            .arg("--process")
            .arg(&spec_path)
            .arg("--internal-pid-file")
            .arg(&pid_path)
            .arg(sandbox_id)
            .stdin(in_child)
            .stdout(out_child)
            .stderr(err_child)
            .kill_on_drop(false);
        if pty.is_some() {
            // SAFETY: runs in the forked child before exec; only system calls.
            unsafe {
                cmd.pre_exec(super::console::take_terminal);
            }
        }
        let child = cmd.spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&spec_path);
                return Err(BackendError::io("runsc exec", e));
            }
        };
        drop(cmd);
        // The replica stays only with runsc: the master reads EOF/EIO once it is done.
        let pty = pty.map(|(master, _replica)| master);
        let (tx, rx) = oneshot::channel();
        sbx.procs
            .lock()
            .map_err(|_| poisoned())?
            .insert(id, pid_path);
        let sbx2 = sbx.clone();
        let (runsc, container) = (self.runsc.clone(), sandbox_id.to_string());
        tokio::spawn(async move {
            let status = child.wait().await;
            let _ = std::fs::remove_file(&spec_path);
            if let Ok(mut m) = sbx2.procs.lock() {
                if let Some(p) = m.remove(&id) {
                    let _ = std::fs::remove_file(p);
                }
            }
            let code = status.ok().and_then(|s| s.code());
            if let Some(exit) = runsc_exit(code, &container, || runsc.is_running(&container)).await
            {
                let _ = tx.send(exit);
            }
            // Otherwise the sandbox is gone: `tx` drops and the server says so.
        });
        let wrap = |e: std::io::Error| BackendError::io("wrap pipe", e);
        Ok(ProcessHandle {
            id,
            stdin: stdin_host
                .map(pipe::Sender::from_owned_fd)
                .transpose()
                .map_err(wrap)?,
            stdout: pipe::Receiver::from_owned_fd(out_r).map_err(wrap)?,
            stderr: pipe::Receiver::from_owned_fd(err_r).map_err(wrap)?,
            pty,
            exit: rx,
        })
    }

    /// `Backend::signal`: `runsc kill --pid <in-sandbox pid>`.
    pub(super) async fn signal_process(
        &self,
        sandbox_id: &str,
        process: ProcessId,
        signal: i32,
    ) -> Result<(), BackendError> {
        let sbx = self.get(sandbox_id)?;
        let pid_path: PathBuf = sbx
            .procs
            .lock()
            .map_err(|_| poisoned())?
            .get(&process)
            .cloned()
            .ok_or(BackendError::ProcessNotFound(process))?;
        let deadline = tokio::time::Instant::now() + PID_WAIT;
        let pid = loop {
            let text = std::fs::read_to_string(&pid_path).unwrap_or_default();
            if let Ok(pid) = text.trim().parse::<u32>() {
                break pid;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::ProcessNotFound(process));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let (pid, signal) = (pid.to_string(), signal.to_string());
        if !sbx.paused.load(Ordering::SeqCst) {
            // `runsc exec` takes the container's own (empty) capabilities and uid 0: the
            // helper can signal what the sandbox's processes could, nothing else. It runs
            // among the sandbox's processes, so nothing it says is trusted: its output is
            // not read (a hostile one could stream into the server), its exit status is not
            // taken as delivery, and it gets a short deadline. The leader is signalled by
            // runsc itself below in every case; the helper only adds the rest of its group.
            let helped = self
                .runsc
                .run_quiet(
                    HELPER_DEADLINE,
                    &[
                        "exec",
                        "--user",
                        "0:0",
                        sandbox_id,
                        super::bundle::INIT_PATH,
                        super::bundle::INIT_ARG,
                        super::init::KILL_ARG,
                        &signal,
                        &pid,
                    ],
                )
                .await
                .is_ok();
            let leader = self
                .runsc
                .run(&["kill", "--pid", &pid, sandbox_id, &signal])
                .await;
            // The leader may already be gone by the helper's signal: that is delivery.
            return if helped { Ok(()) } else { leader.map(|_| ()) };
        }
        self.runsc
            .run(&["kill", "--pid", &pid, sandbox_id, &signal])
            .await
            .map(|_| ())
    }
}

/// The OCI `process` of an execution running `args` (the spec's argv, or the one-shot
/// init's line carrying it, [`super::oneshot`]): the spec's environment and working
/// directory, uid 0 of the sandbox, no capabilities, `no_new_privs`, the pids limit.
pub(super) fn process_json(spec: &ProcessSpec, args: &[String], pids: u64) -> serde_json::Value {
    let mut process = json!({
        "terminal": spec.tty.is_some(),
        "user": {"uid": 0, "gid": 0},
        "args": args,
        "env": spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        "cwd": spec.cwd,
        "capabilities": no_capabilities(),
        "noNewPrivileges": true,
        "rlimits": super::pids::rlimits(pids),
    });
    if let Some(size) = spec.tty {
        process["consoleSize"] = json!({"height": size.rows, "width": size.cols});
    }
    process
}

/// What a runsc command that carried a process (`runsc exec`, a one-shot's `runsc run`)
/// reports by its exit `code`: the process's code, or 128 + the signal that killed it;
/// 128 is also runsc's own failure (the sandbox died under it), taken as the process's
/// code only while `alive` says the sandbox still runs. `None`: the sandbox is gone.
pub(super) async fn runsc_exit<F, Fut>(
    code: Option<i32>,
    container: &str,
    alive: F,
) -> Option<ExitStatus>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    match code {
        Some(code) if code != RUNSC_FAILED => Some(exit_status(code)),
        // The memory limit killed the sandbox's kernel (gVisor's sentry is one host
        // process: the host's OOM killer takes the whole sandbox).
        _ if oom_kills(container) > 0 => Some(ExitStatus {
            code: None,
            signal: Some(9),
            oom_killed: true,
        }),
        Some(code) if alive().await => Some(exit_status(code)),
        _ => None,
    }
}

/// `runsc exec`'s exit code as the process's status (a code above 128 that names a
/// signal is taken as that signal: runsc reports a signalled process so).
pub(super) fn exit_status(code: i32) -> ExitStatus {
    if (129..=128 + 64).contains(&code) {
        ExitStatus {
            code: None,
            signal: Some(code - 128),
            oom_killed: false,
        }
    } else {
        ExitStatus {
            code: Some(code),
            signal: None,
            oom_killed: false,
        }
    }
}

/// OOM kills counted in the sandbox's memory cgroup (cgroup v1 `memory.oom_control`, v2
/// `memory.events`; 0 when neither can be read).
fn oom_kills(sandbox_id: &str) -> u64 {
    let rel = format!("{}/{sandbox_id}", super::bundle::CGROUP_PARENT);
    let candidates = [
        format!("/sys/fs/cgroup/memory/{rel}/memory.oom_control"),
        format!("/sys/fs/cgroup/{rel}/memory.events"),
    ];
    candidates
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| l.strip_prefix("oom_kill "))
                .filter_map(|n| n.trim().parse::<u64>().ok())
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0)
}

pub(super) fn write_private(path: &std::path::Path, bytes: &[u8]) -> Result<(), BackendError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| BackendError::io(format!("write {}", path.display()), e))
}

pub(super) fn pipe_pair() -> Result<(OwnedFd, OwnedFd), BackendError> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| BackendError::io("pipe", e.into()))
}

pub(super) fn poisoned() -> BackendError {
    BackendError::Unavailable("lock poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::exit_status;

    #[test]
    fn runsc_exit_codes_map_to_codes_and_signals() {
        assert_eq!(exit_status(0).code, Some(0));
        assert_eq!(exit_status(7).code, Some(7));
        assert_eq!(exit_status(128).code, Some(128));
        assert_eq!(exit_status(137).signal, Some(9));
        assert_eq!(exit_status(143).shell_code(), 143);
        assert_eq!(exit_status(255).code, Some(255));
    }
}
