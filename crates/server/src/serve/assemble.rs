//! Assembly of a [`ServeConfig`] from plain settings (what `cleanroom serve`'s flags
//! carry), so the CLI only parses arguments: state-dir defaults, registry credentials,
//! the init binary, quota and connection-limit units all live here, next to the server
//! they configure. clap stays in the CLI; this module knows no flag syntax.

use crate::output::quota::RetentionConfig;
use crate::serve::listener::ConnLimits;
use crate::serve::{AuthConfig, Listen, ServeConfig, ServeError};
use crate::store::SandboxCaps;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything `cleanroom serve` is told, as plain values (sizes in MiB, times in
/// seconds, exactly as the flags take them).
#[derive(Debug, Clone)]
pub struct ServeSettings {
    pub listen: Listen,
    /// `--ui-listen`: a further TCP listener for the web console (and the API) beside
    /// `listen` — how a server on a unix socket serves browsers (docs/web.md).
    pub ui_listen: Option<Listen>,
    /// `--metrics-listen`: a further TCP listener serving `/metrics` only.
    pub metrics_listen: Option<Listen>,
    /// `None`: [`default_state_dir`].
    pub state_dir: Option<PathBuf>,
    pub egress_resolve: Vec<String>,
    pub egress_trust_internal: Vec<String>,
    /// Registries (`host:port`) reached over plain HTTP.
    pub insecure_registry: Vec<String>,
    /// JSON file `{"host[:port]": {"username": .., "password": ..}}`.
    pub registry_credentials: Option<PathBuf>,
    pub secrets_file: Option<PathBuf>,
    pub upstream_ca: Vec<PathBuf>,
    /// `KIND=HOST[:PORT]` default registry upstreams ([`crate::engine::registries`]).
    pub registry_upstream: Vec<String>,
    /// Size cap of the package artifact cache, in MiB.
    pub registry_cache_mb: u64,
    pub output_log_max_mb: u64,
    pub output_log_min_free_mb: u64,
    pub output_log_max_age_secs: u64,
    pub output_log_gc_interval_secs: u64,
    pub image_max_mb: u64,
    pub image_max_entries: u64,
    pub image_cache_max_mb: u64,
    pub tokens_file: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub client_ca: Option<PathBuf>,
    pub insecure_no_auth: bool,
    pub api_header_timeout_secs: u64,
    pub api_idle_timeout_secs: u64,
    pub api_max_connections: usize,
    /// Connections not authenticated yet, and how long one may stay so.
    pub api_preauth_connections: usize,
    pub api_preauth_timeout_secs: u64,
    /// `--inbound-max-connections`: open connections per exposure / forwarded port (0: 64).
    pub inbound_max_connections: usize,
    /// `--preview-domain DOMAIN[:PORT]` ([`crate::inbound::preview`]).
    pub preview_domain: Option<String>,
    pub max_sandboxes_per_principal: u32,
    pub max_sandboxes: u32,
    /// Egress approval defaults (`--approval-timeout`, `--max-pending-approvals`).
    pub approvals: crate::engine::approvals::ApprovalSettings,
    /// Default sandbox TTL and idle timeout in seconds (0: none).
    pub sandbox_ttl_secs: u64,
    pub sandbox_idle_timeout_secs: u64,
    /// The console endpoint (`--console-listen`, `--console-token-ttl-secs`).
    pub console: crate::console::ConsoleConfig,
    /// `--keep-cgroup-options`: leave the host's cgroup2 mount options alone
    /// ([`cleanroom_backend::linux::hosttune`]).
    pub keep_cgroup_options: bool,
    /// `--default-runtime`, `--runsc`, `--gvisor-platform`.
    pub runtimes: crate::serve::RuntimeSettings,
    /// `--cluster etcd=URL…`, `--node-name`, `--advertise`, as given (checked by
    /// `cleanroom_cluster::ClusterConfig::parse`).
    pub cluster: Option<(String, String, String)>,
    /// `--cluster-tls DIR`, `--cluster-listen HOST:PORT`: the member link.
    pub cluster_tls: Option<PathBuf>,
    pub cluster_listen: Option<String>,
}

/// Settings that cannot become a configuration, each with a stable code.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The server re-executes its own binary as each sandbox's pid 1.
    #[error("cannot locate own binary: {0}")]
    InitExe(std::io::Error),
    #[error("registry credentials {0}: {1}")]
    RegistryCredentials(PathBuf, String),
    #[error("invalid --registry-upstream {0}")]
    RegistryUpstream(String),
    #[error("{1}")]
    Cluster(&'static str, String),
    #[error("{0}")]
    PreviewDomain(String),
}

impl AssembleError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            AssembleError::InitExe(_) => "backend_unavailable",
            AssembleError::Cluster(code, _) => code,
            AssembleError::RegistryCredentials(..)
            | AssembleError::RegistryUpstream(_)
            | AssembleError::PreviewDomain(_) => "invalid_argument",
        }
    }
}

