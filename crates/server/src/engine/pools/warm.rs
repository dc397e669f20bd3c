//! Keeping pools warm: one task per pool tops `ready` up to its target (min_ready, or the
//! autoscaler's claims-per-interval × headroom, capped by max_ready), replaces sandboxes
//! older than max_age and terminates warm sandboxes found dead at claim, and stops when
//! the pool is destroyed or the server shuts down. After a restart,
//! [`Engine::start_pools`] rebuilds every stored pool (the previous process's warm
//! sandboxes were reclaimed by recovery like every other sandbox).
//!
//! Refill is continuous, not in batches: up to [`MAX_WARMING`] creates are in flight, and
//! each one that finishes (or each claim, which wakes the task) starts the next while the
//! pool is short — a claim burst never waits behind a slow batch. `warming` counts exactly
//! the creates in flight (under the same lock as `ready`). The owner's per-principal cap
//! is enforced by the store when each warm sandbox is inserted (charged to the pool's
//! owner, atomically with every other create and claim); the task only avoids starting
//! creates it already knows the cap would refuse. A refill waits a moment while foreground
//! work runs and the pool still has a READY sandbox ([`crate::engine::foreground`]).

use super::{alive::InitProc, PoolHandle, PoolSpec, PoolState, TemplateKey, Warm};
use crate::engine::Engine;
use crate::model::error::ErrorCode;
use crate::model::sync::lock;
use crate::store::{PoolRow, SandboxCaps};
use futures::stream::{FuturesUnordered, StreamExt};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Creates in flight per pool at most.
pub const MAX_WARMING: u32 = 4;
/// Pause after a failed warm (a broken template must not spin).
const FAILURE_BACKOFF: Duration = Duration::from_secs(2);
/// Longest sleep between maintenance passes.
const TICK: Duration = Duration::from_secs(1);
/// Pause after a create refused for want of room under a cap (the server-wide one, which
/// the owner's room does not count): room comes back as sandboxes go, and retrying at once
/// spun the task — a core and the store's lock — for as long as the cap stayed full.
const NO_ROOM_BACKOFF: Duration = TICK;

/// READY sandboxes the pool should hold now.
pub(crate) fn target_ready(spec: &PoolSpec, st: &PoolState) -> u32 {
    let a = &spec.autoscaling;
    if !a.enabled {
        return spec.min_ready;
    }
    let recent = st.claims_within(Duration::from_secs(a.interval_seconds.max(1) as u64)) as f64;
    let want = (recent * a.headroom_factor).ceil() as u32;
    want.clamp(spec.min_ready, spec.max_ready)
}

/// How one warm create ended.
enum Warmed {
    Ready,
    /// Refused by a sandbox cap: not a failure of the template, wait for room.
    NoRoom,
    Failed,
}

