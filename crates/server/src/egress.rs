//! The server's side of the egress gateway: one [`Gateway`] per sandbox, started on the
//! tun device the backend hands back, and the secret placeholders the sandbox sees.
//!
//! Gateway decisions arrive on a channel and are recorded by the engine as sandbox events
//! (`egress.allow`, `egress.deny`, `egress.error`) and, for denies, as warnings on the
//! running executions' output streams.

use cleanroom_backend::NetworkDevice;
use cleanroom_egress::{EgressEvent, Gateway, Placeholders, UpstreamConfig};
use cleanroom_policy::CompiledPolicy;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// One gateway decision, tagged with the sandbox it belongs to.
#[derive(Debug)]
pub struct EgressNote {
    pub sandbox_id: String,
    pub policy_hash: String,
    pub event: EgressEvent,
}

/// Running gateways and per-sandbox placeholders.
pub struct EgressHub {
    upstream: Arc<UpstreamConfig>,
    notes: mpsc::UnboundedSender<EgressNote>,
    sandboxes: Mutex<HashMap<String, Attached>>,
}

struct Attached {
    _gateway: Gateway,
    placeholders: Placeholders,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl EgressHub {
    pub fn new(upstream: Arc<UpstreamConfig>, notes: mpsc::UnboundedSender<EgressNote>) -> Self {
        EgressHub {
            upstream,
            notes,
            sandboxes: Mutex::new(HashMap::new()),
        }
    }

    /// Placeholders for the policy's secrets: random per sandbox, so a value seen in one
    /// sandbox means nothing in another.
    pub fn make_placeholders(policy: &CompiledPolicy) -> Placeholders {
        Placeholders {
            entries: policy
                .secrets
                .keys()
                .map(|id| {
                    let nonce = uuid::Uuid::new_v4().simple().to_string();
                    (id.clone(), format!("cleanroom-secret-{id}-{nonce}"))
                })
                .collect(),
        }
    }

    /// Start serving a sandbox's network device.
    pub fn attach(
        &self,
        sandbox_id: &str,
        policy: &CompiledPolicy,
        device: &NetworkDevice,
        placeholders: Placeholders,
    ) -> std::io::Result<()> {
        let fd = device.0.try_clone()?;
        let notes = self.notes.clone();
        let (sid, hash) = (sandbox_id.to_string(), policy.policy_hash());
        let sink: cleanroom_egress::EventSink = Arc::new(move |event| {
            let _ = notes.send(EgressNote {
                sandbox_id: sid.clone(),
                policy_hash: hash.clone(),
                event,
            });
        });
        let gateway = Gateway::start(
            fd,
            policy.network.clone(),
            self.upstream.clone(),
            placeholders.clone(),
            sink,
        )?;
        lock(&self.sandboxes).insert(
            sandbox_id.to_string(),
            Attached {
                _gateway: gateway,
                placeholders,
            },
        );
        Ok(())
    }

    /// Stop a sandbox's gateway (closing every proxied connection). Idempotent.
    pub fn detach(&self, sandbox_id: &str) {
        lock(&self.sandboxes).remove(sandbox_id);
    }

    /// Environment entries (secret id -> placeholder) for executions in the sandbox.
    pub fn placeholder_env(&self, sandbox_id: &str) -> Vec<(String, String)> {
        lock(&self.sandboxes)
            .get(sandbox_id)
            .map(|a| a.placeholders.entries.clone())
            .unwrap_or_default()
    }
}

/// Event attributes of one decision (the `attributes` JSON of a `SandboxEvent`).
pub fn attributes(note: &EgressNote) -> serde_json::Value {
    let e = &note.event;
    let mut m = serde_json::json!({
        "host": e.host,
        "port": e.port,
        "protocol": e.protocol,
        "decision": e.decision,
        "policy_hash": note.policy_hash,
    });
    if !e.reason.is_empty() {
        m["reason"] = e.reason.into();
    }
    if e.suppressed > 0 {
        m["suppressed"] = e.suppressed.into();
    }
    m
}
