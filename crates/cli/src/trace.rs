//! The command's own span and the `traceparent` every call of it sends (docs/traces.md).
//!
//! A client command is one trace: its span (scope `cleanroom.cli`, service `cleanroom-cli`)
//! is the root, and each API call carries it as the W3C `traceparent`, so the server's
//! spans for the calls, and the gateway's for the execution, are its descendants and the
//! execution's `trace_id` (`--print-trace-id`) is this trace's id. Without
//! `--otlp-endpoint` nothing is exported and no SDK starts: the ids are made here (random,
//! marked sampled so that a server which exports still records its part).

use cleanroom_server::telemetry::{propagate, Exporter, TelemetryError};
use opentelemetry::trace::{Span as _, SpanContext, SpanKind, Status, Tracer, TracerProvider as _};
use opentelemetry::KeyValue;

/// One command's trace.
pub struct CommandTrace {
    exporter: Option<Exporter>,
    span: Option<opentelemetry::global::BoxedSpan>,
    root: SpanContext,
}

impl CommandTrace {
    /// Start the command `name`'s trace, exporting to `endpoint` when one is given.
    pub fn start(endpoint: Option<&str>, name: &'static str) -> Result<Self, TelemetryError> {
        let Some(endpoint) = endpoint.filter(|e| !e.trim().is_empty()) else {
            return Ok(CommandTrace {
                exporter: None,
                span: None,
                root: propagate::new_root(),
            });
        };
        let exporter = Exporter::start(endpoint, "cleanroom-cli")?;
        let tracer = opentelemetry::global::tracer_provider().tracer("cleanroom.cli");
        let span = tracer
            .span_builder(format!("cleanroom {name}"))
            .with_kind(SpanKind::Client)
            .start(&tracer);
        let root = span.span_context().clone();
        Ok(CommandTrace {
            exporter: Some(exporter),
            span: Some(span),
            root,
        })
    }

    /// The `traceparent` of the command's calls.
    pub fn traceparent(&self) -> String {
        propagate::traceparent(&self.root)
    }

    /// End the span with the command's exit code and send it (bounded wait).
    pub async fn finish(self, code: i32) {
        if let Some(mut span) = self.span {
            span.set_attribute(KeyValue::new("process.exit.code", i64::from(code)));
            if code != 0 {
                span.set_status(Status::error(format!("exit code {code}")));
            }
            span.end();
        }
        if let Some(e) = self.exporter {
            e.shutdown().await;
        }
    }
}
