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

pub mod egress;
pub mod host;
pub use egress::{normalize_wire_host, DenyReason};
pub use host::HostPattern;

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
    pub fn code(&self) -> ErrorCode {
        match self {
            PolicyError::Invalid(_) => ErrorCode::PolicyInvalid,
            PolicyError::Conflict(_) => ErrorCode::PolicyConflict,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    version: u32,
    #[serde(default)]
    repository: Option<RepositorySection>,
    #[serde(default)]
    sandbox: SandboxSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepositorySection {
    #[serde(default)]
    path: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DependenciesSection {
    command: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SandboxSection {
    #[serde(default)]
    image: Option<ImageSection>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    network: Option<NetworkSection>,
    #[serde(default)]
    resources: Option<Resources>,
    #[serde(default)]
    secrets: BTreeMap<String, SecretSection>,
    #[serde(default)]
    dependencies: Option<DependenciesSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageSection {
    #[serde(rename = "ref")]
    reference: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkSection {
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    dangerously_allow_all: bool,
    #[serde(default)]
    allow: Vec<RuleSection>,
    #[serde(default)]
    deny: Vec<RuleSection>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSection {
    host: String,
    #[serde(default)]
    ports: Option<Vec<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretSection {
    hosts: Vec<String>,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    format: Option<String>,
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
}

impl Rule {
    fn covers(&self, other: &Rule) -> bool {
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
        if !self.network.allow.is_empty() {
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

fn valid_env_key(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True when `k` is usable as an environment variable name (shared with the server).
pub fn is_valid_env_key(k: &str) -> bool {
    valid_env_key(k)
}

/// A digest-pinned OCI reference: `name[:tag]@sha256:<64 hex>` (the one grammar, shared
/// with the image store, lives in `cleanroom_vocab::reference`).
pub use cleanroom_vocab::reference::is_digest_pinned;

fn invalid(path: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Invalid(format!("{path}: {msg}"))
}

fn conflict(path: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Conflict(format!("{path}: {msg}"))
}

fn compile_rules(
    rules: Vec<RuleSection>,
    path: &str,
    default_ports: &[u16],
) -> Result<Vec<Rule>, PolicyError> {
    let mut out = Vec::new();
    for (i, r) in rules.into_iter().enumerate() {
        let host =
            HostPattern::parse(&r.host).map_err(|e| invalid(&format!("{path}[{i}].host"), e))?;
        let mut ports = Vec::new();
        for (j, p) in r
            .ports
            .unwrap_or_else(|| default_ports.iter().map(|p| u32::from(*p)).collect())
            .into_iter()
            .enumerate()
        {
            match u16::try_from(p) {
                Ok(p) if p > 0 => ports.push(p),
                _ => {
                    return Err(invalid(
                        &format!("{path}[{i}].ports[{j}]"),
                        format!("{p} is not a TCP port"),
                    ))
                }
            }
        }
        ports.sort_unstable();
        ports.dedup();
        out.push(Rule { host, ports });
    }
    out.sort();
    for w in out.windows(2) {
        if w[0].host == w[1].host {
            return Err(conflict(
                path,
                format!(
                    "host {} appears twice; merge its ports into one rule",
                    w[0].host
                ),
            ));
        }
    }
    Ok(out)
}

fn compile_network(n: NetworkSection) -> Result<NetworkPolicy, PolicyError> {
    let default = match n.default.as_deref().map(str::to_ascii_lowercase) {
        None => "deny".to_string(),
        Some(d) if d == "deny" => d,
        Some(d) => {
            return Err(invalid(
                "sandbox.network.default",
                format!("{d:?} is not supported (only \"deny\")"),
            ))
        }
    };
    let allow = compile_rules(n.allow, "sandbox.network.allow", &[80, 443])?;
    let deny = compile_rules(n.deny, "sandbox.network.deny", &[])?;
    if n.dangerously_allow_all && !allow.is_empty() {
        return Err(conflict(
            "sandbox.network",
            "dangerously_allow_all makes the allow rules meaningless; keep one",
        ));
    }
    for a in &allow {
        if let Some(d) = deny.iter().find(|d| d.covers(a)) {
            return Err(conflict(
                "sandbox.network",
                format!(
                    "allow rule for {} can never match: deny rule for {} covers it",
                    a.host, d.host
                ),
            ));
        }
    }
    Ok(NetworkPolicy {
        default,
        dangerously_allow_all: n.dangerously_allow_all,
        allow,
        deny,
    })
}

fn compile_secrets(
    secrets: BTreeMap<String, SecretSection>,
    network: &NetworkPolicy,
) -> Result<BTreeMap<String, SecretBinding>, PolicyError> {
    let mut out = BTreeMap::new();
    for (id, s) in secrets {
        let path = format!("sandbox.secrets.{id}");
        if !valid_env_key(&id) {
            return Err(invalid(&path, "secret ids are [A-Za-z_][A-Za-z0-9_]*"));
        }
        if s.hosts.is_empty() {
            return Err(invalid(
                &format!("{path}.hosts"),
                "a secret must be bound to at least one host",
            ));
        }
        let mut hosts = Vec::new();
        for (i, h) in s.hosts.iter().enumerate() {
            let host =
                HostPattern::parse(h).map_err(|e| invalid(&format!("{path}.hosts[{i}]"), e))?;
            let allowed = network.dangerously_allow_all
                || network.allow.iter().any(|a| {
                    a.host == host
                        || a.covers(&Rule {
                            host: host.clone(),
                            ports: a.ports.clone(),
                        })
                });
            if !allowed {
                return Err(conflict(
                    &format!("{path}.hosts[{i}]"),
                    format!("{host} is not in sandbox.network.allow"),
                ));
            }
            if network.deny.iter().any(|d| d.host.overlaps(&host)) {
                return Err(conflict(
                    &format!("{path}.hosts[{i}]"),
                    format!("{host} is denied by sandbox.network.deny"),
                ));
            }
            hosts.push(host);
        }
        hosts.sort();
        hosts.dedup();
        let header = s.header.unwrap_or_else(|| "Authorization".into());
        if header.is_empty()
            || !header
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
        {
            return Err(invalid(
                &format!("{path}.header"),
                format!("{header:?} is not an HTTP header name"),
            ));
        }
        let format = s.format.unwrap_or_else(|| "Bearer {value}".into());
        if format.matches("{value}").count() != 1 || format.contains(['\r', '\n']) {
            return Err(invalid(
                &format!("{path}.format"),
                "must contain {value} exactly once and no line breaks",
            ));
        }
        out.insert(
            id,
            SecretBinding {
                hosts,
                header,
                format,
            },
        );
    }
    Ok(out)
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
        return Err(invalid(
            "version",
            format!("unsupported policy version {} (expected 1)", file.version),
        ));
    }
    for (k, v) in &file.sandbox.env {
        if !valid_env_key(k) {
            return Err(invalid(
                &format!("sandbox.env.{k}"),
                "not a valid environment variable name",
            ));
        }
        if v.contains('\0') {
            return Err(invalid(
                &format!("sandbox.env.{k}"),
                "value contains a NUL byte",
            ));
        }
    }
    let image_ref = match file.sandbox.image {
        None => None,
        Some(i) if is_digest_pinned(i.reference.trim()) => Some(i.reference.trim().to_string()),
        Some(i) => {
            return Err(invalid(
                "sandbox.image.ref",
                format!(
                    "{:?} must be pinned by digest (name@sha256:<64 hex>); tags are mutable",
                    i.reference
                ),
            ))
        }
    };
    let network = compile_network(file.sandbox.network.unwrap_or_default())?;
    let secrets = compile_secrets(file.sandbox.secrets, &network)?;
    let resources = file.sandbox.resources.unwrap_or_default();
    for (name, value) in [
        ("memory_mb", resources.memory_mb),
        ("pids", resources.pids),
        ("cpu_millis", resources.cpu_millis),
        ("disk_mb", resources.disk_mb),
        ("output_mb", resources.output_mb),
    ] {
        if let (Some(v), Some((min, max))) = (value, resource_bounds(name)) {
            if v < min || v > max {
                return Err(invalid(
                    &format!("sandbox.resources.{name}"),
                    format!("{v} is outside {min}..={max}"),
                ));
            }
        }
    }
    let repository_path = file
        .repository
        .map(|r| {
            let raw = r.path.unwrap_or_else(|| DEFAULT_REPOSITORY_PATH.into());
            guest_path(&raw).map_err(|e| invalid("repository.path", e))
        })
        .transpose()?;
    let dependencies_command = file
        .sandbox
        .dependencies
        .map(|d| check_argv(&d.command).map(|()| d.command))
        .transpose()
        .map_err(|e| invalid("sandbox.dependencies.command", e))?;
    Ok(CompiledPolicy {
        version: 1,
        image_ref,
        env: file.sandbox.env,
        network,
        resources,
        secrets,
        repository_path,
        dependencies_command,
    })
}

/// An absolute, normalized guest path: no `.`/`..` components, no empty ones, no NUL.
fn guest_path(raw: &str) -> Result<String, String> {
    let p = raw.trim();
    if !p.starts_with('/') {
        return Err(format!(
            "{raw:?} must be an absolute path inside the sandbox"
        ));
    }
    if p.len() > 1024 || p.contains('\0') {
        return Err(format!("{raw:?} is not a usable path"));
    }
    let parts: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
    if parts.iter().any(|c| *c == "." || *c == "..") {
        return Err(format!("{raw:?} must not contain . or .. components"));
    }
    if parts.is_empty() {
        return Err("the sandbox root itself cannot hold the repository".into());
    }
    Ok(format!("/{}", parts.join("/")))
}

/// A command line: at least the program, no NUL bytes, bounded size.
fn check_argv(argv: &[String]) -> Result<(), String> {
    match argv.first() {
        None => Err("must name a program, e.g. [npm, ci]".into()),
        Some(p) if p.is_empty() => Err("the program name is empty".into()),
        Some(_) if argv.iter().any(|a| a.contains('\0')) => Err("contains a NUL byte".into()),
        Some(_)
            if argv.len() > 4096 || argv.iter().map(String::len).sum::<usize>() > 128 * 1024 =>
        {
            Err("is too long".into())
        }
        Some(_) => Ok(()),
    }
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
    fn repository_path_and_dependencies() {
        let p = compile(
            "version: 1\nrepository:\n  path: /workspace//app/\nsandbox:\n  dependencies:\n    command: [npm, ci]\n",
        )
        .unwrap();
        assert_eq!(p.repository_path.as_deref(), Some("/workspace/app"));
        assert_eq!(
            p.dependencies_command,
            Some(vec!["npm".to_string(), "ci".to_string()])
        );
        let d = compile("version: 1\nrepository: {}\n").unwrap();
        assert_eq!(d.repository_path.as_deref(), Some(DEFAULT_REPOSITORY_PATH));
        // Absent sections change nothing, including the hash of existing policies.
        assert_eq!(
            compile("version: 1\n").unwrap().policy_hash(),
            CompiledPolicy::builtin().policy_hash()
        );
        for (bad, path) in [
            (
                "version: 1\nrepository:\n  path: relative/dir\n",
                "repository.path",
            ),
            (
                "version: 1\nrepository:\n  path: /a/../etc\n",
                "repository.path",
            ),
            ("version: 1\nrepository:\n  path: /\n", "repository.path"),
            (
                "version: 1\nsandbox:\n  dependencies:\n    command: []\n",
                "sandbox.dependencies.command",
            ),
            (
                "version: 1\nsandbox:\n  dependencies:\n    command: ['']\n",
                "sandbox.dependencies.command",
            ),
        ] {
            let e = compile(bad).unwrap_err().to_string();
            assert!(e.contains(path), "{bad}: {e}");
        }
        for bad in [
            "version: 1\nrepository:\n  url: x\n",
            "version: 1\nsandbox:\n  dependencies:\n    command: npm ci\n",
            "version: 1\nsandbox:\n  dependencies:\n    run: [x]\n",
        ] {
            assert!(compile(bad).is_err(), "{bad}");
        }
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

    const FULL: &str = "version: 1
sandbox:
  image:
    ref: registry.test/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  env:
    CI: 'true'
  network:
    default: deny
    allow:
      - host: API.GitHub.com.
        ports: [443]
      - host: '*.npmjs.org'
        ports: [443, 80, 443]
    deny:
      - host: evil.npmjs.org
  secrets:
    GITHUB_TOKEN:
      hosts: [api.github.com]
";

    #[test]
    fn full_policy_normalizes_and_hashes_stably() {
        let a = compile(FULL).unwrap();
        assert_eq!(
            a.network.allow[0].host,
            HostPattern::Exact("api.github.com".into())
        );
        assert_eq!(a.network.allow[1].ports, vec![80, 443]);
        assert_eq!(
            a.network.deny[0].ports,
            Vec::<u16>::new(),
            "deny without ports = every port"
        );
        assert_eq!(a.secrets["GITHUB_TOKEN"].header, "Authorization");
        // Same policy, other order, flow style, other spelling of the same hosts.
        let b = compile(
            "{version: 1, sandbox: {secrets: {GITHUB_TOKEN: {hosts: [API.GITHUB.COM], format: 'Bearer {value}'}},
              network: {deny: [{host: EVIL.npmjs.org}], allow: [{host: '*.npmjs.org', ports: [80, 443]}, {host: api.github.com, ports: [443]}]},
              env: {CI: 'true'},
              image: {ref: registry.test/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}}}",
        )
        .unwrap();
        assert_eq!(a.canonical_json(), b.canonical_json());
        assert_eq!(a.policy_hash(), b.policy_hash());
        let caps = a.required_capabilities();
        for c in [
            "network_host_port_filtering",
            "secret_isolation",
            "oci_images",
            "network_default_deny",
        ] {
            assert!(caps.contains(&c), "{caps:?}");
        }
    }

    #[test]
    fn errors_name_the_yaml_path() {
        for (bad, path) in [
            ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.example\n      - host: 'a.*.b'\n", "sandbox.network.allow[1].host"),
            ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: x.example\n        ports: [70000]\n", "sandbox.network.allow[0].ports[0]"),
            ("version: 1\nsandbox:\n  network:\n    allow:\n      - host: 10.0.0.1\n", "sandbox.network.allow[0].host"),
            ("version: 1\nsandbox:\n  image:\n    ref: alpine:latest\n", "sandbox.image.ref"),
            ("version: 1\nsandbox:\n  secrets:\n    TOKEN:\n      hosts: [api.example]\n      format: 'no placeholder'\n      header: X-Key\n", "sandbox.secrets.TOKEN"),
        ] {
            let e = compile(bad).unwrap_err();
            assert!(e.to_string().contains(path), "{bad}: {e}");
        }
    }

    #[test]
    fn contradictions_are_conflicts() {
        for bad in [
            // deny wins, so this allow can never match
            "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com, ports: [443]}]\n    deny: [{host: '*.example.com'}]\n",
            "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n    allow: [{host: a.example.com}]\n",
            "version: 1\nsandbox:\n  network:\n    allow: [{host: a.example.com}, {host: A.EXAMPLE.COM}]\n",
            // a secret bound to a host the sandbox cannot reach
            "version: 1\nsandbox:\n  secrets:\n    TOKEN: {hosts: [api.example.com]}\n",
        ] {
            assert_eq!(compile(bad).unwrap_err().code(), "policy_conflict", "{bad}");
        }
    }
}
