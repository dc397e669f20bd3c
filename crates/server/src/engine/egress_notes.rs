//! The channel from the gateways to the engine's recording task, and a way to wait until
//! what was sent on it has been taken care of.
//!
//! A gateway sends its decision the moment it makes it — before it closes the connection
//! it judged — but the decision becomes a warning on the sandbox's running execution only
//! once the recording task has taken it off the channel. A command that exits right after
//! a refused or failed connection (`curl` to an unreachable upstream) would otherwise end
//! before its warning arrived, and its `exec` would print nothing about why: seen under
//! load as an empty stderr. The execution's supervisor waits, briefly and boundedly, for
//! the decisions sent before its process ended ([`NoteSender::settled`]).

use super::egress::EgressNote;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};

/// How many decisions were sent and how many were recorded, across all sandboxes.
#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    done: AtomicU64,
    progress: Notify,
}

/// The gateways' side: sends decisions, counting them.
#[derive(Clone)]
pub struct NoteSender {
    tx: mpsc::UnboundedSender<EgressNote>,
    counts: Arc<Counts>,
}

/// The recording task's side: receives decisions and says when they are recorded.
pub struct NoteReceiver {
    rx: mpsc::UnboundedReceiver<EgressNote>,
    counts: Arc<Counts>,
}

/// A new channel.
pub fn channel() -> (NoteSender, NoteReceiver) {
    let (tx, rx) = mpsc::unbounded_channel();
    let counts = Arc::new(Counts::default());
    (
        NoteSender {
            tx,
            counts: counts.clone(),
        },
        NoteReceiver { rx, counts },
    )
}

impl NoteSender {
    /// Send one decision (dropped when the engine is gone: nothing records it then).
    pub fn send(&self, note: EgressNote) {
        self.counts.sent.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(note).is_err() {
            self.counts.done.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Wait until every decision sent before this call has been recorded (and so handed
    /// to the executions it warns), or `limit` passed. `false` on the limit: the caller
    /// goes on without them (they are in the event log either way).
    pub async fn settled(&self, limit: Duration) -> bool {
        let target = self.counts.sent.load(Ordering::SeqCst);
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let progress = self.counts.progress.notified();
            tokio::pin!(progress);
            // Registered before the check: a recording between the check and the wait
            // still wakes it.
            progress.as_mut().enable();
            if self.counts.done.load(Ordering::SeqCst) >= target {
                return true;
            }
            if tokio::time::timeout_at(deadline, progress).await.is_err() {
                return false;
            }
        }
    }
}

impl NoteReceiver {
    /// Up to `max` decisions (at least one), or `false` when every sender is gone.
    pub async fn recv_many(&mut self, batch: &mut Vec<EgressNote>, max: usize) -> bool {
        self.rx.recv_many(batch, max).await > 0
    }

    /// Handle on the counts, for saying that `n` decisions were recorded.
    pub fn recorded(&self) -> Recorded {
        Recorded(self.counts.clone())
    }
}

/// Says decisions were recorded (from the blocking thread that recorded them).
pub struct Recorded(Arc<Counts>);

impl Recorded {
    pub fn add(&self, n: usize) {
        self.0.done.fetch_add(n as u64, Ordering::SeqCst);
        self.0.progress.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note() -> EgressNote {
        EgressNote {
            sandbox_id: "sbx".into(),
            policy_hash: String::new(),
            event: cleanroom_egress::EgressEvent::allow("h", 80, "tcp"),
        }
    }

    #[tokio::test]
    async fn settled_waits_for_what_was_sent_before_it_and_no_longer() {
        let (tx, mut rx) = channel();
        assert!(tx.settled(Duration::from_millis(10)).await, "nothing sent");
        tx.send(note());
        tx.send(note());
        assert!(
            !tx.settled(Duration::from_millis(50)).await,
            "nothing recorded yet"
        );
        let recorded = rx.recorded();
        let waiter = tokio::spawn({
            let tx = tx.clone();
            async move { tx.settled(Duration::from_secs(10)).await }
        });
        let mut batch = Vec::new();
        assert!(rx.recv_many(&mut batch, 16).await);
        assert_eq!(batch.len(), 2);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "received is not recorded");
        recorded.add(batch.len());
        assert!(waiter.await.unwrap(), "woken by the recording");
        // A decision sent later is not waited for by an earlier waiter's target.
        tx.send(note());
        assert!(!tx.settled(Duration::from_millis(20)).await);
    }

    #[tokio::test]
    async fn a_decision_nobody_can_record_is_not_waited_for() {
        let (tx, rx) = channel();
        drop(rx);
        tx.send(note());
        assert!(tx.settled(Duration::from_millis(10)).await);
    }
}
