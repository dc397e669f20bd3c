//! `cleanroom.yaml` v1 → [`CompiledPolicy`]: the input schema (every unknown field
//! rejected) and the checks that turn it into the validated, normalized form. Every
//! semantic error names its YAML path.

use crate::{
    is_digest_pinned, resource_bounds, CompiledPolicy, HostPattern, Lifetime, NetworkPolicy,
    PolicyError, Resources, Rule, SecretBinding, DEFAULT_REPOSITORY_PATH, LIFETIME_BOUNDS,
    MAX_POLICY_BYTES,
};
use serde::Deserialize;
use std::collections::BTreeMap;

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
    #[serde(default)]
    registries: Vec<crate::registries::RegistrySection>,
    #[serde(default)]
    git: Vec<crate::git::GitSection>,
    lifetime: Option<Lifetime>,
    #[serde(default)]
    volumes: Vec<crate::volumes::VolumeSection>,
    /// `sandbox.runtime`: `linux` or `gvisor` (absent: the server's default).
    runtime: Option<String>,
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
    /// `deny` (default), `ask` or `learn` (see `crate::ask`).
    #[serde(default)]
    unknown: Option<String>,
    #[serde(default)]
    ask: Vec<RuleSection>,
    #[serde(default)]
    approval_timeout_seconds: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSection {
    host: String,
    #[serde(default)]
    ports: Option<Vec<u32>>,
    /// Allow rules only: TLS without a server name may reach the host.
    #[serde(default)]
    allow_missing_sni: Option<bool>,
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

pub(crate) fn valid_env_key(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn invalid(path: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Invalid(format!("{path}: {msg}"))
}

pub(crate) fn conflict(path: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Conflict(format!("{path}: {msg}"))
}

/// Compile one list of rules. `allow` says whether they are allow rules (the only ones
/// that take `allow_missing_sni`).
fn compile_rules(
    rules: Vec<RuleSection>,
    path: &str,
    default_ports: &[u16],
    allow: bool,
) -> Result<Vec<Rule>, PolicyError> {
    let mut out = Vec::new();
    for (i, r) in rules.into_iter().enumerate() {
        let host =
            HostPattern::parse(&r.host).map_err(|e| invalid(&format!("{path}[{i}].host"), e))?;
        if r.allow_missing_sni.is_some() && !allow {
            return Err(invalid(
                &format!("{path}[{i}].allow_missing_sni"),
                "only allow rules take this option",
            ));
        }
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
        out.push(Rule {
            host,
            ports,
            allow_missing_sni: r.allow_missing_sni.unwrap_or(false),
        });
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
    let allow = compile_rules(n.allow, "sandbox.network.allow", &[80, 443], true)?;
    let deny = compile_rules(n.deny, "sandbox.network.deny", &[], false)?;
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
    let (unknown, ask, approval_timeout_secs) = crate::ask::compile(
        n.unknown.as_deref(),
        compile_rules(n.ask, "sandbox.network.ask", &[], false)?,
        n.approval_timeout_seconds,
        n.dangerously_allow_all,
        &allow,
        &deny,
    )?;
    Ok(NetworkPolicy {
        default,
        dangerously_allow_all: n.dangerously_allow_all,
        allow,
        deny,
        unknown,
        ask,
        approval_timeout_secs,
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
                || network
                    .allow
                    .iter()
                    .any(|a| a.host == host || a.covers(&Rule::new(host.clone(), a.ports.clone())));
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
    let file: PolicyFile = crate::decode::from_yaml(yaml).map_err(PolicyError::Invalid)?;
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
    let mut network = compile_network(file.sandbox.network.unwrap_or_default())?;
    let git = crate::git::compile_git(file.sandbox.git, &mut network)?;
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
    let lifetime = file.sandbox.lifetime.unwrap_or_default();
    for (name, value) in [
        ("ttl_seconds", lifetime.ttl_seconds),
        ("idle_timeout_seconds", lifetime.idle_timeout_seconds),
        ("suspend_after_seconds", lifetime.suspend_after_seconds),
    ] {
        let (min, max) = LIFETIME_BOUNDS;
        if let Some(v) = value.filter(|v| *v < min || *v > max) {
            return Err(invalid(
                &format!("sandbox.lifetime.{name}"),
                format!("{v} is outside {min}..={max}"),
            ));
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
    let registries = crate::registries::compile_registries(file.sandbox.registries)?;
    let volumes = crate::volumes::compile_volumes(file.sandbox.volumes)?;
    let runtime = file
        .sandbox
        .runtime
        .map(|r| {
            r.trim().parse::<cleanroom_vocab::Runtime>().map_err(|_| {
                invalid(
                    "sandbox.runtime",
                    format!("{r:?} is not a runtime (linux, gvisor)"),
                )
            })
        })
        .transpose()?;
    Ok(CompiledPolicy {
        runtime,
        version: 1,
        image_ref,
        env: file.sandbox.env,
        network,
        resources,
        secrets,
        repository_path,
        dependencies_command,
        registries,
        git,
        lifetime,
        volumes,
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
