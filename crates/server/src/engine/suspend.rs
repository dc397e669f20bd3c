//! Suspend on idle, resume on use (docs/api.md "Suspend on idle").
//!
//! A sandbox with `suspend_after_seconds` (the request's, else its policy's
//! `sandbox.lifetime.suspend_after_seconds`) that has been idle that long — no execution or
//! console running, no acting API call (the one notion of idle:
//! [`crate::engine::activity`]) — is suspended by the lifetime reaper (its files,
//! processes and connections kept; see below for its memory) and marked *suspended* in
//! its lifetime row. It is PAUSED, so it uses no CPU; its idle timeout and TTL keep
//! counting (a suspended sandbox still holds a quota slot).
//!
//! Its next use resumes it first, transparently: an exec (a console is an exec), a files
//! call. Looking at it (get, list, inspect, events) does not, so `sandbox inspect` can
//! show that it is suspended and since when. A sandbox the *user* paused is never
//! resumed by use (`sandbox_paused`, as before); pausing a suspended sandbox makes it the
//! user's pause. Both directions are recorded as events (`sandbox.suspended`,
//! `sandbox.resumed` with the reason) and as the status message.
//!
//! The backend decides how ([`cleanroom_backend::Backend::suspend`]): the linux runtime
//! freezes the sandbox with its memory kept (no memory checkpoint without CRIU); the gvisor
//! runtime saves the whole sandbox to disk and releases its memory when a restore brings
//! it back faithfully, else freezes it too. The event says which, and why the memory was
//! kept. The resume is the backend's `resume` either way.

use super::pause::{freeze_guard, try_freeze_guard};
use super::Engine;
use crate::model::error::EngineError;
use crate::model::status::sandbox as ss;
use crate::store::{now_micros, EventRow, LifetimeCheck};
use cleanroom_backend::Suspension;
use std::time::Duration;

impl Engine {
    /// The reaper's suspend pass over `checks` (READY sandboxes with a suspend-after whose
    /// idle time reached it are suspended; every other row is left alone).
    pub(super) async fn suspend_due(&self, checks: &[LifetimeCheck], now: i64) {
        let due = checks.iter().filter_map(|c| {
            let after = c.lifetime.suspend_after_seconds;
            if c.status != ss::READY || after == 0 || c.lifetime.suspended_at != 0 {
                return None;
            }
            let idle = self.idle_since_created(&c.sandbox_id, c.created_at, now)?;
            (idle >= Duration::from_secs(after)).then_some((c.sandbox_id.clone(), after))
        });
        let runs = due.map(|(id, after)| async move {
            if let Err(e) = self.suspend_idle(&id, after).await {
                tracing::warn!(sandbox_id = %id, error = %e, "could not suspend an idle sandbox");
            }
        });
        futures::future::join_all(runs).await;
    }

    /// Freeze `id` for being idle `after` seconds (re-checked under the freeze lock: an
    /// exec that started meanwhile keeps it running).
    async fn suspend_idle(&self, id: &str, after: u64) -> Result<(), EngineError> {
        // Busy (a capture, a pause or resume in progress): not idle; the next pass looks again.
        let Some(_guard) = try_freeze_guard(id) else {
            return Ok(());
        };
        let row = self.get_sandbox(id)?;
        let idle = self.idle_since_created(id, row.created_at, now_micros());
        if row.status != ss::READY || idle.is_none_or(|i| i < Duration::from_secs(after)) {
            return Ok(());
        }
        let how = self.backend.suspend(id).await?;
        if !self.store.transition_sandbox(id, ss::READY, ss::PAUSED)? {
            // A terminate (or a user's pause) won: leave it theirs.
            let _ = self.backend.resume(id).await;
            return Ok(());
        }
        if let Err(e) = self.store.set_suspended_at(id, now_micros()) {
            // Unmarked, it would stay paused with nothing to resume it: undo.
            let _ = self.backend.resume(id).await;
            let _ = self.store.transition_sandbox(id, ss::PAUSED, ss::READY);
            return Err(e.into());
        }
        let (message, memory) = match &how {
            Suspension::Released { image_bytes } => (
                format!(
                    "suspended: idle for {after}s; memory released ({} MiB saved to disk)",
                    image_bytes.div_ceil(1 << 20)
                ),
                serde_json::json!({ "memory_released": true, "image_bytes": image_bytes }),
            ),
            Suspension::Frozen { memory_kept } => (
                format!("suspended: idle for {after}s; memory kept: {memory_kept}"),
                serde_json::json!({ "memory_released": false, "memory_kept": memory_kept }),
            ),
        };
        let mut attributes = serde_json::json!({ "reason": "idle", "idle_seconds": after });
        if let (Some(a), Some(m)) = (attributes.as_object_mut(), memory.as_object()) {
            a.extend(m.clone());
        }
        self.events.record(EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.suspended".into(),
            sandbox_status: ss::PAUSED.number(),
            message: message.clone(),
            attributes: attributes.to_string(),
            ..Default::default()
        });
        self.events.sandbox_status(id, ss::PAUSED, &message);
        tracing::info!(sandbox_id = %id, after, "sandbox suspended");
        Ok(())
    }

    /// Resume `id` if the reaper suspended it, because of `why` (`exec`, `files`): its
    /// next use. `true` when it was resumed (the caller reads the row again); `false` for
    /// anything else, which the caller's own state check then judges (a user's pause
    /// stays `sandbox_paused`).
    pub(crate) async fn wake_if_suspended(&self, id: &str, why: &str) -> Result<bool, EngineError> {
        if self.get_sandbox(id)?.status != ss::PAUSED {
            return Ok(false);
        }
        let _guard = freeze_guard(id).await;
        let row = self.get_sandbox(id)?;
        let l = self.store.lifetime(id)?;
        if row.status != ss::PAUSED || l.suspended_at == 0 {
            return Ok(false);
        }
        self.backend.resume(id).await?;
        if !self.store.transition_sandbox(id, ss::PAUSED, ss::READY)? {
            return Ok(false);
        }
        self.store.set_suspended_at(id, 0)?;
        self.activity.touch(id);
        let slept =
            Duration::from_micros(now_micros().saturating_sub(l.suspended_at).max(0) as u64);
        let message = format!("resumed by {why} after {}s suspended", slept.as_secs());
        self.events.record(EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.resumed".into(),
            sandbox_status: ss::READY.number(),
            message: message.clone(),
            attributes: serde_json::json!({
                "reason": why,
                "suspended_ms": slept.as_millis() as u64,
            })
            .to_string(),
            ..Default::default()
        });
        self.events.sandbox_status(id, ss::READY, &message);
        Ok(true)
    }

    /// A user's pause or resume takes a suspended sandbox over: it is no longer the
    /// reaper's to resume.
    pub(super) fn forget_suspension(&self, id: &str) {
        if let Err(e) = self.store.set_suspended_at(id, 0) {
            tracing::warn!(sandbox_id = %id, error = %e, "could not clear a suspension");
        }
    }
}
