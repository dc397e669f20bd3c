//! Prometheus metrics of the server, served at `/metrics` ([`crate::rest`] routes it, to
//! admins only; see docs/metrics.md).
//!
//! Two kinds, so that the hot path pays only for an atomic add:
//! - **events** (this file): creates, claims and executions with their latency, egress
//!   decisions by reason, pool hits and misses, bytes of gateways that have stopped. Each
//!   is recorded where it happens, in the engine, once for every API that reaches it
//!   (Connect, REST, RunExecution's create) — a counter bump or a histogram observation,
//!   no lock held across an await;
//! - **state** ([`crate::rest::scrape`]): sandboxes by status and runtime, live gateways' bytes, output
//!   store and disk watermarks, read from the engine when a scrape asks and never kept.
//!
//! Encoding is `prometheus-client`'s (OpenMetrics text), never hand-rolled. This module
//! imports nothing of the server: the engine records into it, the scrape reads it.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// An operation whose latency is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A sandbox made or taken from a pool for a create (`CreateSandbox`, `RunExecution`).
    Create,
    /// `ClaimSandbox` from a warm pool.
    Claim,
    /// An execution started (request to RUNNING).
    Exec,
}

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Outcome {
    ok,
    error,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DecisionLabels {
    decision: String,
    reason: String,
}

type Latency = Family<OutcomeLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms .. ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// An empty `cleanroom_` registry, its series labelled with `node` when given.
pub(crate) fn labelled_registry(node: Option<&str>) -> Registry {
    match node {
        Some(n) => Registry::with_prefix_and_labels(
            "cleanroom",
            [(
                std::borrow::Cow::Borrowed("node"),
                std::borrow::Cow::Owned(n.to_string()),
            )]
            .into_iter(),
        ),
        None => Registry::with_prefix("cleanroom"),
    }
}

/// The event metrics (see the module docs).
pub struct Metrics {
    creates: Latency,
    claims: Latency,
    execs: Latency,
    egress: Family<DecisionLabels, Counter>,
    pool_hits: Counter,
    pool_misses: Counter,
    /// Bytes of gateways that have stopped (sandbox → upstream, upstream → sandbox); the
    /// live ones are added at scrape time.
    retired_tx: AtomicU64,
    retired_rx: AtomicU64,
}

impl Metrics {
    fn new() -> Metrics {
        Metrics {
            creates: Latency::new_with_constructor(latency_histogram),
            claims: Latency::new_with_constructor(latency_histogram),
            execs: Latency::new_with_constructor(latency_histogram),
            egress: Family::<DecisionLabels, Counter>::default(),
            pool_hits: Counter::default(),
            pool_misses: Counter::default(),
            retired_tx: AtomicU64::new(0),
            retired_rx: AtomicU64::new(0),
        }
    }

    /// A registry of these metrics for one scrape (handles to the same counters: cheap),
    /// every series labelled `node="NAME"` on a cluster member (`serve --node-name`), so
    /// that the members' scrapes can be told apart once gathered in one place.
    pub(crate) fn registry(&self, node: Option<&str>) -> Registry {
        let mut registry = labelled_registry(node);
        registry.register_with_unit(
            "sandbox_create_duration",
            "Sandbox creates (made or taken from a warm pool), by outcome",
            prometheus_client::registry::Unit::Seconds,
            self.creates.clone(),
        );
        registry.register_with_unit(
            "pool_claim_duration",
            "Claims from warm pools, by outcome",
            prometheus_client::registry::Unit::Seconds,
            self.claims.clone(),
        );
        registry.register_with_unit(
            "exec_start_duration",
            "Executions started (request to running), by outcome",
            prometheus_client::registry::Unit::Seconds,
            self.execs.clone(),
        );
        registry.register(
            "egress_decisions",
            "Egress gateway decisions (allow, deny, error, pending) by stable reason",
            self.egress.clone(),
        );
        registry.register(
            "pool_hits",
            "Creates and claims served by a warm pool's ready sandbox",
            self.pool_hits.clone(),
        );
        registry.register(
            "pool_misses",
            "Creates and claims that found their pool without a ready sandbox",
            self.pool_misses.clone(),
        );
        registry
    }

    fn latency(&self, op: Op) -> &Latency {
        match op {
            Op::Create => &self.creates,
            Op::Claim => &self.claims,
            Op::Exec => &self.execs,
        }
    }

    /// Bytes of stopped gateways: (sandbox → upstream, upstream → sandbox).
    pub(crate) fn retired_traffic(&self) -> (u64, u64) {
        (
            self.retired_tx.load(Ordering::Relaxed),
            self.retired_rx.load(Ordering::Relaxed),
        )
    }
}

/// The server's metrics (one per process: every engine in it records here).
pub fn global() -> &'static Metrics {
    static M: OnceLock<Metrics> = OnceLock::new();
    M.get_or_init(Metrics::new)
}

/// Measures one [`Op`]: recorded when dropped, as an error unless [`Observe::ok`] was
/// called first (every early return of the measured code counts as a failure).
#[must_use = "dropping it at once measures nothing"]
pub struct Observe {
    op: Op,
    started: Instant,
    outcome: Outcome,
}

/// Start measuring `op`.
pub fn observe(op: Op) -> Observe {
    Observe {
        op,
        started: Instant::now(),
        outcome: Outcome::error,
    }
}

impl Observe {
    /// The operation succeeded.
    pub fn ok(&mut self) {
        self.outcome = Outcome::ok;
    }
}

impl Drop for Observe {
    fn drop(&mut self) {
        global()
            .latency(self.op)
            .get_or_create(&OutcomeLabels {
                outcome: self.outcome,
            })
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// `n` gateway decisions (the one delivered plus those its limiter suppressed). The
/// reason is a stable code from a closed set, so the label's values are bounded.
pub fn egress_decision(decision: &str, reason: &str, n: u64) {
    global()
        .egress
        .get_or_create(&DecisionLabels {
            decision: decision.to_string(),
            reason: reason.to_string(),
        })
        .inc_by(n);
}

/// A pool's ready sandbox was handed out.
pub fn pool_hit() {
    global().pool_hits.inc();
}

/// A pool had no ready sandbox for a create or claim.
pub fn pool_miss() {
    global().pool_misses.inc();
}

/// A sandbox's gateway stopped having moved these bytes.
pub fn gateway_retired(tx: u64, rx: u64) {
    let m = global();
    m.retired_tx.fetch_add(tx, Ordering::Relaxed);
    m.retired_rx.fetch_add(rx, Ordering::Relaxed);
}
