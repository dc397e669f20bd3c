//! Connecting to the real destination on the sandbox's behalf.
//!
//! Names are resolved on the host (or through operator-given overrides). What DNS answers
//! is filtered ([`crate::addrs`]): an address of this host (any interface, read live) is
//! never used, and a special-purpose address (loopback, private, link-local/cloud metadata,
//! CGNAT, documentation, benchmarking, multicast, … and their IPv6 embeddings) only for
//! names the operator trusts (`serve --egress-trust-internal`). An allowed host whose DNS
//! points at 127.0.0.1 or at the host's public address must not become a door to the host's
//! own services. Addresses pinned with `serve --egress-resolve` are the operator's explicit
//! word and are used as given.

use crate::addrs;
use cleanroom_policy::{DenyReason, HostPattern};
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
    /// Names whose DNS answers may be special-purpose addresses
    /// (`serve --egress-trust-internal`). Never the host's own addresses.
    trusted_internal: Vec<HostPattern>,
    /// CAs trusted for upstream TLS besides the system's (`serve --upstream-ca`).
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    tls: std::sync::OnceLock<Arc<rustls::ClientConfig>>,
}

/// The HTTP/1 client every upstream exchange uses (proxied requests, terminated TLS,
/// registry and git mediation). A response header continued on an obs-fold line is
/// unfolded — each obs-fold replaced by one SP before the field is interpreted, as
/// RFC 9112 section 5.2 lets a proxy do — instead of failing the exchange. (Requests with
/// obs-fold are refused before they are parsed: `framing.rs`.) A response with neither
/// Content-Length nor Transfer-Encoding is read until the upstream closes (section 6.3).
pub(crate) fn http1_client() -> hyper::client::conn::http1::Builder {
    let mut b = hyper::client::conn::http1::Builder::new();
    b.allow_obsolete_multiline_headers_in_responses(true);
    b
}

