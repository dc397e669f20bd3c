//! Sandbox lifetimes: a TTL from creation and an idle timeout, from the request, else the
//! policy's `sandbox.lifetime`, else the server's defaults (`serve --sandbox-ttl`,
//! `--sandbox-idle-timeout`); `SetSandboxTimeout` moves the TTL (long jobs) or changes the
//! idle timeout. A reaper task checks live sandboxes every second and terminates expired
//! ones with the reason (`ttl_expired`, `idle_timeout`) in a `sandbox.expired` event, in
//! the stored stop reason (`sandbox inspect`) and in the final status message.
//!
//! The clocks run in every state where a sandbox holds resources ([`EXPIRING_STATES`]):
//! a paused (or checkpointed) sandbox still holds its memory, its disk and a slot of its
//! owner's quota, so its TTL ends as a running one's does (pausing used to stop the
//! clock for good). STOPPING is left out because a teardown already runs; PROVISIONING
//! because the clocks start when the sandbox becomes READY (create, restore, claim).
//! docs/states.md has the whole state × rule table.
//!
//! "Idle" is decided from [`crate::engine::activity::Activity`] (the one record of last use) plus
//! the live-execution map: a sandbox with a running execution is never idle.

use super::*;
use crate::model::status::SandboxStatus;
use crate::store::{now_micros, LifetimeRow};
use cleanroom_policy::LIFETIME_BOUNDS;

/// Stop reason: the TTL ran out.
pub const TTL_EXPIRED: &str = "ttl_expired";
/// Stop reason: no activity for the idle timeout.
pub const IDLE_TIMEOUT: &str = "idle_timeout";

/// The states the reaper looks at: every settled, non-terminal one.
pub const EXPIRING_STATES: [SandboxStatus; 3] = [ss::READY, ss::PAUSED, ss::CHECKPOINTED];

/// Server-wide defaults (0: none) and how often the reaper looks.
#[derive(Debug, Clone, Copy)]
pub struct LifetimeDefaults {
    pub ttl_seconds: u64,
    pub idle_timeout_seconds: u64,
    pub check_interval: Duration,
}

impl Default for LifetimeDefaults {
    fn default() -> Self {
        LifetimeDefaults {
            ttl_seconds: 0,
            idle_timeout_seconds: 0,
            check_interval: Duration::from_secs(1),
        }
    }
}

/// A requested number of seconds: 0 (unset) or within [`LIFETIME_BOUNDS`], else
/// `invalid_argument` naming `field`.
pub fn check_seconds(field: &str, v: u64) -> Result<(), EngineError> {
    let (min, max) = LIFETIME_BOUNDS;
    if v != 0 && (v < min || v > max) {
        return Err(
            EngineError::invalid(format!("{field}: {v} is outside {min}..={max} seconds"))
                .with("field", field),
        );
    }
    Ok(())
}

/// A new sandbox's clocks as requested (0: the policy's, else the server's default; a
/// suspend-after has no server default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Clocks {
    pub ttl_seconds: u64,
    pub idle_timeout_seconds: u64,
    pub suspend_after_seconds: u64,
}

fn micros(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX / 2_000_000) * 1_000_000
}

