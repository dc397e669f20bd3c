//! An in-memory [`Backend`] for the engine's unit tests: no namespaces, no root.
//!
//! This is a mock at the boundary the unit tests cannot reach without root (the Linux
//! backend); the real backend is exercised end to end by `crates/e2e`. Processes are
//! scripted by their argv:
//!
//! * `echo <text>...`: writes the text and a newline to stdout, exits 0;
//! * `fail <code>`: writes `oops` to stderr, exits with `code`;
//! * `sleep`: runs until signalled (any signal ends it, reported as that signal);
//! * `stubborn`: like `sleep`, but SIGTERM is ignored (only SIGKILL ends it).
//!
//! Output travels through real pipes, as the engine reads them from any backend.

use crate::model::sync::lock;
use cleanroom_backend::{
    Backend, BackendError, ExitStatus, NetworkDevice, ProcessHandle, ProcessId, ProcessSpec,
    ProvisionedSandbox, ReconcileRecord, ReconcileReport, SandboxSpec,
};
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// A process that has not ended yet.
struct Proc {
    sandbox_id: String,
    stubborn: bool,
    exit: oneshot::Sender<ExitStatus>,
    /// Write ends of stdout and stderr: dropped when the process ends.
    _pipes: (std::fs::File, std::fs::File),
}

/// What the fake was asked to do, for tests to assert on.
#[derive(Debug, Default, Clone)]
pub struct Calls {
    pub provisioned: Vec<String>,
    pub spawned: Vec<ProcessSpec>,
    pub signals: Vec<(ProcessId, i32)>,
    pub terminated: Vec<String>,
    pub reconciled: Vec<String>,
}

#[derive(Default)]
pub struct FakeBackend {
    next: AtomicU64,
    sandboxes: Mutex<HashMap<String, UnixDatagram>>,
    procs: Mutex<HashMap<ProcessId, Proc>>,
    pub calls: Mutex<Calls>,
    /// When closed (`send(false)`), `terminate` waits until it is opened again: a slow
    /// teardown, for tests of what happens meanwhile.
    pub terminate_gate: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
    /// The same for `provision` (a slow create), which fails once released while
    /// `fail_provision` is set.
    pub provision_gate: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
    pub fail_provision: std::sync::atomic::AtomicBool,
}

fn pipe_pair() -> (pipe::Receiver, std::fs::File) {
    let (r, w) = std::io::pipe().expect("pipe");
    let r = pipe::Receiver::from_owned_fd(OwnedFd::from(r)).expect("pipe receiver");
    (r, std::fs::File::from(OwnedFd::from(w)))
}

/// An engine with default settings on `fake`, its state in `dir`: what the engine's unit
/// tests start from.
pub fn engine_on(dir: &std::path::Path, fake: Arc<FakeBackend>) -> Arc<super::Engine> {
    super::Engine::new(dir, fake, None, Default::default(), Default::default())
        .expect("engine on the fake backend")
}

impl FakeBackend {
    pub fn calls(&self) -> Calls {
        lock(&self.calls).clone()
    }

    /// End a running process with `status`.
    fn end(&self, id: ProcessId, status: ExitStatus) {
        if let Some(p) = lock(&self.procs).remove(&id) {
            let _ = p.exit.send(status);
        }
    }
}

fn signalled(sig: i32) -> ExitStatus {
    ExitStatus {
        code: None,
        signal: Some(sig),
        oom_killed: false,
    }
}

#[async_trait::async_trait]
impl Backend for FakeBackend {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn capabilities(&self) -> Vec<cleanroom_backend::Capability> {
        use cleanroom_backend::Capability as C;
        vec![
            C::PolicyImmutability,
            C::NetworkDefaultDeny,
            C::NetworkEgress,
            C::NetworkHostPortFiltering,
            C::DnsControlOrEquivalent,
            C::AuditEventEmission,
            C::SecretIsolation,
            C::PidIsolation,
            C::MountIsolation,
            C::OciImages,
        ]
    }