/// Why no upstream connection was made.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("{0}")]
    Denied(DenyReason, String),
    #[error("{0}")]
    Unreachable(String),
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

    /// Trust one name pattern's DNS answers even when they are special-purpose addresses
    /// (the `--egress-trust-internal` flag of `cleanroom serve`): an exact name or
    /// `*.suffix` (every name under the suffix, not the suffix itself).
    pub fn add_trusted_internal(&mut self, pattern: &str) -> Result<(), String> {
        let p = HostPattern::parse(pattern)?;
        self.trusted_internal.push(p);
        Ok(())
    }

    fn trusts_internal(&self, host: &str) -> bool {
        self.trusted_internal.iter().any(|p| p.matches(host))
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

    /// Addresses to try for `host:port`: the operator's pinned addresses as given, or the
    /// host resolver's answers without this host's own addresses and, unless the name is
    /// trusted, without special-purpose ones.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, UpstreamError> {
        if let Some(addrs) = self.overrides.get(host) {
            return Ok(addrs.iter().map(|ip| SocketAddr::new(*ip, port)).collect());
        }
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| UpstreamError::Unreachable(format!("cannot resolve {host}: {e}")))?
            .collect();
        if found.is_empty() {
            return Err(UpstreamError::Unreachable(format!("{host} has no address")));
        }
        self.filter_answers(host, found)
    }

    /// Keep the answers a sandbox may reach; when none is left, say which flag would help.
    fn filter_answers(
        &self,
        host: &str,
        found: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, UpstreamError> {
        // Read now, not cached: the host's addresses change (DHCP, VPNs, containers). If
        // they cannot be read, every address counts as the host's (fail closed).
        let own = addrs::host_addresses().ok();
        let is_own = |ip: IpAddr| own.as_ref().is_none_or(|o| addrs::is_in(ip, o));
        let trusted = self.trusts_internal(host);
        let (mut own_hits, mut special_hits) = (Vec::new(), Vec::new());
        let mut usable = Vec::new();
        for a in found {
            if is_own(a.ip()) {
                own_hits.push(a.ip().to_string());
            } else if !trusted && addrs::is_special_purpose(a.ip()) {
                special_hits.push(a.ip().to_string());
            } else {
                usable.push(a);
            }
        }
        if !usable.is_empty() {
            return Ok(usable);
        }
        let msg = if special_hits.is_empty() {
            format!(
                "{host} resolves only to addresses of this host ({}), which sandboxes never \
                 reach through DNS; the operator can pin the name with \
                 `cleanroom serve --egress-resolve {host}=IP`",
                own_hits.join(", ")
            )
        } else {
            let own_note = if own_hits.is_empty() {
                String::new()
            } else {
                format!(" and addresses of this host ({})", own_hits.join(", "))
            };
            format!(
                "{host} resolves only to special-purpose addresses ({}){own_note}; the \
                 operator can allow it with `cleanroom serve --egress-trust-internal {host}`",
                special_hits.join(", ")
            )
        };
        Err(UpstreamError::Denied(
            DenyReason::UpstreamAddressNotAllowed,
            msg,
        ))
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
    /// `dangerously_allow_all`, or an IP in a proxy request): this host's own and
    /// special-purpose addresses stay refused — they are reachable only by a name the
    /// operator trusts or pinned.
    pub async fn connect_addr(&self, addr: SocketAddr) -> Result<TcpStream, UpstreamError> {
        if addrs::is_host_address(addr.ip()) {
            return Err(UpstreamError::Denied(
                DenyReason::UpstreamAddressNotAllowed,
                format!("{} is an address of this host", addr.ip()),
            ));
        }
        if addrs::is_special_purpose(addr.ip()) {
            return Err(UpstreamError::Denied(
                DenyReason::UpstreamAddressNotAllowed,
                format!(
                    "{} is a special-purpose address; the operator can allow a name that \
                     resolves to it with `cleanroom serve --egress-trust-internal NAME`",
                    addr.ip()
                ),
            ));
        }
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                // As for a named upstream: what the sandbox wrote goes out as it arrives.
                let _ = s.set_nodelay(true);
                Ok(s)
            }
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

    fn answers(ips: &[&str]) -> Vec<SocketAddr> {
        ips.iter()
            .map(|ip| SocketAddr::new(ip.parse().unwrap(), 443))
            .collect()
    }

    fn denied_message(r: Result<Vec<SocketAddr>, UpstreamError>) -> String {
        match r {
            Err(UpstreamError::Denied(DenyReason::UpstreamAddressNotAllowed, m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn special_purpose_answers_need_a_trusted_name() {
        let mut cfg = UpstreamConfig::default();
        let m =
            denied_message(cfg.filter_answers("mirror.test", answers(&["192.0.2.10", "10.1.1.1"])));
        assert!(
            m.contains("special-purpose")
                && m.contains("cleanroom serve --egress-trust-internal mirror.test"),
            "{m}"
        );
        // Global answers pass; special ones among them are dropped.
        let ok = cfg
            .filter_answers("mix.test", answers(&["10.1.1.1", "1.1.1.1"]))
            .unwrap();
        assert_eq!(ok, answers(&["1.1.1.1"]));

        cfg.add_trusted_internal("mirror.test").unwrap();
        cfg.add_trusted_internal("*.corp.test").unwrap();
        assert!(cfg.add_trusted_internal("10.0.0.1").is_err());
        assert!(cfg.add_trusted_internal("*").is_err());
        for host in ["mirror.test", "npm.corp.test", "a.b.corp.test"] {
            assert_eq!(
                cfg.filter_answers(host, answers(&["192.0.2.10"])).unwrap(),
                answers(&["192.0.2.10"]),
                "{host}"
            );
        }
        // A suffix pattern does not cover the suffix itself, nor look-alikes.
        for host in ["corp.test", "evilcorp.test", "mirror.test.evil"] {
            denied_message(cfg.filter_answers(host, answers(&["192.0.2.10"])));
        }
    }

    #[test]
    fn host_addresses_stay_refused_for_trusted_names() {
        let mut cfg = UpstreamConfig::default();
        cfg.add_trusted_internal("self.test").unwrap();
        for ip in ["127.0.0.1", "0.0.0.0", "::1", "::ffff:127.0.0.1"] {
            let m = denied_message(cfg.filter_answers("self.test", answers(&[ip])));
            assert!(m.contains("--egress-resolve self.test=IP"), "{ip}: {m}");
        }
    }

    #[tokio::test]
    async fn direct_addresses_of_the_host_or_special_purpose_are_refused() {
        let cfg = UpstreamConfig::default();
        for a in [
            "127.0.0.1:1",
            "10.0.0.1:1",
            "[::1]:1",
            "203.0.113.7:1",
            "0.0.0.0:1",
        ] {
            match cfg.connect_addr(a.parse().unwrap()).await {
                Err(UpstreamError::Denied(DenyReason::UpstreamAddressNotAllowed, _)) => {}
                other => panic!("{a}: {other:?}"),
            }
        }
    }
}