impl Engine {
    /// Fix a new sandbox's lifetime: the request's clocks (0: the policy's, then the
    /// server default). The TTL counts from now (the sandbox just became READY).
    pub fn init_lifetime(&self, row: &SandboxRow, req: Clocks) -> Result<(), EngineError> {
        let Clocks {
            ttl_seconds: ttl,
            idle_timeout_seconds: idle,
            suspend_after_seconds: suspend,
        } = req;
        let policy = self.compiled_policy(row)?;
        let defaults = *lock(&self.lifetime_defaults);
        let pick = |req: u64, pol: Option<u64>, def: u64| {
            if req > 0 {
                req
            } else {
                pol.unwrap_or(def)
            }
        };
        let ttl = pick(ttl, policy.lifetime.ttl_seconds, defaults.ttl_seconds);
        let idle = pick(
            idle,
            policy.lifetime.idle_timeout_seconds,
            defaults.idle_timeout_seconds,
        );
        let suspend = pick(suspend, policy.lifetime.suspend_after_seconds, 0);
        if suspend > 0 {
            // Suspending is pausing: a runtime that cannot pause cannot suspend (the
            // caller takes the sandbox down: fail closed, never "never suspends").
            let runtime = self.backend.runtime_of_sandbox(&row.id);
            let caps = self
                .backend
                .capabilities_of(runtime)
                .map_err(EngineError::from)?;
            if !caps.contains(&cleanroom_vocab::Capability::PauseResume) {
                return Err(EngineError::new(
                    cleanroom_vocab::ErrorCode::BackendCapabilityMismatch,
                    format!(
                        "runtime {} cannot pause, so it cannot suspend on idle",
                        runtime.as_str()
                    ),
                )
                .with("missing", cleanroom_vocab::Capability::PauseResume.as_str())
                .with("backend", runtime.as_str()));
            }
        }
        let now = now_micros();
        self.activity.touch_at(&row.id, now);
        if ttl == 0 && idle == 0 && suspend == 0 {
            return Ok(());
        }
        self.store.set_lifetime(
            &row.id,
            &LifetimeRow {
                ttl_seconds: ttl,
                idle_timeout_seconds: idle,
                expires_at: if ttl > 0 { now + micros(ttl) } else { 0 },
                stop_reason: String::new(),
                suspend_after_seconds: suspend,
                suspended_at: 0,
            },
        )?;
        Ok(())
    }

