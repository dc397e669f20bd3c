//! The one judge of egress: allow, deny, ask or learn.
//!
//! Every path out of a sandbox asks [`judge`] the same question — may `host:port` be
//! reached? — and gets the same ruling and reason code for the same question: the DNS
//! responder (a name, any port), a TCP connection (to an address our DNS handed out, or one
//! the sandbox picked), an HTTP request (absolute-form through the proxy, or on a
//! transparent connection) and a CONNECT target. Precedence between rules lives in
//! `cleanroom-policy` (`NetworkPolicy::verdict` / `may_resolve`); what the gateway adds is
//! here and only here: how a spelled host is read (name, IP literal, neither), which
//! addresses a sandbox may name itself, and what learn mode records.
//!
//! A ruling that asks or learns is settled by [`settle`] (the connection's own task waits
//! for a decision, or the first use is recorded) — except on a connection admitted already,
//! where [`Ruling::on_admitted`] lets it through: the question was settled when it opened.

use crate::ctx::Ctx;
use crate::link::GATEWAY_ADDR;
use cleanroom_policy::{normalize_wire_host, DenyReason, NetworkPolicy, Unknown, Verdict};
use std::net::{IpAddr, SocketAddr};

/// What a path asks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Query<'a> {
    /// A DNS question for `name` as the sandbox spelled it (trailing dot removed): may some
    /// port of it be reached (or asked about)? Answered with allow or deny only.
    Resolve(&'a str),
    /// A connection or request to `host:port`, `host` as the sandbox spelled it: a name, an
    /// IP literal, or something that is neither.
    Reach { host: &'a str, port: u16 },
    /// A TCP connection to an address the gateway's DNS did not hand out.
    Addr(SocketAddr),
}

/// The judge's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ruling {
    /// Go to `host` (the normalized name, or the IP literal).
    Allow(String),
    /// The policy asks a principal first (`egress.pending`).
    Ask {
        host: String,
        port: u16,
    },
    /// Learn mode: go, and record the first use. `unlisted`: no allow rule covers it, so a
    /// full record refuses it.
    Learn {
        host: String,
        port: u16,
        unlisted: bool,
    },
    Deny(Denial),
}

/// A refusal: the host the event names, the stable reason, a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    pub host: String,
    pub reason: DenyReason,
    pub message: String,
}

/// A [`Ruling::Deny`].
fn deny(host: impl Into<String>, reason: DenyReason, message: String) -> Ruling {
    Ruling::Deny(Denial {
        host: host.into(),
        reason,
        message,
    })
}

impl Ruling {
    /// The ruling for a request on a connection that was admitted already (a transparent
    /// connection, or a CONNECT tunnel, to this very host and port): asking and learning
    /// happened when it opened.
    pub(crate) fn on_admitted(self) -> Ruling {
        match self {
            Ruling::Ask { host, .. } | Ruling::Learn { host, .. } => Ruling::Allow(host),
            r => r,
        }
    }
}

/// Judge one query against the sandbox's network policy.
pub(crate) fn judge(policy: &NetworkPolicy, q: Query<'_>) -> Ruling {
    match q {
        Query::Resolve(raw) => match normalize_wire_host(raw) {
            None => deny(
                raw,
                DenyReason::HostNotAllowed,
                format!("{raw:?} is not a host name the policy can allow"),
            ),
            Some(host) => match policy.may_resolve(&host) {
                Ok(()) => Ruling::Allow(host),
                Err(r) => deny(&host, r, format!("{host} is not allowed by the policy")),
            },
        },
        Query::Addr(dst) => address(policy, dst.ip(), dst.port()),
        Query::Reach { host: raw, port } => match normalize_wire_host(raw) {
            Some(host) => name(policy, host, port),
            None => match raw.parse::<IpAddr>() {
                Ok(ip) => address(policy, ip, port),
                Err(_) => deny(
                    raw,
                    DenyReason::HostNotAllowed,
                    format!("{raw:?} is not a host name the policy can allow"),
                ),
            },
        },
    }
}

