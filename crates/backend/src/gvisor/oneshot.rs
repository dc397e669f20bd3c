//! One-shot sandboxes: a sandbox made for one command (`RunExecution` with
//! `terminate_on_exit`, [`crate::SandboxSpec::one_shot`]) starts its container with that
//! command, in one `runsc run`, instead of `runsc run --detach` with an idle init and then
//! `runsc exec` — two runsc invocations and two sentry round trips where `runsc do` makes
//! one (docs/runtimes.md, "Why the one-shot row is the hard one").
//!
//! Provision prepares everything as usual (namespace, tun, scratch, bundle) and starts
//! nothing ([`Start::Deferred`]). The first execution, when it has no terminal, points the
//! bundle's process at `cleanroom __gvisor-init first PIDS` ([`super::first`]) and runs
//! `runsc run --detach` with the execution's pipes as its stdio and two more host pipes
//! passed in (`--pass-fd`): one carrying the command (argv, environment, working
//! directory) in, one carrying its pid and exit status out. pid 1 starts the command in a
//! process group of its own and, once it has ended, stays as the sandbox's idle init: from
//! then on the sandbox is exactly what the usual start makes (a caller that went away
//! before the end keeps a READY sandbox; `exec --in`, files, checkpoints work on). The
//! command is an ordinary execution to the rest of the backend: its in-sandbox pid goes
//! into its pid file (signals reach its process group through the usual helper), its
//! exit comes from the status pipe, read bounded and parsed strictly.
//!
//! Any other call on a deferred sandbox (files, a second execution, inbound, usage,
//! checkpoint, pause, suspend) starts it the usual way first ([`GvisorBackend::started`]);
//! a call while the first command's `runsc run` is on its way waits for it (it holds
//! [`GvisorSandbox::start`]'s lock). Not used for terminal executions, sandboxes from a
//! pool or a checkpoint, or a command too large for one pipe buffer.

use super::process::{pipe_pair, process_json, runsc_exit, write_private};
use super::{GvisorBackend, GvisorSandbox};
use crate::{BackendError, ExitStatus, ProcessHandle, ProcessSpec, SandboxSpec};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// How long `runsc run` may take before the start fails (as the usual start's deadline).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest request sent: it is written whole before runsc starts, so it must fit the
/// request pipe's buffer (64 KiB by default); a larger one starts the usual way.
const MAX_REQUEST: usize = 60 << 10;
/// Most bytes read from the status pipe (two short lines; anything beyond is not ours).
const MAX_STATUS: u64 = 256;

/// Whether a sandbox's container runs, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// Provisioned; no runsc process yet.
    Deferred,
    /// Running (the usual way, or a one-shot's `runsc run` returned).
    Running,
    /// Never to run: its one-shot `runsc run` failed, or it is being torn down deferred.
    Ended,
}

/// Whether the container of `spec` waits for its first command: a one-shot sandbox made
/// fresh (never a restored one: its processes are the checkpoint's).
pub(super) fn defers(spec: &SandboxSpec) -> bool {
    spec.one_shot && spec.checkpoint.is_none() && spec.restore.is_none()
}

