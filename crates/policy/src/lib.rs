//! Repository policy: `cleanroom.yaml` v1 compiled once into an immutable [`CompiledPolicy`].
//!
//! The compiled form has one canonical JSON encoding (sorted keys, normalized values), and
//! `policy_hash` is the sha256 of that encoding, so the same policy written two ways hashes
//! the same. The server compiles a policy exactly once, at CreateSandbox, and keeps it for
//! the sandbox's life.
//!
//! Every unknown field is rejected and every semantic error names its YAML path, so a
//! policy never silently means less than it says. What a policy needs from a backend is
//! expressed as capability keys ([`CompiledPolicy::required_capabilities`]); the server
//! refuses to launch when the backend lacks one.

use cleanroom_vocab::{Capability, ErrorCode};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

pub mod ask;
mod compile;
mod decode;
pub mod egress;
pub mod git;
pub mod host;
pub use ask::{Unknown, Verdict};
pub mod live;
pub mod lockfile;
pub mod registries;
pub mod runtime;
pub mod volumes;
pub use compile::compile;
pub use egress::{normalize_wire_host, DenyReason};
pub use host::HostPattern;
pub use live::{LiveChange, LiveRules, MAX_LIVE_RULES};
pub use runtime::with_runtime;
pub use volumes::VolumeMount;

/// Largest policy document accepted (hostile input guard).
pub const MAX_POLICY_BYTES: usize = 256 * 1024;

/// Errors with stable codes. The message (`Display`) does not repeat the code: callers
/// print both as `[code]: message`, and a code inside the message printed it twice.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Conflict(String),
}

impl PolicyError {
    /// Stable machine code.
    pub fn code(&self) -> ErrorCode {
        match self {
            PolicyError::Invalid(_) => ErrorCode::PolicyInvalid,
            PolicyError::Conflict(_) => ErrorCode::PolicyConflict,
        }
    }
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
    /// Output the server retains for this sandbox's executions (their durable logs),
    /// shared by all of them; beyond it output is streamed live but not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_mb: Option<u64>,
}

/// `sandbox.lifetime`: how long the sandbox may live. Unset fields use the request's, then
/// the server's defaults (`serve --sandbox-ttl`, `--sandbox-idle-timeout`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lifetime {
    /// Seconds from creation after which the sandbox is terminated (extendable through
    /// `SetSandboxTimeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
    /// Seconds without activity (no execution running, no API use of the sandbox) after
    /// which it is terminated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<u64>,
    /// Seconds without activity after which the sandbox is suspended (frozen, its
    /// memory kept) instead of terminated; any use of it (an exec, a console, the
    /// files API) resumes it first (docs/api.md "Suspend on idle").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_after_seconds: Option<u64>,
}

impl Lifetime {
    /// No field set (kept out of the canonical encoding: old policy hashes stand).
    pub fn is_empty(&self) -> bool {
        self.ttl_seconds.is_none()
            && self.idle_timeout_seconds.is_none()
            && self.suspend_after_seconds.is_none()
    }
}

/// Accepted range of `sandbox.lifetime` fields (and of the API's): 1 s to a year.
pub const LIFETIME_BOUNDS: (u64, u64) = (1, 366 * 24 * 3600);

/// Accepted range of each `sandbox.resources` field, in the policy's units (MiB, pids,
/// milli-CPUs). The one home of these bounds: the server checks
/// `CreateSandboxRequest.limits` against the same table, so a limit no kernel interface
/// can take is `invalid_argument`/`policy_invalid` naming the field, never an `internal`
/// error from a cgroup write.
pub const RESOURCE_BOUNDS: [(&str, u64, u64); 5] = [
    ("memory_mb", 16, 1 << 20),
    ("pids", 8, 1 << 22),
    ("cpu_millis", 10, 1 << 20),
    ("disk_mb", 1, 1 << 24),
    ("output_mb", 1, 1 << 24),
];

/// Bounds of one `sandbox.resources` field by name (see [`RESOURCE_BOUNDS`]).
pub fn resource_bounds(name: &str) -> Option<(u64, u64)> {
    RESOURCE_BOUNDS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, lo, hi)| (lo, hi))
}

/// One allow or deny rule. Empty `ports` on a deny rule means every port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rule {
    pub host: HostPattern,
    pub ports: Vec<u16>,
    /// Allow rules only (`allow_missing_sni: true`): a TLS connection to the host may come
    /// without a server name (SNI). Off, it is refused (`sni_missing`): without a name the
    /// front at that address may serve any virtual host. Not written when off, so policies
    /// without it keep their hash.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_missing_sni: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Rule {
    /// A rule for `host` on `ports`, without options.
    pub fn new(host: HostPattern, ports: Vec<u16>) -> Rule {
        Rule {
            host,
            ports,
            allow_missing_sni: false,
        }
    }

    /// Does this rule match everything `other` matches (host and ports)?
    pub(crate) fn covers(&self, other: &Rule) -> bool {
        let host = match (&self.host, &other.host) {
            (a, b) if a == b => true,
            (HostPattern::Suffix(_), HostPattern::Exact(h)) => self.host.matches(h),
            (HostPattern::Suffix(_), HostPattern::Suffix(s)) => self.host.matches(s),
            _ => false,
        };
        host && (self.ports.is_empty() || other.ports.iter().all(|p| self.ports.contains(p)))
    }
}

