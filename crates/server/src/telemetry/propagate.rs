//! W3C trace context in and out: the `traceparent` a caller sends continues its trace on
//! the server (whether or not this server exports), and an execution's `trace_id` is that
//! trace's id, so `--print-trace-id` names the trace a collector shows.
//!
//! Parsing is the SDK's [`TraceContextPropagator`]: a malformed header is ignored (a new
//! trace starts), never an error — the header is a hint, not a credential, and it grants
//! nothing (the caller only names the trace its own calls join).

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceId};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// The header names this module reads and writes.
pub const TRACEPARENT: &str = "traceparent";

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// W3C's exact shape (`vv-<32 hex>-<16 hex>-ff`, lowercase; a later version may append
/// `-…`): the SDK's parser alone also takes short ids.
fn well_formed(v: &[u8]) -> bool {
    let hex = |r: std::ops::Range<usize>| {
        v[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    v.len() >= 55
        && (v.len() == 55 || (&v[..2] != b"00" && v[55] == b'-'))
        && v[2] == b'-'
        && v[35] == b'-'
        && v[52] == b'-'
        && hex(0..2)
        && hex(3..35)
        && hex(36..52)
        && hex(53..55)
}

/// The caller's trace context from a request's headers (an empty context without a valid
/// `traceparent`).
pub fn incoming(headers: &http::HeaderMap) -> Context {
    match headers.get(TRACEPARENT) {
        Some(v) if well_formed(v.as_bytes()) => {
            TraceContextPropagator::new().extract(&Headers(headers))
        }
        _ => Context::new(),
    }
}

/// `traceparent` for `sc` (version 00).
pub fn traceparent(sc: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    )
}

/// Parse a `traceparent` value (an SDK's or a user's option) into its span context.
pub fn parse(value: &str) -> Option<SpanContext> {
    let mut h = http::HeaderMap::new();
    h.insert(TRACEPARENT, http::HeaderValue::from_str(value).ok()?);
    let cx = incoming(&h);
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

/// The trace the running code is part of: the current `tracing` span's exported context,
/// else the caller's context the request was entered with (a server that does not export
/// still continues the caller's trace id).
pub fn current_trace_id() -> Option<TraceId> {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let span = tracing::Span::current().context();
    let sc = span.span().span_context().clone();
    if sc.is_valid() {
        return Some(sc.trace_id());
    }
    let cx = Context::current();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id())
}

/// A fresh trace id where the caller sent none (W3C size, random).
pub fn new_trace_id() -> TraceId {
    TraceId::from_bytes(*uuid::Uuid::new_v4().as_bytes())
}

/// A fresh, sampled root context for a process that does not export (the CLI without an
/// endpoint): its `traceparent` still lets a server that exports record the trace.
pub fn new_root() -> SpanContext {
    let id = *uuid::Uuid::new_v4().as_bytes();
    let mut span = [0u8; 8];
    span.copy_from_slice(&id[..8]);
    // A zero span id is invalid; a v4 uuid's first 8 bytes are zero with probability 2^-64.
    if span == [0; 8] {
        span[7] = 1;
    }
    SpanContext::new(
        new_trace_id(),
        opentelemetry::trace::SpanId::from_bytes(span),
        TraceFlags::SAMPLED,
        false,
        Default::default(),
    )
}

/// The server span of one API call (Connect or REST), child of the caller's context, and
/// that context. Without an exporter the span is disabled (free); the context still
/// carries the caller's trace id to the execution rows.
pub fn enter_call<B>(req: &http::Request<B>) -> (tracing::Span, Context) {
    let cx = incoming(req.headers());
    if !super::enabled() {
        return (tracing::Span::none(), cx);
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    // The path names the procedure (or the REST route); bounded, it is the caller's text.
    let path: String = req.uri().path().chars().take(128).collect();
    let span = tracing::info_span!(
        target: super::TARGET,
        "call",
        otel.name = %path,
        otel.kind = "server",
        http.request.method = %req.method(),
        url.path = %path,
    );
    let _ = span.set_parent(cx.clone());
    (span, cx)
}

/// `fut` inside `span` and with `cx` current; `fut` itself when neither carries anything.
pub fn within<F: std::future::Future>(
    fut: F,
    span: tracing::Span,
    cx: Context,
) -> futures::future::Either<F, impl std::future::Future<Output = F::Output>> {
    use opentelemetry::context::FutureExt as _;
    use tracing::Instrument as _;
    if span.is_none() && !cx.span().span_context().is_valid() {
        return futures::future::Either::Left(fut);
    }
    // The caller's context first, the span entered inside it: entering activates the
    // span's own context, which the steps below must see as their parent.
    futures::future::Either::Right(fut.instrument(span).with_context(cx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_round_trips_and_garbage_is_ignored() {
        let v = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let sc = parse(v).expect("valid");
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(sc.is_remote());
        assert_eq!(traceparent(&sc), v);
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-<script>",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_new_root_is_valid_and_sampled() {
        let a = new_root();
        assert!(a.is_valid() && a.is_sampled());
        assert_ne!(a.trace_id(), new_root().trace_id());
        assert!(parse(&traceparent(&a)).is_some());
    }
}
