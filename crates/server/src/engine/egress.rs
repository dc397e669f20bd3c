//! The server's side of the egress gateway: one [`Gateway`] per sandbox, started on the
//! tun device the backend hands back, with the sandbox's secrets (placeholders for the
//! guest, values for the gateway) and, when it has secrets, its private CA.
//!
//! Gateway decisions arrive on a channel and are recorded by the engine as sandbox events
//! (`egress.allow`, `egress.deny`, `egress.error`) and, for denies, as warnings on the
//! running executions' output streams.

use super::egress_notes::NoteSender;
use crate::identity::secrets::SecretStore;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::sync::lock;
use cleanroom_backend::{GuestLayout, NetworkDevice};
use cleanroom_egress::{EgressEvent, Gateway, SandboxCa, Secret, Secrets, UpstreamConfig};
use cleanroom_policy::{CompiledPolicy, LiveRules};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One gateway decision, tagged with the sandbox it belongs to.
#[derive(Debug)]
pub struct EgressNote {
    pub sandbox_id: String,
    pub policy_hash: String,
    pub event: EgressEvent,
}

/// Running gateways and what each sandbox's guest sees of its secrets.
pub struct EgressHub {
    /// Where the backend puts the sandbox's CA files.
    layout: GuestLayout,
    upstream: Arc<UpstreamConfig>,
    secrets: Arc<SecretStore>,
    notes: NoteSender,
    sandboxes: Mutex<HashMap<String, Attached>>,
    /// Each running sandbox's approval requests ([`crate::engine::approvals`]).
    pub(crate) approvals: crate::engine::approvals::ApprovalHub,
    /// Held across one live-rules change, from reading the stored rules to applying the
    /// new ones ([`crate::engine::network`]), so concurrent changes cannot interleave.
    pub(crate) network_updates: Mutex<()>,
}

struct Attached {
    gateway: Gateway,
    /// The compiled policy's network section: live rules apply on top of it.
    base: cleanroom_policy::NetworkPolicy,
    /// Environment entries for the guest: placeholders, and the CA bundle variables.
    env: Vec<(String, String)>,
}

/// A sandbox's secrets and CA, made before it is provisioned (the backend installs the CA
/// certificate in its root).
pub struct Prepared {
    secrets: Secrets,
    ca: Option<SandboxCa>,
    registries: cleanroom_egress::registry::Mediation,
    /// The owner's share of the gateways' server-wide budgets.
    share: cleanroom_egress::share::Share,
}

impl Prepared {
    /// The CA certificate the sandbox must trust, if it has secrets.
    pub fn ca_pem(&self) -> Option<String> {
        self.ca.as_ref().map(SandboxCa::cert_pem)
    }
}

/// Environment variables that point common TLS stacks at the sandbox's CA bundle.
fn ca_env(layout: &GuestLayout) -> Vec<(String, String)> {
    let bundle = layout.ca_bundle;
    vec![
        ("SSL_CERT_FILE".into(), bundle.into()),
        ("REQUESTS_CA_BUNDLE".into(), bundle.into()),
        ("CURL_CA_BUNDLE".into(), bundle.into()),
        ("GIT_SSL_CAINFO".into(), bundle.into()),
        ("NODE_EXTRA_CA_CERTS".into(), layout.ca_path.into()),
    ]
}

impl EgressHub {
    pub fn new(
        upstream: Arc<UpstreamConfig>,
        secrets: Arc<SecretStore>,
        notes: NoteSender,
        layout: GuestLayout,
    ) -> Self {
        EgressHub {
            layout,
            upstream,
            secrets,
            notes,
            sandboxes: Mutex::new(HashMap::new()),
            approvals: Default::default(),
            network_updates: Mutex::new(()),
        }
    }

    /// The gateways' channel to the recording task: an execution's supervisor waits on it
    /// for the decisions made before its process ended ([`super::egress_notes`]).
    pub fn notes(&self) -> NoteSender {
        self.notes.clone()
    }