impl ServeError {
    /// Stable machine code of a startup failure: refused authentication/TLS settings are
    /// `auth_config_invalid`, everything else `server_start_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            ServeError::Auth(_) => "auth_config_invalid",
            // Joining the cluster failed: say how (fail closed, docs/cluster.md).
            ServeError::Engine(e)
                if matches!(
                    e.code,
                    cleanroom_vocab::ErrorCode::ClusterUnavailable
                        | cleanroom_vocab::ErrorCode::NodeNameTaken
                        | cleanroom_vocab::ErrorCode::ClusterIdentityInvalid
                ) =>
            {
                e.code.as_str()
            }
            _ => "server_start_failed",
        }
    }
}

/// `/var/lib/cleanroom` for root, else `$XDG_STATE_HOME/cleanroom`
/// (`~/.local/state/cleanroom`, `/tmp/cleanroom` without a home).
pub fn default_state_dir() -> PathBuf {
    state_dir_for(
        nix::unistd::geteuid().is_root(),
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
    )
}

fn state_dir_for(
    root: bool,
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> PathBuf {
    if root {
        return PathBuf::from("/var/lib/cleanroom");
    }
    xdg_state_home
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("cleanroom")
}

/// Read the registry credentials file.
fn registry_credentials(
    path: &Path,
) -> Result<std::collections::HashMap<String, cleanroom_image::Credentials>, AssembleError> {
    std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| AssembleError::RegistryCredentials(path.to_path_buf(), e))
}

impl ServeSettings {
    /// The server configuration these settings describe; `init_exe` is this process's
    /// own binary, named by `/proc/self/exe`: the very file this process runs, even after
    /// another is renamed over its path (a package upgrade). Every zygote — started again
    /// every 128 forks and after it dies — runs that file, so the init hash the
    /// attestations carry (taken from it once at start) stays the hash of what sandboxes
    /// run. A path from `current_exe()` would start the new file while attesting the old.
    pub fn into_config(self) -> Result<ServeConfig, AssembleError> {
        let init_exe = PathBuf::from("/proc/self/exe");
        std::fs::metadata(&init_exe).map_err(AssembleError::InitExe)?;
        self.into_config_with(init_exe)
    }

