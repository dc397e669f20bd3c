//! Pause and resume: a paused sandbox's processes are frozen by the backend (cgroup
//! freezer) and use no CPU; its memory, files, pipes and sockets stay as they are.
//!
//! While PAUSED nothing new starts in it: executions and file reads are refused with
//! `sandbox_paused` (pid 1, which would serve them, is frozen too). Its egress gateway
//! keeps running and its connections stay open (their state is kept, not closed): the
//! sandbox simply does not read or write until resumed, so TCP flow control holds the
//! peers back; an upstream or the gateway's own timeouts may still close a connection
//! that stays idle for long. Timeouts of executions that were running keep counting
//! (wall clock), so a paused execution can time out and is then killed on resume.
//! Terminating a paused sandbox kills and thaws it.

use super::Engine;
use crate::model::error::EngineError;
use crate::model::status::sandbox as ss;
use crate::store::SandboxRow;
use cleanroom_vocab::{Capability, ErrorCode};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// One lock per sandbox for everything that freezes or thaws it (pause, resume, the
/// freeze around a snapshot capture), so a resume can never thaw a capture in progress and
/// a capture's own thaw can never undo a user's pause.
static FREEZE_LOCKS: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(Default::default);

/// The freeze lock of `sandbox_id` (made on first use).
fn freeze_lock(sandbox_id: &str) -> Arc<tokio::sync::Mutex<()>> {
    let mut map = FREEZE_LOCKS.lock().unwrap_or_else(|p| p.into_inner());
    // Forget locks nobody holds (bounded by the sandboxes in use right now).
    map.retain(|_, l| Arc::strong_count(l) > 1);
    map.entry(sandbox_id.to_string()).or_default().clone()
}

/// Hold the freeze lock of `sandbox_id` until the guard drops.
pub(crate) async fn freeze_guard(sandbox_id: &str) -> FreezeGuard {
    FreezeGuard(freeze_lock(sandbox_id).lock_owned().await)
}

/// [`freeze_guard`] if nobody holds it now (`None`: busy; the caller skips this round).
pub(crate) fn try_freeze_guard(sandbox_id: &str) -> Option<FreezeGuard> {
    freeze_lock(sandbox_id)
        .try_lock_owned()
        .ok()
        .map(FreezeGuard)
}

/// See [`freeze_guard`].
pub(crate) struct FreezeGuard(#[allow(dead_code)] tokio::sync::OwnedMutexGuard<()>);

impl Engine {
    /// Freeze a READY sandbox. Idempotent for a PAUSED one.
    pub(in crate::engine) async fn pause_sandbox(
        &self,
        id: &str,
    ) -> Result<SandboxRow, EngineError> {
        self.get_sandbox(id)?;
        let _guard = freeze_guard(id).await;
        let row = self.get_sandbox(id)?;
        match row.status {
            ss::PAUSED => {
                // Suspended on idle, it is the user's pause from now on.
                self.forget_suspension(id);
                return Ok(row);
            }
            ss::READY => {}
            _ => return Err(not_ready(&row)),
        }
        self.require_capability(Capability::PauseResume)?;
        self.backend.pause(id).await?;
        // Only READY -> PAUSED: a terminate that raced with us wins (it thaws).
        if !self.store.transition_sandbox(id, ss::READY, ss::PAUSED)? {
            let _ = self.backend.resume(id).await;
            let now = self.get_sandbox(id)?;
            return Err(not_ready(&now));
        }
        // The owner's call is use: the idle clock, which runs while paused, restarts.
        self.activity.touch(id);
        self.events.sandbox_status(id, ss::PAUSED, "paused");
        self.get_sandbox(id)
    }

    /// Thaw a PAUSED sandbox. Idempotent for a READY one.
    pub(in crate::engine) async fn resume_sandbox(
        &self,
        id: &str,
    ) -> Result<SandboxRow, EngineError> {
        self.get_sandbox(id)?;
        let _guard = freeze_guard(id).await;
        let row = self.get_sandbox(id)?;
        match row.status {
            ss::READY => return Ok(row),
            ss::PAUSED => {}
            _ => return Err(not_ready(&row)),
        }
        self.backend.resume(id).await?;
        if !self.store.transition_sandbox(id, ss::PAUSED, ss::READY)? {
            let now = self.get_sandbox(id)?;
            return Err(not_ready(&now));
        }
        self.forget_suspension(id);
        self.activity.touch(id);
        self.events.sandbox_status(id, ss::READY, "resumed");
        self.get_sandbox(id)
    }

    /// Fail closed with `backend_capability_mismatch` when the backend lacks `cap`.
    pub(crate) fn require_capability(&self, cap: Capability) -> Result<(), EngineError> {
        if self.backend.capabilities().contains(&cap) {
            return Ok(());
        }
        Err(EngineError::new(
            ErrorCode::BackendCapabilityMismatch,
            format!(
                "backend {:?} does not declare {}",
                self.backend.name(),
                cap.as_str()
            ),
        )
        .with("missing", cap.as_str())
        .with("backend", self.backend.name()))
    }
}

/// The refusal for a sandbox that is not READY, one wording for every verb (exec, files,
/// snapshots, pause, timeouts): `sandbox_paused` for a paused one, else
/// `sandbox_not_ready`; the message says why it is in that state when the server knows
/// (a stop's reason, e.g. an expired TTL) and what to do next.
pub(crate) fn not_ready(row: &SandboxRow) -> EngineError {
    let id = &row.id;
    let status = ss::name(row.status);
    let (code, next) = match row.status {
        ss::PAUSED => (
            ErrorCode::SandboxPaused,
            format!("resume it with `cleanroom sandbox resume {id}`"),
        ),
        ss::PROVISIONING => (
            ErrorCode::SandboxNotReady,
            "it is being created; try again when it is READY".to_string(),
        ),
        s if ss::is_terminal(s) || s == ss::STOPPING => (
            ErrorCode::SandboxNotReady,
            "it is gone; create a new sandbox (`cleanroom sandbox create`), and extend a \
             sandbox's TTL before it ends with `cleanroom sandbox timeout ID --ttl SECONDS`"
                .to_string(),
        ),
        _ => (ErrorCode::SandboxNotReady, String::new()),
    };
    let why = if row.message.is_empty() {
        String::new()
    } else {
        format!(" ({})", row.message)
    };
    let next = if next.is_empty() {
        next
    } else {
        format!(": {next}")
    };
    EngineError::new(code, format!("sandbox {id} is {status}{why}{next}"))
        .with("sandbox_id", id)
        .with("status", status)
}
