//! Foreground work that a pool's refill, and the teardown of a `RunExecution`'s
//! `terminate_on_exit` sandbox ([`super::Engine::terminate_sandbox_after_foreground`]),
//! yield to for a moment.
//!
//! Why: a claim wakes its pool's refill at once, and the refill's create (the server's
//! provisioning, a new shim and pid 1, the kernel's namespace and mount work) then runs on
//! the same cores as the command the claimed sandbox was taken for. On this project's
//! 2-core machine a paced `cleanroom exec -- true` with a matching pool took 6.78 ms p50
//! with the refill started at the claim and 6.02 ms with it started 30 ms later (A/B, 60
//! runs each, docs/performance.md). A fixed delay, though, made refills of a claim series
//! start together and meet the next claims; here a refill waits only while there is
//! foreground work — a `RunExecution` call in flight or an execution running — and:
//!
//! * until [`SETTLE`] after the last foreground work ended: the caller of a `RunExecution`
//!   still has work of its own after the last message (the CLI writes its local record and
//!   exits), on the same cores when it is local;
//! * never when its pool has no READY sandbox left (the next claim would miss);
//! * at most [`Foreground::max_yield`] (50 ms by default), so a server that is never
//!   quiet (long-running executions) still refills, a moment later.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

/// Default longest wait of a refill for the foreground to end.
pub const MAX_YIELD: Duration = Duration::from_millis(50);

/// How long after the last foreground work ended the foreground counts as busy still.
pub const SETTLE: Duration = Duration::from_millis(3);

/// Foreground calls in flight, and a notification whenever foreground work ends.
#[derive(Debug)]
pub struct Foreground {
    calls: AtomicUsize,
    ended: Notify,
    max_yield_us: AtomicU64,
    /// When foreground work last ended, in µs since `base` (0: never).
    last_end_us: AtomicU64,
    base: std::time::Instant,
}

impl Default for Foreground {
    fn default() -> Self {
        Foreground {
            calls: AtomicUsize::new(0),
            ended: Notify::new(),
            max_yield_us: AtomicU64::new(MAX_YIELD.as_micros() as u64),
            last_end_us: AtomicU64::new(0),
            base: std::time::Instant::now(),
        }
    }
}

/// A foreground call in flight; ends (and wakes the waiting refills) when dropped.
#[derive(Debug)]
pub struct Busy(Arc<Foreground>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
        self.0.ended();
    }
}

impl Foreground {
    /// Mark a foreground call (a `RunExecution`) until the returned guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Busy {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// Foreground calls in flight.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Some foreground work ended (a call, or an execution): waiting refills look again
    /// once it has settled ([`SETTLE`]).
    pub fn ended(&self) {
        let now = (self.base.elapsed().as_micros() as u64).max(1);
        self.last_end_us.store(now, Ordering::SeqCst);
        self.ended.notify_waiters();
    }

    /// How long until [`SETTLE`] has passed since foreground work last ended; `None` once
    /// it has (or nothing ever ended).
    pub fn settling(&self) -> Option<Duration> {
        let last = self.last_end_us.load(Ordering::SeqCst);
        if last == 0 {
            return None;
        }
        let since =
            Duration::from_micros((self.base.elapsed().as_micros() as u64).saturating_sub(last));
        SETTLE.checked_sub(since).filter(|d| !d.is_zero())
    }

    /// A wake-up for the next [`Foreground::ended`], registered now: create it *before*
    /// checking whether the foreground is busy, so that an end in between is not missed.
    pub fn next_end(&self) -> std::pin::Pin<Box<Notified<'_>>> {
        let mut n = Box::pin(self.ended.notified());
        n.as_mut().enable();
        n
    }

    /// The longest a refill waits for the foreground.
    pub fn max_yield(&self) -> Duration {
        Duration::from_micros(self.max_yield_us.load(Ordering::Relaxed))
    }

    /// Change [`Foreground::max_yield`] (tests make it long, to observe the wait).
    pub fn set_max_yield(&self, d: Duration) {
        self.max_yield_us
            .store(d.as_micros() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_end_between_the_check_and_the_wait_still_wakes_the_waiter() {
        let fg = Arc::new(Foreground::default());
        let busy = fg.enter();
        assert_eq!(fg.calls(), 1);
        let wake = fg.next_end();
        drop(busy); // ends after registration, before the await
        tokio::time::timeout(Duration::from_secs(5), wake)
            .await
            .expect("woken");
        assert_eq!(fg.calls(), 0);
        assert!(fg.settling().is_some_and(|d| d <= SETTLE));
    }
}
