//! Inbound traffic into sandboxes (docs/network.md "Inbound"): preview URLs
//! (`sandbox expose ID PORT` → `/_sandbox/<exposure-id>/…` on the server's own
//! listeners) and `port-forward` (raw TCP over an HTTP/1.1 Upgrade on the same listener).
//!
//! - [`Inbound`] holds the exposures ([`store`]), the token key ([`token`]) and the
//!   per-target connection slots, and answers the API ([`api`]);
//! - [`http`] routes the two URL prefixes ahead of REST and Connect and proxies;
//! - [`pipe`] moves the bytes of one connection, bounded (idle timeout, bytes) and
//!   counted as the sandbox's activity.
//!
//! Every path in is authenticated: the owner's (or an admin's) API credentials, or, for
//! an exposure only, its signed, expiring token. Connections are opened by the engine from
//! inside the sandbox's network namespace to its loopback ([`crate::engine::inbound`]):
//! they reach only the exposed port and never give the sandbox a way out.

pub mod api;
pub mod forward;
pub mod http;
pub mod pipe;
pub mod preview;
pub mod store;
pub mod token;

use crate::engine::Engine;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::sync::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Exposure, ExposureFile};
use token::TokenKey;
use tokio::sync::Semaphore;

/// The URL prefix of exposures.
pub const EXPOSE_PREFIX: &str = "/_sandbox/";
/// The URL prefix of port-forward tunnels.
pub const FORWARD_PREFIX: &str = "/_portforward/";
/// The query parameter and cookie that carry an exposure token.
pub const TOKEN_PARAM: &str = "cleanroom_token";

/// Bounds of inbound traffic.
#[derive(Debug, Clone, Copy)]
pub struct InboundLimits {
    /// Open connections per exposure (and per forwarded sandbox port) at most.
    pub max_connections: usize,
    /// A connection with no byte either way this long is closed.
    pub idle_timeout: Duration,
    /// Bytes per connection and direction at most.
    pub max_bytes: u64,
    /// An exposure's lifetime when `--ttl` is not given, and the longest one allowed.
    pub default_ttl: Duration,
    pub max_ttl: Duration,
}

