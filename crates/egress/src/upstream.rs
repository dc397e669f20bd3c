//! Connecting to the real destination on the sandbox's behalf.
//!
//! Names are resolved on the host (or through operator-given overrides). Addresses that
//! belong to the host or its private networks — loopback, RFC 1918, link-local (cloud
//! metadata), CGNAT, multicast — are refused unless an override names them: an allowed
//! host whose DNS points at 127.0.0.1 must not become a door to the host's own services.

use cleanroom_policy::DenyReason;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;

/// How long one upstream connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Server-wide upstream settings.
#[derive(Debug, Clone, Default)]
pub struct UpstreamConfig {
    /// Host name (normalized) -> addresses, used instead of the host's resolver. The
    /// operator vouches for these, so private and loopback addresses are allowed here.
    pub overrides: HashMap<String, Vec<IpAddr>>,
    /// CAs trusted for upstream TLS besides the system's (`serve --upstream-ca`).
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    tls: std::sync::OnceLock<Arc<rustls::ClientConfig>>,
}

/// Why no upstream connection was made.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Denied(DenyReason, String),
    #[error("{0}")]
    Unreachable(String),
}

/// Addresses a sandbox may never reach through DNS (the host and its neighbours).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

impl UpstreamConfig {
    /// Add one `HOST=IP[,IP…]` override (the `--egress-resolve` flag of `cleanroom serve`).
    pub fn add_override(&mut self, spec: &str) -> Result<(), String> {
        let (host, ips) = spec
            .split_once('=')
            .ok_or_else(|| format!("{spec:?}: expected HOST=IP[,IP...]"))?;
        let host = cleanroom_policy::normalize_wire_host(host)
            .ok_or_else(|| format!("{spec:?}: {host:?} is not a host name"))?;
        let ips = ips
            .split(',')
            .map(|ip| ip.trim().parse::<IpAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| format!("{spec:?}: not a list of IP addresses"))?;
        if ips.is_empty() {
            return Err(format!("{spec:?}: no address"));
        }
        self.overrides.insert(host, ips);
        Ok(())
    }

    /// Trust `pem` (one or more CA certificates) for upstream TLS besides the system's
    /// roots. Checked here, at startup, so a bad file stops the server instead of every
    /// later request.
    pub fn add_extra_roots(&mut self, pem: &str) -> Result<(), crate::tls::TlsError> {
        let certs = crate::tls::parse_pem_certs(pem)?;
        let mut all = self.extra_roots.clone();
        all.extend(certs);
        let config = crate::tls::client_config(&all)?;
        self.extra_roots = all;
        self.tls = std::sync::OnceLock::from(config);
        Ok(())
    }

    /// The verifying TLS client used towards secret-bound hosts (built on first use: the
    /// system roots are read once).
    pub fn client_tls(&self) -> Result<Arc<rustls::ClientConfig>, crate::tls::TlsError> {
        if let Some(c) = self.tls.get() {
            return Ok(c.clone());
        }
        let c = crate::tls::client_config(&self.extra_roots)?;
        Ok(self.tls.get_or_init(|| c).clone())
    }

    /// Addresses to try for `host:port`, internal ones filtered unless overridden.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, UpstreamError> {
        if let Some(addrs) = self.overrides.get(host) {
            return Ok(addrs.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| UpstreamError::Unreachable(format!("cannot resolve {host}: {e}")))?
            .collect();
        let external: Vec<SocketAddr> = found
            .iter()
            .copied()
            .filter(|a| !is_internal(a.ip()))
            .collect();
        if external.is_empty() && !found.is_empty() {
            return Err(UpstreamError::Denied(
                DenyReason::UpstreamAddressNotAllowed,
                format!("{host} resolves only to internal addresses"),
            ));
        }
        if external.is_empty() {
            return Err(UpstreamError::Unreachable(format!("{host} has no address")));
        }
        Ok(external)
    }

    /// Resolve and connect, trying each address in turn.
    pub async fn connect(&self, host: &str, port: u16) -> Result<TcpStream, UpstreamError> {
        let addrs = self.resolve(host, port).await?;
        let mut last = String::from("no address");
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Ok(Err(e)) => last = format!("{addr}: {e}"),
                Err(_) => last = format!("{addr}: connect timed out"),
            }
        }
        Err(UpstreamError::Unreachable(format!(
            "cannot connect to {host}:{port}: {last}"
        )))
    }

    /// Connect to an address the sandbox named directly (only under
    /// `dangerously_allow_all`); internal addresses stay refused.
    pub async fn connect_addr(&self, addr: SocketAddr) -> Result<TcpStream, UpstreamError> {
        if is_internal(addr.ip()) {
            return Err(UpstreamError::Denied(
                DenyReason::UpstreamAddressNotAllowed,
                format!("{} is an internal address", addr.ip()),
            ));
        }
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(UpstreamError::Unreachable(format!("{addr}: {e}"))),
            Err(_) => Err(UpstreamError::Unreachable(format!(
                "{addr}: connect timed out"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.5",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "224.0.0.1",
        ] {
            assert!(is_internal(a.parse().unwrap()), "{a}");
        }
        for a in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            assert!(!is_internal(a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn override_specs() {
        let mut cfg = UpstreamConfig::default();
        cfg.add_override("API.Test=127.0.0.1,::1").unwrap();
        assert_eq!(cfg.overrides["api.test"].len(), 2);
        assert!(cfg.add_override("api.test").is_err());
        assert!(cfg.add_override("1.2.3.4=127.0.0.1").is_err());
        assert!(cfg.add_override("a.test=nope").is_err());
    }

    #[tokio::test]
    async fn overrides_bypass_the_filter_and_dns_names_do_not() {
        let mut cfg = UpstreamConfig::default();
        cfg.overrides
            .insert("svc.test".into(), vec!["127.0.0.1".parse().unwrap()]);
        assert_eq!(
            cfg.resolve("svc.test", 80).await.unwrap(),
            vec!["127.0.0.1:80".parse().unwrap()]
        );
        match cfg.resolve("localhost", 80).await {
            Err(UpstreamError::Denied(DenyReason::UpstreamAddressNotAllowed, _)) => {}
            other => panic!("{other:?}"),
        }
    }
}
