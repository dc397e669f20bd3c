//! `sandbox.registries`: package registries the gateway mediates, each restricted to what
//! the repository's lockfile (at its committed HEAD) pins.
//!
//! ```yaml
//! sandbox:
//!   registries:
//!     - kind: npm                     # npm (package-lock.json) | pypi (requirements.txt
//!                                     #   with --hash)
//!       lockfile: package-lock.json   # relative to the policy file's directory
//!       mode: enforce                 # enforce (default) | warn | off
//!       upstream: registry.example    # optional: the server's default for the kind
//!       files: [files.example]        # pypi only, optional: hosts the index links files on
//! ```
//!
//! The policy names the lockfile; its content comes from the client (the CLI reads it from
//! the committed HEAD, like the checkout) and is bound at CreateSandbox by [`bind`]: the
//! compiled rule then carries the lockfile's sha256, so the policy hash covers the pinned
//! set, and the parsed [`Pins`] go to the gateway.

use crate::lockfile::{self, Pins};
use crate::{normalize_wire_host, CompiledPolicy, PolicyError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Largest lockfile accepted (hostile input guard).
pub const MAX_LOCKFILE_BYTES: usize = 32 * 1024 * 1024;

/// Which registry protocol and lockfile format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistryKind {
    Npm,
    Pypi,
}

impl RegistryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RegistryKind::Npm => "npm",
            RegistryKind::Pypi => "pypi",
        }
    }

    /// Parse a kind name (`serve --registry-upstream KIND=HOST`).
    pub fn parse(s: &str) -> Option<RegistryKind> {
        match s {
            "npm" => Some(RegistryKind::Npm),
            "pypi" => Some(RegistryKind::Pypi),
            _ => None,
        }
    }
}

/// What the gateway does with requests the lockfile does not pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistryMode {
    /// Refuse them (`lockfile_violation`), filter metadata to pinned versions.
    #[default]
    Enforce,
    /// Let them through with an event; pinned artifacts are still verified.
    Warn,
    /// No mediation: the registry host is ordinary egress (network rules apply).
    Off,
}

/// One compiled `sandbox.registries` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RegistryRule {
    pub kind: RegistryKind,
    /// Lockfile path relative to the policy file's directory (normalized, no `..`).
    pub lockfile: String,
    pub mode: RegistryMode,
    /// Registry host the sandbox talks to and the gateway forwards to. `None` until bound
    /// (then the server's default for the kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// pypi: hosts (`host` or `host:port`) the index links its files on. They are mediated
    /// like the index host (never a plain allow); empty for an index that serves its own
    /// files. Filled at bind from the server's default when the policy names no upstream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// `sha256:<hex>` of the lockfile bound at CreateSandbox (so the policy hash covers the
    /// pinned set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lockfile_digest: Option<String>,
}

/// Input schema of one entry (every unknown field rejected).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegistrySection {
    kind: String,
    lockfile: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    upstream: Option<String>,
    #[serde(default)]
    files: Option<Vec<String>>,
}

fn invalid(path: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Invalid(format!("{path}: {msg}"))
}

/// A lockfile path: relative, normalized, no `..`, no NUL, bounded.
fn lockfile_path(raw: &str) -> Result<String, String> {
    let p = raw.trim();
    if p.is_empty() || p.len() > 512 || p.contains('\0') || p.contains('\\') {
        return Err(format!("{raw:?} is not a usable lockfile path"));
    }
    if p.starts_with('/') {
        return Err(format!(
            "{raw:?} must be relative to the policy file's directory"
        ));
    }
    let parts: Vec<&str> = p
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return Err(format!("{raw:?} must name a file inside the repository"));
    }
    Ok(parts.join("/"))
}

/// `host[:port]` → the normalized `host` or `host:port` (443 is left implicit).
pub fn parse_upstream(raw: &str) -> Result<String, String> {
    let (h, port) = split_upstream(raw.trim())?;
    Ok(if port == 443 {
        h
    } else {
        format!("{h}:{port}")
    })
}

