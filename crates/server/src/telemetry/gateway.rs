//! The egress gateway's decisions as spans in the trace of the execution that caused them.
//!
//! The gateway sees packets from a sandbox, not processes: it cannot tell which of the
//! sandbox's executions opened a connection. So each decision span is a **child of the
//! sandbox's most recently started running execution** (the usual case: one `exec` at a
//! time, and the one whose trace the user holds) and carries **links to any other
//! running executions' spans**, so concurrent traces still find it. A decision made
//! while no execution runs (a background process after its `exec` ended) belongs to no
//! trace and makes no span: it is still an event and a metric.
//!
//! Spans are made where the gateway reports the decision ([`decision`], called by its
//! event sink at decision time), under the instrumentation scope `cleanroom.gateway`.
//! Without an exporter ([`super::enabled`]) nothing here runs: no registry entries, no spans.

use cleanroom_egress::EgressEvent;
use opentelemetry::trace::{
    Link, SpanContext, SpanKind, TraceContextExt as _, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The instrumentation scope of the gateway's spans.
pub const SCOPE: &str = "cleanroom.gateway";

/// Running executions' span contexts by sandbox, oldest first.
type Running = HashMap<String, Vec<(u64, SpanContext)>>;

fn running() -> &'static Mutex<Running> {
    static R: OnceLock<Mutex<Running>> = OnceLock::new();
    R.get_or_init(Default::default)
}

/// An execution's place in its sandbox's [`running`] list while it runs: dropped when the
/// execution's supervision ends, which takes it out.
pub struct Registered {
    sandbox_id: String,
    key: u64,
}

/// Say that an execution with span context `sc` runs in `sandbox_id` (nothing without an
/// exporter or a valid context).
pub fn register(sandbox_id: &str, sc: SpanContext) -> Option<Registered> {
    if !super::enabled() || !sc.is_valid() {
        return None;
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let key = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut map = running().lock().ok()?;
    map.entry(sandbox_id.to_string())
        .or_default()
        .push((key, sc));
    Some(Registered {
        sandbox_id: sandbox_id.to_string(),
        key,
    })
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Ok(mut map) = running().lock() else {
            return;
        };
        if let Some(list) = map.get_mut(&self.sandbox_id) {
            list.retain(|(k, _)| *k != self.key);
            if list.is_empty() {
                map.remove(&self.sandbox_id);
            }
        }
    }
}

/// The span of execution `execution_id` in `sandbox_id` (child of the current span: the
/// API call that started it) and its registration as the sandbox's running execution;
/// both nothing without an exporter.
pub fn execution(sandbox_id: &str, execution_id: &str) -> (tracing::Span, Option<Registered>) {
    if !super::enabled() {
        return (tracing::Span::none(), None);
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let span = tracing::info_span!(
        target: super::TARGET,
        "execution",
        cleanroom.sandbox_id = sandbox_id,
        cleanroom.execution_id = execution_id,
    );
    let sc = span.context().span().span_context().clone();
    (span, register(sandbox_id, sc))
}

/// The parent (newest) and the links (the others) of a decision in `sandbox_id`.
fn placement(sandbox_id: &str) -> Option<(SpanContext, Vec<SpanContext>)> {
    let map = running().lock().ok()?;
    let list = map.get(sandbox_id)?;
    let (_, parent) = list.last()?;
    let links = list[..list.len() - 1]
        .iter()
        .map(|(_, sc)| sc.clone())
        .collect();
    Some((parent.clone(), links))
}

/// Record one gateway decision as a span (a point in time: it starts and ends now).
pub fn decision(sandbox_id: &str, policy_hash: &str, ev: &EgressEvent) {
    if !super::enabled() {
        return;
    }
    let Some((parent, others)) = placement(sandbox_id) else {
        return;
    };
    let tracer = opentelemetry::global::tracer_provider().tracer(SCOPE);
    let mut attrs = vec![
        KeyValue::new("cleanroom.sandbox_id", sandbox_id.to_string()),
        KeyValue::new("cleanroom.policy_hash", policy_hash.to_string()),
        KeyValue::new("cleanroom.egress.decision", ev.decision.to_string()),
        KeyValue::new("server.address", ev.host.clone()),
        KeyValue::new("server.port", i64::from(ev.port)),
        KeyValue::new("network.protocol.name", ev.protocol),
    ];
    if !ev.reason.is_empty() {
        attrs.push(KeyValue::new("cleanroom.egress.reason", ev.reason));
    }
    if ev.suppressed > 0 {
        attrs.push(KeyValue::new(
            "cleanroom.egress.suppressed",
            i64::try_from(ev.suppressed).unwrap_or(i64::MAX),
        ));
    }
    let cx = Context::new().with_remote_span_context(parent);
    let span = tracer
        .span_builder(format!("egress {}", ev.decision))
        .with_kind(SpanKind::Internal)
        .with_attributes(attrs)
        .with_links(others.into_iter().map(Link::with_context).collect())
        .start_with_context(&tracer, &cx);
    drop(span);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId};

    fn sc(n: u8) -> SpanContext {
        SpanContext::new(
            TraceId::from_bytes([n; 16]),
            SpanId::from_bytes([n; 8]),
            TraceFlags::SAMPLED,
            false,
            Default::default(),
        )
    }

    #[test]
    fn the_newest_running_execution_is_the_parent_and_the_others_are_links() {
        // `register` needs an exporter; the list it maintains is what is tested here.
        let key = |k| (k, sc(k as u8));
        running()
            .lock()
            .unwrap()
            .insert("sbx_t".into(), vec![key(1), key(2), key(3)]);
        let (parent, links) = placement("sbx_t").unwrap();
        assert_eq!(parent, sc(3));
        assert_eq!(links, vec![sc(1), sc(2)]);
        drop(Registered {
            sandbox_id: "sbx_t".into(),
            key: 3,
        });
        assert_eq!(placement("sbx_t").unwrap().0, sc(2));
        for k in [1, 2] {
            drop(Registered {
                sandbox_id: "sbx_t".into(),
                key: k,
            });
        }
        assert!(placement("sbx_t").is_none());
        assert!(running().lock().unwrap().get("sbx_t").is_none());
    }
}
