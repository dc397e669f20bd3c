//! `sandbox.volumes` and `--volume NAME:/path[:ro]`: which of its owner's named volumes a
//! sandbox mounts, where, and whether read-only. One grammar and one set of path rules for
//! the policy file, the CLI flag and the API's `CreateSandboxRequest.volumes`, so that a
//! mount the policy compiler accepts is exactly one the server can place. The compiled
//! policy carries the mounts (its hash covers them); the server resolves the names against
//! the creating principal's volumes.

use crate::{CompiledPolicy, PolicyError};
use serde::{Deserialize, Serialize};

/// Most volumes one sandbox mounts.
pub const MAX_VOLUMES_PER_SANDBOX: usize = 8;

/// Paths a volume may not be mounted on or below: the kernel's and the runtime's own
/// trees, and the system directories a sandbox's root shows read-only.
const SYSTEM_TREES: &[&str] = &[
    "/proc", "/dev", "/sys", "/run", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32", "/opt", "/boot", "/var",
];
/// Paths a volume may not be mounted on exactly (below them is fine): the root and the
/// sandbox's own writable directories, which a mount would hide whole.
const WHOLE_DIRS: &[&str] = &["/", "/workspace", "/tmp", "/root", "/home"];

/// One mount of a named volume into a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct VolumeMount {
    /// The volume's name (the creating principal's volume of that name).
    pub name: String,
    /// Absolute, normalized guest path.
    pub path: String,
    #[serde(default, skip_serializing_if = "crate::is_false")]
    pub read_only: bool,
}

/// `sandbox.volumes[]` as written in cleanroom.yaml.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VolumeSection {
    name: String,
    path: String,
    #[serde(default)]
    read_only: bool,
}

/// A volume name: 1-63 bytes of lowercase letters, digits, `.`, `_`, `-`, starting with a
/// letter or digit (the same names on every filesystem and in every URL).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=63).contains(&name.len())
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "volume name {name:?} must be 1-63 of a-z 0-9 . _ - starting with a letter or digit"
        ))
    }
}

/// The guest path of a mount, normalized, or why it cannot hold a volume.
pub fn check_path(raw: &str) -> Result<String, String> {
    if !raw.starts_with('/') {
        return Err(format!(
            "{raw:?} must be an absolute path inside the sandbox"
        ));
    }
    if raw.len() > 1024 || raw.contains('\0') {
        return Err(format!("{raw:?} is not a usable path"));
    }
    let parts: Vec<&str> = raw.split('/').filter(|c| !c.is_empty()).collect();
    if parts.iter().any(|c| *c == "." || *c == "..") {
        return Err(format!("{raw:?} must not contain . or .. components"));
    }
    let path = format!("/{}", parts.join("/"));
    if WHOLE_DIRS.contains(&path.as_str()) {
        return Err(format!(
            "{path} itself cannot hold a volume (a directory below it can, e.g. {}/data)",
            path.trim_end_matches('/')
        ));
    }
    if let Some(sys) = SYSTEM_TREES
        .iter()
        .find(|t| path == **t || path.starts_with(&format!("{t}/")))
    {
        return Err(format!("{path} is under the system path {sys}"));
    }
    Ok(path)
}

/// `NAME:/path[:ro|:rw]` (the CLI's `--volume`).
pub fn parse_flag(spec: &str) -> Result<VolumeMount, String> {
    let (name, rest) = spec
        .split_once(':')
        .ok_or_else(|| format!("{spec:?}: expected NAME:/path[:ro]"))?;
    let (path, read_only) = match rest.rsplit_once(':') {
        Some((p, "ro")) => (p, true),
        Some((p, "rw")) => (p, false),
        Some((_, opt)) => return Err(format!("{spec:?}: unknown mount option {opt:?} (ro or rw)")),
        None => (rest, false),
    };
    check_name(name)?;
    Ok(VolumeMount {
        name: name.to_string(),
        path: check_path(path)?,
        read_only,
    })
}

/// Check a set of mounts together: each one's name and path, at most
/// [`MAX_VOLUMES_PER_SANDBOX`], no volume twice, no path on or below another's. Returns
/// them sorted (the canonical order the policy hash sees).
pub fn check_all(mut mounts: Vec<VolumeMount>) -> Result<Vec<VolumeMount>, String> {
    if mounts.len() > MAX_VOLUMES_PER_SANDBOX {
        return Err(format!(
            "{} volumes: a sandbox mounts at most {MAX_VOLUMES_PER_SANDBOX}",
            mounts.len()
        ));
    }
    for m in mounts.iter_mut() {
        check_name(&m.name)?;
        m.path = check_path(&m.path)?;
    }
    mounts.sort();
    for (i, a) in mounts.iter().enumerate() {
        for b in &mounts[i + 1..] {
            if a.name == b.name {
                return Err(format!("volume {} is mounted twice", a.name));
            }
            let nested = |x: &str, y: &str| x == y || y.starts_with(&format!("{x}/"));
            if nested(&a.path, &b.path) || nested(&b.path, &a.path) {
                return Err(format!(
                    "mounts on {} and {} overlap (one path per volume, none inside another)",
                    a.path, b.path
                ));
            }
        }
    }
    Ok(mounts)
}