impl GvisorBackend {
    /// The sandbox, its container running: a deferred one is started the usual way (idle
    /// init); a one-shot's start on its way is waited for. Every backend call but the
    /// first execution's comes through here.
    pub(super) async fn started(
        &self,
        sandbox_id: &str,
    ) -> Result<Arc<GvisorSandbox>, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let mut start = sbx.start.lock().await;
        match *start {
            Start::Running => {}
            Start::Deferred => {
                self.start_container(
                    sandbox_id,
                    &sbx.bundle,
                    sbx.netns.as_raw_fd(),
                    &sbx.scratch,
                    sbx.image_root.as_deref(),
                    vec!["run".into(), "--detach".into()],
                )
                .await?;
                *start = Start::Running;
            }
            Start::Ended => {
                return Err(BackendError::Unavailable(
                    "the sandbox's container could not be started".into(),
                ))
            }
        }
        drop(start);
        Ok(sbx)
    }

    /// `Backend::spawn` on a deferred sandbox: the first execution without a terminal
    /// starts the container with it (`None`: not such a one; it runs the usual way).
    pub(super) async fn spawn_first(
        &self,
        sandbox_id: &str,
        spec: &ProcessSpec,
    ) -> Result<Option<ProcessHandle>, BackendError> {
        let sbx = self.get(sandbox_id)?;
        if spec.tty.is_some() || spec.argv.is_empty() {
            return Ok(None);
        }
        // Held until runsc has started the container (or failed to): every other call on
        // the sandbox waits for it in `started`.
        let mut start = sbx.start.clone().lock_owned().await;
        if *start != Start::Deferred {
            return Ok(None);
        }
        let request = super::first::Request {
            args: spec.argv.clone(),
            env: spec.env.clone(),
            cwd: spec.cwd.clone(),
        };
        let request = serde_json::to_vec(&request)
            .map_err(|e| BackendError::LaunchFailed(format!("one-shot request: {e}")))?;
        if request.len() > MAX_REQUEST {
            return Ok(None);
        }
        let id = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let pid_path = sbx.bundle.procs().join(format!("{id}.pid"));
        let launched = self.launch_first(sandbox_id, &sbx, spec, &request);
        let (mut child, status_r, handle) = match launched {
            Ok(l) => l,
            Err(e) => {
                // The bundle may name the first command now: never started the usual way.
                *start = Start::Ended;
                return Err(e);
            }
        };
        sbx.procs
            .lock()
            .map_err(|_| super::process::poisoned())?
            .insert(id, pid_path.clone());
        let (tx, rx) = oneshot::channel();
        let (sbx2, container) = (sbx.clone(), sandbox_id.to_string());
        tokio::spawn(async move {
            let run = async move {
                let ok = matches!(
                    tokio::time::timeout(RUN_TIMEOUT, child.wait()).await,
                    Ok(Ok(s)) if s.success()
                );
                if !ok {
                    let _ = child.start_kill();
                }
                // Before the status is read on: whoever waits for the start goes on now.
                *start = if ok { Start::Running } else { Start::Ended };
                drop(start);
                ok
            };
            let (ran, status) = tokio::join!(run, read_status(status_r, &pid_path));
            if let Ok(mut m) = sbx2.procs.lock() {
                m.remove(&id);
            }
            let _ = std::fs::remove_file(&pid_path);
            let exit = match status {
                Some(exit) => Some(exit),
                // No status: pid 1 died before the command ended (the sandbox's OOM kill,
                // a teardown), or runsc never started it.
                None if ran => runsc_exit(None, &container, || async { false }).await,
                None => None,
            };
            match exit {
                Some(exit) => {
                    let _ = tx.send(exit);
                }
                // The sandbox is gone (or never ran): `tx` drops and the server says so.
                None => {
                    tracing::debug!(sandbox_id = %container, ran, "one-shot command without a status")
                }
            }
        });
        Ok(Some(ProcessHandle {
            id,
            exit: rx,
            ..handle
        }))
    }

    /// Point the bundle's process at the one-shot init, write the request into its pipe,
    /// and spawn `runsc run --detach` with the execution's pipes as its stdio. Returns
    /// runsc, the status pipe's read end and the handle (its `exit` a placeholder).
    fn launch_first(
        &self,
        sandbox_id: &str,
        sbx: &GvisorSandbox,
        spec: &ProcessSpec,
        request: &[u8],
    ) -> Result<(tokio::process::Child, OwnedFd, ProcessHandle), BackendError> {
        use std::io::Write;
        let args = vec![
            super::bundle::INIT_PATH.to_string(),
            super::bundle::INIT_ARG.to_string(),
            super::first::FIRST_ARG.to_string(),
            super::pids::sentry_limit(sbx.pids).to_string(),
        ];
        // pid 1's own environment is the idle init's (the command's comes by the pipe).
        let init = ProcessSpec {
            argv: Vec::new(),
            env: vec![("PATH".into(), super::bundle::DEFAULT_PATH.into())],
            cwd: "/".into(),
            stdin: false,
            tty: None,
        };
        sbx.bundle
            .set_process(process_json(&init, &args, sbx.pids))?;
        let (req_r, req_w) = pipe_pair()?;
        std::fs::File::from(req_w)
            .write_all(request)
            .map_err(|e| BackendError::io("one-shot request", e))?;
        let (status_r, status_w) = pipe_pair()?;
        let (out_r, out_w) = pipe_pair()?;
        let (err_r, err_w) = pipe_pair()?;
        let (stdin_child, stdin_host) = match spec.stdin {
            true => {
                let (r, w) = pipe_pair()?;
                (Stdio::from(r), Some(w))
            }
            false => (Stdio::null(), None),
        };
        let pass = |fd: &OwnedFd, guest: i32| format!("--pass-fd={}:{guest}", fd.as_raw_fd());
        let start = vec![
            "run".into(),
            "--detach".into(),
            pass(&req_r, super::first::REQUEST_FD).into(),
            pass(&status_w, super::first::STATUS_FD).into(),
        ];
        let keep = [req_r.as_raw_fd(), status_w.as_raw_fd()];
        let mut cmd = self.container_command(
            sandbox_id,
            &sbx.bundle,
            sbx.netns.as_raw_fd(),
            &sbx.scratch,
            sbx.image_root.as_deref(),
            start,
            &keep,
        )?;
        cmd.stdin(stdin_child)
            .stdout(Stdio::from(out_w))
            .stderr(Stdio::from(err_w))
            .kill_on_drop(true);
        let child = cmd.spawn().map_err(|e| BackendError::io("runsc run", e))?;
        // Only runsc (then pid 1) holds the guest's ends from here on: the status pipe
        // reaches EOF when pid 1 closes it or dies.
        drop((cmd, req_r, status_w));
        let wrap = |e: std::io::Error| BackendError::io("wrap pipe", e);
        let handle = ProcessHandle {
            id: 0,
            stdin: stdin_host
                .map(pipe::Sender::from_owned_fd)
                .transpose()
                .map_err(wrap)?,
            stdout: pipe::Receiver::from_owned_fd(out_r).map_err(wrap)?,
            stderr: pipe::Receiver::from_owned_fd(err_r).map_err(wrap)?,
            pty: None,
            exit: oneshot::channel().1,
        };
        Ok((child, status_r, handle))
    }

    /// Before a teardown: whether runsc may have a container of the sandbox (`false`: it
    /// was deferred, and now never starts — a spawn that got it before it left the table
    /// must not start it behind the teardown). Waits for a one-shot start on its way.
    pub(super) async fn before_teardown(&self, sbx: &GvisorSandbox) -> bool {
        let mut start = sbx.start.lock().await;
        let deferred = *start == Start::Deferred;
        *start = Start::Ended;
        !deferred
    }
}

