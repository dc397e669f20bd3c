//! Keeping pools warm: one task per pool tops `ready` up to its target (min_ready, or the
//! autoscaler's claims-per-interval × headroom, capped by max_ready), replaces sandboxes
//! older than max_age, and stops when the pool is destroyed or the server shuts down.
//! After a restart, [`Engine::start_pools`] rebuilds every stored pool (the previous
//! process's warm sandboxes were reclaimed by recovery like every other sandbox).

use super::{internal_owner, PoolHandle, PoolSpec, PoolState, TemplateKey};
use crate::engine::Engine;
use crate::store::{PoolRow, SandboxCaps};
use crate::sync::lock;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sandboxes warmed at once per pool.
const WARM_BATCH: usize = 4;
/// Pause after a failed warm (a broken template must not spin).
const FAILURE_BACKOFF: Duration = Duration::from_secs(2);
/// Longest sleep between maintenance passes.
const TICK: Duration = Duration::from_secs(1);

/// READY sandboxes the pool should hold now.
pub(crate) fn target_ready(spec: &PoolSpec, st: &PoolState) -> u32 {
    let a = &spec.autoscaling;
    if !a.enabled {
        return spec.min_ready;
    }
    let window = Duration::from_secs(a.interval_seconds.max(1) as u64);
    let cutoff = Instant::now().checked_sub(window);
    let recent = st
        .recent
        .iter()
        .filter(|t| cutoff.is_none_or(|c| **t >= c))
        .count() as f64;
    let want = (recent * a.headroom_factor).ceil() as u32;
    want.clamp(spec.min_ready, spec.max_ready)
}

impl Engine {
    /// Rebuild every stored pool (after [`Engine::recover`]); `caps` bound what pools may
    /// hold (a pool's sandboxes count against its owner's per-principal cap).
    pub fn start_pools(
        self: &Arc<Self>,
        caps: SandboxCaps,
    ) -> Result<(), crate::error::EngineError> {
        *lock(&self.pools.caps) = caps;
        for row in self.store.list_pools()? {
            let spec: super::PoolSpec = match serde_json::from_str(&row.spec) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(pool_id = %row.id, error = %e, "unreadable pool definition skipped");
                    continue;
                }
            };
            match self.template_key(&spec.policy_yaml, &spec.image_ref, spec.requested()) {
                Ok(key) => {
                    self.start_pool(row, spec, key);
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
        key: TemplateKey,
    ) -> Arc<PoolHandle> {
        let handle = Arc::new(PoolHandle {
            id: row.id.clone(),
            owner: row.owner,
            created_at: row.created_at,
            spec,
            key,
            state: Default::default(),
            warming: Default::default(),
            stopped: Default::default(),
            wake: Default::default(),
        });
        lock(&self.pools.map).insert(row.id, handle.clone());
        let weak = Arc::downgrade(self);
        let pool = handle.clone();
        tokio::spawn(async move {
            while !pool.stopped.load(Ordering::SeqCst) {
                let Some(engine) = weak.upgrade() else { break };
                let pause = engine.maintain(&pool).await;
                drop(engine);
                tokio::select! {
                    _ = pool.wake.notified() => {}
                    _ = tokio::time::sleep(pause) => {}
                }
            }
        });
        handle
    }

    /// One maintenance pass; returns how long to wait before the next one.
    async fn maintain(&self, pool: &Arc<PoolHandle>) -> Duration {
        self.expire_old(pool).await;
        let (have, target) = {
            let st = lock(&pool.state);
            (
                st.ready.len() as u32 + pool.warming.load(Ordering::SeqCst),
                super::warm::target_ready(&pool.spec, &st),
            )
        };
        if have >= target {
            return TICK;
        }
        let room = self.pool_owner_room(pool);
        if room == 0 {
            return TICK;
        }
        let n = ((target - have) as usize)
            .min(WARM_BATCH)
            .min(room as usize);
        let results = futures::future::join_all((0..n).map(|_| self.warm_one(pool))).await;
        if results.iter().any(|ok| !ok) {
            return FAILURE_BACKOFF;
        }
        // More to do: go again at once.
        Duration::ZERO
    }

    /// How many more sandboxes the pool's owner may have under their per-principal cap,
    /// counting their own sandboxes, every pool of theirs and what is warming.
    fn pool_owner_room(&self, pool: &PoolHandle) -> u32 {
        let caps = *lock(&self.pools.caps);
        if caps.per_owner == 0 {
            return u32::MAX;
        }
        let mut owners = vec![pool.owner.clone()];
        owners.extend(
            lock(&self.pools.map)
                .values()
                .filter(|p| p.owner == pool.owner)
                .map(|p| p.internal_owner()),
        );
        let warming: u32 = lock(&self.pools.map)
            .values()
            .filter(|p| p.owner == pool.owner)
            .map(|p| p.warming.load(Ordering::SeqCst))
            .sum();
        self.store
            .count_live_owned(&owners)
            .map(|n| caps.per_owner.saturating_sub(n + warming))
            .unwrap_or(0)
    }

    /// Warm one sandbox; false when it failed.
    async fn warm_one(&self, pool: &Arc<PoolHandle>) -> bool {
        pool.warming.fetch_add(1, Ordering::SeqCst);
        let caps = SandboxCaps {
            per_owner: 0,
            total: lock(&self.pools.caps).total,
        };
        let created = self
            .create_sandbox(
                &internal_owner(&pool.id),
                caps,
                &pool.spec.policy_yaml,
                &pool.spec.image_ref,
                pool.spec.requested(),
            )
            .await;
        pool.warming.fetch_sub(1, Ordering::SeqCst);
        match created {
            Ok(row) if pool.stopped.load(Ordering::SeqCst) => {
                let _ = self.terminate_sandbox(&row.id).await;
                true
            }
            Ok(row) => {
                lock(&pool.state).ready.push_back((row.id, Instant::now()));
                true
            }
            Err(e) => {
                tracing::warn!(pool_id = %pool.id, error = %e, "warming a pool sandbox failed");
                false
            }
        }
    }

    /// Replace READY sandboxes older than max_age.
    async fn expire_old(&self, pool: &PoolHandle) {
        if pool.spec.max_age_seconds == 0 {
            return;
        }
        let max_age = Duration::from_secs(pool.spec.max_age_seconds as u64);
        let old: Vec<String> = {
            let mut st = lock(&pool.state);
            let mut out = Vec::new();
            while st.ready.front().is_some_and(|(_, t)| t.elapsed() > max_age) {
                if let Some((id, _)) = st.ready.pop_front() {
                    out.push(id);
                }
            }
            out
        };
        for id in old {
            let _ = self.terminate_sandbox(&id).await;
        }
    }
}
