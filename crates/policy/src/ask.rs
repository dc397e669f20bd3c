//! Verdicts that ask, and learn mode: what the gateway does with a destination no allow
//! rule covers.
//!
//! `sandbox.network.unknown` says it: `deny` (the default: refused with the usual reason),
//! `ask` (held until a principal answers `DecideEgress`, or the approval timeout denies) or
//! `learn` (allowed and recorded, to suggest a policy afterwards). `sandbox.network.ask`
//! rules ask for the destinations they match even when `unknown` is `deny`. Deny rules win
//! over everything, allow rules over asking.

use crate::compile::{conflict, invalid};
use crate::{NetworkPolicy, PolicyError, Rule};
use cleanroom_vocab::DenyReason;
use serde::{Deserialize, Serialize};

/// Longest approval timeout a policy may set (`approval_timeout_seconds`).
pub const MAX_APPROVAL_TIMEOUT_SECS: u32 = 3600;

/// What happens to a destination no allow rule covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unknown {
    /// Refused (`host_not_allowed` / `port_not_allowed`).
    #[default]
    Deny,
    /// Held until a principal decides (`DecideEgress`), denied at the approval timeout.
    Ask,
    /// Allowed and recorded (`cleanroom exec --learn`); internal addresses stay refused.
    Learn,
}

impl Unknown {
    /// Parse the policy spelling (`deny`, `ask`, `learn`; any case).
    pub fn parse(s: &str) -> Option<Unknown> {
        match s.to_ascii_lowercase().as_str() {
            "deny" => Some(Unknown::Deny),
            "ask" => Some(Unknown::Ask),
            "learn" => Some(Unknown::Learn),
            _ => None,
        }
    }

    /// Serde helper: the default is not written, so policies without the field keep their
    /// hash.
    pub fn is_deny(&self) -> bool {
        *self == Unknown::Deny
    }
}

/// The gateway's answer for one `host:port`, before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An allow rule (or `dangerously_allow_all`) lets it through.
    Allow,
    /// Hold the connection and ask (`egress.pending`).
    Ask,
    /// Learn mode: let it through and record it.
    Learn,
    /// Refused with this reason.
    Deny(DenyReason),
}

impl NetworkPolicy {
    /// The verdict for a TCP connection to `host:port` (`host` normalized). Deny rules win,
    /// then allow rules, then `ask` rules, then `unknown`.
    pub fn verdict(&self, host: &str, port: u16) -> Verdict {
        match self.decide(host, port) {
            Ok(()) => Verdict::Allow,
            Err(DenyReason::HostDenied) => Verdict::Deny(DenyReason::HostDenied),
            Err(r) => {
                if self.ask.iter().any(|a| rule_matches(a, host, port)) {
                    return Verdict::Ask;
                }
                match self.unknown {
                    Unknown::Deny => Verdict::Deny(r),
                    Unknown::Ask => Verdict::Ask,
                    Unknown::Learn => Verdict::Learn,
                }
            }
        }
    }

    /// Could a connection to some port of `host` be asked about or learned? The gateway's
    /// DNS answers such names (with a synthetic address, as for allowed ones) so the
    /// connection can be held once its port is known.
    pub fn may_ask(&self, host: &str) -> bool {
        self.unknown != Unknown::Deny || self.ask.iter().any(|a| a.host.matches(host))
    }

    /// Does this policy ever hold a connection for a decision?
    pub fn asks(&self) -> bool {
        self.unknown == Unknown::Ask || !self.ask.is_empty()
    }
}

/// The policy text `cleanroom exec --learn` runs with: `yaml` (empty: the built-in policy)
/// with `sandbox.network.unknown` set to `learn`, as JSON (which is YAML). Everything else
/// stays as written, so the compiled policy and its hash say the sandbox ran in learn mode.
pub fn learning_yaml(yaml: &str) -> Result<String, PolicyError> {
    if yaml.len() > crate::MAX_POLICY_BYTES {
        return crate::compile(yaml).map(|_| String::new());
    }
    let mut doc: serde_json::Value = if yaml.trim().is_empty() {
        serde_json::json!({"version": 1})
    } else {
        serde_saphyr::from_str(yaml).map_err(|e| PolicyError::Invalid(e.to_string()))?
    };
    let Some(root) = doc.as_object_mut() else {
        return Err(invalid("(document)", "a policy is a mapping"));
    };
    let sandbox = root
        .entry("sandbox")
        .or_insert_with(|| serde_json::json!({}));
    let Some(sandbox) = sandbox.as_object_mut() else {
        return Err(invalid("sandbox", "must be a mapping"));
    };
    let network = sandbox
        .entry("network")
        .or_insert_with(|| serde_json::json!({}));
    let Some(network) = network.as_object_mut() else {
        return Err(invalid("sandbox.network", "must be a mapping"));
    };
    network.insert("unknown".into(), "learn".into());
    Ok(doc.to_string())
}

