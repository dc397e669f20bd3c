//! A sandbox's provision record (what the backend reported once it was ready: its state
//! dir, pid 1 and the facts `inspect` shows) as the store keeps it: JSON in the row,
//! decoded once when the row is read into a typed [`ProvisionedSandbox`].
//!
//! One rule for a record that does not decode (a corrupt or foreign row), as for a stored
//! policy ([`super::policy`]): whatever needs it gets [`UndecodableProvision`] (`internal`)
//! and does not act on a guess — a warm sandbox is not offered, a restart reclaims the
//! sandbox as one it knows nothing of. Only a display field (`inspect`'s backend facts)
//! shows such a record as empty.

use cleanroom_backend::ProvisionedSandbox;
use std::sync::Arc;

/// A stored provision record, decoded.
#[derive(Debug, Clone, Default)]
pub enum StoredProvision {
    /// Not provisioned yet (the row's text is empty).
    #[default]
    None,
    Record(Arc<ProvisionedSandbox>),
    /// The stored text (kept, so the row is written back unchanged) and why it does not
    /// decode.
    Undecodable {
        text: String,
        reason: String,
    },
}

/// A stored provision record that does not decode (`internal`, with the sandbox id).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stored provision record of {sandbox_id} cannot be decoded: {reason}")]
pub struct UndecodableProvision {
    pub sandbox_id: String,
    pub reason: String,
}

impl StoredProvision {
    /// Decode the row's text (as written by [`StoredProvision::encode`]; empty: none).
    pub fn decode(text: &str) -> Self {
        if text.is_empty() {
            return StoredProvision::None;
        }
        match serde_json::from_str::<ProvisionedSandbox>(text) {
            Ok(p) => StoredProvision::Record(Arc::new(p)),
            Err(e) => StoredProvision::Undecodable {
                text: text.to_string(),
                reason: e.to_string(),
            },
        }
    }

    /// The text the store writes for `record`.
    pub fn encode(record: &ProvisionedSandbox) -> String {
        // A struct of strings, numbers and a string map: serializing it cannot fail.
        serde_json::to_string(record).unwrap_or_default()
    }

    /// The row's text, as it was read or would be written.
    pub fn text(&self) -> String {
        match self {
            StoredProvision::None => String::new(),
            StoredProvision::Record(p) => Self::encode(p),
            StoredProvision::Undecodable { text, .. } => text.clone(),
        }
    }

    /// The record of sandbox `sandbox_id` (`None` before it was provisioned), or the one
    /// rule's refusal.
    pub fn get(
        &self,
        sandbox_id: &str,
    ) -> Result<Option<&ProvisionedSandbox>, UndecodableProvision> {
        match self {
            StoredProvision::None => Ok(None),
            StoredProvision::Record(p) => Ok(Some(p)),
            StoredProvision::Undecodable { reason, .. } => Err(UndecodableProvision {
                sandbox_id: sandbox_id.to_string(),
                reason: reason.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ProvisionedSandbox {
        ProvisionedSandbox {
            sandbox_id: "sbx_a".into(),
            state_dir: "/state/sbx_a".into(),
            init_pid: 42,
            init_start_time: 7,
            info: [("root".to_string(), "image".to_string())].into(),
            network_device: None,
        }
    }

    #[test]
    fn a_record_round_trips_and_empty_text_is_no_record() {
        let text = StoredProvision::encode(&record());
        let got = StoredProvision::decode(&text);
        let p = got.get("sbx_a").unwrap().expect("a record");
        assert_eq!((p.init_pid, p.init_start_time), (42, 7));
        assert_eq!(p.info["root"], "image");
        assert_eq!(got.text(), text);
        assert!(StoredProvision::decode("").get("sbx_a").unwrap().is_none());
        assert_eq!(StoredProvision::decode("").text(), "");
    }

    #[test]
    fn undecodable_text_is_refused_with_the_sandbox_and_kept_as_it_was() {
        for bad in ["{not json", "{}", "{\"pid\":1}", "[]", "null"] {
            let got = StoredProvision::decode(bad);
            let err = got.get("sbx_a").unwrap_err();
            assert_eq!(err.sandbox_id, "sbx_a", "{bad:?}");
            assert_eq!(got.text(), bad);
        }
    }
}