    /// Resolve the policy's secrets against the server's values and make the sandbox's CA.
    /// Fails closed (`secret_unavailable`) when a secret has no value on this server.
    /// Placeholders are random per sandbox, so one seen in one sandbox means nothing in
    /// another. The gateway's flows and buffered bodies are charged to `account`'s share
    /// of the server's budgets (the principal the sandbox counts for: see [`crate::engine::Engine`]'s
    /// `account_of`).
    pub fn prepare(
        &self,
        sandbox_id: &str,
        policy: &CompiledPolicy,
        registries: cleanroom_egress::registry::Mediation,
        account: &str,
    ) -> Result<Prepared, EngineError> {
        let share = cleanroom_egress::share::Shares::server().owner(account);
        // Mediated bodies are charged to the same owner's share of the body budget.
        let registries = registries.with_share(share.clone());
        let missing: Vec<&str> = policy
            .secrets
            .keys()
            .filter(|id| self.secrets.get(id).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(EngineError::new(
                ErrorCode::SecretUnavailable,
                format!(
                    "the policy needs secret(s) {} that this server has no value for \
                     (give them in `serve --secrets-file` or as {}<ID> in the server's environment)",
                    missing.join(", "),
                    crate::identity::secrets::ENV_PREFIX
                ),
            ));
        }
        let mut entries = Vec::new();
        let mut hosts = Vec::new();
        for (id, binding) in &policy.secrets {
            let nonce = uuid::Uuid::new_v4().simple().to_string();
            let value = self.secrets.get(id).unwrap_or_default().to_string();
            hosts.extend(binding.hosts.iter().cloned());
            entries.push(Secret::new(
                id.clone(),
                format!("cleanroom-secret-{id}-{nonce}"),
                binding.clone(),
                value,
            ));
        }
        // Registry hosts: TLS to them is terminated (and mediated) by the gateway too.
        hosts.extend(registries.hosts());
        let ca =
            if hosts.is_empty() {
                None
            } else {
                Some(SandboxCa::generate(sandbox_id, &hosts).map_err(|e| {
                    EngineError::internal(format!("cannot create the sandbox CA: {e}"))
                })?)
            };
        Ok(Prepared {
            secrets: Secrets::new(entries),
            ca,
            registries,
            share,
        })
    }

    /// Start serving a sandbox's network device, judging by the policy plus `live` (the
    /// sandbox's stored live rules: empty for a new sandbox).
    pub fn attach(
        &self,
        sandbox_id: &str,
        policy: &CompiledPolicy,
        live: &LiveRules,
        device: &NetworkDevice,
        prepared: Prepared,
    ) -> std::io::Result<()> {
        let notes = self.notes.clone();
        let (sid, hash) = (sandbox_id.to_string(), policy.policy_hash());
        let sink: cleanroom_egress::EventSink = Arc::new(move |event| {
            crate::telemetry::gateway::decision(&sid, &hash, &event);
            notes.send(EgressNote {
                sandbox_id: sid.clone(),
                policy_hash: hash.clone(),
                event,
            });
        });
        let mut env = prepared.secrets.placeholders();
        if prepared.ca.is_some() {
            env.extend(ca_env(&self.layout));
        }
        let mediators = cleanroom_egress::Mediators {
            registries: prepared.registries,
            approvals: self.approvals.open(sandbox_id, &policy.network),
            share: prepared.share,
        };
        let effective = live.effective(&policy.network);
        let gateway = match device {
            NetworkDevice::Tun(fd) => Gateway::start(
                fd.try_clone()?,
                effective,
                self.upstream.clone(),
                prepared.secrets,
                prepared.ca,
                sink,
                mediators,
            )?,
            NetworkDevice::Kernel(s) => Gateway::start_kernel(
                cleanroom_egress::KernelSockets {
                    listener: s.listener.try_clone()?,
                    dns: s.dns.try_clone()?,
                    log: s.log.try_clone()?,
                },
                effective,
                self.upstream.clone(),
                prepared.secrets,
                prepared.ca,
                sink,
                mediators,
            )?,
        };
        lock(&self.sandboxes).insert(
            sandbox_id.to_string(),
            Attached {
                gateway,
                base: policy.network.clone(),
                env,
            },
        );
        Ok(())
    }

