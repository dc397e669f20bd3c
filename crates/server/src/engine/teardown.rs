//! Tearing a sandbox down.
//!
//! One teardown per sandbox at a time: concurrent callers (the API, TTL expiry, pool
//! release, server shutdown) wait for the one in flight instead of racing it, so a
//! sandbox is reported STOPPED only once its one teardown has finished. A teardown can
//! also run in the background ([`Engine::terminate_sandbox_in_background`]): the caller
//! gets the STOPPING sandbox back at once, `cleanroom exec` returns its exit code without
//! waiting for unmounts and cgroup removal, and shutdown still waits for it (it calls
//! [`Engine::terminate_sandbox`], which joins the teardown in flight). The teardown of a
//! `RunExecution`'s `terminate_on_exit` sandbox also waits for the foreground to be quiet
//! before its kill ([`Engine::terminate_sandbox_after_foreground`]).

use super::{Engine, EngineError, LiveExec};
use crate::model::status::sandbox as ss;
use crate::model::sync::lock;
use crate::store::SandboxRow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Teardowns in flight, by sandbox id; the receiver turns `true` (or its sender goes
/// away) when the teardown has ended.
#[derive(Default)]
pub(crate) struct Stopping(Arc<Mutex<HashMap<String, watch::Receiver<bool>>>>);

/// Whether the caller runs the teardown or waits for the one in flight.
enum Claim {
    Mine(Guard),
    InFlight(watch::Receiver<bool>),
}

/// Held by whoever runs a teardown; dropping it (at the end, or if the teardown's future
/// is dropped half way) releases the waiters and lets a later call try again.
pub(crate) struct Guard {
    map: Arc<Mutex<HashMap<String, watch::Receiver<bool>>>>,
    id: String,
    done: watch::Sender<bool>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        lock(&self.map).remove(&self.id);
        let _ = self.done.send(true);
    }
}

impl Stopping {
    fn claim(&self, id: &str) -> Claim {
        let mut m = lock(&self.0);
        if let Some(rx) = m.get(id) {
            return Claim::InFlight(rx.clone());
        }
        let (done, rx) = watch::channel(false);
        m.insert(id.to_string(), rx);
        Claim::Mine(Guard {
            map: self.0.clone(),
            id: id.to_string(),
            done,
        })
    }
}

impl Engine {
    /// Kill everything in the sandbox and remove it; returns once it is STOPPED (or
    /// FAILED). Idempotent; a teardown already in flight is joined, not repeated.
    pub(crate) async fn terminate_sandbox(&self, id: &str) -> Result<SandboxRow, EngineError> {
        self.terminate_sandbox_because(id, "").await
    }

    /// [`Engine::terminate_sandbox`] whose final STOPPED status carries `message` (why it
    /// stopped, e.g. its TTL ran out), written in the same step as the status: a reader
    /// never sees STOPPED without it. A teardown already in flight is joined and keeps
    /// its own message.
    pub(in crate::engine) async fn terminate_sandbox_because(
        &self,
        id: &str,
        message: &str,
    ) -> Result<SandboxRow, EngineError> {
        let row = self.get_sandbox(id)?;
        if ss::is_terminal(row.status) {
            return Ok(row);
        }
        match self.stopping.claim(id) {
            Claim::InFlight(mut rx) => {
                let _ = rx.wait_for(|d| *d).await;
                self.get_sandbox(id)
            }
            Claim::Mine(guard) => {
                let running = self.begin_teardown(id)?;
                let out = self.finish_teardown(id, running, message).await;
                drop(guard);
                out
            }
        }
    }

    /// Start the teardown and return the sandbox as it is now (STOPPING); the rest runs
    /// in a task of the engine. Failures are recorded on the sandbox (FAILED, with the
    /// reason) and as events, like those of [`Engine::terminate_sandbox`].
    pub(crate) fn terminate_sandbox_in_background(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<SandboxRow, EngineError> {
        self.teardown_in_background(id, false)
    }

    /// [`Engine::terminate_sandbox_in_background`] whose kill and removal wait until the
    /// foreground is quiet ([`Engine::foreground_quiet`], at most
    /// [`super::foreground::Foreground::max_yield`]); the sandbox is STOPPING at once.
    ///
    /// Why: `RunExecution` tears its `terminate_on_exit` sandbox down right after handing
    /// over the final record, and the teardown (the shim's and pid 1's exits, the kernel
    /// freeing namespaces and mounts, the server's unmounts and cgroup removal) then ran on
    /// the same cores as the caller reading that record and exiting.
    pub(crate) fn terminate_sandbox_after_foreground(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<SandboxRow, EngineError> {
        self.teardown_in_background(id, true)
    }

    fn teardown_in_background(
        self: &Arc<Self>,
        id: &str,
        after_foreground: bool,
    ) -> Result<SandboxRow, EngineError> {
        let row = self.get_sandbox(id)?;
        if ss::is_terminal(row.status) {
            return Ok(row);
        }
        if let Claim::Mine(guard) = self.stopping.claim(id) {
            let running = self.begin_teardown(id)?;
            let engine = self.clone();
            let sid = id.to_string();
            tokio::spawn(async move {
                if after_foreground {
                    engine.foreground_quiet(engine.foreground.max_yield()).await;
                }
                if let Err(e) = engine.finish_teardown(&sid, running, "").await {
                    tracing::warn!(sandbox_id = %sid, error = %e, "background teardown failed");
                }
                drop(guard);
            });
        }
        self.get_sandbox(id)
    }

    /// STOPPING, and every running execution asked to stop at once (SIGKILL).
    fn begin_teardown(&self, id: &str) -> Result<Vec<(String, Arc<LiveExec>)>, EngineError> {
        // A teardown whose caller went away left it STOPPING: this one carries it on.
        if self.get_sandbox(id)?.status != ss::STOPPING {
            self.events.set_sandbox_status(id, ss::STOPPING, "")?;
        }
        let running = self.live_in(id);
        for (_, l) in &running {
            l.cancel(
                crate::model::status::execution::CANCELED,
                "sandbox terminated while the execution was running",
                Duration::ZERO,
            );
        }
        Ok(running)
    }

    /// Kill and remove the sandbox, wait for its executions' results, record the end.
    pub(in crate::engine) async fn finish_teardown(
        &self,
        id: &str,
        running: Vec<(String, Arc<LiveExec>)>,
        message: &str,
    ) -> Result<SandboxRow, EngineError> {
        let result = self.backend.terminate(id).await;
        self.egress.detach(id);
        for (_, l) in running {
            let mut done = l.done.clone();
            let _ = tokio::time::timeout(Duration::from_secs(10), done.wait_for(|d| *d)).await;
        }
        self.retention.remove_sandbox(id);
        match result {
            Ok(()) => {
                self.events.end_sandbox(id, ss::STOPPED, message)?;
            }
            Err(e) => {
                let msg = format!("terminate failed: {e}");
                self.events.end_sandbox(id, ss::FAILED, &msg)?;
                return Err(e.into());
            }
        }
        self.get_sandbox(id)
    }
}