/// Most file hosts one registry may name.
pub const MAX_FILE_HOSTS: usize = 8;

/// `HOST[:PORT][,files=HOST[:PORT]]…` (`serve --registry-upstream pypi=…`) → the
/// normalized index upstream and file hosts.
pub fn parse_upstream_spec(raw: &str) -> Result<(String, Vec<String>), String> {
    let mut parts = raw.split(',');
    let index = parse_upstream(parts.next().unwrap_or_default())?;
    let mut files = Vec::new();
    for p in parts {
        let Some(h) = p.trim().strip_prefix("files=") else {
            return Err(format!(
                "{p:?}: expected files=HOST[:PORT] after the index host"
            ));
        };
        let h = parse_upstream(h)?;
        if !files.contains(&h) {
            files.push(h);
        }
    }
    if files.len() > MAX_FILE_HOSTS {
        return Err(format!("more than {MAX_FILE_HOSTS} file hosts"));
    }
    Ok((index, files))
}

/// `host[:port]` → (normalized host, port; 443 by default).
pub fn split_upstream(raw: &str) -> Result<(String, u16), String> {
    let (h, port) = match raw.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{raw:?}: bad port"))?,
        ),
        None => (raw, 443),
    };
    let host = normalize_wire_host(h).ok_or_else(|| format!("{raw:?} is not a host name"))?;
    Ok((host, port))
}

pub(crate) fn compile_registries(
    sections: Vec<RegistrySection>,
) -> Result<Vec<RegistryRule>, PolicyError> {
    let mut out: Vec<RegistryRule> = Vec::new();
    for (i, s) in sections.into_iter().enumerate() {
        let path = format!("sandbox.registries[{i}]");
        let kind = RegistryKind::parse(s.kind.trim()).ok_or_else(|| {
            invalid(
                &format!("{path}.kind"),
                format!("unknown registry kind {:?} (supported: npm, pypi)", s.kind),
            )
        })?;
        let mode = match s.mode.as_deref().map(str::trim) {
            None | Some("enforce") => RegistryMode::Enforce,
            Some("warn") => RegistryMode::Warn,
            Some("off") => RegistryMode::Off,
            Some(m) => {
                return Err(invalid(
                    &format!("{path}.mode"),
                    format!("{m:?} is not enforce, warn or off"),
                ))
            }
        };
        let lockfile =
            lockfile_path(&s.lockfile).map_err(|e| invalid(&format!("{path}.lockfile"), e))?;
        let upstream = s
            .upstream
            .map(|u| parse_upstream(&u).map_err(|e| invalid(&format!("{path}.upstream"), e)))
            .transpose()?;
        let files = match s.files {
            None => Vec::new(),
            Some(_) if kind != RegistryKind::Pypi => {
                return Err(invalid(
                    &format!("{path}.files"),
                    "file hosts are a pypi setting (an npm packument's tarballs come back \
                     through the registry host)",
                ))
            }
            Some(list) if list.len() > MAX_FILE_HOSTS => {
                return Err(invalid(
                    &format!("{path}.files"),
                    format!("more than {MAX_FILE_HOSTS} file hosts"),
                ))
            }
            Some(list) => {
                let mut out = Vec::new();
                for (j, h) in list.iter().enumerate() {
                    let h =
                        parse_upstream(h).map_err(|e| invalid(&format!("{path}.files[{j}]"), e))?;
                    if !out.contains(&h) {
                        out.push(h);
                    }
                }
                out
            }
        };
        if out.iter().any(|r| r.kind == kind) {
            return Err(PolicyError::Conflict(format!(
                "{path}: a second {} registry (one per kind)",
                kind.as_str()
            )));
        }
        out.push(RegistryRule {
            kind,
            lockfile,
            mode,
            upstream,
            files,
            lockfile_digest: None,
        });
    }
    Ok(out)
}

