//! Live egress rules of each sandbox (`UpdateSandboxNetwork`): the rules added while it
//! runs and the hash of the effective rule set, one row per sandbox that has any. Written
//! in one commit with the `network.rules` event and the re-signed attestation, so the
//! rules, their record and the statement about them never disagree; read back whenever the
//! sandbox's gateway starts, so a gateway started again (recovery) judges by them too.

use super::*;
use cleanroom_policy::LiveRules;

/// Created with the rest of the schema (see [`Store::open`]).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sandbox_network (
  sandbox_id TEXT PRIMARY KEY,
  rules TEXT NOT NULL,
  rules_hash TEXT NOT NULL
);
";

/// A sandbox's stored live rules.
#[derive(Debug, Clone)]
pub struct StoredNetwork {
    /// The rules; `Err` (the reason) when the stored JSON does not decode, which every
    /// user refuses (fail closed) rather than guess.
    pub rules: std::result::Result<LiveRules, String>,
    /// `effective_rules_hash` as committed.
    pub rules_hash: String,
}

impl Store {
    /// The live rules of a sandbox (`None`: it never had any change).
    pub fn network_rules(&self, sandbox_id: &str) -> Result<Option<StoredNetwork>> {
        self.with(|c| {
            query_row(
                c,
                "SELECT rules, rules_hash FROM sandbox_network WHERE sandbox_id = ?1",
                [sandbox_id],
                |r| {
                    let json: String = r.get(0)?;
                    Ok(StoredNetwork {
                        rules: serde_json::from_str(&json).map_err(|e| e.to_string()),
                        rules_hash: r.get(1)?,
                    })
                },
            )
            .optional()
        })
    }

    /// Commit new live rules, their event and (when the server signs) the re-signed
    /// attestation together. Returns the event's sequence.
    pub fn set_network_rules(
        &self,
        sandbox_id: &str,
        rules: &LiveRules,
        rules_hash: &str,
        event: &EventRow,
        claim: Option<&ClaimRow>,
    ) -> Result<i64> {
        let json = serde_json::to_string(rules).unwrap_or_default();
        self.with_tx(|tx| {
            tx.execute(
                "INSERT INTO sandbox_network (sandbox_id, rules, rules_hash) VALUES (?1, ?2, ?3)
                 ON CONFLICT(sandbox_id) DO UPDATE SET rules = ?2, rules_hash = ?3",
                params![sandbox_id, json, rules_hash],
            )?;
            if let Some(claim) = claim {
                pools::put_claim_on(tx, claim)?;
            }
            Ok(append_event_on(tx, event)?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_policy::LiveChange;

    #[test]
    fn rules_round_trip_with_their_event() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        assert!(store.network_rules("sbx_1").unwrap().is_none());
        let mut rules = LiveRules::default();
        rules
            .apply(
                &Default::default(),
                LiveChange::allow("a.test:8080").unwrap(),
            )
            .unwrap();
        let event = EventRow {
            sandbox_id: "sbx_1".into(),
            kind: "network.rules".into(),
            ..Default::default()
        };
        store
            .set_network_rules("sbx_1", &rules, "sha256:x", &event, None)
            .unwrap();
        let got = store.network_rules("sbx_1").unwrap().unwrap();
        assert_eq!(got.rules.unwrap(), rules);
        assert_eq!(got.rules_hash, "sha256:x");
        assert_eq!(
            store
                .events_of_kind("sbx_1", "network.rules")
                .unwrap()
                .len(),
            1
        );
    }
}
