//! Egress decisions: the one place that turns a compiled [`NetworkPolicy`] plus a
//! destination into allow or deny with a stable reason code.
//!
//! The gateway asks; it never interprets rules itself, so the policy crate's tests pin down
//! precedence (deny wins, default deny) for every enforcement path at once.

use crate::{HostPattern, NetworkPolicy};

/// Why a destination was refused. The codes are part of the API (events, CLI warnings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DenyReason {
    /// No allow rule names the host.
    HostNotAllowed,
    /// An explicit deny rule matches (deny wins over any allow).
    HostDenied,
    /// The host is allowed, but not on this port.
    PortNotAllowed,
    /// The client connected to an IP address it did not obtain from the gateway's DNS.
    IpLiteralNotAllowed,
    /// The name in TLS SNI / HTTP Host differs from the name the connection was opened for.
    HostMismatch,
    /// UDP other than DNS to the gateway, ICMP, or another transport.
    ProtocolNotAllowed,
    /// Any IPv6 traffic: the sandbox network is IPv4-only.
    Ipv6NotAllowed,
    /// DNS (or DoT) to a resolver other than the gateway.
    ResolverNotAllowed,
    /// The upstream's only addresses are this host's own or special-purpose (not globally
    /// reachable) ones and the operator vouched for none of them.
    UpstreamAddressNotAllowed,
    /// A secret placeholder was sent somewhere its binding does not allow.
    SecretScopeViolation,
    /// The sandbox already has the most concurrent connections the gateway serves for one
    /// sandbox.
    TooManyConnections,
    /// The opening of a connection (HTTP request head, TLS ClientHello) could not be parsed
    /// strictly, or is ambiguous (two Host headers, Transfer-Encoding with Content-Length,
    /// a lower-case method, ...): what it would mean to the upstream cannot be checked.
    RequestMalformed,
    /// The client did not complete what the decision needs (request head, ClientHello) in
    /// time. Nothing was forwarded.
    DecisionTimeout,
}

impl DenyReason {
    /// Stable machine code.
    pub fn code(self) -> &'static str {
        match self {
            DenyReason::HostNotAllowed => "host_not_allowed",
            DenyReason::HostDenied => "host_denied",
            DenyReason::PortNotAllowed => "port_not_allowed",
            DenyReason::IpLiteralNotAllowed => "ip_literal_not_allowed",
            DenyReason::HostMismatch => "host_mismatch",
            DenyReason::ProtocolNotAllowed => "protocol_not_allowed",
            DenyReason::Ipv6NotAllowed => "ipv6_not_allowed",
            DenyReason::ResolverNotAllowed => "resolver_not_allowed",
            DenyReason::UpstreamAddressNotAllowed => "upstream_address_not_allowed",
            DenyReason::SecretScopeViolation => "secret_scope_violation",
            DenyReason::TooManyConnections => "too_many_connections",
            DenyReason::RequestMalformed => "request_malformed",
            DenyReason::DecisionTimeout => "decision_timeout",
        }
    }
}

impl std::fmt::Display for DenyReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

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
        if self.dangerously_allow_all || self.allow.iter().any(|a| a.host.matches(host)) {
            Ok(())
        } else {
            Err(DenyReason::HostNotAllowed)
        }
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
    fn wire_hosts_normalize_like_policy_hosts() {
        assert_eq!(normalize_wire_host("API.Test."), Some("api.test".into()));
        assert_eq!(normalize_wire_host("10.0.0.1"), None);
        assert_eq!(normalize_wire_host("*.x.test"), None);
        assert_eq!(normalize_wire_host(""), None);
    }
}