    fn into_config_with(self, init_exe: PathBuf) -> Result<ServeConfig, AssembleError> {
        let mut registry = cleanroom_image::RegistryConfig {
            insecure: self.insecure_registry,
            ..Default::default()
        };
        if let Some(path) = &self.registry_credentials {
            registry.credentials = registry_credentials(path)?;
        }
        let mib = |v: u64| v.saturating_mul(1 << 20);
        let preview_domain = match &self.preview_domain {
            None => None,
            Some(_) if matches!(self.listen, Listen::Unix(_)) => {
                return Err(AssembleError::PreviewDomain(
                    "--preview-domain needs a TCP API listener (--listen http(s)://ADDR): browsers cannot reach a unix socket".into(),
                ))
            }
            Some(d) => Some(
                crate::inbound::preview::PreviewDomain::parse(d)
                    .map_err(AssembleError::PreviewDomain)?,
            ),
        };
        Ok(ServeConfig {
            listen: self.listen,
            ui_listen: self.ui_listen,
            metrics_listen: self.metrics_listen,
            state_dir: self.state_dir.unwrap_or_else(default_state_dir),
            init_exe,
            keep_cgroup_options: self.keep_cgroup_options,
            runtimes: self.runtimes,
            cluster: self
                .cluster
                .map(|(c, n, a)| {
                    cleanroom_cluster::ClusterConfig::parse(&c, &n, &a)?
                        .with_member_link(self.cluster_tls, self.cluster_listen.as_deref())
                })
                .transpose()
                .map_err(|e| AssembleError::Cluster(e.code().as_str(), e.to_string()))?,
            egress_resolve: self.egress_resolve,
            egress_trust_internal: self.egress_trust_internal,
            registry,
            secrets_file: self.secrets_file,
            upstream_ca: self.upstream_ca,
            package_registries: crate::engine::registries::RegistrySettings {
                upstreams: crate::engine::registries::RegistrySettings::parse_upstreams(
                    &self.registry_upstream,
                )
                .map_err(AssembleError::RegistryUpstream)?,
                cache_bytes: mib(self.registry_cache_mb.max(1)),
            },
            retention: RetentionConfig {
                max_total_bytes: mib(self.output_log_max_mb),
                min_free_bytes: mib(self.output_log_min_free_mb),
                max_age: Duration::from_secs(self.output_log_max_age_secs),
                gc_interval: Duration::from_secs(self.output_log_gc_interval_secs.max(1)),
            },
            image_limits: cleanroom_image::ImageLimits {
                max_image_bytes: mib(self.image_max_mb),
                max_entries: self.image_max_entries,
                max_cache_bytes: mib(self.image_cache_max_mb),
            },
            auth: AuthConfig {
                tokens_file: self.tokens_file,
                tls_cert: self.tls_cert,
                tls_key: self.tls_key,
                client_ca: self.client_ca,
                insecure_no_auth: self.insecure_no_auth,
                conn: ConnLimits {
                    header_read_timeout: Duration::from_secs(self.api_header_timeout_secs.max(1)),
                    idle_timeout: Duration::from_secs(self.api_idle_timeout_secs.max(1)),
                    max_connections: self.api_max_connections.max(1),
                    preauth_connections: self.api_preauth_connections.max(1),
                    preauth_timeout: Duration::from_secs(self.api_preauth_timeout_secs.max(1)),
                    ..Default::default()
                },
                caps: SandboxCaps {
                    per_owner: self.max_sandboxes_per_principal,
                    total: self.max_sandboxes,
                },
            },
            approvals: self.approvals,
            lifetimes: crate::engine::lifetimes::LifetimeDefaults {
                ttl_seconds: self.sandbox_ttl_secs,
                idle_timeout_seconds: self.sandbox_idle_timeout_secs,
                ..Default::default()
            },
            console: self.console,
            inbound: crate::inbound::InboundLimits {
                max_connections: match self.inbound_max_connections {
                    0 => crate::inbound::InboundLimits::default().max_connections,
                    n => n,
                },
                ..Default::default()
            },
            preview_domain,
        })
    }
}