/// Egress policy. Deny wins over allow; nothing else leaves the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkPolicy {
    /// `deny`: the only default this version supports.
    pub default: String,
    pub dangerously_allow_all: bool,
    pub allow: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// What happens to destinations no allow rule covers (see [`ask`]); not written when
    /// `deny`, so policies without it keep their hash.
    #[serde(default, skip_serializing_if = "Unknown::is_deny")]
    pub unknown: Unknown,
    /// Destinations that are asked about (held for `DecideEgress`) instead of denied.
    /// Empty ports on an ask rule means every port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<Rule>,
    /// How long an asked connection waits for a decision before it is denied
    /// (`approval_timeout`); `None`: the server's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_timeout_secs: Option<u32>,
}

/// Where a secret may be used on the wire. The value never appears in policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretBinding {
    pub hosts: Vec<HostPattern>,
    /// HTTP header the gateway writes the value into.
    pub header: String,
    /// Header value template; `{value}` is replaced by the secret.
    pub format: String,
}

/// The validated, normalized policy. Immutable once built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompiledPolicy {
    pub version: u32,
    /// Digest-pinned OCI image, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    /// Base environment for every execution in the sandbox.
    pub env: BTreeMap<String, String>,
    pub network: NetworkPolicy,
    /// Resource limits (unset fields use the server defaults).
    #[serde(default)]
    pub resources: Resources,
    /// Secret id -> binding.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretBinding>,
    /// `repository.path`: where `cleanroom exec`/`create` place the repository's committed
    /// checkout inside the sandbox, and the default working directory there. `None`: no
    /// checkout is made (the policy does not ask for one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_path: Option<String>,
    /// `sandbox.dependencies.command`: argv run once in a policy-created sandbox (in the
    /// repository path) before the workload, e.g. `[npm, ci]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies_command: Option<Vec<String>>,
    /// `sandbox.registries`: mediated package registries (see [`registries`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<registries::RegistryRule>,
    /// `sandbox.git`: repositories fetched (pushed) through the gateway (see [`git`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub git: Vec<git::GitRule>,
    /// `sandbox.lifetime` (TTL, idle timeout).
    #[serde(default, skip_serializing_if = "Lifetime::is_empty")]
    pub lifetime: Lifetime,
    /// `sandbox.volumes` plus the request's `--volume` mounts (see [`volumes`]), sorted;
    /// not written when empty, so policies without volumes keep their hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<volumes::VolumeMount>,
    /// `sandbox.runtime`: the isolation runtime (`None`: the server's default). Part of
    /// the policy hash when set; absent, the hash is what it was before runtimes existed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "runtime_serde"
    )]
    pub runtime: Option<cleanroom_vocab::Runtime>,
}

/// `Option<Runtime>` as its stable string (the vocabulary crate has no serde).
mod runtime_serde {
    use cleanroom_vocab::Runtime;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(r: &Option<Runtime>, s: S) -> Result<S::Ok, S::Error> {
        match r {
            Some(r) => s.serialize_str(r.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Runtime>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Default guest directory of the repository checkout and of executions.
pub const DEFAULT_REPOSITORY_PATH: &str = "/workspace";

impl CompiledPolicy {
    /// The built-in policy used when no `cleanroom.yaml` is given: deny-by-default, no env.
    pub fn builtin() -> Self {
        CompiledPolicy {
            version: 1,
            image_ref: None,
            env: BTreeMap::new(),
            network: NetworkPolicy {
                default: "deny".into(),
                ..Default::default()
            },
            resources: Resources::default(),
            secrets: BTreeMap::new(),
            repository_path: None,
            dependencies_command: None,
            registries: Vec::new(),
            git: Vec::new(),
            lifetime: Lifetime::default(),
            volumes: Vec::new(),
            runtime: None,
        }
    }

    /// Capability keys (seed 004 vocabulary) a backend must declare to run this policy.
    /// The keys are [`Capability`] strings, sorted and unique.
    pub fn required_capabilities(&self) -> Vec<&'static str> {
        let mut caps = vec![Capability::PolicyImmutability];
        if self.network.dangerously_allow_all {
            caps.push(Capability::NetworkEgress);
        } else {
            caps.push(Capability::NetworkDefaultDeny);
        }
        if !self.network.allow.is_empty()
            || !self.network.ask.is_empty()
            || !self.network.unknown.is_deny()
        {
            caps.extend([
                Capability::NetworkEgress,
                Capability::NetworkHostPortFiltering,
                Capability::DnsControlOrEquivalent,
            ]);
        }
        if !self.secrets.is_empty() {
            caps.push(Capability::SecretIsolation);
        }
        if self.image_ref.is_some() {
            caps.push(Capability::OciImages);
        }
        if self.lifetime.suspend_after_seconds.is_some() {
            caps.push(Capability::PauseResume);
        }
        let mut keys = Capability::keys(&caps);
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Canonical encoding: JSON with sorted keys and no insignificant whitespace.
    pub fn canonical_json(&self) -> String {
        // Going through Value sorts struct keys too, so field order in code cannot change it.
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

/// True when `k` is usable as an environment variable name (shared with the server).
pub fn is_valid_env_key(k: &str) -> bool {
    compile::valid_env_key(k)
}

/// A digest-pinned OCI reference: `name[:tag]@sha256:<64 hex>` (the one grammar, shared
/// with the image store, lives in `cleanroom_vocab::reference`).
pub use cleanroom_vocab::reference::is_digest_pinned;

#[cfg(test)]
mod tests;
