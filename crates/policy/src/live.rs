//! Live egress rules: allow and deny rules added to a running sandbox
//! (`cleanroom sandbox network ID --allow HOST[:PORT] | --deny HOST | --reset`).
//!
//! The compiled policy never changes (its `policy_hash` stays the policy's). What changes is
//! the *effective* network policy: the policy's rules plus these, with the same precedence
//! (deny wins over allow, default deny) because the gateway's one judge reads the effective
//! [`NetworkPolicy`] exactly as it reads a compiled one. Hosts are parsed by the policy's own
//! [`HostPattern::parse`], so a live rule is exactly as strict as a policy rule; the
//! effective rule set has its own hash ([`NetworkPolicy::rules_hash`]).

use crate::{HostPattern, NetworkPolicy, PolicyError, Rule};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most live rules (allow and deny together) one sandbox may hold.
pub const MAX_LIVE_RULES: usize = 256;

/// Ports a live allow rule without a port covers (the policy's own default).
pub const DEFAULT_ALLOW_PORTS: [u16; 2] = [80, 443];

/// The rules added to a sandbox while it runs. Empty: the policy alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveRules {
    #[serde(default)]
    pub allow: Vec<Rule>,
    #[serde(default)]
    pub deny: Vec<Rule>,
}

/// One requested change, parsed and normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveChange {
    /// Allow `host` on the rule's ports.
    Allow(Rule),
    /// Deny `host` on every port.
    Deny(HostPattern),
}

fn invalid(flag: &str, raw: &str, msg: impl std::fmt::Display) -> PolicyError {
    PolicyError::Invalid(format!("{flag} {raw:?}: {msg}"))
}

impl LiveChange {
    /// `HOST[:PORT]` (no port: 80 and 443, like a policy allow rule).
    pub fn allow(raw: &str) -> Result<LiveChange, PolicyError> {
        let (host, ports) = match raw.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => {
                let port = p
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| invalid("--allow", raw, "the port must be 1-65535"))?;
                (h, vec![port])
            }
            Some(_) => return Err(invalid("--allow", raw, "give HOST or HOST:PORT")),
            None => (raw, DEFAULT_ALLOW_PORTS.to_vec()),
        };
        let host = HostPattern::parse(host).map_err(|m| invalid("--allow", raw, m))?;
        Ok(LiveChange::Allow(Rule::new(host, ports)))
    }

    /// `HOST` (a deny covers every port of it).
    pub fn deny(raw: &str) -> Result<LiveChange, PolicyError> {
        if raw.contains(':') {
            return Err(invalid(
                "--deny",
                raw,
                "give a host only: a live deny covers every port",
            ));
        }
        let host = HostPattern::parse(raw).map_err(|m| invalid("--deny", raw, m))?;
        Ok(LiveChange::Deny(host))
    }
}

impl LiveRules {
    /// No live rule: the policy alone.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Apply one change on top of `base` (the compiled policy's network section).
    ///
    /// * An allow that a deny (the policy's or a live one) covers is refused with
    ///   `policy_conflict`: it could never match, and a live rule never overrides a deny.
    /// * An allow under `dangerously_allow_all` is refused the same way (it means nothing),
    ///   and so is a deny: that policy lets a sandbox connect to any address directly, so a
    ///   deny by name could be walked around (resolve the name elsewhere, dial the IP) — it
    ///   would promise what the gateway cannot hold.
    /// * A deny removes the live allow rules it covers (they could never match again).
    /// * Ports of a second allow for the same host are merged into the first.
    ///
    /// On error `self` is unchanged.
    pub fn apply(&mut self, base: &NetworkPolicy, change: LiveChange) -> Result<(), PolicyError> {
        let mut next = self.clone();
        match change {
            LiveChange::Allow(rule) => {
                if base.dangerously_allow_all {
                    return Err(PolicyError::Conflict(format!(
                        "the policy allows every host (dangerously_allow_all); an allow rule for {} means nothing",
                        rule.host
                    )));
                }
                if let Some(d) = base.deny.iter().chain(&next.deny).find(|d| d.covers(&rule)) {
                    return Err(PolicyError::Conflict(format!(
                        "allow rule for {} can never match: a deny rule for {} covers it (deny wins; --reset drops live denies)",
                        rule.host, d.host
                    )));
                }
                match next.allow.iter_mut().find(|a| a.host == rule.host) {
                    Some(a) => {
                        a.ports.extend(rule.ports);
                        a.ports.sort_unstable();
                        a.ports.dedup();
                    }
                    None => next.allow.push(rule),
                }
            }
            LiveChange::Deny(host) => {
                if base.dangerously_allow_all {
                    return Err(PolicyError::Conflict(format!(
                        "the policy allows every host and address (dangerously_allow_all); a deny rule for {host} could be bypassed by connecting to its address, so it is refused"
                    )));
                }
                let deny = Rule::new(host, Vec::new());
                next.allow.retain(|a| !deny.covers(a));
                if !next.deny.contains(&deny) {
                    next.deny.push(deny);
                }
            }
        }
        if next.allow.len() + next.deny.len() > MAX_LIVE_RULES {
            return Err(PolicyError::Invalid(format!(
                "a sandbox holds at most {MAX_LIVE_RULES} live rules; --reset starts over"
            )));
        }
        next.allow.sort();
        next.deny.sort();
        *self = next;
        Ok(())
    }

    /// The network policy in effect: `base`'s rules plus these (deny still wins: the judge
    /// checks every deny rule first).
    pub fn effective(&self, base: &NetworkPolicy) -> NetworkPolicy {
        let mut p = base.clone();
        p.allow.extend(self.allow.iter().cloned());
        p.deny.extend(self.deny.iter().cloned());
        p
    }
}

