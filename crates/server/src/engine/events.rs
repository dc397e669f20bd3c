//! The sandbox event log: every status change and gateway decision is a durable row in
//! the store ([`EventRow`]), and a watch wakes the live tails of `StreamSandboxEvents`.

use super::{Engine, LiveExec};
use crate::engine::egress::EgressNote;
use crate::model::error::EngineError;
use crate::model::status::sandbox as ss;
use crate::model::status::SandboxStatus;
use crate::output::execlog::WarningRecord;
use crate::store::{now_micros, EventRow, Store};
use futures::stream::BoxStream;
use futures::StreamExt;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::watch;

/// Rows fetched from the store per query of a tail.
const PAGE: i64 = 256;

/// Appends events and tells live tails that there is more to read.
pub struct EventLog {
    store: Arc<Store>,
    /// The sequence of the last event written.
    notify: watch::Sender<i64>,
}

impl EventLog {
    pub fn new(store: Arc<Store>) -> EventLog {
        EventLog {
            store,
            notify: watch::channel(0).0,
        }
    }

    /// Persist one event (stamped now) and wake the tails. A store failure is logged, not
    /// returned: the state change the event reports has already happened.
    pub fn record(&self, mut e: EventRow) {
        e.at = now_micros();
        match self.store.append_event(&e) {
            Ok(seq) => {
                self.notify.send_replace(seq);
            }
            Err(err) => tracing::error!(error = %err, "could not record event"),
        }
    }

    /// Persist events (each stamped now) in one store commit, then wake the tails once.
    /// A store failure is logged, as for [`Self::record`].
    pub fn record_many(&self, mut events: Vec<EventRow>) {
        if events.is_empty() {
            return;
        }
        let at = now_micros();
        for e in &mut events {
            e.at = at;
        }
        match self.store.append_events(&events) {
            Ok(seq) => {
                self.notify.send_replace(seq);
            }
            Err(err) => tracing::error!(error = %err, n = events.len(), "could not record events"),
        }
    }

    /// A receiver that changes whenever an event is written (the tails' own signal): the
    /// web console's live page updates wait on it, then read through the API.
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.notify.subscribe()
    }

    /// Wake the tails for an event the caller wrote itself inside a larger store
    /// transaction (a claim), once that transaction committed with sequence `seq`.
    pub fn committed(&self, seq: i64) {
        self.notify.send_replace(seq);
    }

    /// `sandbox.status`.
    pub fn sandbox_status(&self, id: &str, status: SandboxStatus, message: &str) {
        self.record(EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.status".into(),
            sandbox_status: status.number(),
            message: message.into(),
            ..Default::default()
        });
    }

    /// A sandbox's new status and its `sandbox.status` event, in one store commit.
    pub fn set_sandbox_status(
        &self,
        id: &str,
        status: SandboxStatus,
        message: &str,
    ) -> crate::store::Result<()> {
        let event = Self::sandbox_status_row(id, status, message);
        let seq = self
            .store
            .sandbox_status_changed(id, status, message, &event)?;
        self.committed(seq);
        Ok(())
    }

    /// [`Self::set_sandbox_status`] for a final write (FAILED, STOPPED) that may find the
    /// sandbox ended already by a racing teardown or failure: then the first end stands
    /// and nothing is written. Any other refusal is an error.
    pub fn end_sandbox(
        &self,
        id: &str,
        status: SandboxStatus,
        message: &str,
    ) -> crate::store::Result<()> {
        match self.set_sandbox_status(id, status, message) {
            Err(crate::store::StoreError::Transition(t))
                if t.from.is_some_and(SandboxStatus::is_terminal) =>
            {
                Ok(())
            }
            other => other,
        }
    }

    /// A `sandbox.status` event for the caller to write inside a larger transaction (then
    /// [`EventLog::committed`]).
    pub fn sandbox_status_row(id: &str, status: SandboxStatus, message: &str) -> EventRow {
        EventRow {
            sandbox_id: id.into(),
            kind: "sandbox.status".into(),
            sandbox_status: status.number(),
            message: message.into(),
            at: now_micros(),
            ..Default::default()
        }
    }

    /// `execution.status`.
    pub fn execution_status(&self, sandbox_id: &str, exec_id: &str, status: i32, message: &str) {
        self.record(Self::execution_status_row(
            sandbox_id, exec_id, status, message,
        ));
    }

    /// An `execution.status` event stamped now, for a caller that writes it inside its own
    /// store transaction (then [`Self::committed`]).
    pub fn execution_status_row(
        sandbox_id: &str,
        exec_id: &str,
        status: i32,
        message: &str,
    ) -> EventRow {
        EventRow {
            sandbox_id: sandbox_id.into(),
            execution_id: exec_id.into(),
            kind: "execution.status".into(),
            execution_status: status,
            message: message.into(),
            at: now_micros(),
            ..Default::default()
        }
    }

    /// A sandbox's events after `after_seq`; with `follow`, until the sandbox ends. The
    /// stream reads the store when polled (no task of its own): dropping it stops it.
    pub fn tail(
        &self,
        sandbox_id: &str,
        after_seq: u64,
        follow: bool,
    ) -> BoxStream<'static, EventRow> {
        let tail = Tail {
            store: self.store.clone(),
            notify: self.notify.subscribe(),
            sandbox_id: sandbox_id.to_string(),
            last: after_seq as i64,
            follow,
            pending: VecDeque::new(),
            then: Then::Query,
        };
        futures::stream::unfold(tail, |mut t| async move { t.next().await.map(|r| (r, t)) }).boxed()
    }
}