    /// `SetSandboxTimeout`: the TTL now ends `ttl` seconds from now and/or the idle timeout
    /// becomes `idle` (0: unchanged); `clear_*` removes one. Counts as activity.
    pub(in crate::engine) fn set_sandbox_timeout(
        &self,
        id: &str,
        ttl: u64,
        idle: u64,
        clear_ttl: bool,
        clear_idle: bool,
    ) -> Result<SandboxRow, EngineError> {
        check_seconds("ttl_seconds", ttl)?;
        check_seconds("idle_timeout_seconds", idle)?;
        if (clear_ttl && ttl > 0) || (clear_idle && idle > 0) {
            return Err(EngineError::invalid(
                "give either a new value or clear_*, not both",
            ));
        }
        let row = self.get_sandbox(id)?;
        // A paused sandbox's clocks run (see the module doc), so its owner can move them.
        if !EXPIRING_STATES.contains(&row.status) {
            return Err(super::pause::not_ready(&row));
        }
        let mut l = self.store.lifetime(id)?;
        let now = now_micros();
        if ttl > 0 {
            l.ttl_seconds = ttl;
            l.expires_at = now + micros(ttl);
        }
        if clear_ttl {
            l.ttl_seconds = 0;
            l.expires_at = 0;
        }
        if idle > 0 {
            l.idle_timeout_seconds = idle;
        }
        if clear_idle {
            l.idle_timeout_seconds = 0;
        }
        self.store.set_lifetime(id, &l)?;
        self.activity.touch_at(id, now);
        self.events.record(crate::store::EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.timeout".into(),
            sandbox_status: row.status.number(),
            message: format!(
                "ttl {}s, idle timeout {}s",
                l.ttl_seconds, l.idle_timeout_seconds
            ),
            attributes: serde_json::json!({
                "ttl_seconds": l.ttl_seconds,
                "idle_timeout_seconds": l.idle_timeout_seconds,
                "expires_at": l.expires_at,
            })
            .to_string(),
            ..Default::default()
        });
        Ok(row)
    }

    /// A sandbox's lifetime and its last activity (micros; the creation time when it was
    /// never touched by this server).
    pub fn sandbox_lifetime(&self, row: &SandboxRow) -> Result<(LifetimeRow, i64), EngineError> {
        let l = self.store.lifetime(&row.id)?;
        let last = self.activity.last(&row.id).unwrap_or(row.created_at);
        Ok((l, last))
    }

    /// How long the sandbox has been idle at `now` (micros): `None` while an execution
    /// runs in it.
    pub fn idle_for(&self, row: &SandboxRow, now: i64) -> Option<Duration> {
        self.idle_since(&row.id, row.created_at, now)
    }

    /// [`Engine::idle_for`] from the sandbox's id and creation time alone.
    pub(super) fn idle_since_created(
        &self,
        id: &str,
        created_at: i64,
        now: i64,
    ) -> Option<Duration> {
        self.idle_since(id, created_at, now)
    }

    fn idle_since(&self, id: &str, created_at: i64, now: i64) -> Option<Duration> {
        if !self.live_in(id).is_empty() {
            return None;
        }
        let last = self.activity.last(id).unwrap_or(created_at);
        Some(Duration::from_micros(now.saturating_sub(last).max(0) as u64))
    }

    /// Apply the server defaults and start the reaper; it stops when the engine is dropped.
    pub fn start_lifetimes(self: &Arc<Self>, defaults: LifetimeDefaults) {
        *lock(&self.lifetime_defaults) = defaults;
        let interval = defaults.check_interval.max(Duration::from_millis(50));
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(engine) = weak.upgrade() else { break };
                engine.expire_due().await;
            }
        });
    }

    /// Why a sandbox with lifetime `l` must stop now, if it must.
    fn expiry(&self, c: &crate::store::LifetimeCheck, now: i64) -> Option<(&'static str, String)> {
        let l = &c.lifetime;
        if l.expires_at > 0 && now >= l.expires_at {
            return Some((
                TTL_EXPIRED,
                format!("the sandbox's TTL ({}s) expired", l.ttl_seconds),
            ));
        }
        if l.idle_timeout_seconds > 0 {
            if let Some(idle) = self.idle_since(&c.sandbox_id, c.created_at, now) {
                if idle >= Duration::from_secs(l.idle_timeout_seconds) {
                    return Some((
                        IDLE_TIMEOUT,
                        format!(
                            "the sandbox was idle for its idle timeout ({}s)",
                            l.idle_timeout_seconds
                        ),
                    ));
                }
            }
        }
        None
    }

    /// One reaper pass: terminate every sandbox in [`EXPIRING_STATES`] whose TTL or idle
    /// timeout ran out. One indexed query returns only those that have a TTL or an idle timeout:
    /// idle sandboxes without one cost the pass nothing (it used to read every sandbox row
    /// and query each one's lifetime, every second, under the store lock).
    async fn expire_due(&self) {
        let checks = match self.store.lifetimes_to_check(&EXPIRING_STATES) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "lifetime check: cannot list sandboxes");
                return;
            }
        };
        let now = now_micros();
        let due: Vec<_> = checks
            .iter()
            .filter_map(|c| {
                self.expiry(c, now)
                    .map(|(reason, message)| (c.sandbox_id.clone(), c.status, reason, message))
            })
            .collect();
        let stops = due.into_iter().map(|(id, status, reason, message)| async move {
            tracing::info!(sandbox_id = %id, reason, "sandbox expired");
            if let Err(e) = self.store.set_stop_reason(&id, reason) {
                tracing::warn!(sandbox_id = %id, error = %e, "cannot record stop reason");
            }
            self.events.record(crate::store::EventRow {
                sandbox_id: id.clone(),
                kind: "sandbox.expired".into(),
                sandbox_status: status.number(),
                message: message.clone(),
                attributes: serde_json::json!({ "reason": reason }).to_string(),
                ..Default::default()
            });
            // The final status says why, too (`sandbox inspect`'s message), written with
            // the status itself.
            match self.terminate_sandbox_because(&id, &message).await {
                Ok(r) if r.status == ss::STOPPED && r.message.is_empty() => {
                    // Joined a teardown someone else had started: add the reason.
                    let _ = self.store.annotate_stopped(&id, &message);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(sandbox_id = %id, error = %e, "could not terminate expired sandbox")
                }
            }
            self.activity.forget(&id);
        });
        futures::future::join_all(stops).await;
        // After the expiries, and never waiting on a sandbox that is busy (a capture holds
        // its freeze lock): one tenant cannot stall everyone's clocks.
        self.suspend_due(&checks, now).await;
    }
}
