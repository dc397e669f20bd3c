//! One scrape of `/metrics`: the event metrics ([`crate::metrics::Metrics`]) and the server's state
//! read now ([`crate::engine::usage::ServerUsage`]) in one OpenMetrics text document.
//! State metrics live in a registry made for this scrape and dropped after it: nothing
//! is kept up to date between scrapes.

use crate::engine::usage::ServerUsage;
use crate::engine::Engine;
use crate::model::error::EngineError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::{Registry, Unit};
use std::sync::Arc;

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct SandboxLabels {
    status: String,
    runtime: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DirectionLabels {
    direction: &'static str,
}

/// The whole document for one scrape.
/// `node`: this server's cluster node name (`serve --cluster`), which labels every series.
pub async fn render(engine: Arc<Engine>, node: Option<String>) -> Result<String, EngineError> {
    // A store query and a statvfs: off the async workers.
    let usage = tokio::task::spawn_blocking(move || engine.server_usage())
        .await
        .map_err(|e| EngineError::internal(format!("metrics: {e}")))??;
    encode(&usage, node.as_deref())
        .map_err(|e| EngineError::internal(format!("metrics encoding: {e}")))
}

/// `usage` plus the event metrics, encoded.
pub fn encode(usage: &ServerUsage, node: Option<&str>) -> Result<String, std::fmt::Error> {
    let state = state_registry(usage, node);
    let mut out = String::new();
    prometheus_client::encoding::text::encode_registry(
        &mut out,
        &crate::metrics::global().registry(node),
    )?;
    prometheus_client::encoding::text::encode_registry(&mut out, &state)?;
    prometheus_client::encoding::text::encode_eof(&mut out)?;
    Ok(out)
}

fn state_registry(u: &ServerUsage, node: Option<&str>) -> Registry {
    let mut r = crate::metrics::labelled_registry(node);
    let sandboxes = Family::<SandboxLabels, Gauge>::default();
    for (status, runtime, n) in &u.sandboxes {
        sandboxes
            .get_or_create(&SandboxLabels {
                status: status.name().to_ascii_lowercase(),
                runtime: runtime.clone(),
            })
            .set(i64::try_from(*n).unwrap_or(i64::MAX));
    }
    r.register(
        "sandboxes",
        "Sandboxes known to the server by status and runtime (stopped ones until deleted)",
        sandboxes,
    );
    let (retired_tx, retired_rx) = crate::metrics::global().retired_traffic();
    let bytes = Family::<DirectionLabels, Counter64>::default();
    bytes
        .get_or_create(&DirectionLabels { direction: "tx" })
        .inc_by(retired_tx.saturating_add(u.live_gateway_tx));
    bytes
        .get_or_create(&DirectionLabels { direction: "rx" })
        .inc_by(retired_rx.saturating_add(u.live_gateway_rx));
    r.register_with_unit(
        "gateway",
        "Bytes the egress gateways moved (tx: sandbox to upstream, rx: upstream to sandbox)",
        Unit::Bytes,
        bytes,
    );
    let gauge = |v: u64| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    r.register_with_unit(
        "output_store",
        "Bytes of execution output retained",
        Unit::Bytes,
        gauge(u.output_bytes),
    );
    r.register_with_unit(
        "output_store_max",
        "Output retention's cap: retaining stops at it (serve --output-log-max-mb)",
        Unit::Bytes,
        gauge(u.output_max_bytes),
    );
    if let Some(free) = u.state_free_bytes {
        r.register_with_unit(
            "state_disk_free",
            "Free bytes of the state directory's filesystem",
            Unit::Bytes,
            gauge(free),
        );
    }
    r.register_with_unit(
        "state_disk_min_free",
        "Output retention stops below this many free bytes (serve --output-log-min-free-mb)",
        Unit::Bytes,
        gauge(u.state_min_free_bytes),
    );
    r
}

type Counter64 = prometheus_client::metrics::counter::Counter<u64>;
