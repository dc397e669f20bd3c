//! Seed 002's JSON shapes (camelCase) and their translation to the Connect request
//! messages. Unknown fields are refused (`invalid_argument`), never ignored: a field the
//! caller thinks applies but this server does not know must not be dropped silently.

use crate::model::error::EngineError;
use cleanroom_proto::cleanroom::v1::*;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `{"publicKey": "<base64>", "algorithm": "Ed25519"}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentIdentity {
    pub public_key: String,
    #[serde(default)]
    pub algorithm: Option<String>,
}

impl AgentIdentity {
    /// The key as the API takes it (`ed25519:<base64>`); other algorithms are refused.
    fn key(&self, field: &str) -> Result<String, EngineError> {
        match self.algorithm.as_deref().map(str::to_ascii_lowercase) {
            None => Ok(format!("ed25519:{}", self.public_key)),
            Some(a) if a == "ed25519" => Ok(format!("ed25519:{}", self.public_key)),
            Some(a) => Err(EngineError::invalid(format!(
                "{field}.algorithm {a:?}: only Ed25519 identities are supported"
            ))
            .with("field", field)),
        }
    }
}

/// The keys of a delegation chain.
pub fn chain(ids: &[AgentIdentity], field: &str) -> Result<Vec<String>, EngineError> {
    ids.iter()
        .enumerate()
        .map(|(i, a)| a.key(&format!("{field}[{i}]")))
        .collect()
}

/// An optional agent identity's key (empty: none).
pub fn agent(id: &Option<AgentIdentity>, field: &str) -> Result<String, EngineError> {
    id.as_ref()
        .map(|a| a.key(field))
        .unwrap_or(Ok(String::new()))
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    pub cpu_millicores: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub disk_bytes: Option<u64>,
    pub pid_limit: Option<u64>,
    /// Bytes of output retained for the sandbox (an extension of seed 002).
    pub output_bytes: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicy {
    pub default_action: Option<String>,
    #[serde(default)]
    pub egress_rules: Vec<EgressRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EgressRule {
    pub destination: Destination,
    pub action: String,
    /// Ports (an extension of seed 002; absent: the policy's default).
    #[serde(default)]
    pub ports: Vec<u16>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Destination {
    pub domain: String,
}

/// Seed 002's `SandboxSpec`, plus `policyYaml`, `labels` and `noPool`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSpec {
    #[serde(default)]
    pub image: String,
    pub agent_nhi: Option<AgentIdentity>,
    #[serde(default)]
    pub delegation_chain: Vec<AgentIdentity>,
    pub runtime_class: Option<String>,
    pub resources: Option<Resources>,
    pub network_policy: Option<NetworkPolicy>,
    /// Secret values never travel in a request: only `[]` is accepted (secrets are bound by
    /// the policy and held by the server).
    #[serde(default)]
    pub secrets: Vec<Value>,
    #[serde(default)]
    pub ttl_seconds: u64,
    #[serde(default)]
    pub idle_timeout_seconds: u64,
    /// A whole `cleanroom.yaml` instead of `networkPolicy`.
    #[serde(default)]
    pub policy_yaml: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub no_pool: bool,
}

/// `networkPolicy` as a `cleanroom.yaml` document (JSON is YAML): the policy compiler
/// then judges it like any other policy.
fn network_yaml(n: &NetworkPolicy) -> Result<String, EngineError> {
    let bad = |m: String| EngineError::invalid(m).with("field", "spec.networkPolicy");
    let mut network = serde_json::Map::new();
    match n
        .default_action
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("deny") => {}
        Some("allow") => {
            network.insert("dangerously_allow_all".into(), json!(true));
        }
        Some("requireauthz") => {
            network.insert("unknown".into(), json!("ask"));
        }
        Some(other) => {
            return Err(bad(format!(
                "defaultAction {other:?}: Deny, Allow or RequireAuthz"
            )))
        }
    }
    for r in &n.egress_rules {
        let list = match r.action.to_ascii_lowercase().as_str() {
            "allow" => "allow",
            "deny" => "deny",
            "requireauthz" => "ask",
            other => {
                return Err(bad(format!(
                    "action {other:?}: Allow, Deny or RequireAuthz"
                )))
            }
        };
        let mut rule = json!({"host": r.destination.domain});
        if !r.ports.is_empty() {
            rule["ports"] = json!(r.ports);
        }
        if let Some(rules) = network
            .entry(list)
            .or_insert_with(|| json!([]))
            .as_array_mut()
        {
            rules.push(rule);
        }
    }
    Ok(json!({"version": 1, "sandbox": {"network": network}}).to_string())
}

impl SandboxSpec {
    /// The `CreateSandboxRequest` this spec asks for.
    pub fn to_request(&self) -> Result<CreateSandboxRequest, EngineError> {
        if !self.secrets.is_empty() {
            return Err(EngineError::invalid(
                "spec.secrets: secret values are never sent in a request; bind secrets in the policy (policyYaml) and give their values to the server",
            )
            .with("field", "spec.secrets"));
        }
        let policy_yaml = match (&self.network_policy, self.policy_yaml.trim().is_empty()) {
            (Some(_), false) => {
                return Err(EngineError::invalid(
                    "give spec.networkPolicy or spec.policyYaml, not both",
                )
                .with("field", "spec.networkPolicy"))
            }
            (Some(n), true) => network_yaml(n)?,
            (None, _) => self.policy_yaml.clone(),
        };
        let r = self.resources.clone().unwrap_or_default();
        Ok(CreateSandboxRequest {
            policy_yaml,
            image_ref: self.image.clone(),
            labels: self.labels.clone().into_iter().collect(),
            limits: ResourceLimits {
                memory_bytes: r.memory_bytes.unwrap_or(0),
                pids: r.pid_limit.unwrap_or(0),
                cpu_millis: r.cpu_millicores.unwrap_or(0),
                disk_bytes: r.disk_bytes.unwrap_or(0),
                output_bytes: r.output_bytes.unwrap_or(0),
                ..Default::default()
            }
            .into(),
            ttl_seconds: self.ttl_seconds,
            idle_timeout_seconds: self.idle_timeout_seconds,
            agent_public_key: agent(&self.agent_nhi, "spec.agentNhi")?,
            delegation_chain: chain(&self.delegation_chain, "spec.delegationChain")?,
            no_pool: self.no_pool,
            runtime: self.runtime_class.clone().unwrap_or_default(),
            ..Default::default()
        })
    }
}

/// `POST /v1/sandboxes`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateBody {
    pub spec: SandboxSpec,
}

/// `POST /v1/sandboxes/{id}/exec`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecBody {
    pub command: Command,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Command {
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub cwd: String,
    #[serde(default)]
    pub timeout_seconds: u32,
}

/// `POST /v1/warm-pools`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolBody {
    pub config: PoolConfig,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolConfig {
    /// The pool's name (the server gives it an id too; either names it afterwards).
    pub pool_id: String,
    #[serde(default)]
    pub template: SandboxSpec,
    #[serde(default)]
    pub min_ready: u32,
    #[serde(default)]
    pub max_ready: u32,
    #[serde(default)]
    pub max_age_seconds: u32,
    #[serde(default)]
    pub reusable: bool,
    pub auto_scaling: Option<AutoScaling>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoScaling {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub headroom_factor: f64,
    #[serde(default)]
    pub interval_seconds: u32,
}

/// `POST /v1/warm-pools/{id}/claim`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimBody {
    pub agent_nhi: Option<AgentIdentity>,
    #[serde(default)]
    pub delegation_chain: Vec<AgentIdentity>,
}

/// `POST /v1/warm-pools/{id}/release/{sandboxId}`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseBody {
    #[serde(default)]
    pub reusable: bool,
}

/// `POST /v1/checkpoints/{id}/restore`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreBody {
    pub nhi_override: Option<AgentIdentity>,
}

/// Seed 002's status names.
pub fn status_name(s: i32) -> &'static str {
    use crate::model::status::SandboxStatus as S;
    match S::from_number(s) {
        Some(S::Provisioning) => "Creating",
        Some(S::Ready) => "Ready",
        Some(S::Stopping) => "Stopping",
        Some(S::Stopped) => "Terminated",
        Some(S::Failed) => "Failed",
        Some(S::Paused) => "Paused",
        Some(S::Checkpointing) => "Checkpointing",
        Some(S::Checkpointed) => "Checkpointed",
        None => "Unknown",
    }
}

/// A protobuf timestamp as RFC 3339 (`null` when unset).
pub fn time(
    t: &buffa::MessageField<
        buffa_types::google::protobuf::Timestamp,
        buffa::Inline<buffa_types::google::protobuf::Timestamp>,
    >,
) -> Value {
    t.as_option()
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_policy_becomes_a_policy_document() {
        let n: NetworkPolicy = serde_json::from_value(json!({
            "defaultAction": "Deny",
            "egressRules": [
                {"destination": {"domain": "*.anthropic.com"}, "action": "RequireAuthz"},
                {"destination": {"domain": "api.example"}, "action": "Allow", "ports": [443]}
            ]
        }))
        .unwrap();
        let doc: Value = serde_json::from_str(&network_yaml(&n).unwrap()).unwrap();
        assert_eq!(
            doc["sandbox"]["network"]["ask"][0]["host"],
            "*.anthropic.com"
        );
        assert_eq!(doc["sandbox"]["network"]["allow"][0]["ports"][0], 443);
        let bad: Result<NetworkPolicy, _> = serde_json::from_value(
            json!({"egressRules": [{"destination": {"cidr": "10.0.0.0/8"}, "action": "Allow"}]}),
        );
        assert!(bad.is_err(), "an unknown destination kind is refused");
    }
}
