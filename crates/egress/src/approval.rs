//! Verdicts that ask, and learn mode, inside one sandbox's gateway.
//!
//! The judge (`judge.rs`) rules; this module keeps what its asking and learning rulings
//! need. A connection the policy asks about (`Verdict::Ask`) is held in its own task — no
//! runtime thread waits — after its destination is known (the name our DNS handed out or
//! the proxy target, and the port). The gateway emits `egress.pending` with a request id
//! and waits for [`Approvals::decide`] (the server's `DecideEgress`), at most the approval
//! timeout; the timeout denies (`approval_timeout`). Connections to a destination already
//! waiting join its request instead of asking again, and a sandbox has at most
//! `max_pending` open requests (beyond: `approval_queue_full`, fail closed). An answer
//! with `remember: sandbox` is kept for the sandbox's life: later connections to the same
//! `host:port` are not asked again.
//!
//! Learn mode (`Verdict::Learn`) lets a destination through and records its first use
//! (`egress.learn`), up to [`MAX_LEARNED`] distinct destinations per sandbox.

use crate::event::{EgressEvent, Limited};
use cleanroom_policy::DenyReason;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};
use tokio::sync::watch;
use tokio::time::Instant;

/// Most distinct destinations learn mode records for one sandbox.
pub const MAX_LEARNED: usize = 1024;
/// Server default: how long an asked connection waits for a decision.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Server default: most open approval requests per sandbox.
pub const DEFAULT_MAX_PENDING: usize = 16;

/// How long an answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    /// This request only (and the connections waiting on it).
    Once,
    /// Every later connection of the sandbox to the same `host:port`.
    Sandbox,
}

impl Remember {
    pub fn as_str(self) -> &'static str {
        match self {
            Remember::Once => "once",
            Remember::Sandbox => "sandbox",
        }
    }
}

/// One open request, as listed and as answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    pub request_id: String,
    pub host: String,
    pub port: u16,
    pub protocol: &'static str,
    pub created_at: SystemTime,
    pub expires_at: SystemTime,
}

/// One sandbox's open requests and remembered answers.
pub struct Approvals {
    timeout: Duration,
    max_pending: usize,
    state: Mutex<State>,
}

type Dest = (String, u16);

#[derive(Default)]
struct State {
    pending: HashMap<Dest, Open>,
    allowed: BTreeSet<Dest>,
    refused: BTreeSet<Dest>,
    learned: HashSet<Dest>,
}

struct Open {
    info: PendingRequest,
    deadline: Instant,
    answer: watch::Sender<Option<bool>>,
}

