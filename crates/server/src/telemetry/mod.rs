//! OTLP traces (docs/traces.md): one trace from the CLI or an SDK through the API call,
//! the engine's steps, the backend and the sandbox's egress gateway.
//!
//! Why a module of its own: the exporter, the W3C `traceparent` propagation
//! ([`propagate`]) and the gateway's decision spans ([`gateway`]) must agree on one
//! rule — *nothing is exported and nothing costs without `--otlp-endpoint`* — and on the
//! bounds when something is: spans go to a batch processor with a capped queue (a full
//! queue drops spans, it never waits), exported from the SDK's own thread with a per-request
//! timeout, so a slow or dead collector never blocks the runtime.
//!
//! Spans are `tracing` spans of target [`TARGET`] (the engine's steps) bridged by
//! `tracing-opentelemetry`, plus the gateway's and the CLI's spans made with the
//! OpenTelemetry API directly. The log output never shows the [`TARGET`] spans
//! ([`without_export_spans`]).

pub mod gateway;
pub mod propagate;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The `tracing` target of every span meant for export (and of no log line).
pub const TARGET: &str = "cleanroom_trace";

/// Spans waiting for export at most; more are dropped (counted by the SDK), never waited on.
pub const MAX_QUEUE: usize = 4096;
/// Spans per export request.
pub const MAX_BATCH: usize = 512;
/// How long a batch waits for more spans before it is sent.
pub const BATCH_DELAY: Duration = Duration::from_millis(500);
/// One export request's deadline (the collector's answer included).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a process that ends waits for its last spans to leave.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether this process exports (set once by [`Exporter::start`]): the cheap check that
/// keeps span bookkeeping off every path when it does not.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Does this process export spans?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A refused `--otlp-endpoint` (stable code `invalid_argument`).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("--otlp-endpoint {0}: want an http:// or https:// URL of an OTLP/HTTP collector")]
    BadEndpoint(String),
    #[error("--otlp-endpoint: cannot build the OTLP exporter: {0}")]
    Exporter(String),
}

/// The process's tracer provider while it exports; [`Exporter::shutdown`] flushes it.
pub struct Exporter {
    provider: SdkTracerProvider,
}

/// `URL` as given by `--otlp-endpoint`/`OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base,
/// as the OpenTelemetry specification reads that variable) to the traces URL.
pub fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
    let bad = || TelemetryError::BadEndpoint(endpoint.to_string());
    let uri: http::Uri = endpoint.parse().map_err(|_| bad())?;
    match uri.scheme_str() {
        Some("http") | Some("https") if uri.authority().is_some() => {}
        _ => return Err(bad()),
    }
    if uri.query().is_some() {
        return Err(bad());
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    })
}

impl Exporter {
    /// Export this process's spans as `service` (`cleanroom-server`, `cleanroom-cli`) to
    /// the collector at `endpoint` over OTLP/HTTP (protobuf), and make its provider the
    /// global one (the gateway's and the CLI's spans use it).
    pub fn start(endpoint: &str, service: &'static str) -> Result<Exporter, TelemetryError> {
        let url = traces_url(endpoint)?;
        // reqwest is built without a crypto provider of its own (as for image pulls).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(EXPORT_TIMEOUT)
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::recommended())
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let batch = BatchSpanProcessor::builder(exporter)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_max_queue_size(MAX_QUEUE)
                    .with_max_export_batch_size(MAX_BATCH)
                    .with_scheduled_delay(BATCH_DELAY)
                    .build(),
            )
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(batch)
            .with_resource(
                opentelemetry_sdk::Resource::builder()
                    .with_service_name(service)
                    .build(),
            )
            .build();
        opentelemetry::global::set_tracer_provider(provider.clone());
        ENABLED.store(true, Ordering::Relaxed);
        Ok(Exporter { provider })
    }

    /// The `tracing` layer that turns [`TARGET`] spans into exported spans (nothing else:
    /// library spans and log events stay local).
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + 'static
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::Layer as _;
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("cleanroom"))
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target(TARGET, tracing::Level::TRACE),
            )
    }

    /// Send what is queued and stop, waiting at most [`FLUSH_TIMEOUT`] (on a blocking
    /// thread: the SDK's shutdown waits for its export thread).
    pub async fn shutdown(self) {
        let provider = self.provider;
        let _ = tokio::task::spawn_blocking(move || {
            let _ = provider.shutdown_with_timeout(FLUSH_TIMEOUT);
        })
        .await;
    }
}

/// The span of one engine or backend step (`backend.provision`, `backend.spawn`, ...) in
/// `sandbox_id`, child of the current span; disabled (free) without an exporter.
pub fn step(name: &'static str, sandbox_id: &str) -> tracing::Span {
    if !enabled() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "step",
        otel.name = name,
        cleanroom.sandbox_id = sandbox_id,
    )
}

/// `filter` (the log's) without the spans made for export: they are not log context.
pub fn without_export_spans(
    filter: tracing_subscriber::EnvFilter,
) -> tracing_subscriber::EnvFilter {
    match format!("{TARGET}=off").parse() {
        Ok(d) => filter.add_directive(d),
        Err(_) => filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_collector_base_url() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://127.0.0.1:4318/").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector:4318/v1/traces").unwrap(),
            "https://collector:4318/v1/traces"
        );
        for bad in [
            "",
            "127.0.0.1:4318",
            "ftp://x/",
            "http://x/?a=b",
            "unix:///s",
        ] {
            assert!(traces_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_log_filter_hides_the_export_spans() {
        let f = without_export_spans(tracing_subscriber::EnvFilter::new("info"));
        assert!(f.to_string().contains(&format!("{TARGET}=off")), "{f}");
    }
}