impl Engine {
    /// Rebuild every stored pool (after [`Engine::recover`]); `caps` bound what pools may
    /// hold (a pool's sandboxes count against its owner's per-principal cap).
    pub fn start_pools(
        self: &Arc<Self>,
        caps: SandboxCaps,
    ) -> Result<(), crate::model::error::EngineError> {
        *lock(&self.pools.caps) = caps;
        for row in self.store.list_pools()? {
            let spec: super::PoolSpec = match serde_json::from_str(&row.spec) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(pool_id = %row.id, error = %e, "unreadable pool definition skipped");
                    continue;
                }
            };
            match self.template(&spec) {
                Ok((policy, key)) => {
                    self.start_pool(row, spec, policy, key);
                }
                Err(e) => {
                    tracing::warn!(pool_id = %row.id, error = %e, "pool template no longer valid; not warmed")
                }
            }
        }
        Ok(())
    }

    /// Register a pool and spawn its warming task.
    pub(super) fn start_pool(
        self: &Arc<Self>,
        row: PoolRow,
        spec: PoolSpec,
        policy: Arc<cleanroom_policy::CompiledPolicy>,
        key: TemplateKey,
    ) -> Arc<PoolHandle> {
        let handle = Arc::new(PoolHandle {
            id: row.id.clone(),
            owner: row.owner,
            created_at: row.created_at,
            spec,
            policy,
            key,
            state: Default::default(),
            stopped: Default::default(),
            wake: Default::default(),
        });
        lock(&self.pools.map).insert(row.id, handle.clone());
        tokio::spawn(keep_warm(Arc::downgrade(self), handle.clone()));
        handle
    }

    /// How many more sandboxes the pool's owner may have under their per-principal cap:
    /// the cap minus what the store charges them (their own sandboxes, every pool's) and
    /// the creates in flight in all their pools (which may not be stored yet).
    fn pool_owner_room(&self, pool: &PoolHandle) -> u32 {
        let caps = *lock(&self.pools.caps);
        if caps.per_owner == 0 {
            return u32::MAX;
        }
        let inflight: u32 = lock(&self.pools.map)
            .values()
            .filter(|p| p.owner == pool.owner)
            .map(|p| lock(&p.state).warming)
            .sum();
        self.store
            .account_live(&pool.owner)
            .map(|n| caps.per_owner.saturating_sub(n + inflight))
            .unwrap_or(0)
    }

    /// Warm one sandbox into `pool`'s ready queue.
    async fn warm_one(self: Arc<Self>, pool: Arc<PoolHandle>) -> Warmed {
        let caps = *lock(&self.pools.caps);
        let created = self
            .create_from_compiled(
                &pool.internal_owner(),
                caps,
                &pool.policy,
                &pool.spec.image_ref,
                pool.spec.requested(),
            )
            .await;
        let row = match created {
            Ok(row) => row,
            Err(e) => {
                lock(&pool.state).warming -= 1;
                if e.code == ErrorCode::ResourceExhausted {
                    return Warmed::NoRoom;
                }
                tracing::warn!(pool_id = %pool.id, error = %e, "warming a pool sandbox failed");
                return Warmed::Failed;
            }
        };
        let init = InitProc::of(&row);
        let readable = init.is_some();
        {
            // `stopped` is checked under the state lock: `destroy_pool` sets it, then drains
            // the queue under this lock, so a sandbox is queued only where it will be found.
            let mut st = lock(&pool.state);
            st.warming -= 1;
            if let Some(init) = init.filter(|_| !pool.stopped.load(Ordering::SeqCst)) {
                st.ready.push_back(Warm {
                    row,
                    at: Instant::now(),
                    init,
                });
                return Warmed::Ready;
            }
        }
        let _ = self.terminate_sandbox(&row.id).await;
        if !readable {
            tracing::warn!(pool_id = %pool.id, sandbox_id = %row.id, "warm sandbox has no readable provision record; not offered");
            return Warmed::Failed;
        }
        Warmed::Ready
    }

    /// Terminate READY sandboxes older than max_age and those found dead at claim.
    async fn expire_and_reap(&self, pool: &PoolHandle) {
        let max_age = Duration::from_secs(pool.spec.max_age_seconds as u64);
        let gone: Vec<String> = {
            let mut st = lock(&pool.state);
            let mut out = std::mem::take(&mut st.dead);
            while pool.spec.max_age_seconds > 0
                && st.ready.front().is_some_and(|w| w.at.elapsed() > max_age)
            {
                if let Some(w) = st.ready.pop_front() {
                    out.push(w.row.id);
                }
            }
            out
        };
        for id in gone {
            let _ = self.terminate_sandbox(&id).await;
        }
    }
}