/// A connection to a (normalized) name.
fn name(policy: &NetworkPolicy, host: String, port: u16) -> Ruling {
    let learning = policy.unknown == Unknown::Learn;
    match policy.verdict(&host, port) {
        Verdict::Allow if learning => Ruling::Learn {
            host,
            port,
            unlisted: false,
        },
        Verdict::Allow => Ruling::Allow(host),
        Verdict::Learn => Ruling::Learn {
            host,
            port,
            unlisted: true,
        },
        Verdict::Ask => Ruling::Ask { host, port },
        Verdict::Deny(r) => {
            let message = format!("{host}:{port} is not allowed by the policy");
            deny(host, r, message)
        }
    }
}

/// A connection to an address the sandbox named itself. The network is IPv4-only; the
/// gateway's own address serves DNS and the proxy (routed before judging) and nothing
/// else; other addresses only under `dangerously_allow_all` (and then the upstream's
/// address checks still apply). Learn mode and `ask` never apply to addresses.
fn address(policy: &NetworkPolicy, ip: IpAddr, port: u16) -> Ruling {
    let IpAddr::V4(v4) = ip else {
        return deny(
            ip.to_string(),
            DenyReason::Ipv6NotAllowed,
            "the sandbox network is IPv4-only".into(),
        );
    };
    if v4 != GATEWAY_ADDR && policy.allows_ip_literals() {
        return Ruling::Allow(ip.to_string());
    }
    let reason = if matches!(port, 53 | 853) && v4 != GATEWAY_ADDR {
        DenyReason::ResolverNotAllowed
    } else {
        DenyReason::IpLiteralNotAllowed
    };
    deny(
        ip.to_string(),
        reason,
        format!(
            "direct connection to {ip}:{port}: only names resolved by the gateway are reachable"
        ),
    )
}