/// Read the one-shot's status pipe (bounded): `pid N` is written into the execution's pid
/// file (signals use it, as for any execution), then `exit N` or `signal N` is the
/// command's status. `None` at EOF without one, or on anything malformed (fail closed: it
/// comes from inside the sandbox).
async fn read_status(status: OwnedFd, pid_path: &std::path::Path) -> Option<ExitStatus> {
    let pipe = pipe::Receiver::from_owned_fd(status).ok()?;
    let mut pipe = pipe.take(MAX_STATUS);
    let mut buf = Vec::new();
    loop {
        let mut chunk = [0u8; 64];
        let n = pipe.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            match parse_status(&line[..end])? {
                Status::Pid(pid) => {
                    write_private(pid_path, pid.to_string().as_bytes()).ok()?;
                }
                Status::Exit(exit) => return Some(exit),
            }
        }
    }
}

#[derive(Debug, PartialEq)]
enum Status {
    Pid(u32),
    Exit(ExitStatus),
}

/// One line of the status pipe; `None` when it is not one of the three forms.
fn parse_status(line: &[u8]) -> Option<Status> {
    let line = std::str::from_utf8(line).ok()?;
    let (word, n) = line.split_once(' ')?;
    let n: i32 = n.parse().ok()?;
    match word {
        "pid" if n > 1 => Some(Status::Pid(n as u32)),
        "exit" if (0..=255).contains(&n) => Some(Status::Exit(super::process::exit_status(n))),
        "signal" if (1..=64).contains(&n) => Some(Status::Exit(ExitStatus {
            code: None,
            signal: Some(n),
            oom_killed: false,
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{defers, parse_status, Status};

    #[test]
    fn only_a_fresh_one_shot_sandbox_defers_its_start() {
        let mut spec = crate::SandboxSpec {
            sandbox_id: "sbx_1".into(),
            runtime: crate::Runtime::Gvisor,
            hostname: "h".into(),
            limits: Default::default(),
            network: crate::NetworkSpec::LoopbackOnly,
            image: None,
            trusted_ca_pem: None,
            restore: None,
            checkpoint: None,
            volumes: vec![],
            one_shot: false,
        };
        assert!(!defers(&spec));
        spec.one_shot = true;
        assert!(defers(&spec));
        spec.checkpoint = Some("/state/ckpt_1/image".into());
        assert!(
            !defers(&spec),
            "a restored sandbox runs its checkpoint's processes"
        );
    }

    #[test]
    fn status_lines_parse_strictly() {
        assert_eq!(parse_status(b"pid 2"), Some(Status::Pid(2)));
        let Some(Status::Exit(e)) = parse_status(b"exit 7") else {
            panic!("exit 7")
        };
        assert_eq!((e.code, e.signal), (Some(7), None));
        let Some(Status::Exit(e)) = parse_status(b"signal 9") else {
            panic!("signal 9")
        };
        assert_eq!((e.code, e.signal), (None, Some(9)));
        for bad in [
            &b"pid 1"[..],
            b"pid -3",
            b"exit 256",
            b"exit -1",
            b"signal 0",
            b"signal 65",
            b"exit  7",
            b"exit 7 8",
            b"bye 7",
            b"\xff 7",
            b"",
        ] {
            assert_eq!(parse_status(bad), None, "{bad:?}");
        }
    }
}