/// The warming task of one pool (see the module doc). Holds the engine only while it
/// works, so a dropped engine ends it.
async fn keep_warm(engine: std::sync::Weak<Engine>, pool: Arc<PoolHandle>) {
    let mut inflight = FuturesUnordered::new();
    let mut backoff_until: Option<tokio::time::Instant> = None;
    let mut yielding = Yield::default();
    loop {
        #[cfg(test)]
        {
            lock(&pool.state).passes += 1;
        }
        let stopped = pool.stopped.load(Ordering::SeqCst);
        if stopped && inflight.is_empty() {
            break;
        }
        let Some(e) = engine.upgrade() else { break };
        let foreground = e.foreground.clone();
        // Registered before the busy check below: an end in between still wakes us.
        let foreground_ended = foreground.next_end();
        let mut yields = false;
        if !stopped {
            e.expire_and_reap(&pool).await;
            let in_backoff = backoff_until.is_some_and(|t| tokio::time::Instant::now() < t);
            if !in_backoff {
                backoff_until = None;
                let (have, target, warming, ready) = {
                    let st = lock(&pool.state);
                    (
                        st.ready.len() as u32 + st.warming,
                        target_ready(&pool.spec, &st),
                        st.warming,
                        st.ready.len(),
                    )
                };
                let want = target
                    .saturating_sub(have)
                    .min(MAX_WARMING.saturating_sub(warming));
                let n = if want == 0 {
                    0
                } else {
                    want.min(e.pool_owner_room(&pool))
                };
                // Yield only while the pool still has a READY sandbox to offer.
                yields = n > 0
                    && ready > 0
                    && e.foreground_busy()
                    && yielding.still(tokio::time::Instant::now(), foreground.max_yield());
                for _ in 0..if yields { 0 } else { n } {
                    lock(&pool.state).warming += 1;
                    inflight.push(e.clone().warm_one(pool.clone()));
                }
            }
        }
        if !yields {
            // Not yielding on this pass (it started creates, or was skipped: backoff, a
            // stopped pool): no deadline left to wake up for.
            yielding.end();
        }
        drop(e);
        let now = tokio::time::Instant::now();
        let pause = match backoff_until {
            Some(t) => t.saturating_duration_since(now),
            None => TICK,
        };
        // Yielding: look again at the bound, at each end of foreground work, and once
        // the last end has settled (nothing notifies that).
        let pause = match yielding.until {
            Some(t) => pause
                .min(t.saturating_duration_since(now))
                .min(foreground.settling().unwrap_or(pause)),
            None => pause,
        };
        tokio::select! {
            Some(done) = inflight.next(), if !inflight.is_empty() => {
                let pause = match done {
                    Warmed::Failed => Some(FAILURE_BACKOFF),
                    Warmed::NoRoom => Some(NO_ROOM_BACKOFF),
                    Warmed::Ready => None,
                };
                if let Some(pause) = pause {
                    let until = tokio::time::Instant::now() + pause;
                    backoff_until = Some(backoff_until.map_or(until, |t| t.max(until)));
                }
            }
            _ = pool.wake.notified() => {}
            _ = foreground_ended, if yielding.until.is_some() => {}
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// A refill yielding to foreground work ([`crate::engine::foreground`]): the deadline of
/// the current wait. Set only while the warming task yields, so that a pass that does not
/// yield never sleeps towards a deadline that has passed (which would wake it every tick).
#[derive(Debug, Default)]
struct Yield {
    until: Option<tokio::time::Instant>,
}

impl Yield {
    /// Yield on (the first call starts a wait of at most `max`)? False once it has run out.
    fn still(&mut self, now: tokio::time::Instant, max: Duration) -> bool {
        let until = *self.until.get_or_insert(now + max);
        let on = now < until;
        if !on {
            self.until = None;
        }
        on
    }

    /// The wait is over (creates started, or the pass did not decide).
    fn end(&mut self) {
        self.until = None;
    }
}

#[cfg(test)]
mod tests {
    use super::Yield;
    use std::time::Duration;
    use tokio::time::Instant;

    #[test]
    fn a_yield_is_bounded_and_leaves_no_deadline_behind() {
        let max = Duration::from_millis(50);
        let t0 = Instant::now();
        let mut y = Yield::default();
        assert!(y.still(t0, max));
        assert!(y.still(t0 + Duration::from_millis(49), max), "same wait");
        assert!(!y.still(t0 + max, max), "bounded");
        assert!(y.until.is_none(), "an expired wait is cleared");
        // A wait interrupted by a pass that did not yield (backoff, a stopped pool) is
        // cleared too: a later pass must not sleep towards its past deadline.
        assert!(y.still(t0 + max, max));
        y.end();
        assert!(y.until.is_none());
        assert!(y.still(t0 + 10 * max, max), "a new wait starts afresh");
    }
}