/// Settle a ruling: wait for a decision on one that asks, record one that learns. `Ok`
/// carries the host to go to. Called from the connection's own task.
pub(crate) async fn settle(
    ctx: &Ctx,
    ruling: Ruling,
    proto: &'static str,
) -> Result<String, Denial> {
    let refused = |host: &str, (reason, message): (DenyReason, String)| Denial {
        host: host.to_string(),
        reason,
        message,
    };
    match ruling {
        Ruling::Allow(host) => Ok(host),
        Ruling::Deny(d) => Err(d),
        Ruling::Ask { host, port } => {
            match ctx.approvals.ask(&ctx.events, &host, port, proto).await {
                // Judged again under the rules in force now: a live deny issued while the
                // connection waited wins over the approval (deny wins, whenever it came).
                Ok(()) => match name(&ctx.policy(), host.clone(), port) {
                    Ruling::Deny(d) => Err(d),
                    _ => Ok(host),
                },
                Err(e) => Err(refused(&host, e)),
            }
        }
        Ruling::Learn {
            host,
            port,
            unlisted,
        } => match ctx
            .approvals
            .note_use(&ctx.events, &host, port, proto, unlisted)
        {
            Ok(()) => Ok(host),
            Err(e) => Err(refused(&host, e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(network: &str) -> NetworkPolicy {
        cleanroom_policy::compile(&format!("version: 1\nsandbox:\n  network:\n{network}"))
            .expect("policy")
            .network
    }

    fn reason(r: &Ruling) -> Option<&'static str> {
        match r {
            Ruling::Deny(d) => Some(d.reason.as_str()),
            _ => None,
        }
    }

    #[test]
    fn names_follow_the_policy_with_its_reasons() {
        let p = net("    allow:\n      - host: \"*.ok.test\"\n        ports: [443]\n    deny:\n      - host: bad.ok.test\n    ask:\n      - host: ask.test\n");
        let reach = |host, port| judge(&p, Query::Reach { host, port });
        assert_eq!(
            reach("API.ok.test.", 443),
            Ruling::Allow("api.ok.test".into())
        );
        assert_eq!(reason(&reach("api.ok.test", 80)), Some("port_not_allowed"));
        assert_eq!(reason(&reach("bad.ok.test", 443)), Some("host_denied"));
        assert_eq!(reason(&reach("other.test", 443)), Some("host_not_allowed"));
        assert_eq!(
            reach("ask.test", 8443),
            Ruling::Ask {
                host: "ask.test".into(),
                port: 8443
            }
        );
        assert_eq!(
            reach("ask.test", 8443).on_admitted(),
            Ruling::Allow("ask.test".into())
        );
        // Neither a name nor an address: no allow rule can name it.
        assert_eq!(reason(&reach("*.ok.test", 443)), Some("host_not_allowed"));
        // DNS: a name resolves when some port of it may be reached or asked about.
        assert_eq!(
            judge(&p, Query::Resolve("api.ok.test")),
            Ruling::Allow("api.ok.test".into())
        );
        assert_eq!(
            judge(&p, Query::Resolve("ask.test")),
            Ruling::Allow("ask.test".into())
        );
        assert_eq!(
            reason(&judge(&p, Query::Resolve("bad.ok.test"))),
            Some("host_denied")
        );
        assert_eq!(
            reason(&judge(&p, Query::Resolve("x.test"))),
            Some("host_not_allowed")
        );
        assert_eq!(
            reason(&judge(&p, Query::Resolve("10.0.0.1"))),
            Some("host_not_allowed")
        );
    }

    #[test]
    fn addresses_are_judged_alike_however_they_arrive() {
        for network in [
            "    allow:\n      - host: ok.test\n",
            "    dangerously_allow_all: true\n",
        ] {
            let p = net(network);
            let allow_all = p.allows_ip_literals();
            for (ip, port, denied) in [
                ("203.0.113.7", 80, "ip_literal_not_allowed"),
                ("192.0.2.53", 853, "resolver_not_allowed"),
                ("192.0.2.53", 53, "resolver_not_allowed"),
            ] {
                let spelled = judge(&p, Query::Reach { host: ip, port });
                let addr = judge(&p, Query::Addr(SocketAddr::new(ip.parse().unwrap(), port)));
                assert_eq!(spelled, addr, "{ip}:{port}");
                let want = (!allow_all).then_some(denied);
                assert_eq!(reason(&addr), want, "{ip}:{port} {network}");
            }
            // Never, even under dangerously_allow_all: the gateway's own other ports, IPv6.
            for (ip, port, denied) in [
                ("100.96.0.1", 22, "ip_literal_not_allowed"),
                ("100.96.0.1", 3128, "ip_literal_not_allowed"),
                ("::1", 80, "ipv6_not_allowed"),
            ] {
                let spelled = judge(&p, Query::Reach { host: ip, port });
                let addr = judge(&p, Query::Addr(SocketAddr::new(ip.parse().unwrap(), port)));
                assert_eq!(spelled, addr);
                assert_eq!(reason(&addr), Some(denied), "{ip}:{port} {network}");
            }
        }
    }

    #[test]
    fn learn_mode_records_names_and_never_addresses() {
        let p = net("    unknown: learn\n    allow:\n      - host: ok.test\n    deny:\n      - host: no.test\n");
        let reach = |host, port| judge(&p, Query::Reach { host, port });
        assert_eq!(
            reach("ok.test", 443),
            Ruling::Learn {
                host: "ok.test".into(),
                port: 443,
                unlisted: false
            }
        );
        assert_eq!(
            reach("new.test", 80),
            Ruling::Learn {
                host: "new.test".into(),
                port: 80,
                unlisted: true
            }
        );
        assert_eq!(reason(&reach("no.test", 443)), Some("host_denied"));
        assert_eq!(
            reason(&reach("203.0.113.7", 80)),
            Some("ip_literal_not_allowed")
        );
    }
}
