//! PATCHED (cleanroom, PATCHED.md): one byte budget shared by every TCP connection of a
//! stack. Each connection's own buffers are bounded (`read_buffer_size`, `max_unacked_bytes`),
//! but a peer opening many connections multiplies them; the budget bounds their sum. What a
//! connection holds — data received and not yet read, out-of-order segments (with their
//! bookkeeping overhead), data sent and not yet acknowledged — is charged to it while held.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Waker;

/// Bytes the connections of one stack may hold together.
#[derive(Debug)]
pub struct ByteBudget {
    limit: usize,
    used: AtomicUsize,
    /// Writers waiting for room (woken, all of them, whenever bytes are given back).
    waiters: Mutex<Vec<Waker>>,
}

impl ByteBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        ByteBudget {
            limit,
            used: AtomicUsize::new(0),
            waiters: Mutex::new(Vec::new()),
        }
    }

    /// The bound.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Bytes that could be taken now.
    pub fn free(&self) -> usize {
        self.limit.saturating_sub(self.used())
    }

    /// Take as many of `n` bytes as there is room for; returns how many were taken.
    pub(crate) fn take_up_to(&self, n: usize) -> usize {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let got = n.min(self.limit.saturating_sub(used));
            if got == 0 {
                return 0;
            }
            match self
                .used
                .compare_exchange_weak(used, used + got, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return got,
                Err(now) => used = now,
            }
        }
    }

    /// Record `n` bytes held whatever the room: only for bookkeeping changes of a few bytes
    /// (a segment's overhead when a chunk is split), never for new data.
    fn force_take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::AcqRel);
    }

    /// Give back `n` bytes and wake the writers waiting for room.
    pub(crate) fn give(&self, n: usize) {
        if n == 0 {
            return;
        }
        self.used.fetch_sub(n, Ordering::AcqRel);
        let waiters = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(|p| p.into_inner()));
        for w in waiters {
            w.wake();
        }
    }

    /// Wake `w` when bytes are next given back. The caller checks for room again after
    /// registering, so a give between its check and this call is not missed.
    pub(crate) fn wait(&self, w: &Waker) {
        let mut waiters = self.waiters.lock().unwrap_or_else(|p| p.into_inner());
        if !waiters.iter().any(|x| x.will_wake(w)) {
            waiters.push(w.clone());
        }
    }
}

/// One connection's share of a [`ByteBudget`] (none: unbounded but for the connection's own
/// limits). Given back when dropped. A clone holds nothing (a fresh connection's state).
#[derive(Debug, Default)]
pub(crate) struct Charge {
    budget: Option<std::sync::Arc<ByteBudget>>,
    held: usize,
}

impl Clone for Charge {
    fn clone(&self) -> Self {
        Charge {
            budget: self.budget.clone(),
            held: 0,
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.give(self.held);
        }
    }
}

impl Charge {
    pub(crate) fn new(budget: Option<std::sync::Arc<ByteBudget>>) -> Self {
        Charge { budget, held: 0 }
    }

    /// Room for new data: the budget's free bytes (unbounded without a budget).
    pub(crate) fn room(&self) -> usize {
        self.budget.as_ref().map_or(usize::MAX, |b| b.free())
    }

    /// Take up to `n` bytes for new data; returns how many were taken.
    pub(crate) fn take_up_to(&mut self, n: usize) -> usize {
        let got = match &self.budget {
            Some(b) => b.take_up_to(n),
            None => n,
        };
        self.held += got;
        got
    }

    /// Make the charge exactly `footprint` (what the connection holds now): gives back what
    /// is no longer held; a small excess from bookkeeping is recorded as held.
    pub(crate) fn settle(&mut self, footprint: usize) {
        if let Some(b) = &self.budget {
            if footprint > self.held {
                b.force_take(footprint - self.held);
            } else {
                b.give(self.held - footprint);
            }
        }
        self.held = footprint;
    }

    /// Ask to be woken when room is given back (no budget: never needed).
    pub(crate) fn wait(&self, w: &Waker) {
        if let Some(b) = &self.budget {
            b.wait(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn takes_at_most_the_room_and_gives_back_on_drop() {
        let b = Arc::new(ByteBudget::new(100));
        let mut a = Charge::new(Some(b.clone()));
        let mut c = Charge::new(Some(b.clone()));
        assert_eq!(a.take_up_to(70), 70);
        assert_eq!(c.take_up_to(70), 30);
        assert_eq!(b.used(), 100);
        assert_eq!(c.take_up_to(1), 0);
        a.settle(20);
        assert_eq!(b.used(), 50);
        let clone = a.clone();
        drop(clone); // a clone held nothing: gives nothing back
        assert_eq!(b.used(), 50);
        drop(a);
        drop(c);
        assert_eq!(b.used(), 0);
    }
}