/// `sandbox.network.{unknown, ask, approval_timeout_seconds}` checked against the rest of
/// the network section (`ask` already compiled as rules).
pub(crate) fn compile(
    unknown: Option<&str>,
    ask: Vec<Rule>,
    timeout: Option<u32>,
    allow_all: bool,
    allow: &[Rule],
    deny: &[Rule],
) -> Result<(Unknown, Vec<Rule>, Option<u32>), PolicyError> {
    let unknown = match unknown {
        None => Unknown::Deny,
        Some(u) => Unknown::parse(u).ok_or_else(|| {
            invalid(
                "sandbox.network.unknown",
                format!("{u:?} is not one of deny, ask, learn"),
            )
        })?,
    };
    if allow_all && (unknown != Unknown::Deny || !ask.is_empty()) {
        return Err(conflict(
            "sandbox.network",
            "dangerously_allow_all allows everything: nothing is left to ask about or learn",
        ));
    }
    for a in &ask {
        if let Some(d) = deny.iter().find(|d| d.covers(a)) {
            return Err(conflict(
                "sandbox.network.ask",
                format!(
                    "ask rule for {} can never match: deny rule for {} covers it",
                    a.host, d.host
                ),
            ));
        }
        if let Some(al) = allow.iter().find(|al| !a.ports.is_empty() && al.covers(a)) {
            return Err(conflict(
                "sandbox.network.ask",
                format!(
                    "ask rule for {} can never match: allow rule for {} covers it",
                    a.host, al.host
                ),
            ));
        }
    }
    if let Some(t) = timeout {
        if !(1..=MAX_APPROVAL_TIMEOUT_SECS).contains(&t) {
            return Err(invalid(
                "sandbox.network.approval_timeout_seconds",
                format!("{t} is outside 1..={MAX_APPROVAL_TIMEOUT_SECS}"),
            ));
        }
        if unknown != Unknown::Ask && ask.is_empty() {
            return Err(conflict(
                "sandbox.network.approval_timeout_seconds",
                "nothing is asked (set unknown: ask or add ask rules)",
            ));
        }
    }
    Ok((unknown, ask, timeout))
}