impl NetworkPolicy {
    /// `sha256:<hex>` of this network policy's canonical encoding (sorted keys, rules in
    /// order): the hash of the effective rule set of a sandbox (`effective_rules_hash`).
    /// Rule order does not change it: rules are sorted first.
    pub fn rules_hash(&self) -> String {
        let mut p = self.clone();
        p.allow.sort();
        p.deny.sort();
        p.ask.sort();
        let value = serde_json::to_value(&p).unwrap_or(serde_json::Value::Null);
        let digest = Sha256::digest(value.to_string().as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile;
    use cleanroom_vocab::ErrorCode;

    fn base(network: &str) -> NetworkPolicy {
        compile(&format!("version: 1\nsandbox:\n  network:\n{network}"))
            .expect("policy")
            .network
    }

    #[test]
    fn parses_hosts_like_the_policy() {
        assert_eq!(
            LiveChange::allow("API.Example.com.:8443").unwrap(),
            LiveChange::Allow(Rule::new(
                HostPattern::Exact("api.example.com".into()),
                vec![8443]
            ))
        );
        assert_eq!(
            LiveChange::allow("*.example.com").unwrap(),
            LiveChange::Allow(Rule::new(
                HostPattern::Suffix("example.com".into()),
                vec![80, 443]
            ))
        );
        for bad in [
            "",
            "1.2.3.4",
            "::1",
            "[::1]:80",
            "a.test:0",
            "a.test:70000",
            "a.test:x",
            "https://a.test",
            "a.*.test",
        ] {
            let e = LiveChange::allow(bad).expect_err(bad);
            assert_eq!(e.code(), ErrorCode::PolicyInvalid, "{bad}");
        }
        assert!(LiveChange::deny("a.test:443").is_err());
        assert!(LiveChange::deny("10.0.0.1").is_err());
        assert_eq!(
            LiveChange::deny("A.test").unwrap(),
            LiveChange::Deny(HostPattern::Exact("a.test".into()))
        );
    }

    #[test]
    fn deny_wins_and_allows_never_override_a_deny() {
        let b =
            base("    allow:\n      - host: \"*.ok.test\"\n    deny:\n      - host: bad.ok.test\n");
        let mut live = LiveRules::default();
        let e = live
            .apply(&b, LiveChange::allow("bad.ok.test").unwrap())
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyConflict);
        live.apply(&b, LiveChange::allow("new.test:8080").unwrap())
            .unwrap();
        let eff = live.effective(&b);
        assert_eq!(eff.decide("new.test", 8080), Ok(()));
        assert!(eff.decide("new.test", 443).is_err());
        // A live deny removes the live allow it covers and beats the policy's allow.
        live.apply(&b, LiveChange::deny("*.ok.test").unwrap())
            .unwrap();
        live.apply(&b, LiveChange::deny("new.test").unwrap())
            .unwrap();
        assert!(live.allow.is_empty());
        let eff = live.effective(&b);
        assert!(eff.decide("a.ok.test", 443).is_err());
        assert!(eff.decide("new.test", 8080).is_err());
        // ... and a later allow of what a live deny covers is refused until a reset.
        let before = live.clone();
        assert_eq!(
            live.apply(&b, LiveChange::allow("x.ok.test").unwrap())
                .unwrap_err()
                .code(),
            ErrorCode::PolicyConflict
        );
        assert_eq!(
            live.apply(&b, LiveChange::allow("new.test:8080").unwrap())
                .unwrap_err()
                .code(),
            ErrorCode::PolicyConflict
        );
        assert_eq!(live, before, "a refused change leaves the rules alone");
    }

    #[test]
    fn allow_all_policy_refuses_live_allows() {
        let b = base("    dangerously_allow_all: true\n");
        let mut live = LiveRules::default();
        assert!(live
            .apply(&b, LiveChange::allow("a.test").unwrap())
            .is_err());
        // A deny by name could be walked around by dialing the address: refused too.
        assert_eq!(
            live.apply(&b, LiveChange::deny("a.test").unwrap())
                .unwrap_err()
                .code(),
            ErrorCode::PolicyConflict
        );
        assert!(live.is_empty());
        assert_eq!(live.effective(&b).decide("b.test", 1), Ok(()));
    }

    #[test]
    fn hash_is_the_effective_sets_and_ignores_order() {
        let b = base("    allow:\n      - host: a.test\n");
        let mut one = LiveRules::default();
        one.apply(&b, LiveChange::allow("x.test").unwrap()).unwrap();
        one.apply(&b, LiveChange::allow("y.test:81").unwrap())
            .unwrap();
        let mut two = LiveRules::default();
        two.apply(&b, LiveChange::allow("y.test:81").unwrap())
            .unwrap();
        two.apply(&b, LiveChange::allow("x.test").unwrap()).unwrap();
        assert_eq!(
            one.effective(&b).rules_hash(),
            two.effective(&b).rules_hash()
        );
        assert_ne!(one.effective(&b).rules_hash(), b.rules_hash());
        assert_eq!(
            LiveRules::default().effective(&b).rules_hash(),
            b.rules_hash()
        );
        assert!(b.rules_hash().starts_with("sha256:"));
    }

    #[test]
    fn bounded() {
        let b = base("    allow: []\n");
        let mut live = LiveRules::default();
        for i in 0..MAX_LIVE_RULES {
            live.apply(&b, LiveChange::deny(&format!("h{i}.test")).unwrap())
                .unwrap();
        }
        let e = live
            .apply(&b, LiveChange::deny("one-more.test").unwrap())
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::PolicyInvalid);
        assert_eq!(live.deny.len(), MAX_LIVE_RULES);
    }
}
