//! Repository policy: `cleanroom.yaml` v1 compiled once into an immutable [`CompiledPolicy`].
//!
//! The compiled form has one canonical JSON encoding (sorted keys, normalized values), and
//! `policy_hash` is the sha256 of that encoding, so the same policy written two ways hashes
//! the same. The server compiles a policy exactly once, at CreateSandbox, and keeps it for
//! the sandbox's life.
//!
//! This first cut understands `version`, `sandbox.env` and `sandbox.network.default`
//! (which must be `deny`: the Linux backend's only network is loopback). Every unknown
//! field is rejected, so a policy never silently means less than it says.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Largest policy document accepted (hostile input guard).
pub const MAX_POLICY_BYTES: usize = 256 * 1024;

/// Errors with stable codes.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy_invalid: {0}")]
    Invalid(String),
    #[error("policy_conflict: {0}")]
    Conflict(String),
}

impl PolicyError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            PolicyError::Invalid(_) => "policy_invalid",
            PolicyError::Conflict(_) => "policy_conflict",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: u32,
    #[serde(default)]
    sandbox: SandboxSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxSection {
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    network: Option<NetworkSection>,
    #[serde(default)]
    resources: Option<Resources>,
}

/// `sandbox.resources`: limits enforced with cgroups and tmpfs size caps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_millis: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_mb: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkSection {
    default: String,
}

/// The validated, normalized policy. Immutable once built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompiledPolicy {
    pub version: u32,
    /// Base environment for every execution in the sandbox.
    pub env: BTreeMap<String, String>,
    /// Default network decision; `deny` is the only value this version supports.
    pub network_default: String,
    /// Resource limits (unset fields use the server defaults).
    #[serde(default)]
    pub resources: Resources,
}

impl CompiledPolicy {
    /// The built-in policy used when no `cleanroom.yaml` is given: deny-by-default, no env.
    pub fn builtin() -> Self {
        CompiledPolicy {
            version: 1,
            env: BTreeMap::new(),
            network_default: "deny".into(),
            resources: Resources::default(),
        }
    }

    /// Capability keys (seed 004 vocabulary) a backend must declare to run this policy.
    pub fn required_capabilities(&self) -> Vec<&'static str> {
        let mut caps = vec!["policy_immutability"];
        if self.network_default == "deny" {
            caps.push("network_default_deny");
        }
        caps
    }

    /// Canonical encoding: JSON with sorted keys and no insignificant whitespace.
    pub fn canonical_json(&self) -> String {
        // serde_json with BTreeMap fields and a fixed struct order is canonical; going
        // through Value sorts struct keys too, so field order in code cannot change it.
        let value = serde_json::to_value(self).unwrap_or(serde_json::Value::Null);
        value.to_string()
    }

    /// `sha256:<hex>` of the canonical encoding.
    pub fn policy_hash(&self) -> String {
        let digest = Sha256::digest(self.canonical_json().as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}

fn valid_env_key(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parse and validate a `cleanroom.yaml` document.
pub fn compile(yaml: &str) -> Result<CompiledPolicy, PolicyError> {
    if yaml.len() > MAX_POLICY_BYTES {
        return Err(PolicyError::Invalid(format!(
            "policy is {} bytes; the limit is {MAX_POLICY_BYTES}",
            yaml.len()
        )));
    }
    if yaml.trim().is_empty() {
        return Ok(CompiledPolicy::builtin());
    }
    let file: PolicyFile =
        serde_saphyr::from_str(yaml).map_err(|e| PolicyError::Invalid(e.to_string()))?;
    if file.version != 1 {
        return Err(PolicyError::Invalid(format!(
            "version: unsupported policy version {} (expected 1)",
            file.version
        )));
    }
    for (k, v) in &file.sandbox.env {
        if !valid_env_key(k) {
            return Err(PolicyError::Invalid(format!(
                "sandbox.env.{k}: not a valid environment variable name"
            )));
        }
        if v.contains('\0') {
            return Err(PolicyError::Invalid(format!(
                "sandbox.env.{k}: value contains a NUL byte"
            )));
        }
    }
    let network_default = match file.sandbox.network {
        None => "deny".to_string(),
        Some(n) if n.default.eq_ignore_ascii_case("deny") => "deny".to_string(),
        Some(n) => {
            return Err(PolicyError::Invalid(format!(
                "sandbox.network.default: {:?} is not supported (only \"deny\")",
                n.default
            )))
        }
    };
    let resources = file.sandbox.resources.unwrap_or_default();
    for (name, value, min, max) in [
        ("memory_mb", resources.memory_mb, 16, 1 << 20),
        ("pids", resources.pids, 8, 1 << 22),
        ("cpu_millis", resources.cpu_millis, 10, 1 << 20),
        ("disk_mb", resources.disk_mb, 1, 1 << 24),
    ] {
        if let Some(v) = value {
            if v < min || v > max {
                return Err(PolicyError::Invalid(format!(
                    "sandbox.resources.{name}: {v} is outside {min}..={max}"
                )));
            }
        }
    }
    Ok(CompiledPolicy {
        version: 1,
        env: file.sandbox.env,
        network_default,
        resources,
    })
}

/// True when `k` is usable as an environment variable name (shared with the server).
pub fn is_valid_env_key(k: &str) -> bool {
    valid_env_key(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_policy_two_ways_same_hash() {
        let a = compile("version: 1\nsandbox:\n  env:\n    B: '2'\n    A: '1'\n").unwrap();
        let b =
            compile("{sandbox: {network: {default: DENY}, env: {A: \"1\", B: \"2\"}}, version: 1}")
                .unwrap();
        assert_eq!(a.policy_hash(), b.policy_hash());
        assert_ne!(a.policy_hash(), CompiledPolicy::builtin().policy_hash());
    }

    #[test]
    fn unknown_fields_and_bad_values_rejected() {
        for bad in [
            "version: 1\nsandbox:\n  nope: 1\n",
            "version: 2\n",
            "version: 1\nextra: true\n",
            "version: 1\nsandbox:\n  env:\n    '1BAD': x\n",
            "version: 1\nsandbox:\n  network:\n    default: allow\n",
            "version: [1\n",
            "version: 1\nsandbox:\n  resources:\n    pids: 1\n",
            "version: 1\nsandbox:\n  resources:\n    memory_mb: -5\n",
            "version: 1\nsandbox:\n  resources:\n    swap: 1\n",
        ] {
            let err = compile(bad).unwrap_err();
            assert_eq!(err.code(), "policy_invalid", "{bad}: {err}");
        }
    }

    #[test]
    fn oversized_policy_rejected() {
        let huge = format!("version: 1\n#{}\n", "x".repeat(MAX_POLICY_BYTES));
        assert_eq!(compile(&huge).unwrap_err().code(), "policy_invalid");
    }
}
