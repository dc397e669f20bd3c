//! Egress decisions: the one place that turns a compiled [`NetworkPolicy`] plus a
//! destination into allow or deny with a stable reason code.
//!
//! The gateway asks; it never interprets rules itself, so the policy crate's tests pin down
//! precedence (deny wins, default deny) for every enforcement path at once.

use crate::{HostPattern, NetworkPolicy};

/// Why a destination was refused: defined once in `cleanroom-vocab` (its stable codes are
/// part of the API: events, CLI warnings).
pub use cleanroom_vocab::DenyReason;

/// Normalize a host name as seen on the wire (DNS question, SNI, Host header, CONNECT
/// target) the same way policy hosts are normalized. `None` for anything that is not a
/// DNS name (IP literals included), which callers must treat as a deny.
pub fn normalize_wire_host(raw: &str) -> Option<String> {
    match HostPattern::parse(raw) {
        Ok(HostPattern::Exact(h)) => Some(h),
        _ => None,
    }
}

impl NetworkPolicy {
    /// May a TCP connection to `host:port` leave the sandbox? `host` must be normalized.
    pub fn decide(&self, host: &str, port: u16) -> Result<(), DenyReason> {
        if self
            .deny
            .iter()
            .any(|d| d.host.matches(host) && (d.ports.is_empty() || d.ports.contains(&port)))
        {
            return Err(DenyReason::HostDenied);
        }
        if self.dangerously_allow_all {
            return Ok(());
        }
        let mut host_known = false;
        for a in self.allow.iter().filter(|a| a.host.matches(host)) {
            host_known = true;
            if a.ports.contains(&port) {
                return Ok(());
            }
        }
        Err(if host_known {
            DenyReason::PortNotAllowed
        } else {
            DenyReason::HostNotAllowed
        })
    }

    /// May the gateway's DNS resolve `host` at all? True when some port of it is allowed
    /// (a name denied on every port, or never allowed, gets NXDOMAIN).
    pub fn may_resolve(&self, host: &str) -> Result<(), DenyReason> {
        if self
            .deny
            .iter()
            .any(|d| d.host.matches(host) && d.ports.is_empty())
        {
            return Err(DenyReason::HostDenied);
        }
        if self.dangerously_allow_all
            || self.allow.iter().any(|a| a.host.matches(host))
            || self.may_ask(host)
        {
            Ok(())
        } else {
            Err(DenyReason::HostNotAllowed)
        }
    }

    /// May a TLS connection to `host:port` (already allowed) go through without a server
    /// name? Only when an allow rule for it says so (`allow_missing_sni: true`), or under
    /// `dangerously_allow_all` (where every name is reachable anyway). A connection held
    /// for approval or learned has no such rule: refused.
    pub fn allows_missing_sni(&self, host: &str, port: u16) -> bool {
        self.dangerously_allow_all
            || self
                .allow
                .iter()
                .any(|a| a.allow_missing_sni && a.host.matches(host) && a.ports.contains(&port))
    }

    /// Does the policy let connections go to IP addresses the gateway did not hand out?
    pub fn allows_ip_literals(&self) -> bool {
        self.dangerously_allow_all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    fn net(yaml: &str) -> NetworkPolicy {
        compile(yaml).expect("policy").network
    }

    #[test]
    fn default_denies_everything() {
        let p = net("version: 1\n");
        assert_eq!(
            p.decide("example.com", 443),
            Err(DenyReason::HostNotAllowed)
        );
        assert_eq!(
            p.may_resolve("example.com"),
            Err(DenyReason::HostNotAllowed)
        );
        assert!(!p.allows_ip_literals());
    }

    #[test]
    fn allow_ports_and_deny_precedence() {
        let p = net(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: \"*.example.com\"\n        ports: [443]\n      - host: api.test\n    deny:\n      - host: evil.example.com\n",
        );
        assert_eq!(p.decide("a.example.com", 443), Ok(()));
        assert_eq!(
            p.decide("a.example.com", 80),
            Err(DenyReason::PortNotAllowed)
        );
        assert_eq!(
            p.decide("example.com", 443),
            Err(DenyReason::HostNotAllowed)
        );
        assert_eq!(
            p.decide("evil.example.com", 443),
            Err(DenyReason::HostDenied)
        );
        assert_eq!(
            p.may_resolve("evil.example.com"),
            Err(DenyReason::HostDenied)
        );
        assert_eq!(p.decide("api.test", 80), Ok(()));
        assert_eq!(p.decide("api.test", 443), Ok(()));
        assert_eq!(p.may_resolve("b.example.com"), Ok(()));
    }

    #[test]
    fn allow_all_still_honours_deny() {
        let p = net(
            "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n    deny:\n      - host: bad.test\n        ports: [80]\n",
        );
        assert_eq!(p.decide("anything.test", 1234), Ok(()));
        assert_eq!(p.decide("bad.test", 80), Err(DenyReason::HostDenied));
        assert_eq!(p.decide("bad.test", 443), Ok(()));
        assert!(p.allows_ip_literals());
    }

    #[test]
    fn tls_without_a_name_needs_the_rules_word() {
        let p = net(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: \"*.cdn.test\"\n        ports: [443]\n        allow_missing_sni: true\n      - host: api.test\n      - host: off.test\n        allow_missing_sni: false\n",
        );
        assert!(p.allows_missing_sni("a.cdn.test", 443));
        assert!(!p.allows_missing_sni("a.cdn.test", 80));
        assert!(!p.allows_missing_sni("api.test", 443));
        assert!(!p.allows_missing_sni("off.test", 443));
        assert!(!p.allows_missing_sni("other.test", 443));
        let all = net("version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n");
        assert!(all.allows_missing_sni("any.test", 443));
    }

    #[test]
    fn wire_hosts_normalize_like_policy_hosts() {
        assert_eq!(normalize_wire_host("API.Test."), Some("api.test".into()));
        assert_eq!(normalize_wire_host("10.0.0.1"), None);
        assert_eq!(normalize_wire_host("*.x.test"), None);
        assert_eq!(normalize_wire_host(""), None);
    }
}