    async fn provision(&self, spec: &SandboxSpec) -> Result<ProvisionedSandbox, BackendError> {
        let gate = lock(&self.provision_gate).clone();
        if let Some(mut gate) = gate {
            let _ = gate.wait_for(|open| *open).await;
        }
        if self.fail_provision.load(Ordering::SeqCst) {
            return Err(BackendError::Unavailable("fake: provision fails".into()));
        }
        // The gateway serves one end of a datagram pair as if it were the tun device; the
        // fake keeps the other end open, so the gateway just sees no packets.
        let (gateway_end, guest_end) =
            UnixDatagram::pair().map_err(|e| BackendError::Unavailable(e.to_string()))?;
        lock(&self.sandboxes).insert(spec.sandbox_id.clone(), guest_end);
        lock(&self.calls).provisioned.push(spec.sandbox_id.clone());
        Ok(ProvisionedSandbox {
            sandbox_id: spec.sandbox_id.clone(),
            state_dir: "/nonexistent".into(),
            init_pid: 0,
            init_start_time: 0,
            info: [("backend".to_string(), "fake".to_string())].into(),
            network_device: Some(NetworkDevice::Tun(Arc::new(OwnedFd::from(gateway_end)))),
        })
    }

    async fn spawn(
        &self,
        sandbox_id: &str,
        spec: ProcessSpec,
    ) -> Result<ProcessHandle, BackendError> {
        if !lock(&self.sandboxes).contains_key(sandbox_id) {
            return Err(BackendError::LaunchFailed(format!(
                "no sandbox {sandbox_id}"
            )));
        }
        lock(&self.calls).spawned.push(spec.clone());
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        let (stdout, mut out_w) = pipe_pair();
        let (stderr, mut err_w) = pipe_pair();
        let (exit_tx, exit) = oneshot::channel();
        let stdin = if spec.stdin {
            let (_r, w) = std::io::pipe().expect("pipe");
            Some(pipe::Sender::from_owned_fd(OwnedFd::from(w)).expect("pipe sender"))
        } else {
            None
        };
        let done = |code| ExitStatus {
            code: Some(code),
            signal: None,
            oom_killed: false,
        };
        match spec.argv[0].as_str() {
            "echo" => {
                let _ = writeln!(out_w, "{}", spec.argv[1..].join(" "));
                let _ = exit_tx.send(done(0));
            }
            "fail" => {
                let code = spec.argv.get(1).and_then(|c| c.parse().ok()).unwrap_or(1);
                let _ = write!(err_w, "oops");
                let _ = exit_tx.send(done(code));
            }
            cmd @ ("sleep" | "stubborn") => {
                lock(&self.procs).insert(
                    id,
                    Proc {
                        sandbox_id: sandbox_id.to_string(),
                        stubborn: cmd == "stubborn",
                        exit: exit_tx,
                        _pipes: (out_w, err_w),
                    },
                );
            }
            other => {
                return Err(BackendError::LaunchFailed(format!(
                    "fake backend: unknown command {other}"
                )))
            }
        }
        Ok(ProcessHandle {
            id,
            stdin,
            stdout,
            stderr,
            pty: None,
            exit,
        })
    }

    async fn signal(
        &self,
        _sandbox_id: &str,
        process: ProcessId,
        signal: i32,
    ) -> Result<(), BackendError> {
        lock(&self.calls).signals.push((process, signal));
        let stubborn = lock(&self.procs).get(&process).map(|p| p.stubborn);
        match stubborn {
            Some(true) if signal == libc::SIGTERM => {}
            Some(_) => self.end(process, signalled(signal)),
            None => {}
        }
        Ok(())
    }

    async fn terminate(&self, sandbox_id: &str) -> Result<(), BackendError> {
        lock(&self.calls).terminated.push(sandbox_id.to_string());
        let gate = lock(&self.terminate_gate).clone();
        if let Some(mut gate) = gate {
            let _ = gate.wait_for(|open| *open).await;
        }
        lock(&self.sandboxes).remove(sandbox_id);
        let ids: Vec<ProcessId> = lock(&self.procs)
            .iter()
            .filter(|(_, p)| p.sandbox_id == sandbox_id)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.end(id, signalled(libc::SIGKILL));
        }
        Ok(())
    }

    async fn reconcile(
        &self,
        records: &[ReconcileRecord],
    ) -> Result<ReconcileReport, BackendError> {
        let mut calls = lock(&self.calls);
        calls
            .reconciled
            .extend(records.iter().map(|r| r.sandbox_id.clone()));
        Ok(ReconcileReport {
            killed_sandboxes: records.iter().map(|r| r.sandbox_id.clone()).collect(),
            removed_dirs: vec![],
        })
    }
}