    /// Judge the sandbox's new connections by its policy plus `live` from now on; with
    /// `cut`, end established flows that are denied now. `false`: no gateway runs.
    pub fn replace_rules(&self, sandbox_id: &str, live: &LiveRules, cut: bool) -> bool {
        match lock(&self.sandboxes).get(sandbox_id) {
            Some(a) => {
                a.gateway.replace_policy(live.effective(&a.base), cut);
                true
            }
            None => false,
        }
    }

    /// Is a gateway serving the sandbox?
    pub fn attached(&self, sandbox_id: &str) -> bool {
        lock(&self.sandboxes).contains_key(sandbox_id)
    }

    /// Bytes the sandbox sent and received through its gateway (`None`: no gateway).
    pub fn traffic(&self, sandbox_id: &str) -> Option<(u64, u64)> {
        lock(&self.sandboxes)
            .get(sandbox_id)
            .map(|a| a.gateway.traffic())
    }

    /// Bytes every live gateway moved so far: (sandbox → upstream, upstream → sandbox).
    pub fn traffic_total(&self) -> (u64, u64) {
        lock(&self.sandboxes)
            .values()
            .map(|a| a.gateway.traffic())
            .fold((0, 0), |(t, r), (a, b)| (t + a, r + b))
    }

    /// Stop a sandbox's gateway (closing every proxied connection). Idempotent.
    pub fn detach(&self, sandbox_id: &str) {
        let gone = lock(&self.sandboxes).remove(sandbox_id);
        if let Some(a) = gone {
            // Its bytes stay counted in `/metrics` (crate::metrics).
            let (tx, rx) = a.gateway.traffic();
            crate::metrics::gateway_retired(tx, rx);
        }
        self.approvals.close(sandbox_id);
    }

    /// Environment entries for executions in the sandbox: each secret id with its
    /// placeholder, and the CA bundle variables when the sandbox has a CA.
    pub fn guest_env(&self, sandbox_id: &str) -> Vec<(String, String)> {
        lock(&self.sandboxes)
            .get(sandbox_id)
            .map(|a| a.env.clone())
            .unwrap_or_default()
    }
}

/// The data plane of a server that names none (`serve --egress-plane`).
pub const DEFAULT_PLANE: cleanroom_backend::Plane = cleanroom_backend::Plane::Tun;

static PLANE: std::sync::OnceLock<cleanroom_backend::Plane> = std::sync::OnceLock::new();

/// Choose the data plane new sandboxes get (docs/network.md, "Data planes"), once, at
/// startup: a later call (a second server in one test process) keeps the first choice.
/// Returns the plane in effect.
pub fn set_plane(plane: Option<cleanroom_backend::Plane>) -> cleanroom_backend::Plane {
    *PLANE.get_or_init(|| plane.unwrap_or(DEFAULT_PLANE))
}

/// The egress data plane new sandboxes get.
pub fn plane() -> cleanroom_backend::Plane {
    *PLANE.get_or_init(|| DEFAULT_PLANE)
}

/// Event attributes of one decision (the `attributes` JSON of a `SandboxEvent`).
pub fn attributes(note: &EgressNote) -> serde_json::Value {
    let e = &note.event;
    let mut m = serde_json::json!({
        "host": e.host,
        "port": e.port,
        "protocol": e.protocol,
        "decision": e.decision.as_str(),
        "policy_hash": note.policy_hash,
    });
    if !e.reason.is_empty() {
        m["reason"] = e.reason.into();
    }
    if e.suppressed > 0 {
        m["suppressed"] = e.suppressed.into();
    }
    if !e.secrets.is_empty() {
        m["secrets"] = e.secrets.join(",").into();
    }
    if !e.request_id.is_empty() {
        m["request_id"] = e.request_id.clone().into();
    }
    m
}