impl Default for InboundLimits {
    fn default() -> Self {
        InboundLimits {
            max_connections: 64,
            idle_timeout: Duration::from_secs(300),
            max_bytes: 4 << 30,
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// An exposure with the token and path its owner is given.
#[derive(Debug, Clone)]
pub struct Issued {
    pub exposure: Exposure,
    pub token: String,
    /// `/_sandbox/<id>/?cleanroom_token=<token>`: append to the server's base URL.
    pub path: String,
    /// The whole URL under a preview domain ([`preview`]); empty without one.
    pub url: String,
}

/// The server's inbound state.
pub struct Inbound {
    engine: Arc<Engine>,
    key: TokenKey,
    file: Mutex<ExposureFile>,
    slots: Mutex<HashMap<String, Arc<Semaphore>>>,
    pub limits: InboundLimits,
    /// `serve --preview-domain`: exposures at host names of their own.
    pub preview: Option<preview::PreviewBase>,
}

fn now_secs() -> i64 {
    crate::store::now_micros() / 1_000_000
}

impl Inbound {
    /// Load the key and the stored exposures from the state directory.
    pub fn open(
        state_dir: &std::path::Path,
        engine: Arc<Engine>,
        limits: InboundLimits,
        preview: Option<preview::PreviewBase>,
    ) -> std::io::Result<Arc<Inbound>> {
        let key = TokenKey::load_or_create(state_dir)?;
        let file = ExposureFile::open(state_dir)?;
        let inbound = Arc::new(Inbound {
            engine,
            key,
            file: Mutex::new(file),
            slots: Mutex::new(HashMap::new()),
            limits,
            preview,
        });
        inbound.prune();
        Ok(inbound)
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Drop exposures that expired or whose sandbox ended; saved when anything changed.
    fn prune(&self) {
        let mut f = lock(&self.file);
        let now = now_secs();
        let before = f.items.len();
        f.items
            .retain(|e| e.expires_at > now && self.engine.sandbox_lives(&e.sandbox_id));
        if f.items.len() != before {
            if let Err(e) = f.save() {
                tracing::warn!(error = %e, "cannot save exposures");
            }
            let live: std::collections::HashSet<String> =
                f.items.iter().map(|e| e.id.clone()).collect();
            lock(&self.slots).retain(|k, _| !k.starts_with("exp_") || live.contains(k));
        }
    }

    fn issued(&self, e: Exposure) -> Issued {
        let token = self.key.sign(&e.id, e.expires_at);
        let path = format!("{EXPOSE_PREFIX}{}/?{TOKEN_PARAM}={token}", e.id);
        let url = self
            .preview
            .as_ref()
            .map(|p| p.url(&e.id, &token))
            .unwrap_or_default();
        Issued {
            exposure: e,
            token,
            path,
            url,
        }
    }

    /// Expose `port` of `sandbox_id` for `ttl` (default and cap: [`InboundLimits`]).
    /// Exposing a port already exposed returns that exposure unchanged.
    pub fn expose(
        &self,
        who: &Principal,
        sandbox_id: &str,
        port: u32,
        ttl: Option<Duration>,
    ) -> Result<Issued, EngineError> {
        let sbx = self.engine.sandbox(who, sandbox_id)?;
        let port = u16::try_from(port)
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| {
                EngineError::invalid(format!("port {port} is not a TCP port (1-65535)"))
                    .with("field", "port")
            })?;
        let ttl = ttl.unwrap_or(self.limits.default_ttl);
        if ttl.is_zero() || ttl > self.limits.max_ttl {
            return Err(EngineError::invalid(format!(
                "ttl must be between 1 and {} seconds",
                self.limits.max_ttl.as_secs()
            ))
            .with("field", "ttl_seconds"));
        }
        if !self.engine.sandbox_lives(sandbox_id) {
            return Err(crate::engine::pause::not_ready(sbx.row()));
        }
        self.engine.require_inbound(sandbox_id)?;
        self.prune();
        let mut f = lock(&self.file);
        if let Some(e) = f
            .items
            .iter()
            .find(|e| e.sandbox_id == sandbox_id && e.port == port)
        {
            return Ok(self.issued(e.clone()));
        }
        if f.of_sandbox(sandbox_id).len() >= store::MAX_PER_SANDBOX {
            return Err(EngineError::resource_exhausted(format!(
                "sandbox {sandbox_id} has {} exposures, the most allowed",
                store::MAX_PER_SANDBOX
            )));
        }
        let now = crate::store::now_micros();
        let ttl_micros = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX / 2);
        let e = Exposure {
            id: format!("exp_{}", uuid::Uuid::new_v4().simple()),
            sandbox_id: sandbox_id.into(),
            port,
            created_by: who.name.clone(),
            created_at: now / 1_000_000,
            // Rounded up: an exposure lives at least its ttl (the token's expiry is whole
            // seconds).
            expires_at: (now + ttl_micros + 999_999) / 1_000_000,
        };
        f.items.push(e.clone());
        if let Err(err) = f.save() {
            f.items.retain(|x| x.id != e.id);
            return Err(EngineError::internal(format!(
                "cannot save exposures: {err}"
            )));
        }
        drop(f);
        self.engine.inbound_event(
            sandbox_id,
            "exposed",
            format!("port {port} exposed as {} by {}", e.id, who.name),
            serde_json::json!({"exposure_id": e.id, "port": port, "by": who.name, "expires_at": e.expires_at}),
        );
        Ok(self.issued(e))
    }

    /// Remove the exposures of `sandbox_id` named by `target` (a port, or an exposure
    /// id). Their tokens stop working at once (`exposure_revoked`); open connections
    /// through them are not cut.
    pub fn unexpose(
        &self,
        who: &Principal,
        sandbox_id: &str,
        target: &str,
    ) -> Result<Vec<Exposure>, EngineError> {
        self.engine.sandbox(who, sandbox_id)?;
        let port: Option<u16> = target.parse().ok();
        let mut f = lock(&self.file);
        let (gone, kept): (Vec<Exposure>, Vec<Exposure>) = f
            .items
            .drain(..)
            .partition(|e| e.sandbox_id == sandbox_id && (Some(e.port) == port || e.id == target));
        f.items = kept;
        if gone.is_empty() {
            return Err(EngineError::new(
                ErrorCode::ExposureNotFound,
                format!("sandbox {sandbox_id} has no exposure {target:?}"),
            ));
        }
        if let Err(err) = f.save() {
            f.items.extend(gone);
            return Err(EngineError::internal(format!(
                "cannot save exposures: {err}"
            )));
        }
        drop(f);
        for e in &gone {
            lock(&self.slots).remove(&e.id);
            self.engine.inbound_event(
                sandbox_id,
                "unexposed",
                format!(
                    "exposure {} of port {} removed by {}",
                    e.id, e.port, who.name
                ),
                serde_json::json!({"exposure_id": e.id, "port": e.port, "by": who.name}),
            );
        }
        Ok(gone)
    }

    /// The exposures of `sandbox_id`, with their tokens (the owner's to see).
    pub fn list(&self, who: &Principal, sandbox_id: &str) -> Result<Vec<Issued>, EngineError> {
        self.engine.sandbox(who, sandbox_id)?;
        Ok(self.list_unchecked(sandbox_id))
    }

    /// [`Inbound::list`] for a caller that has checked ownership already.
    pub fn list_unchecked(&self, sandbox_id: &str) -> Vec<Issued> {
        self.prune();
        let items = lock(&self.file).of_sandbox(sandbox_id);
        items.into_iter().map(|e| self.issued(e)).collect()
    }

    /// The live exposure `id` (expired or of an ended sandbox: none).
    fn live(&self, id: &str) -> Option<Exposure> {
        let e = lock(&self.file).get(id).cloned()?;
        if e.expires_at > now_secs() && self.engine.sandbox_lives(&e.sandbox_id) {
            return Some(e);
        }
        self.prune();
        None
    }

    /// A connection slot of `target` (an exposure id, or `pf:<sandbox>:<port>`), if one
    /// is free.
    fn slot(&self, target: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let sem = lock(&self.slots)
            .entry(target.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.limits.max_connections)))
            .clone();
        sem.try_acquire_owned().ok()
    }
}
