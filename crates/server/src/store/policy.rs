//! A sandbox's compiled policy as the store keeps it: canonical JSON in the row, decoded
//! once when the row is read into a shared [`CompiledPolicy`].
//!
//! One rule for a stored policy that does not decode (a corrupt or foreign row): whatever
//! needs it is refused with `internal` (the row is the server's fault) — never run under the built-in policy
//! or any other, never answered as if the policy said "no". Only a display field (whether
//! the policy asks for egress approvals) reads a policy it cannot decode as asking nothing.

use cleanroom_policy::CompiledPolicy;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A stored policy, decoded (or the reason it does not decode).
#[derive(Debug, Clone)]
pub struct StoredPolicy(Result<Arc<CompiledPolicy>, String>);

/// A stored policy that does not decode (`internal`, with the sandbox or snapshot id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stored policy of {owner} cannot be decoded: {reason}")]
pub struct UndecodablePolicy {
    /// The sandbox or snapshot it belongs to.
    pub owner: String,
    pub reason: String,
}

impl StoredPolicy {
    /// A policy just compiled.
    pub fn new(policy: CompiledPolicy) -> Self {
        StoredPolicy(Ok(Arc::new(policy)))
    }

    /// Decode canonical JSON (as written by [`StoredPolicy::canonical_json`]).
    pub fn decode(json: &str) -> Self {
        StoredPolicy(
            serde_json::from_str::<CompiledPolicy>(json)
                .map(Arc::new)
                .map_err(|e| e.to_string()),
        )
    }

    /// The policy of `owner` (a sandbox or snapshot id, for the error), or the one rule's
    /// refusal.
    pub fn get(&self, owner: &str) -> Result<&Arc<CompiledPolicy>, UndecodablePolicy> {
        self.0.as_ref().map_err(|reason| UndecodablePolicy {
            owner: owner.to_string(),
            reason: reason.clone(),
        })
    }

    /// The JSON the store writes (empty for a policy that never decoded: it stays so).
    pub fn canonical_json(&self) -> String {
        self.0
            .as_ref()
            .map(|p| p.canonical_json())
            .unwrap_or_default()
    }
}

/// Decoded policies by their exact stored text: rows are read many times per request and
/// share a handful of policies, so each text is decoded once. Bounded: cleared when full.
#[derive(Default)]
pub(super) struct PolicyCache(Mutex<HashMap<String, StoredPolicy>>);

const CACHE_MAX: usize = 256;

impl PolicyCache {
    pub(super) fn decode(&self, json: String) -> StoredPolicy {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = map.get(&json) {
            return p.clone();
        }
        let p = StoredPolicy::decode(&json);
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(json, p.clone());
        p
    }
}

#[cfg(test)]
impl super::Store {
    /// Overwrite a sandbox's stored policy text (a corrupt row, as tests make one).
    pub(crate) fn set_policy_json_for_test(&self, id: &str, json: &str) {
        self.with(|c| {
            c.execute(
                "UPDATE sandboxes SET compiled_policy = ?2 WHERE id = ?1",
                [id, json],
            )
        })
        .expect("update policy");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_round_trips_and_undecodable_text_is_refused_with_the_owner() {
        let p = cleanroom_policy::compile("version: 1\n").expect("compiles");
        let stored = StoredPolicy::new(p.clone());
        let again = StoredPolicy::decode(&stored.canonical_json());
        assert_eq!(again.get("sbx_a").unwrap().policy_hash(), p.policy_hash());
        for bad in ["", "{}", "not json", "{\"network\": 3}"] {
            let err = StoredPolicy::decode(bad).get("sbx_a").unwrap_err();
            assert_eq!(err.owner, "sbx_a", "{bad:?}");
        }
    }

    #[test]
    fn the_cache_gives_the_same_decode_for_the_same_text() {
        let cache = PolicyCache::default();
        let json =
            StoredPolicy::new(cleanroom_policy::compile("version: 1\n").unwrap()).canonical_json();
        let a = cache.decode(json.clone());
        let b = cache.decode(json);
        assert!(Arc::ptr_eq(a.get("x").unwrap(), b.get("x").unwrap()));
        assert!(cache.decode("{}".into()).get("x").is_err());
    }
}