pub(crate) fn compile_volumes(
    sections: Vec<VolumeSection>,
) -> Result<Vec<VolumeMount>, PolicyError> {
    let mounts = sections
        .into_iter()
        .map(|s| VolumeMount {
            name: s.name,
            path: s.path,
            read_only: s.read_only,
        })
        .collect();
    check_all(mounts).map_err(|e| PolicyError::Invalid(format!("sandbox.volumes: {e}")))
}

impl CompiledPolicy {
    /// This policy with the request's mounts added (`--volume`): the result is checked as
    /// a whole (a request mount may not repeat or overlap the policy's), and its hash
    /// covers every mount.
    pub fn with_volumes(mut self, extra: Vec<VolumeMount>) -> Result<CompiledPolicy, String> {
        if extra.is_empty() {
            return Ok(self);
        }
        let mut all = std::mem::take(&mut self.volumes);
        all.extend(extra);
        self.volumes = check_all(all)?;
        Ok(self)
    }
}

/// The policy document `yaml` with `extra` appended to its `sandbox.volumes` (the
/// request's `--volume` mounts; learn mode rewrites a policy the same way). The result is
/// compiled as usual: a mount that repeats or overlaps the policy's is `policy_invalid`.
pub fn yaml_with_volumes(yaml: &str, extra: &[VolumeMount]) -> Result<String, PolicyError> {
    if extra.is_empty() {
        return Ok(yaml.to_string());
    }
    if yaml.len() > crate::MAX_POLICY_BYTES {
        return crate::compile(yaml).map(|_| String::new());
    }
    let mut doc: serde_json::Value = if yaml.trim().is_empty() {
        serde_json::json!({"version": 1})
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| PolicyError::Invalid(e.to_string()))?
    };
    let bad = |m: &str| PolicyError::Invalid(m.to_string());
    let root = doc
        .as_object_mut()
        .ok_or_else(|| bad("a policy is a mapping"))?;
    let sandbox = root
        .entry("sandbox")
        .or_insert_with(|| serde_json::json!({}))
        .as_object_mut()
        .ok_or_else(|| bad("sandbox: must be a mapping"))?;
    let list = sandbox
        .entry("volumes")
        .or_insert_with(|| serde_json::json!([]))
        .as_array_mut()
        .ok_or_else(|| bad("sandbox.volumes: must be a list"))?;
    for m in extra {
        list.push(serde_json::json!({"name": m.name, "path": m.path, "read_only": m.read_only}));
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_and_bad_paths_are_refused() {
        let m = parse_flag("data:/workspace/data:ro").unwrap();
        assert_eq!(
            (m.name.as_str(), m.path.as_str(), m.read_only),
            ("data", "/workspace/data", true)
        );
        assert!(!parse_flag("data:/mnt//x/").unwrap().read_only);
        assert_eq!(parse_flag("data:/mnt//x/").unwrap().path, "/mnt/x");
        for bad in [
            "data",
            "data:relative",
            "data:/mnt/../etc",
            "data:/proc/x",
            "data:/dev",
            "data:/sys/fs",
            "data:/etc",
            "data:/",
            "data:/workspace",
            "data:/mnt/x:rx",
            "Data:/mnt/x",
            ":/mnt/x",
        ] {
            assert!(parse_flag(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn sets_refuse_repeats_and_overlaps() {
        let m = |n: &str, p: &str| VolumeMount {
            name: n.into(),
            path: p.into(),
            read_only: false,
        };
        assert!(check_all(vec![m("a", "/a"), m("b", "/b")]).is_ok());
        assert!(check_all(vec![m("a", "/a"), m("a", "/b")]).is_err());
        assert!(check_all(vec![m("a", "/a"), m("b", "/a/b")]).is_err());
        assert!(check_all(vec![m("a", "/a"), m("b", "/a")]).is_err());
        assert!(check_all(vec![m("a", "/ab"), m("b", "/a")]).is_ok());
        let many: Vec<_> = (0..9)
            .map(|i| m(&format!("v{i}"), &format!("/v{i}")))
            .collect();
        assert!(check_all(many).is_err());
    }

    #[test]
    fn the_policy_carries_its_volumes_and_its_hash_covers_them() {
        let base = crate::compile("version: 1\n").unwrap();
        let yaml = "version: 1\nsandbox:\n  volumes:\n    - {name: cache, path: /workspace/cache, read_only: true}\n";
        let p = crate::compile(yaml).unwrap();
        assert_eq!(p.volumes.len(), 1);
        assert!(p.volumes[0].read_only);
        assert_ne!(p.policy_hash(), base.policy_hash());
        let flagged = base
            .clone()
            .with_volumes(vec![parse_flag("cache:/workspace/cache:ro").unwrap()])
            .unwrap();
        assert_eq!(flagged.policy_hash(), p.policy_hash());
        let bad = "version: 1\nsandbox:\n  volumes:\n    - {name: cache, path: /proc/x}\n";
        assert!(crate::compile(bad)
            .unwrap_err()
            .to_string()
            .contains("sandbox.volumes"));
        let unknown = "version: 1\nsandbox:\n  volumes:\n    - {name: cache, path: /x, ro: true}\n";
        assert!(crate::compile(unknown).is_err());
        // A request mount may not repeat the policy's.
        assert!(p
            .with_volumes(vec![parse_flag("cache:/other").unwrap()])
            .is_err());
    }
}
