//! The server's side of package registry and git mediation (`sandbox.registries`,
//! `sandbox.git`): the operator's
//! default upstream per registry kind (`serve --registry-upstream npm=HOST[:PORT]`), the
//! shared artifact cache under the state directory, and binding a sandbox's lockfiles to
//! its policy at CreateSandbox.

use crate::model::error::EngineError;
use cleanroom_egress::registry::{ArtifactCache, Mediation};
use cleanroom_policy::registries::{self, RegistryKind};
use cleanroom_policy::CompiledPolicy;
use std::collections::BTreeMap;
use std::path::Path;

/// Default cap of the artifact cache, in MiB.
pub const DEFAULT_CACHE_MB: u64 = 2048;
/// Most lockfiles one CreateSandbox may carry.
pub const MAX_LOCKFILES: usize = 8;

/// Operator settings of registry mediation.
#[derive(Debug, Clone)]
pub struct RegistrySettings {
    /// Registry host (`host` or `host:port`) per kind, for policies that name none. There
    /// is no built-in default: the operator names the public registry or a mirror.
    pub upstreams: BTreeMap<RegistryKind, String>,
    /// Size cap of the shared artifact cache.
    pub cache_bytes: u64,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        RegistrySettings {
            upstreams: BTreeMap::new(),
            cache_bytes: DEFAULT_CACHE_MB << 20,
        }
    }
}

impl RegistrySettings {
    /// Parse `serve --registry-upstream KIND=HOST[:PORT][,files=HOST[:PORT]]…` flags (file
    /// hosts: pypi only, the hosts its index links files on).
    pub fn parse_upstreams(specs: &[String]) -> Result<BTreeMap<RegistryKind, String>, String> {
        let mut out = BTreeMap::new();
        for spec in specs {
            let (kind, host) = spec
                .split_once('=')
                .ok_or_else(|| format!("{spec:?}: expected KIND=HOST[:PORT]"))?;
            let kind = RegistryKind::parse(kind.trim())
                .ok_or_else(|| format!("{spec:?}: unknown registry kind (supported: npm, pypi)"))?;
            let (index, files) =
                registries::parse_upstream_spec(host).map_err(|e| format!("{spec:?}: {e}"))?;
            if !files.is_empty() && kind != RegistryKind::Pypi {
                return Err(format!("{spec:?}: files= hosts are a pypi setting"));
            }
            let normalized = std::iter::once(index)
                .chain(files.into_iter().map(|f| format!("files={f}")))
                .collect::<Vec<_>>()
                .join(",");
            out.insert(kind, normalized);
        }
        Ok(out)
    }
}

/// Registry mediation of one server: its settings and the shared cache.
pub struct RegistryHub {
    upstreams: BTreeMap<RegistryKind, String>,
    cache: ArtifactCache,
}

impl RegistryHub {
    /// Open the artifact cache at `<state_dir>/registry-cache`.
    pub fn open(state_dir: &Path, settings: &RegistrySettings) -> std::io::Result<RegistryHub> {
        Ok(RegistryHub {
            upstreams: settings.upstreams.clone(),
            cache: ArtifactCache::open(&state_dir.join("registry-cache"), settings.cache_bytes)?,
        })
    }

    /// Bind `lockfiles` to `policy` (the policy hash then covers them) and make what the
    /// sandbox's gateway mediates. A server without a hub (tests) mediates with no cache
    /// and no default upstreams.
    pub fn bind(
        hub: Option<&RegistryHub>,
        policy: &mut CompiledPolicy,
        lockfiles: &BTreeMap<String, Vec<u8>>,
    ) -> Result<Mediation, EngineError> {
        if lockfiles.len() > MAX_LOCKFILES {
            return Err(EngineError::from(cleanroom_policy::PolicyError::Invalid(
                format!("more than {MAX_LOCKFILES} lockfiles"),
            )));
        }
        let empty = BTreeMap::new();
        let defaults = hub.map(|h| &h.upstreams).unwrap_or(&empty);
        let bound = registries::bind(policy, lockfiles, defaults)?;
        Ok(Mediation::new(bound, hub.map(|h| h.cache.clone())).with_git(policy.git.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_flags_name_pypi_file_hosts() {
        let u = RegistrySettings::parse_upstreams(&[
            "npm=Registry.Test".into(),
            "pypi=index.test:8443, files=Files.Test".into(),
        ])
        .unwrap();
        assert_eq!(u[&RegistryKind::Npm], "registry.test");
        assert_eq!(u[&RegistryKind::Pypi], "index.test:8443,files=files.test");
        for bad in [
            "npm=registry.test,files=files.test",
            "pypi=index.test,cdn.test",
            "pypi=index.test,files=https://files.test/",
        ] {
            assert!(
                RegistrySettings::parse_upstreams(&[bad.into()]).is_err(),
                "{bad}"
            );
        }
    }
}