/// What a tail does once its pending rows are out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Then {
    /// Query again at once (the last page was full).
    Query,
    /// Wait for the next event, then query.
    Wait,
    /// End the stream.
    Stop,
}

struct Tail {
    store: Arc<Store>,
    notify: watch::Receiver<i64>,
    sandbox_id: String,
    last: i64,
    follow: bool,
    pending: VecDeque<EventRow>,
    then: Then,
}

impl Tail {
    async fn next(&mut self) -> Option<EventRow> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(r);
            }
            match self.then {
                Then::Stop => return None,
                Then::Wait => {
                    // Marked unchanged before the last query: an event written since then
                    // wakes this at once. No more writer: read what is there, then stop.
                    if self.notify.changed().await.is_err() {
                        self.follow = false;
                    }
                }
                Then::Query => {}
            }
            self.notify.mark_unchanged();
            // Read the status before the events: if it is terminal now, the events read
            // next include the final one, so stopping after them loses nothing.
            let terminal = self
                .store
                .get_sandbox(&self.sandbox_id)
                .ok()
                .flatten()
                .is_none_or(|s| ss::is_terminal(s.status));
            let Ok(rows) = self.store.events_after(&self.sandbox_id, self.last, PAGE) else {
                return None;
            };
            let full = rows.len() as i64 == PAGE;
            if let Some(r) = rows.last() {
                self.last = r.seq;
            }
            self.pending.extend(rows);
            self.then = if full {
                Then::Query
            } else if !self.follow || terminal {
                Then::Stop
            } else {
                Then::Wait
            };
        }
    }
}

impl Engine {
    /// Tail a sandbox's events after `after_seq`; with `follow`, until the sandbox ends.
    pub(in crate::engine) fn stream_events(
        &self,
        sandbox_id: &str,
        after_seq: u64,
        follow: bool,
    ) -> Result<BoxStream<'static, EventRow>, EngineError> {
        self.get_sandbox(sandbox_id)?;
        Ok(self.events.tail(sandbox_id, after_seq, follow))
    }

    /// Persist one gateway decision as a sandbox event; a deny, an error (an allowed
    /// upstream that failed) or a notice also becomes a warning on the sandbox's running
    /// executions (attributed to the execution when it is the only one running), unless
    /// the gateway marked it quiet ([`cleanroom_egress::event::Notice`]).
    pub(super) fn record_egress(&self, notes: Vec<EgressNote>) {
        let rows = notes.into_iter().map(|n| self.egress_row(n)).collect();
        self.events.record_many(rows);
    }

    /// One gateway decision's event row; its warnings go to the running executions now.
    fn egress_row(&self, note: EgressNote) -> EventRow {
        let live: Vec<(String, Arc<LiveExec>)> = self.live_in(&note.sandbox_id);
        let e = &note.event;
        crate::metrics::egress_decision(e.decision.as_str(), e.reason, 1 + e.suppressed);
        let message = if e.message.is_empty() {
            format!("{} {}:{} ({})", e.decision, e.host, e.port, e.protocol)
        } else {
            format!(
                "{} {}:{} ({}): {}",
                e.decision, e.host, e.port, e.protocol, e.message
            )
        };
        if e.warns() {
            let what = match e.decision {
                cleanroom_vocab::Decision::Deny => "egress denied",
                cleanroom_vocab::Decision::Error => "egress failed",
                _ => "egress",
            };
            for (_, l) in &live {
                let _ = l.warnings.send(WarningRecord {
                    code: e.reason.to_string(),
                    message: format!(
                        "{what}: {}:{} ({}): {}",
                        e.host, e.port, e.protocol, e.message
                    ),
                });
            }
        }
        EventRow {
            sandbox_id: note.sandbox_id.clone(),
            execution_id: match live.as_slice() {
                [(id, _)] => id.clone(),
                _ => String::new(),
            },
            kind: format!("egress.{}", e.decision),
            message,
            attributes: crate::engine::egress::attributes(&note).to_string(),
            ..Default::default()
        }
    }
}
