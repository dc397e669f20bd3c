//! A live sandbox's resource usage: the backend's kernel counters (CPU, memory, pids,
//! writable filesystems) plus the egress gateway's byte counters.

use super::*;

/// What `GetSandbox` reports.
#[derive(Debug, Clone, Default)]
pub struct SandboxUsage {
    pub sampled_at: i64,
    pub backend: cleanroom_backend::Usage,
    pub network_tx_bytes: u64,
    pub network_rx_bytes: u64,
}

impl Engine {
    /// Usage of a READY sandbox (`None` for one that is not running).
    pub(in crate::engine) async fn sandbox_usage(
        &self,
        row: &SandboxRow,
    ) -> Result<Option<SandboxUsage>, EngineError> {
        if row.status != ss::READY {
            return Ok(None);
        }
        let backend = match self.backend.usage(&row.id).await {
            Ok(u) => u,
            // Gone between the status read and now: nothing to report.
            Err(cleanroom_backend::BackendError::SandboxNotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let (tx, rx) = self.egress.traffic(&row.id).unwrap_or_default();
        Ok(Some(SandboxUsage {
            sampled_at: crate::store::now_micros(),
            backend,
            network_tx_bytes: tx,
            network_rx_bytes: rx,
        }))
    }
}

/// The server's own usage for `/metrics` ([`crate::rest::scrape`]).
#[derive(Debug, Clone, Default)]
pub struct ServerUsage {
    /// Sandboxes by status and runtime (the backend each was made with).
    pub sandboxes: Vec<(crate::model::status::SandboxStatus, String, u64)>,
    /// Bytes the live gateways moved: (sandbox → upstream, upstream → sandbox).
    pub live_gateway_tx: u64,
    pub live_gateway_rx: u64,
    /// Retained execution output and its cap (`serve --output-max-total-bytes`).
    pub output_bytes: u64,
    pub output_max_bytes: u64,
    /// Free bytes of the state filesystem and the floor output retention keeps.
    pub state_free_bytes: Option<u64>,
    pub state_min_free_bytes: u64,
}

impl Engine {
    /// What `/metrics` reports of the server's state, read now (blocking: a store query
    /// and a statvfs; call it off the async workers).
    pub fn server_usage(&self) -> Result<ServerUsage, EngineError> {
        let (live_gateway_tx, live_gateway_rx) = self.egress.traffic_total();
        let cfg = self.retention.config();
        Ok(ServerUsage {
            sandboxes: self.store.sandbox_counts()?,
            live_gateway_tx,
            live_gateway_rx,
            output_bytes: self.retention.total(),
            output_max_bytes: cfg.max_total_bytes,
            state_free_bytes: crate::output::quota::free_bytes(&self.logs_dir),
            state_min_free_bytes: cfg.min_free_bytes,
        })
    }
}