/// The lockfile paths a policy document needs (for the client to read from its committed
/// HEAD). Empty when the document does not compile (the server then reports why).
pub fn lockfile_paths(yaml: &str) -> Vec<String> {
    crate::compile(yaml)
        .map(|p| {
            p.registries
                .iter()
                .filter(|r| r.mode != RegistryMode::Off)
                .map(|r| r.lockfile.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// One mediated registry, ready for the gateway.
#[derive(Debug, Clone)]
pub struct BoundRegistry {
    pub kind: RegistryKind,
    pub mode: RegistryMode,
    /// The registry host (sandbox side and upstream).
    pub host: String,
    /// Its HTTPS port (443 unless the upstream names another).
    pub port: u16,
    /// pypi: the hosts (and ports) the index links files on, mediated like `host`.
    pub files: Vec<(String, u16)>,
    pub pins: Pins,
}

impl BoundRegistry {
    /// Is `host:port` the registry host or one of its file hosts (where the gateway may
    /// fetch from, redirects included)?
    pub fn serves(&self, host: &str, port: u16) -> bool {
        (self.host == host && self.port == port)
            || self.files.iter().any(|(h, p)| h == host && *p == port)
    }
}

/// Bind the lockfiles (`path -> content`, read by the client from the committed HEAD) and
/// the server's default upstreams to `policy`'s registries: fills each rule's upstream and
/// lockfile digest (changing the policy hash accordingly) and returns what the gateway
/// enforces. Fails closed: a missing or unparsable lockfile, or no upstream, refuses the
/// sandbox (`policy_invalid` naming the entry).
pub fn bind(
    policy: &mut CompiledPolicy,
    lockfiles: &BTreeMap<String, Vec<u8>>,
    default_upstreams: &BTreeMap<RegistryKind, String>,
) -> Result<Vec<BoundRegistry>, PolicyError> {
    let mut rules = std::mem::take(&mut policy.registries);
    let result = bind_rules(policy, &mut rules, lockfiles, default_upstreams);
    policy.registries = rules;
    result
}

fn bind_rules(
    policy: &mut CompiledPolicy,
    rules: &mut [RegistryRule],
    lockfiles: &BTreeMap<String, Vec<u8>>,
    default_upstreams: &BTreeMap<RegistryKind, String>,
) -> Result<Vec<BoundRegistry>, PolicyError> {
    let mut bound = Vec::new();
    for (i, rule) in rules.iter_mut().enumerate() {
        let path = format!("sandbox.registries[{i}]");
        if rule.mode == RegistryMode::Off {
            // Not mediated: nothing to bind (the host is ordinary egress).
            continue;
        }
        if rule.upstream.is_none() {
            // The server's default: the index host and the file hosts it names.
            if let Some(spec) = default_upstreams.get(&rule.kind) {
                let (index, files) = parse_upstream_spec(spec)
                    .map_err(|e| invalid(&format!("{path}.upstream"), e))?;
                rule.upstream = Some(index);
                if rule.files.is_empty() {
                    rule.files = files;
                }
            }
        }
        let Some(upstream) = rule.upstream.clone() else {
            return Err(invalid(
                &format!("{path}.upstream"),
                format!(
                    "no upstream: name the registry host here, or start the server with \
                     --registry-upstream {}=HOST",
                    rule.kind.as_str()
                ),
            ));
        };
        let (host, port) =
            split_upstream(&upstream).map_err(|e| invalid(&format!("{path}.upstream"), e))?;
        // The registry is reachable on its port: its mediation is the way through.
        // So are its file hosts: mediated the same way, never a plain allow.
        let mut files = Vec::new();
        for f in &rule.files {
            files.push(split_upstream(f).map_err(|e| invalid(&format!("{path}.files"), e))?);
        }
        for (h, p) in std::iter::once((host.clone(), port)).chain(files.iter().cloned()) {
            let reach = crate::Rule::new(crate::HostPattern::Exact(h), vec![p]);
            if !policy.network.allow.iter().any(|r| r.covers(&reach)) {
                policy.network.allow.push(reach);
                policy.network.allow.sort();
            }
        }
        let Some(content) = lockfiles.get(&rule.lockfile) else {
            return Err(invalid(
                &format!("{path}.lockfile"),
                format!(
                    "{} was not supplied (it must be committed at the repository's HEAD)",
                    rule.lockfile
                ),
            ));
        };
        if content.len() > MAX_LOCKFILE_BYTES {
            return Err(invalid(
                &format!("{path}.lockfile"),
                format!(
                    "{} is larger than {MAX_LOCKFILE_BYTES} bytes",
                    rule.lockfile
                ),
            ));
        }
        let pins = match rule.kind {
            RegistryKind::Npm => lockfile::parse_npm(content),
            RegistryKind::Pypi => lockfile::parse_requirements(content),
        }
        .map_err(|e| {
            invalid(
                &format!("{path}.lockfile"),
                format!("{}: {e}", rule.lockfile),
            )
        })?;
        let hex: String = Sha256::digest(content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        rule.lockfile_digest = Some(format!("sha256:{hex}"));
        bound.push(BoundRegistry {
            kind: rule.kind,
            mode: rule.mode,
            host,
            port,
            files,
            pins,
        });
    }
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    const LOCK: &str = r#"{"name":"app","lockfileVersion":3,"requires":true,"packages":{
        "":{"name":"app","dependencies":{"left-pad":"1.3.0"}},
        "node_modules/left-pad":{"version":"1.3.0","resolved":"https://r.test/left-pad/-/left-pad-1.3.0.tgz",
          "integrity":"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQuQvbWnYDGBwP1OmIp1+tOLVqlGu8fHmDw1YHZgpmoMbgAQ=="}}}"#;

    fn policy(extra: &str) -> CompiledPolicy {
        compile(&format!(
            "version: 1\nsandbox:\n  registries:\n    - {{kind: npm, lockfile: ./package-lock.json{extra}}}\n"
        ))
        .expect("policy")
    }

    #[test]
    fn schema_is_strict() {
        let p = policy("");
        assert_eq!(p.registries[0].mode, RegistryMode::Enforce);
        assert_eq!(p.registries[0].lockfile, "package-lock.json");
        for bad in [
            ", mode: maybe",
            ", upstream: 'http://x'",
            ", extra: 1",
            ", upstream: 10.0.0.1",
        ] {
            let yaml = format!(
                "version: 1\nsandbox:\n  registries:\n    - {{kind: npm, lockfile: a.json{bad}}}\n"
            );
            assert!(compile(&yaml).is_err(), "{bad}");
        }
        for bad in ["/etc/passwd", "../x.json", "a/../../b", ""] {
            let yaml = format!(
                "version: 1\nsandbox:\n  registries:\n    - {{kind: npm, lockfile: '{bad}'}}\n"
            );
            assert!(compile(&yaml).is_err(), "{bad}");
        }
        assert!(
            compile("version: 1\nsandbox:\n  registries:\n    - {kind: cpan, lockfile: a}\n")
                .is_err()
        );
        let two = "version: 1\nsandbox:\n  registries:\n    - {kind: npm, lockfile: a}\n    - {kind: npm, lockfile: b}\n";
        assert!(matches!(compile(two), Err(PolicyError::Conflict(_))));
        // No registries: the canonical form (and so every existing policy hash) is unchanged.
        assert!(!compile("version: 1\n")
            .unwrap()
            .canonical_json()
            .contains("registries"));
    }

    #[test]
    fn binding_covers_the_lockfile_in_the_hash_and_fails_closed() {
        let defaults: BTreeMap<_, _> = [(RegistryKind::Npm, "r.test".to_string())].into();
        let files: BTreeMap<_, _> =
            [("package-lock.json".to_string(), LOCK.as_bytes().to_vec())].into();
        let mut p = policy("");
        let before = p.policy_hash();
        let b = bind(&mut p, &files, &defaults).unwrap();
        assert_eq!(b[0].host, "r.test");
        assert!(b[0].pins.get("left-pad", "1.3.0").is_some());
        assert_ne!(p.policy_hash(), before);
        // Another lockfile, another hash.
        let other = LOCK.replace("1.3.0", "1.2.0");
        let files2: BTreeMap<_, _> = [("package-lock.json".to_string(), other.into_bytes())].into();
        let mut p2 = policy("");
        bind(&mut p2, &files2, &defaults).unwrap();
        assert_ne!(p.policy_hash(), p2.policy_hash());
        // Missing lockfile, garbage, no upstream: refused.
        assert!(bind(&mut policy(""), &BTreeMap::new(), &defaults).is_err());
        let junk: BTreeMap<_, _> = [("package-lock.json".to_string(), b"{".to_vec())].into();
        assert!(bind(&mut policy(""), &junk, &defaults).is_err());
        assert!(bind(&mut policy(""), &files, &BTreeMap::new()).is_err());
        // The policy's own upstream wins over the server default.
        let mut p3 = policy(", upstream: Mirror.Test");
        assert_eq!(
            bind(&mut p3, &files, &defaults).unwrap()[0].host,
            "mirror.test"
        );
    }

    #[test]
    fn pypi_file_hosts_are_bound_reachable_and_hashed() {
        assert_eq!(
            parse_upstream_spec("Index.Test:8443,files=files.test,files=cdn.test:444").unwrap(),
            (
                "index.test:8443".to_string(),
                vec!["files.test".to_string(), "cdn.test:444".to_string()]
            )
        );
        for bad in [
            "i.test,f.test",
            "i.test,files=",
            "i.test,files=http://x",
            "",
        ] {
            assert!(parse_upstream_spec(bad).is_err(), "{bad}");
        }
        let req = format!("demo==1.0 --hash=sha256:{}\n", "ab".repeat(32));
        let files: BTreeMap<_, _> = [("r.txt".to_string(), req.into_bytes())].into();
        let yaml = |extra: &str| {
            compile(&format!(
                "version: 1\nsandbox:\n  registries:\n    - {{kind: pypi, lockfile: r.txt{extra}}}\n"
            ))
        };
        let defaults: BTreeMap<_, _> = [(
            RegistryKind::Pypi,
            "index.test,files=files.test:8444".to_string(),
        )]
        .into();
        let mut p = yaml("").unwrap();
        let b = bind(&mut p, &files, &defaults).unwrap();
        assert_eq!(b[0].files, vec![("files.test".to_string(), 8444)]);
        assert!(b[0].serves("files.test", 8444) && !b[0].serves("files.test", 443));
        assert_eq!(p.registries[0].files, vec!["files.test:8444".to_string()]);
        let reach = crate::Rule::new(crate::HostPattern::Exact("files.test".into()), vec![8444]);
        assert!(p.network.allow.iter().any(|r| r.covers(&reach)));
        // The policy's own upstream brings its own file hosts (none: same-host layout).
        let mut own = yaml(", upstream: mirror.test").unwrap();
        assert!(bind(&mut own, &files, &defaults).unwrap()[0]
            .files
            .is_empty());
        let mut own = yaml(", upstream: mirror.test, files: [Cdn.Test]").unwrap();
        assert_eq!(
            bind(&mut own, &files, &defaults).unwrap()[0].files,
            vec![("cdn.test".to_string(), 443)]
        );
        assert_ne!(own.policy_hash(), p.policy_hash());
        // Only pypi has file hosts; they are host names.
        assert!(compile(
            "version: 1\nsandbox:\n  registries:\n    - {kind: npm, lockfile: a, files: [f.test]}\n"
        )
        .is_err());
        assert!(yaml(", files: ['https://f.test/x']").is_err());
    }
}
