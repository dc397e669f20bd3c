//! Egress vocabulary: what the gateway decided about a connection and why.
//!
//! The policy crate decides (`NetworkPolicy::decide` returns a [`DenyReason`]); the gateway
//! reports each decision as an event whose `decision` is a [`Decision`] and whose `reason`
//! is a [`DenyReason`] (for a deny) or a [`FailReason`] (for an allowed connection that
//! failed). Deny reasons also reach attached clients as stream warnings.

stable_codes! {
    /// The outcome of one gateway decision (event type `egress.<decision>`).
    pub enum Decision {
        /// The connection or query was let through.
        Allow => "allow",
        /// Refused; the event's reason is a [`DenyReason`].
        Deny => "deny",
        /// Allowed, but it failed; the event's reason is a [`FailReason`].
        Error => "error",
        /// Held: the policy says `ask`; the event carries a `request_id` that
        /// `DecideEgress` answers (an `egress.allow` or `egress.deny` follows).
        Pending => "pending",
        /// Allowed by learn mode (`network.unknown: learn`) and recorded: the first use of
        /// a destination in the sandbox.
        Learn => "learn",
    }
}

stable_codes! {
    /// Why a destination was refused. The codes are part of the API (events, CLI warnings).
    pub enum DenyReason {
        /// No allow rule names the host.
        HostNotAllowed => "host_not_allowed",
        /// An explicit deny rule matches (deny wins over any allow).
        HostDenied => "host_denied",
        /// The host is allowed, but not on this port.
        PortNotAllowed => "port_not_allowed",
        /// The client connected to an IP address it did not obtain from the gateway's DNS.
        IpLiteralNotAllowed => "ip_literal_not_allowed",
        /// The name in TLS SNI / HTTP Host differs from the name the connection was opened for.
        HostMismatch => "host_mismatch",
        /// A TLS ClientHello without a server name (SNI) to a host allowed by name: the
        /// front at that address could serve any virtual host. Allowed only where the
        /// gateway terminates the TLS and checks Host, or the allow rule says
        /// `allow_missing_sni: true`.
        SniMissing => "sni_missing",
        /// UDP other than DNS to the gateway, ICMP, or another transport.
        ProtocolNotAllowed => "protocol_not_allowed",
        /// Any IPv6 traffic: the sandbox network is IPv4-only.
        Ipv6NotAllowed => "ipv6_not_allowed",
        /// DNS (or DoT) to a resolver other than the gateway.
        ResolverNotAllowed => "resolver_not_allowed",
        /// The upstream's only addresses are this host's own or special-purpose (not globally
        /// reachable) ones and the operator vouched for none of them.
        UpstreamAddressNotAllowed => "upstream_address_not_allowed",
        /// A secret placeholder was sent somewhere its binding does not allow.
        SecretScopeViolation => "secret_scope_violation",
        /// The sandbox already has the most concurrent connections the gateway serves for one
        /// sandbox, or its owner holds its share of the server's connection budget (an
        /// eighth), or all gateways of the server hold the whole budget. The event's message
        /// says which.
        TooManyConnections => "too_many_connections",
        /// The opening of a connection (HTTP request head, TLS ClientHello) could not be parsed
        /// strictly, or is ambiguous (two Host headers, Transfer-Encoding with Content-Length,
        /// a lower-case method, ...): what it would mean to the upstream cannot be checked.
        RequestMalformed => "request_malformed",
        /// The client did not complete what the decision needs (request head, ClientHello) in
        /// time. Nothing was forwarded.
        DecisionTimeout => "decision_timeout",
        /// The policy asked and nobody allowed the connection before the approval timeout.
        ApprovalTimeout => "approval_timeout",
        /// The policy asked and a principal denied the connection (`DecideEgress`), now or
        /// earlier for the whole sandbox.
        ApprovalDenied => "approval_denied",
        /// The sandbox already has the most pending approval requests the server holds for
        /// one sandbox (fail closed: nothing more is asked).
        ApprovalQueueFull => "approval_queue_full",
        /// Learn mode has recorded the most distinct destinations it records for one
        /// sandbox; further unknown destinations are refused.
        LearnLimitReached => "learn_limit_reached",
        /// A package registry request for a package or version the registry's lockfile (at
        /// the repository's committed HEAD) does not pin (`sandbox.registries`, enforce mode).
        LockfileViolation => "lockfile_violation",
        /// A registry artifact's bytes do not match the lockfile's integrity hash; it never
        /// reached the sandbox.
        IntegrityMismatch => "integrity_mismatch",
        /// A request to a mediated registry (or git host) that is not one the gateway serves:
        /// an unknown endpoint, an undeclared repository, plain HTTP to a registry host.
        RegistryNotAllowed => "registry_not_allowed",
        /// `git push` (git-receive-pack) to a repository not declared with `access: push`.
        GitPushNotAllowed => "git_push_not_allowed",
    }
}

stable_codes! {
    /// Why an allowed connection failed (events with decision `error`).
    pub enum FailReason {
        /// The upstream could not be reached.
        UpstreamUnreachable => "upstream_unreachable",
        /// The upstream's TLS certificate did not verify or its handshake failed
        /// (secret-bound hosts, where the gateway terminates TLS).
        UpstreamTlsFailed => "upstream_tls_failed",
        /// The gateway could not terminate the sandbox's TLS with the sandbox CA (the guest
        /// rejected it, or the handshake broke). The connection is closed; nothing reached
        /// the upstream.
        TlsInterceptionFailed => "tls_interception_failed",
        /// A secret-bound response could not be inspected for redaction and was cut off.
        ResponseNotInspectable => "response_not_inspectable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_round_trip() {
        for r in DenyReason::ALL {
            assert_eq!(r.as_str().parse::<DenyReason>(), Ok(*r));
        }
        for r in FailReason::ALL {
            assert_eq!(r.as_str().parse::<FailReason>(), Ok(*r));
        }
        assert_eq!(Decision::Deny.to_string(), "deny");
        assert_eq!(DenyReason::HostNotAllowed, "host_not_allowed");
    }
}
