//! Egress decisions as events, and the limiter that keeps a hostile sandbox from flooding
//! the event store with denies.

use cleanroom_vocab::{Decision, FailReason};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One decision of the gateway. The server turns it into a `SandboxEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressEvent {
    /// Host name (normalized) or, for address-only traffic, the IP address.
    pub host: String,
    pub port: u16,
    /// `tcp`, `tls`, `http`, `http-proxy`, `connect`, `dns`, `udp`, `icmp`, `ipv6`, ...
    pub protocol: &'static str,
    /// `allow`, `deny`, or `error` (allowed, but the upstream could not be reached).
    pub decision: Decision,
    /// Stable reason code: a [`cleanroom_policy::DenyReason`] for a deny, a [`FailReason`]
    /// for an error; empty for plain allows.
    pub reason: &'static str,
    /// Human-readable detail.
    pub message: String,
    /// Events dropped by the limiter since the previous delivered one.
    pub suppressed: u64,
    /// Ids of the secrets the gateway injected into this request (never their values).
    pub secrets: Vec<String>,
    /// The approval request a `pending` event opens (`DecideEgress` answers it); empty
    /// otherwise.
    pub request_id: String,
    /// Whether the sandbox's running executions see it as a warning.
    pub notice: Notice,
}

/// Whether an event is also a warning on the sandbox's running executions (`exec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notice {
    /// Denies and errors (an allowed upstream that failed) are; the rest is not.
    #[default]
    Auto,
    /// Recorded only: an expected refusal a tool handles by itself (npm's audit and
    /// update check through a mediated registry).
    Quiet,
    /// Also an allow the user should know about (a registry answer narrowed to the
    /// lockfile, warn mode letting something unpinned through).
    Warn,
}

impl EgressEvent {
    /// Is this event a warning on the running executions?
    pub fn warns(&self) -> bool {
        match self.notice {
            Notice::Auto => matches!(self.decision, Decision::Deny | Decision::Error),
            Notice::Quiet => false,
            Notice::Warn => true,
        }
    }
}

impl EgressEvent {
    pub fn deny(
        host: impl Into<String>,
        port: u16,
        protocol: &'static str,
        reason: cleanroom_policy::DenyReason,
        message: impl Into<String>,
    ) -> Self {
        EgressEvent {
            host: host.into(),
            port,
            protocol,
            decision: Decision::Deny,
            reason: reason.as_str(),
            message: message.into(),
            suppressed: 0,
            secrets: Vec::new(),
            request_id: String::new(),
            notice: Notice::Auto,
        }
    }

    pub fn allow(host: impl Into<String>, port: u16, protocol: &'static str) -> Self {
        EgressEvent {
            host: host.into(),
            port,
            protocol,
            decision: Decision::Allow,
            reason: "",
            message: String::new(),
            suppressed: 0,
            secrets: Vec::new(),
            request_id: String::new(),
            notice: Notice::Auto,
        }
    }

    pub fn error(
        host: impl Into<String>,
        port: u16,
        protocol: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self::failed(
            host,
            port,
            protocol,
            FailReason::UpstreamUnreachable,
            message,
        )
    }

    /// An allowed connection that failed for a reason other than an unreachable upstream
    /// (`upstream_tls_failed`, `tls_interception_failed`, ...).
    pub fn failed(
        host: impl Into<String>,
        port: u16,
        protocol: &'static str,
        reason: FailReason,
        message: impl Into<String>,
    ) -> Self {
        EgressEvent {
            host: host.into(),
            port,
            protocol,
            decision: Decision::Error,
            reason: reason.as_str(),
            message: message.into(),
            suppressed: 0,
            secrets: Vec::new(),
            request_id: String::new(),
            notice: Notice::Auto,
        }
    }
}

impl EgressEvent {
    /// A connection held for a decision (`egress.pending`), announcing `request_id`.
    pub fn pending(
        host: impl Into<String>,
        port: u16,
        protocol: &'static str,
        request_id: &str,
        message: impl Into<String>,
    ) -> Self {
        let mut e = Self::allow(host, port, protocol);
        e.decision = Decision::Pending;
        e.request_id = request_id.to_string();
        e.message = message.into();
        e
    }

    /// The first use of a destination in learn mode (`egress.learn`).
    pub fn learn(host: impl Into<String>, port: u16, protocol: &'static str) -> Self {
        let mut e = Self::allow(host, port, protocol);
        e.decision = Decision::Learn;
        e
    }
}

/// Where events go (the server persists and fans them out).
pub type EventSink = Arc<dyn Fn(EgressEvent) + Send + Sync>;

/// Token bucket: at most `burst` events at once, refilled at `per_second`.
pub(crate) struct Limited {
    sink: EventSink,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
    suppressed: u64,
}

const BURST: f64 = 200.0;
const PER_SECOND: f64 = 50.0;

impl Limited {
    pub(crate) fn new(sink: EventSink) -> Self {
        Limited {
            sink,
            state: Mutex::new(Bucket {
                tokens: BURST,
                last: Instant::now(),
                suppressed: 0,
            }),
        }
    }

    /// Deliver the event whatever the budget: only for events that are bounded by other
    /// means (approval requests, learned destinations) and must not be lost.
    pub(crate) fn emit_always(&self, ev: EgressEvent) {
        tracing::debug!(host = %ev.host, port = ev.port, decision = %ev.decision, "egress");
        (self.sink)(ev);
    }

    /// Deliver the event unless the sandbox is over its event budget; dropped events are
    /// counted and reported on the next delivered one.
    pub(crate) fn emit(&self, mut ev: EgressEvent) {
        let deliver = {
            let Ok(mut b) = self.state.lock() else {
                return;
            };
            let now = Instant::now();
            let elapsed = now
                .saturating_duration_since(b.last)
                .min(Duration::from_secs(60));
            b.last = now;
            b.tokens = (b.tokens + elapsed.as_secs_f64() * PER_SECOND).min(BURST);
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                ev.suppressed = std::mem::take(&mut b.suppressed);
                true
            } else {
                b.suppressed += 1;
                false
            }
        };
        if deliver {
            tracing::debug!(host = %ev.host, port = ev.port, decision = %ev.decision, reason = ev.reason, "egress");
            (self.sink)(ev);
        }
    }
}