/// Host matches and (no ports = every port) the port is listed.
fn rule_matches(r: &Rule, host: &str, port: u16) -> bool {
    r.host.matches(host) && (r.ports.is_empty() || r.ports.contains(&port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;

    fn net(yaml: &str) -> NetworkPolicy {
        compile(yaml).expect("policy").network
    }

    #[test]
    fn unknown_ask_asks_for_what_no_rule_covers() {
        let p = net("version: 1\nsandbox:\n  network:\n    unknown: ask\n    allow:\n      - host: ok.test\n        ports: [443]\n    deny:\n      - host: bad.test\n");
        assert_eq!(p.verdict("ok.test", 443), Verdict::Allow);
        assert_eq!(p.verdict("ok.test", 80), Verdict::Ask);
        assert_eq!(p.verdict("other.test", 443), Verdict::Ask);
        assert_eq!(
            p.verdict("bad.test", 443),
            Verdict::Deny(DenyReason::HostDenied)
        );
        assert!(p.may_ask("other.test") && p.asks());
        // DNS: names that may be asked about resolve; denied ones never.
        assert_eq!(p.may_resolve("other.test"), Ok(()));
        assert_eq!(p.may_resolve("bad.test"), Err(DenyReason::HostDenied));
    }

    #[test]
    fn ask_rules_ask_only_for_what_they_match() {
        let p = net("version: 1\nsandbox:\n  network:\n    ask:\n      - host: \"*.api.test\"\n        ports: [443]\n      - host: any.test\n");
        assert_eq!(p.verdict("x.api.test", 443), Verdict::Ask);
        assert_eq!(
            p.verdict("x.api.test", 80),
            Verdict::Deny(DenyReason::HostNotAllowed)
        );
        assert_eq!(p.verdict("any.test", 22), Verdict::Ask);
        assert_eq!(
            p.verdict("else.test", 443),
            Verdict::Deny(DenyReason::HostNotAllowed)
        );
        assert_eq!(p.may_resolve("else.test"), Err(DenyReason::HostNotAllowed));
        assert_eq!(p.may_resolve("x.api.test"), Ok(()));
    }

    #[test]
    fn schema_is_strict_and_honest() {
        let base = compile("version: 1\n").unwrap().policy_hash();
        // The defaults are not written: existing policies keep their hash.
        assert_eq!(
            compile("version: 1\nsandbox:\n  network:\n    unknown: deny\n")
                .unwrap()
                .policy_hash(),
            base
        );
        assert_ne!(
            compile("version: 1\nsandbox:\n  network:\n    unknown: ask\n")
                .unwrap()
                .policy_hash(),
            base
        );
        for (bad, code, path) in [
            ("unknown: maybe", "policy_invalid", "sandbox.network.unknown"),
            ("unknown: ask\n    approval_timeout_seconds: 0", "policy_invalid", "approval_timeout_seconds"),
            ("unknown: ask\n    approval_timeout_seconds: 3601", "policy_invalid", "approval_timeout_seconds"),
            ("approval_timeout_seconds: 5", "policy_conflict", "approval_timeout_seconds"),
            ("dangerously_allow_all: true\n    unknown: learn", "policy_conflict", "sandbox.network"),
            ("ask:\n      - host: a.test\n    deny:\n      - host: a.test", "policy_conflict", "sandbox.network.ask"),
            ("ask:\n      - host: a.test\n        ports: [443]\n    allow:\n      - host: a.test", "policy_conflict", "sandbox.network.ask"),
            ("ask:\n      - host: a.test\n        when: always", "policy_invalid", "when"),
            ("ask:\n      - host: 10.0.0.1", "policy_invalid", "sandbox.network.ask[0].host"),
        ] {
            let yaml = format!("version: 1\nsandbox:\n  network:\n    {bad}\n");
            let e = compile(&yaml).expect_err(bad);
            assert_eq!(e.code().as_str(), code, "{bad}: {e}");
            assert!(e.to_string().contains(path), "{bad}: {e}");
        }
        let p = net("version: 1\nsandbox:\n  network:\n    unknown: ASK\n    approval_timeout_seconds: 30\n");
        assert_eq!(p.approval_timeout_secs, Some(30));
        assert_eq!(p.unknown, Unknown::Ask);
        let caps = compile("version: 1\nsandbox:\n  network:\n    unknown: learn\n")
            .unwrap()
            .required_capabilities();
        assert!(caps.contains(&"network_host_port_filtering"), "{caps:?}");
    }

    #[test]
    fn learning_yaml_keeps_the_rest() {
        let p = compile(&learning_yaml("").unwrap()).unwrap();
        assert_eq!(p.network.unknown, Unknown::Learn);
        let y = "version: 1\nsandbox:\n  env:\n    A: '1'\n  network:\n    unknown: ask\n    allow:\n      - host: a.test\n";
        let p = compile(&learning_yaml(y).unwrap()).unwrap();
        assert_eq!(p.network.unknown, Unknown::Learn);
        assert_eq!(p.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(p.network.allow.len(), 1);
        assert!(learning_yaml("- a\n- b\n").is_err());
        assert!(learning_yaml("version: 1\nsandbox: 3\n").is_err());
        // What compile refuses stays refused.
        assert!(compile(&learning_yaml("version: 1\nsandbox:\n  bogus: 1\n").unwrap()).is_err());
    }

    #[test]
    fn learn_allows_unknown_but_not_denied() {
        let p = net("version: 1\nsandbox:\n  network:\n    unknown: learn\n    deny:\n      - host: bad.test\n        ports: [80]\n");
        assert_eq!(p.verdict("x.test", 8080), Verdict::Learn);
        assert_eq!(
            p.verdict("bad.test", 80),
            Verdict::Deny(DenyReason::HostDenied)
        );
        assert_eq!(p.verdict("bad.test", 443), Verdict::Learn);
        assert!(!p.asks());
        // Learn mode is not "allow all": IP literals stay refused.
        assert!(!p.allows_ip_literals());
    }
}
