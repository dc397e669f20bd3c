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