impl Approvals {
    /// `timeout`: how long a request waits; `max_pending`: most open requests.
    pub fn new(timeout: Duration, max_pending: usize) -> Approvals {
        Approvals {
            timeout,
            max_pending,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open requests, oldest first.
    pub fn pending(&self) -> Vec<PendingRequest> {
        let mut v: Vec<_> = self
            .state()
            .pending
            .values()
            .map(|o| o.info.clone())
            .collect();
        v.sort_by(|a, b| (a.created_at, &a.request_id).cmp(&(b.created_at, &b.request_id)));
        v
    }

    /// `host:port` destinations answered for the whole sandbox: (allowed, refused).
    pub fn remembered(&self) -> (Vec<String>, Vec<String>) {
        let s = self.state();
        let fmt = |d: &Dest| format!("{}:{}", d.0, d.1);
        (
            s.allowed.iter().map(fmt).collect(),
            s.refused.iter().map(fmt).collect(),
        )
    }

    /// Answer request `request_id`. `None` when there is no such open request (never
    /// asked, already answered, timed out). The waiting connections go on at once.
    pub fn decide(
        &self,
        request_id: &str,
        allow: bool,
        remember: Remember,
    ) -> Option<PendingRequest> {
        let mut s = self.state();
        let key = s
            .pending
            .iter()
            .find(|(_, o)| o.info.request_id == request_id)
            .map(|(k, _)| k.clone())?;
        let open = s.pending.remove(&key)?;
        if remember == Remember::Sandbox {
            if allow {
                s.allowed.insert(key);
            } else {
                s.refused.insert(key);
            }
        }
        drop(s);
        open.answer.send_replace(Some(allow));
        Some(open.info)
    }

    /// Wait for an answer about `host:port`: remembered answers first, then an open request
    /// (joined) or a new one (announced with an `egress.pending` event).
    pub(crate) async fn ask(
        &self,
        events: &Limited,
        host: &str,
        port: u16,
        protocol: &'static str,
    ) -> Result<(), (DenyReason, String)> {
        let key: Dest = (host.to_string(), port);
        let (mut rx, deadline, id, announce) = {
            let mut s = self.state();
            if s.allowed.contains(&key) {
                return Ok(());
            }
            if s.refused.contains(&key) {
                return Err((
                    DenyReason::ApprovalDenied,
                    format!("{host}:{port} was denied for this sandbox"),
                ));
            }
            if let Some(o) = s.pending.get(&key) {
                (
                    o.answer.subscribe(),
                    o.deadline,
                    o.info.request_id.clone(),
                    None,
                )
            } else {
                if s.pending.len() >= self.max_pending {
                    return Err((
                        DenyReason::ApprovalQueueFull,
                        format!(
                            "{host}:{port} not asked: {} approval requests are already open",
                            s.pending.len()
                        ),
                    ));
                }
                let now = SystemTime::now();
                let info = PendingRequest {
                    request_id: format!("apr_{}", uuid::Uuid::now_v7().simple()),
                    host: host.to_string(),
                    port,
                    protocol,
                    created_at: now,
                    expires_at: now + self.timeout,
                };
                let (tx, rx) = watch::channel(None);
                let deadline = Instant::now() + self.timeout;
                let id = info.request_id.clone();
                s.pending.insert(
                    key.clone(),
                    Open {
                        info: info.clone(),
                        deadline,
                        answer: tx,
                    },
                );
                (rx, deadline, id, Some(info))
            }
        };
        if let Some(info) = announce {
            // Not rate-limited: the open requests are capped, and a dropped announcement
            // would leave nobody able to answer.
            events.emit_always(EgressEvent::pending(
                host,
                port,
                protocol,
                &info.request_id,
                format!(
                    "waiting up to {}s for a decision (request {})",
                    self.timeout.as_secs(),
                    info.request_id
                ),
            ));
        }
        let answer = tokio::time::timeout_at(deadline, rx.wait_for(Option::is_some)).await;
        match answer {
            Ok(Ok(v)) if *v == Some(true) => Ok(()),
            Ok(Ok(_)) => Err((
                DenyReason::ApprovalDenied,
                format!("{host}:{port} was denied (request {id})"),
            )),
            Ok(Err(_)) | Err(_) => {
                let mut s = self.state();
                if s.pending.get(&key).is_some_and(|o| o.info.request_id == id) {
                    s.pending.remove(&key);
                }
                Err((
                    DenyReason::ApprovalTimeout,
                    format!(
                        "no decision about {host}:{port} within {}s (request {id})",
                        self.timeout.as_secs()
                    ),
                ))
            }
        }
    }

    /// Learn mode: record the first use of `host:port`. `learned` says whether the policy
    /// itself does not allow it (then a full record refuses it).
    pub(crate) fn note_use(
        &self,
        events: &Limited,
        host: &str,
        port: u16,
        protocol: &'static str,
        learned: bool,
    ) -> Result<(), (DenyReason, String)> {
        let key: Dest = (host.to_string(), port);
        {
            let mut s = self.state();
            if s.learned.contains(&key) {
                return Ok(());
            }
            if s.learned.len() >= MAX_LEARNED {
                return if learned {
                    Err((
                        DenyReason::LearnLimitReached,
                        format!("learn mode already recorded {MAX_LEARNED} destinations"),
                    ))
                } else {
                    Ok(())
                };
            }
            s.learned.insert(key);
        }
        // Not rate-limited (bounded by MAX_LEARNED): a suggested policy must not miss a
        // destination because a burst of events was suppressed.
        events.emit_always(EgressEvent::learn(host, port, protocol));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_vocab::Decision;
    use std::sync::Arc;

    fn sink() -> (Limited, Arc<Mutex<Vec<EgressEvent>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let sink: crate::event::EventSink = Arc::new(move |e| s.lock().unwrap().push(e));
        (Limited::new(sink), seen)
    }

    async fn until_open(a: &Approvals, n: usize) -> Vec<PendingRequest> {
        for _ in 0..500 {
            let p = a.pending();
            if p.len() >= n {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{} open requests, want {n}", a.pending().len());
    }

    #[tokio::test]
    async fn one_request_per_destination_answered_for_all_waiters() {
        let a = Arc::new(Approvals::new(Duration::from_secs(60), 4));
        let (events, seen) = sink();
        let events = Arc::new(events);
        let mut waiters = Vec::new();
        for _ in 0..3 {
            let (a, e) = (a.clone(), events.clone());
            waiters.push(tokio::spawn(async move {
                a.ask(&e, "x.test", 443, "tcp").await
            }));
        }
        let open = until_open(&a, 1).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(a.pending().len(), 1, "joined, not asked three times");
        let req = a.decide(&open[0].request_id, true, Remember::Once).unwrap();
        assert_eq!((req.host.as_str(), req.port), ("x.test", 443));
        for w in waiters {
            assert_eq!(w.await.unwrap(), Ok(()));
        }
        // Once: answered and gone; the next connection asks again.
        assert!(a
            .decide(&open[0].request_id, true, Remember::Once)
            .is_none());
        let pending: Vec<_> = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.decision == Decision::Pending)
            .cloned()
            .collect();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].request_id, open[0].request_id);
    }

    #[tokio::test]
    async fn deny_timeout_cap_and_remembered_answers() {
        let a = Arc::new(Approvals::new(Duration::from_millis(200), 1));
        let (events, _) = sink();
        let events = Arc::new(events);
        // Timeout denies and forgets the request.
        let r = a.ask(&events, "slow.test", 80, "tcp").await;
        assert_eq!(r.unwrap_err().0, DenyReason::ApprovalTimeout);
        assert!(a.pending().is_empty());
        // Cap: a second destination while one is open is refused at once.
        let (a2, e2) = (a.clone(), events.clone());
        let first = tokio::spawn(async move { a2.ask(&e2, "one.test", 80, "tcp").await });
        let open = until_open(&a, 1).await;
        let r = a.ask(&events, "two.test", 80, "tcp").await;
        assert_eq!(r.unwrap_err().0, DenyReason::ApprovalQueueFull);
        // Deny for the sandbox: this waiter and every later one refused without asking.
        a.decide(&open[0].request_id, false, Remember::Sandbox)
            .unwrap();
        assert_eq!(
            first.await.unwrap().unwrap_err().0,
            DenyReason::ApprovalDenied
        );
        let r = a.ask(&events, "one.test", 80, "tcp").await;
        assert_eq!(r.unwrap_err().0, DenyReason::ApprovalDenied);
        assert!(a.pending().is_empty());
        // Allow for the sandbox: later connections go through at once.
        let (a3, e3) = (a.clone(), events.clone());
        let w = tokio::spawn(async move { a3.ask(&e3, "ok.test", 443, "tcp").await });
        let open = until_open(&a, 1).await;
        a.decide(&open[0].request_id, true, Remember::Sandbox)
            .unwrap();
        assert_eq!(w.await.unwrap(), Ok(()));
        assert_eq!(a.ask(&events, "ok.test", 443, "tcp").await, Ok(()));
        assert_eq!(
            a.remembered(),
            (
                vec!["ok.test:443".to_string()],
                vec!["one.test:80".to_string()]
            )
        );
    }

    #[test]
    fn learn_records_first_uses_up_to_the_cap() {
        let a = Approvals::new(Duration::from_secs(1), 1);
        let (events, seen) = sink();
        assert!(a.note_use(&events, "a.test", 443, "tcp", true).is_ok());
        assert!(a.note_use(&events, "a.test", 443, "tcp", true).is_ok());
        assert_eq!(seen.lock().unwrap().len(), 1, "first use only");
        for i in 1..MAX_LEARNED {
            assert!(a
                .note_use(&events, &format!("h{i}.test"), 1, "tcp", true)
                .is_ok());
        }
        let r = a.note_use(&events, "full.test", 443, "tcp", true);
        assert_eq!(r.unwrap_err().0, DenyReason::LearnLimitReached);
        // A destination the policy allows anyway is never refused by the record's cap.
        assert!(a
            .note_use(&events, "allowed.test", 443, "tcp", false)
            .is_ok());
        assert!(seen
            .lock()
            .unwrap()
            .iter()
            .all(|e| e.decision == Decision::Learn));
    }
}
