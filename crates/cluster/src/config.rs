//! The cluster settings of `cleanroom serve`: `--cluster etcd=URL[,URL…]`, `--node-name`,
//! `--advertise`, checked before anything connects.

use crate::ClusterError;
use std::path::PathBuf;
use std::time::Duration;

/// A member's name: 1–63 of `a-z 0-9 -`, starting with a letter or digit (a DNS label:
/// it appears in keys, logs and URLs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeName(String);

impl NodeName {
    pub fn parse(s: &str) -> Result<Self, ClusterError> {
        let ok = !s.is_empty()
            && s.len() <= 63
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && s.as_bytes()[0] != b'-';
        if ok {
            Ok(NodeName(s.to_string()))
        } else {
            Err(ClusterError::Invalid(format!(
                "node name {s:?}: use 1-63 of a-z 0-9 - starting with a letter or digit"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for NodeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where etcd is and who this member is.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// etcd client URLs (`http://127.0.0.1:2379`).
    pub endpoints: Vec<String>,
    pub node_name: NodeName,
    /// The URL other members and clients reach this host's API at.
    pub advertise: String,
    /// The membership lease: a host that stops renewing is gone after this long.
    pub lease_ttl: Duration,
    /// How long one etcd call may take before it fails closed.
    pub timeout: Duration,
    /// `--cluster-tls DIR`: this node's identity (`cleanroom cluster issue`).
    pub tls_dir: Option<PathBuf>,
    /// `--cluster-listen HOST:PORT`: the member link's address, as other members dial it.
    pub listen: Option<std::net::SocketAddr>,
}

impl ClusterConfig {
    /// Parse `--cluster etcd=URL[,URL…]` with the node name and advertised URL.
    pub fn parse(cluster: &str, node_name: &str, advertise: &str) -> Result<Self, ClusterError> {
        let Some(urls) = cluster.strip_prefix("etcd=") else {
            return Err(ClusterError::Invalid(format!(
                "--cluster {cluster:?}: expected etcd=URL[,URL...]"
            )));
        };
        let endpoints: Vec<String> = urls.split(',').map(|u| u.trim().to_string()).collect();
        for u in &endpoints {
            let rest = u
                .strip_prefix("http://")
                .or_else(|| u.strip_prefix("https://"));
            if rest.is_none_or(|r| r.is_empty() || r.contains('/') && !r.ends_with('/')) {
                return Err(ClusterError::Invalid(format!(
                    "--cluster: {u:?} is not an etcd client URL (http://HOST:PORT)"
                )));
            }
            if u.starts_with("https://") {
                return Err(ClusterError::Invalid(format!(
                    "--cluster: {u:?}: TLS to etcd is not supported yet (docs/cluster.md)"
                )));
            }
        }
        let advertised = advertise
            .strip_prefix("http://")
            .or_else(|| advertise.strip_prefix("https://"));
        if advertised.is_none_or(str::is_empty) {
            return Err(ClusterError::Invalid(format!(
                "--advertise {advertise:?}: expected http(s)://HOST:PORT (this host's API URL)"
            )));
        }
        Ok(ClusterConfig {
            endpoints,
            node_name: NodeName::parse(node_name)?,
            advertise: advertise.to_string(),
            lease_ttl: Duration::from_secs(5),
            timeout: Duration::from_secs(3),
            tls_dir: None,
            listen: None,
        })
    }

    /// Add the member link: `--cluster-tls DIR` (required: members talk only over mutual
    /// TLS, `cluster_identity_invalid` without it) and `--cluster-listen HOST:PORT` (an
    /// address other members can dial: not unspecified).
    pub fn with_member_link(
        mut self,
        tls_dir: Option<PathBuf>,
        listen: Option<&str>,
    ) -> Result<Self, ClusterError> {
        let Some(dir) = tls_dir else {
            return Err(ClusterError::Identity(
                "--cluster needs --cluster-tls DIR (a node identity from `cleanroom cluster issue`): members talk only over mutual TLS".into(),
            ));
        };
        let Some(listen) = listen else {
            return Err(ClusterError::Invalid(
                "--cluster needs --cluster-listen HOST:PORT (the member link)".into(),
            ));
        };
        let addr: std::net::SocketAddr = listen.parse().map_err(|_| {
            ClusterError::Invalid(format!("--cluster-listen {listen:?}: expected IP:PORT"))
        })?;
        if addr.ip().is_unspecified() {
            return Err(ClusterError::Invalid(format!(
                "--cluster-listen {listen}: give the address other members reach this host at, not an unspecified one"
            )));
        }
        self.tls_dir = Some(dir);
        self.listen = Some(addr);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_before_anything_connects() {
        let c = ClusterConfig::parse(
            "etcd=http://127.0.0.1:2379,http://127.0.0.1:2380",
            "host-1",
            "https://10.0.0.1:7443",
        )
        .unwrap();
        assert_eq!(c.endpoints.len(), 2);
        assert_eq!(c.node_name.as_str(), "host-1");
        for (cluster, name, adv) in [
            ("http://127.0.0.1:2379", "a", "http://x:1"),
            ("etcd=", "a", "http://x:1"),
            ("etcd=ftp://x", "a", "http://x:1"),
            ("etcd=http://x:1", "", "http://x:1"),
            ("etcd=http://x:1", "Host_1", "http://x:1"),
            ("etcd=http://x:1", "-a", "http://x:1"),
            ("etcd=http://x:1", "a", "x:1"),
            ("etcd=http://x:1", &"a".repeat(64), "http://x:1"),
        ] {
            let e = ClusterConfig::parse(cluster, name, adv).unwrap_err();
            assert_eq!(
                e.code().as_str(),
                "invalid_argument",
                "{cluster} {name} {adv}: {e}"
            );
        }
    }
}
