//! A few server-wide slots for expensive work, shared fairly between principals (issue 30,
//! class 5).
//!
//! Each principal may hold at most its share of the slots at once (and queue for one of its
//! own first); only then does it queue, first come first served, for a server slot. So one
//! principal that queues many requests has at most its share of them in the server's queue,
//! and another principal's request waits behind at most that many of each other principal's.
//! The output log's tail reads ([`crate::engine::outstream::read_tails_off_runtime`]) use it.

use crate::model::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore, SemaphorePermit};

/// Slots shared by principals.
pub struct FairSlots {
    total: Semaphore,
    per_owner: usize,
    owners: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// One slot held; released when dropped.
pub struct Slot<'a> {
    _total: SemaphorePermit<'a>,
    _owner: OwnedSemaphorePermit,
}

impl FairSlots {
    /// `total` slots, at most `per_owner` of them (at least one) held by one principal.
    pub fn new(total: usize, per_owner: usize) -> FairSlots {
        FairSlots {
            total: Semaphore::new(total),
            per_owner: per_owner.clamp(1, total.max(1)),
            owners: Mutex::new(HashMap::new()),
        }
    }

    /// Wait for a slot for `owner` (a principal's name).
    pub async fn enter(&self, owner: &str) -> Result<Slot<'_>, AcquireError> {
        let mine = {
            let mut owners = lock(&self.owners);
            // Forget principals with nothing held or queued: every holder and waiter keeps a
            // clone, so the table is bounded by them.
            owners.retain(|_, s| Arc::strong_count(s) > 1);
            owners
                .entry(owner.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_owner)))
                .clone()
        };
        let owner = mine.acquire_owned().await?;
        let total = self.total.acquire().await?;
        Ok(Slot {
            _total: total,
            _owner: owner,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One principal queues many reads while its first holds a slot; another principal's
    /// read still gets the other slot at once. (With one FIFO queue for the server's two
    /// slots, as before, the second principal waited behind all of them.)
    #[tokio::test]
    async fn one_principal_queueing_many_does_not_starve_another() {
        let slots = Arc::new(FairSlots::new(2, 1));
        let (release, held) = tokio::sync::watch::channel(false);
        let mut flood = Vec::new();
        for _ in 0..16 {
            let (slots, mut held) = (slots.clone(), held.clone());
            flood.push(tokio::spawn(async move {
                let _slot = slots.enter("uid:1000").await;
                let _ = held.wait_for(|r| *r).await;
            }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let other = tokio::time::timeout(Duration::from_millis(500), slots.enter("uid:1001")).await;
        assert!(
            matches!(other, Ok(Ok(_))),
            "another principal is still served"
        );
        drop(other);
        release.send_replace(true);
        for t in flood {
            t.await.unwrap();
        }
        assert!(slots.enter("uid:1000").await.is_ok());
        assert_eq!(
            lock(&slots.owners).len(),
            1,
            "idle principals are forgotten"
        );
    }
}
