//! `SandboxLifetimeService` (`SetSandboxTimeout`) and the lifetime fields of every
//! `Sandbox` message the API returns (see [`crate::engine::lifetimes`]).

use crate::api::{sandbox_msg, to_connect, ts, Api};
use crate::engine::OwnedSandbox;
use crate::identity::auth::principal_of;
use crate::store::SandboxRow;
use cleanroom_proto::cleanroom::v1::*;
use connectrpc::{RequestContext, Response, ServiceRequest, ServiceResult};
use std::sync::Arc;

/// Mount the service on `router`.
pub fn register(api: Arc<Api>, router: connectrpc::Router) -> connectrpc::Router {
    SandboxLifetimeServiceExt::register(api, router)
}

impl Api {
    /// `r` as a message, with its lifetime (TTL end, timeouts, last activity, stop reason).
    pub(crate) fn sandbox_out(&self, r: &SandboxRow) -> Sandbox {
        let mut m = sandbox_msg(r);
        match self.engine.sandbox_lifetime(r) {
            Ok((l, last)) => {
                m.expires_at = ts(l.expires_at);
                m.ttl_seconds = l.ttl_seconds;
                m.idle_timeout_seconds = l.idle_timeout_seconds;
                m.last_activity_at = ts(last);
                m.stop_reason = l.stop_reason;
                m.suspend_after_seconds = l.suspend_after_seconds;
                m.suspended_at = ts(l.suspended_at);
            }
            Err(e) => tracing::warn!(sandbox_id = %r.id, error = %e, "lifetime unavailable"),
        }
        m
    }

    /// [`Api::sandbox_out`] plus live usage (`GetSandbox`); a usage read that fails is
    /// logged and left out, never failing the lookup.
    pub(crate) async fn sandbox_live(&self, sbx: &OwnedSandbox) -> Sandbox {
        let r = sbx.row();
        let mut m = self.sandbox_out(r);
        match sbx.usage().await {
            Ok(Some(u)) => {
                m.usage = SandboxUsage {
                    sampled_at: ts(u.sampled_at),
                    cpu_usec: u.backend.cpu_usec,
                    memory_bytes: u.backend.memory_bytes,
                    memory_peak_bytes: u.backend.memory_peak_bytes,
                    pids: u.backend.pids,
                    filesystems: u
                        .backend
                        .filesystems
                        .into_iter()
                        .map(|f| FilesystemUsage {
                            path: f.path,
                            used_bytes: f.used_bytes,
                            size_bytes: f.size_bytes,
                            ..Default::default()
                        })
                        .collect(),
                    network_tx_bytes: u.network_tx_bytes,
                    network_rx_bytes: u.network_rx_bytes,
                    ..Default::default()
                }
                .into();
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(sandbox_id = %r.id, error = %e.message, "usage unavailable"),
        }
        m
    }
}

#[allow(refining_impl_trait)]
impl SandboxLifetimeService for Api {
    async fn set_sandbox_timeout(
        &self,
        ctx: RequestContext,
        request: ServiceRequest<'_, SetSandboxTimeoutRequest>,
    ) -> ServiceResult<SetSandboxTimeoutResponse> {
        let who = principal_of(&ctx).map_err(to_connect)?;
        let req = request.to_owned_message();
        let sbx = self
            .engine
            .sandbox(&who, &req.sandbox_id)
            .map_err(to_connect)?;
        let row = sbx
            .set_timeout(
                (req.ttl_seconds, req.idle_timeout_seconds),
                (req.clear_ttl, req.clear_idle_timeout),
            )
            .map_err(to_connect)?;
        Response::ok(SetSandboxTimeoutResponse {
            sandbox: self.sandbox_out(&row).into(),
            ..Default::default()
        })
    }
}
