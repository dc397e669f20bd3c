//! A policy suggested from what a sandbox did: the `host:port` destinations its recorded
//! egress events show it used (`egress.learn`, `egress.allow`, `egress.error`), written as
//! a minimal `cleanroom.yaml` network section that allows exactly those. Refused
//! destinations are listed as comments, never suggested. Shared by `cleanroom exec
//! --learn`, `cleanroom policy suggest` and the SDKs.

use std::collections::{BTreeMap, BTreeSet};

/// What the events show.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// Host name -> ports used.
    pub allow: BTreeMap<String, BTreeSet<u16>>,
    /// `host:port (reason)` of refused attempts, for the comment block.
    pub refused: BTreeSet<String>,
    /// Names whose upstream the gateway refused (`upstream_address_not_allowed`: they lead
    /// to internal addresses): never suggested, whatever else was recorded.
    pub internal: BTreeSet<(String, u16)>,
}

/// The gateway's own address (its events about the proxy itself name it).
const GATEWAY: &str = "100.96.0.1";

impl Suggestion {
    /// Add one event (`type` and its attributes as JSON).
    pub fn add(&mut self, kind: &str, attributes: &serde_json::Value) {
        let host = attributes["host"].as_str().unwrap_or_default();
        let port = attributes["port"]
            .as_u64()
            .or_else(|| attributes["port"].as_f64().map(|f| f as u64))
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(0);
        if host.is_empty() || port == 0 || host == GATEWAY {
            return;
        }
        let is_name = host.parse::<std::net::IpAddr>().is_err();
        match kind {
            "egress.learn" | "egress.allow" | "egress.error" if is_name => {
                self.allow.entry(host.to_string()).or_default().insert(port);
            }
            "egress.learn" | "egress.allow" | "egress.error" => {
                self.refused.insert(format!(
                    "{host}:{port} (an address, not a name: not allowable by policy)"
                ));
            }
            "egress.deny" => {
                let reason = attributes["reason"].as_str().unwrap_or("deny");
                if reason == "upstream_address_not_allowed" {
                    self.internal.insert((host.to_string(), port));
                }
                // DNS lookups are not uses; the connection that follows is.
                if attributes["protocol"] != "dns" {
                    self.refused.insert(format!("{host}:{port} ({reason})"));
                }
            }
            _ => {}
        }
    }

    /// The suggested policy text. `source` names where it came from (a comment).
    pub fn to_yaml(&self, source: &str) -> String {
        let mut allow = self.allow.clone();
        for (host, port) in &self.internal {
            if let Some(ports) = allow.get_mut(host) {
                ports.remove(port);
                if ports.is_empty() {
                    allow.remove(host);
                }
            }
        }
        let mut out = format!(
            "# suggested by cleanroom from {source}: allows exactly the destinations used\n"
        );
        out += "version: 1\nsandbox:\n  network:\n";
        if allow.is_empty() {
            out += "    allow: []\n";
        } else {
            out += "    allow:\n";
            for (host, ports) in &allow {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                // Quoted: a host like `null` or `yes` must stay a string.
                out += &format!(
                    "      - host: \"{host}\"\n        ports: [{}]\n",
                    ports.join(", ")
                );
            }
        }
        if !self.refused.is_empty() {
            out += "# refused during the run, not suggested:\n";
            for r in &self.refused {
                out += &format!("#   {r}\n");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn used_destinations_become_minimal_rules() {
        let mut s = Suggestion::default();
        s.add("egress.learn", &json!({"host": "b.test", "port": 443}));
        s.add("egress.allow", &json!({"host": "b.test", "port": 443.0}));
        s.add("egress.error", &json!({"host": "a.test", "port": 8080}));
        s.add("egress.learn", &json!({"host": "b.test", "port": 80}));
        s.add("egress.deny", &json!({"host": "10.0.0.1", "port": 80, "reason": "ip_literal_not_allowed", "protocol": "tcp"}));
        s.add(
            "egress.deny",
            &json!({"host": "x.test", "port": 53, "reason": "host_denied", "protocol": "dns"}),
        );
        s.add("egress.allow", &json!({"host": "100.96.0.1", "port": 3128}));
        s.add("sandbox.status", &json!({}));
        s.add("egress.learn", &json!({"host": "localhost", "port": 80}));
        s.add("egress.deny", &json!({"host": "localhost", "port": 80, "reason": "upstream_address_not_allowed", "protocol": "tcp"}));
        let y = s.to_yaml("sandbox sbx_1");
        assert!(
            y.contains("      - host: \"a.test\"\n        ports: [8080]\n"),
            "{y}"
        );
        assert!(
            y.contains("      - host: \"b.test\"\n        ports: [80, 443]\n"),
            "{y}"
        );
        assert!(
            y.contains("#   10.0.0.1:80 (ip_literal_not_allowed)"),
            "{y}"
        );
        assert!(!y.contains("x.test") && !y.contains("3128"), "{y}");
        assert!(!y.contains("host: \"localhost\""), "{y}");
        assert!(
            y.contains("#   localhost:80 (upstream_address_not_allowed)"),
            "{y}"
        );
        let p = crate::policy::compile(&y).expect("the suggestion compiles");
        assert_eq!(p.network.allow.len(), 2);
        assert!(crate::policy::compile(&Suggestion::default().to_yaml("x")).is_ok());
    }
}