/// Raise this process's descriptor limit as far as allowed: egress gateways hold an
/// upstream socket per sandbox connection.
pub fn raise_fd_limit() {
    cleanroom_egress::limits::raise_fd_limit();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn settings() -> ServeSettings {
        ServeSettings {
            listen: Listen::Unix(PathBuf::from("/tmp/x.sock")),
            ui_listen: None,
            metrics_listen: None,
            state_dir: Some(PathBuf::from("/tmp/state")),
            egress_resolve: vec![],
            egress_trust_internal: vec![],
            insecure_registry: vec!["127.0.0.1:5000".into()],
            registry_credentials: None,
            secrets_file: None,
            upstream_ca: vec![],
            registry_upstream: vec![],
            registry_cache_mb: 64,
            output_log_max_mb: 10,
            output_log_min_free_mb: 1,
            output_log_max_age_secs: 7,
            output_log_gc_interval_secs: 0,
            image_max_mb: 2,
            image_max_entries: 5,
            image_cache_max_mb: 3,
            tokens_file: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            insecure_no_auth: false,
            api_header_timeout_secs: 0,
            api_idle_timeout_secs: 9,
            api_max_connections: 0,
            api_preauth_connections: 0,
            api_preauth_timeout_secs: 0,
            inbound_max_connections: 0,
            preview_domain: None,
            max_sandboxes_per_principal: 4,
            max_sandboxes: 8,
            approvals: Default::default(),
            sandbox_ttl_secs: 0,
            sandbox_idle_timeout_secs: 0,
            console: Default::default(),
            keep_cgroup_options: false,
            runtimes: Default::default(),
            cluster: None,
            cluster_tls: None,
            cluster_listen: None,
        }
    }

    #[test]
    fn units_and_floors_are_applied() {
        let c = settings()
            .into_config_with(PathBuf::from("/bin/cleanroom"))
            .expect("config");
        assert_eq!(c.retention.max_total_bytes, 10 << 20);
        assert_eq!(c.retention.min_free_bytes, 1 << 20);
        assert_eq!(c.retention.max_age, Duration::from_secs(7));
        assert_eq!(c.retention.gc_interval, Duration::from_secs(1));
        assert_eq!(c.image_limits.max_image_bytes, 2 << 20);
        assert_eq!(c.image_limits.max_entries, 5);
        assert_eq!(c.image_limits.max_cache_bytes, 3 << 20);
        assert_eq!(c.auth.conn.header_read_timeout, Duration::from_secs(1));
        assert_eq!(c.auth.conn.idle_timeout, Duration::from_secs(9));
        assert_eq!(c.auth.conn.max_connections, 1);
        assert_eq!(c.auth.caps.per_owner, 4);
        assert_eq!(c.auth.caps.total, 8);
        assert_eq!(c.registry.insecure, vec!["127.0.0.1:5000".to_string()]);
        assert_eq!(c.state_dir, PathBuf::from("/tmp/state"));
        assert_eq!(c.init_exe, PathBuf::from("/bin/cleanroom"));
    }

    #[test]
    fn huge_sizes_saturate_instead_of_wrapping() {
        let mut s = settings();
        s.output_log_max_mb = u64::MAX;
        let c = s.into_config_with(PathBuf::from("/x")).expect("config");
        assert_eq!(c.retention.max_total_bytes, u64::MAX);
    }

    #[test]
    fn registry_credentials_read_or_refused_with_a_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = dir.path().join("good.json");
        std::fs::File::create(&good)
            .and_then(|mut f| {
                f.write_all(br#"{"r.test:5000": {"username": "u", "password": "p"}}"#)
            })
            .expect("write");
        let mut s = settings();
        s.registry_credentials = Some(good);
        let c = s.into_config_with(PathBuf::from("/x")).expect("config");
        assert!(c.registry.credentials.contains_key("r.test:5000"));
        for (name, body) in [("bad.json", Some("{not json")), ("missing.json", None)] {
            let p = dir.path().join(name);
            if let Some(b) = body {
                std::fs::write(&p, b).expect("write");
            }
            let mut s = settings();
            s.registry_credentials = Some(p.clone());
            let e = s
                .into_config_with(PathBuf::from("/x"))
                .expect_err("refused");
            assert_eq!(e.code(), "invalid_argument");
            assert!(e
                .to_string()
                .starts_with(&format!("registry credentials {}: ", p.display())));
        }
    }

    #[test]
    fn state_dir_defaults() {
        assert_eq!(
            state_dir_for(true, Some("/x".into()), Some("/h".into())),
            PathBuf::from("/var/lib/cleanroom")
        );
        assert_eq!(
            state_dir_for(false, Some("/x".into()), Some("/h".into())),
            PathBuf::from("/x/cleanroom")
        );
        assert_eq!(
            state_dir_for(false, Some("".into()), Some("/h".into())),
            PathBuf::from("/h/.local/state/cleanroom")
        );
        assert_eq!(
            state_dir_for(false, None, None),
            PathBuf::from("/tmp/cleanroom")
        );
    }

    #[test]
    fn startup_errors_have_stable_codes() {
        assert_eq!(ServeError::Auth("x".into()).code(), "auth_config_invalid");
        assert_eq!(
            ServeError::StateLocked(PathBuf::from("/s")).code(),
            "server_start_failed"
        );
        assert_eq!(
            AssembleError::InitExe(std::io::Error::other("gone")).code(),
            "backend_unavailable"
        );
    }
}
