//! One sandbox's gateway context: what every connection handler consults (policy, upstream
//! settings, secrets, registries, names, events, limits, approvals), and the two answers
//! every path writes the same way (a refusal with its event, an upstream failure).

use crate::approval::Approvals;
use crate::body::{text, Body};
use crate::event::EgressEvent;
use crate::rules::Rules;
use crate::secrets::Secrets;
use crate::tls::SandboxCa;
use crate::upstream::{UpstreamConfig, UpstreamError};
use crate::{event, limits, names, registry};
use cleanroom_policy::{DenyReason, NetworkPolicy};
use hyper::{Response, StatusCode};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpStream;

/// Everything one sandbox's gateway needs to decide.
pub struct Ctx {
    /// The effective network policy (the compiled one plus live rules), replaceable while
    /// the gateway runs: read it once per decision with [`Ctx::policy`].
    pub rules: Arc<Rules>,
    pub upstream: Arc<UpstreamConfig>,
    pub secrets: Secrets,
    /// The sandbox's CA, when it has secrets (TLS to bound hosts is terminated with it).
    pub ca: Option<SandboxCa>,
    /// Mediated package registries (`sandbox.registries`).
    pub registries: registry::Mediation,
    pub(crate) names: names::Names,
    pub(crate) events: event::Limited,
    pub(crate) limits: limits::SandboxLimits,
    /// Open approval requests, remembered answers, learned destinations.
    pub(crate) approvals: Arc<Approvals>,
}

impl Ctx {
    /// The network policy in effect now.
    pub fn policy(&self) -> Arc<NetworkPolicy> {
        self.rules.current()
    }

    pub(crate) async fn upstream_connect(
        &self,
        host: &str,
        port: u16,
    ) -> Result<TcpStream, UpstreamError> {
        match host.parse::<IpAddr>() {
            Ok(ip) => self.upstream.connect_addr(SocketAddr::new(ip, port)).await,
            Err(_) => self.upstream.connect(host, port).await,
        }
    }

    pub(crate) fn report_upstream_error(
        &self,
        host: &str,
        port: u16,
        proto: &'static str,
        e: UpstreamError,
    ) {
        self.events.emit(match e {
            UpstreamError::Denied(r, msg) => EgressEvent::deny(host, port, proto, r, msg),
            UpstreamError::Unreachable(msg) => EgressEvent::error(host, port, proto, msg),
        });
    }
}

/// Refuse a request: the deny event, and a 403 naming the reason.
pub(crate) fn denied(
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    r: DenyReason,
    msg: String,
) -> Response<Body> {
    ctx.events
        .emit(EgressEvent::deny(host, port, proto, r, msg.clone()));
    text(
        StatusCode::FORBIDDEN,
        Some(r.as_str()),
        format!("cleanroom: egress denied [{r}]: {msg}\n"),
    )
}

/// Answer a request whose upstream could not be connected: a refusal (its address) or a 502.
pub(crate) fn resp_for(
    ctx: &Ctx,
    host: &str,
    port: u16,
    proto: &'static str,
    e: UpstreamError,
) -> Response<Body> {
    match e {
        UpstreamError::Denied(r, msg) => denied(ctx, host, port, proto, r, msg),
        UpstreamError::Unreachable(msg) => {
            ctx.events
                .emit(EgressEvent::error(host, port, proto, msg.clone()));
            text(
                StatusCode::BAD_GATEWAY,
                None,
                format!("cleanroom: upstream unreachable: {msg}\n"),
            )
        }
    }
}
