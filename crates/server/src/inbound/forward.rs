//! `port-forward`: `GET /_portforward/<sandbox-id>/<port>` with `Connection: Upgrade`,
//! `Upgrade: cleanroom-portforward` on any API listener, authenticated like every API call
//! (the owner or an admin; another principal gets `sandbox_not_found`). After the `101`
//! the connection carries the raw bytes of one TCP connection to the sandbox's port.
//!
//! An HTTP/1.1 Upgrade rather than a Connect stream: the bytes go unframed through the
//! same listener and the same authentication on the unix socket, TCP and TLS (the client
//! opens one HTTP/1.1 connection per forwarded connection; HTTP/2 has no Upgrade).
//!
//! [`Life`] is one inbound connection's record, shared with [`super::http`]: the
//! `inbound.open` event when made, `inbound.close` (bytes, duration, why) when the last
//! holder lets go (both written by a task of their own, in that order, so no store write
//! is on a request's path), and the connection slot held in between.

use super::http::{empty, State, Via};
use super::pipe::{Meter, Metered};
use super::FORWARD_PREFIX;
use crate::api::errors::ApiBody;
use crate::api::interceptor::admit;
use crate::engine::Engine;
use crate::model::error::EngineError;
use http::{header, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The protocol name of the Upgrade.
pub const UPGRADE: &str = "cleanroom-portforward";

/// One inbound connection, from open to close.
pub struct Life {
    engine: Arc<Engine>,
    sandbox_id: String,
    port: u16,
    target: String,
    pub meter: Arc<Meter>,
    reason: Mutex<&'static str>,
    /// The close event's message and attributes, to the task that records this
    /// connection's events in order, off the request's path.
    close: Option<tokio::sync::oneshot::Sender<(String, serde_json::Value)>>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Life {
    /// Record `inbound.open` for a connection to `port` of `sandbox_id` through `target`
    /// (an exposure id, or `port-forward`).
    pub(super) fn open(
        engine: Arc<Engine>,
        sandbox_id: &str,
        port: u16,
        target: &str,
        via: &Via,
        meter: Arc<Meter>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> Life {
        let message = format!(
            "inbound connection to port {port} ({target}, by {})",
            via.describe()
        );
        let attrs = serde_json::json!({"port": port, "target": target, "via": via.describe()});
        // The store writes are not on the request's path; open is recorded before close.
        let (close, closed) = tokio::sync::oneshot::channel::<(String, serde_json::Value)>();
        let (e, id) = (engine.clone(), sandbox_id.to_string());
        tokio::spawn(async move {
            let (e2, id2) = (e.clone(), id.clone());
            let open = move || e2.inbound_event(&id2, "open", message, attrs);
            let _ = tokio::task::spawn_blocking(open).await;
            if let Ok((message, attrs)) = closed.await {
                let close = move || e.inbound_event(&id, "close", message, attrs);
                let _ = tokio::task::spawn_blocking(close).await;
            }
        });
        Life {
            engine,
            sandbox_id: sandbox_id.into(),
            port,
            target: target.into(),
            meter,
            reason: Mutex::new("closed"),
            close: Some(close),
            _permit: permit,
        }
    }

    /// Why it ended, when not by either side closing.
    pub fn set_reason(&self, why: &'static str) {
        if let Ok(mut r) = self.reason.lock() {
            *r = why;
        }
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        let mut reason = self.reason.lock().map(|r| *r).unwrap_or("closed");
        if self.meter.over_cap() {
            reason = "byte cap";
        }
        let (to, from) = (
            self.meter.to_sandbox.load(Ordering::Relaxed),
            self.meter.from_sandbox.load(Ordering::Relaxed),
        );
        let ms = self.meter.elapsed().as_millis() as u64;
        let message = format!(
            "inbound connection to port {} ({}) closed: {reason}; {to} bytes in, {from} bytes out, {ms} ms",
            self.port, self.target
        );
        let attrs = serde_json::json!({"port": self.port, "target": self.target, "reason": reason,
            "bytes_to_sandbox": to, "bytes_from_sandbox": from, "duration_ms": ms});
        let unsent = match self.close.take() {
            Some(tx) => tx.send((message, attrs)).err(),
            None => Some((message, attrs)),
        };
        if let Some((message, attrs)) = unsent {
            self.engine
                .inbound_event(&self.sandbox_id, "close", message, attrs);
        }
    }
}

/// `/_portforward/<sandbox-id>/<port>`.
pub(super) async fn handle(
    st: Arc<State>,
    mut req: Request<Incoming>,
) -> Result<Response<ApiBody>, EngineError> {
    let who = admit(
        &st.auth,
        req.extensions(),
        req.headers()
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes()),
    )?;
    let path = req.uri().path().to_string();
    let rest = &path[FORWARD_PREFIX.len()..];
    let Some((sandbox_id, port)) = rest.split_once('/') else {
        return Err(EngineError::invalid(
            "expected /_portforward/<sandbox-id>/<port>",
        ));
    };
    let inbound = &st.inbound;
    let engine = inbound.engine.clone();
    engine.sandbox(&who, sandbox_id)?;
    let port: u16 = port.parse().ok().filter(|p| *p != 0).ok_or_else(|| {
        EngineError::invalid(format!("port {port:?} is not a TCP port (1-65535)"))
            .with("field", "port")
    })?;
    engine.require_inbound(sandbox_id)?;
    let asks_upgrade = req
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case(UPGRADE));
    if req.version() != http::Version::HTTP_11 || !asks_upgrade {
        return Err(EngineError::invalid(format!(
            "port-forward needs an HTTP/1.1 request with `Connection: Upgrade` and `Upgrade: {UPGRADE}`"
        )));
    }
    let via = Via::Principal(who);
    let refused = |reason: &str, err: EngineError| {
        engine.inbound_event(
            sandbox_id,
            "refused",
            format!("port-forward to port {port} refused: {reason}"),
            serde_json::json!({"port": port, "target": "port-forward", "via": via.describe(), "reason": reason, "code": err.code.as_str()}),
        );
        err
    };
    let Some(permit) = inbound.slot(&format!("pf:{sandbox_id}:{port}")) else {
        return Err(refused(
            "connection cap",
            EngineError::resource_exhausted(format!(
                "port {port} of sandbox {sandbox_id} has {} forwarded connections, the most allowed",
                inbound.limits.max_connections
            )),
        ));
    };
    let stream = match engine.inbound_dial(sandbox_id, port, "port-forward").await {
        Ok(s) => s,
        Err(err) => {
            let reason = err.code.as_str().to_string();
            return Err(refused(&reason, err));
        }
    };
    let meter = Meter::new(engine.clone(), sandbox_id, inbound.limits);
    let life = Life::open(
        engine.clone(),
        sandbox_id,
        port,
        "port-forward",
        &via,
        meter.clone(),
        permit,
    );
    let on_upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(client) = on_upgrade.await else {
            life.set_reason("upgrade failed");
            return;
        };
        let mut a = TokioIo::new(client);
        let mut b = Metered::new(stream, meter);
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut a, &mut b) => {}
            _ = life.meter.idle() => life.set_reason("idle"),
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, UPGRADE)
        .header(header::CONNECTION, "upgrade")
        .body(empty())
        .map_err(|err| EngineError::internal(format!("response: {err}")))
}
