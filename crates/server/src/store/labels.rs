//! Sandbox labels (CreateSandboxRequest.labels): a JSON object in `sandboxes.labels`,
//! bounded at create ([`check`]) and matched by ListSandboxesRequest.labels ([`matches`]).

use super::{exec, Store};
use rusqlite::params;
use std::collections::BTreeMap;

/// Labels per sandbox.
pub const MAX_LABELS: usize = 64;
/// Bytes of a label key.
pub const MAX_KEY: usize = 63;
/// Bytes of a label value.
pub const MAX_VALUE: usize = 256;

pub type Labels = BTreeMap<String, String>;

/// The stored form: a JSON object.
pub fn encode(labels: &Labels) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "{}".into())
}

/// The stored form read back; anything that is not an object of strings reads as none.
pub fn decode(text: &str) -> Labels {
    serde_json::from_str(text).unwrap_or_default()
}

/// Why `labels` cannot be stored, naming the offending field: at most [`MAX_LABELS`]; a
/// key 1-[`MAX_KEY`] bytes of ASCII letters, digits, `.`, `_`, `-` and `/`; a value at
/// most [`MAX_VALUE`] bytes without control characters.
pub fn check<'a>(
    labels: impl ExactSizeIterator<Item = (&'a String, &'a String)>,
) -> Result<(), String> {
    if labels.len() > MAX_LABELS {
        return Err(format!(
            "labels: {} labels given, at most {MAX_LABELS} are allowed",
            labels.len()
        ));
    }
    for (k, v) in labels {
        let key_ok = k
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'));
        if k.is_empty() || k.len() > MAX_KEY || !key_ok {
            return Err(format!(
                "labels: key {k:?} must be 1-{MAX_KEY} bytes of letters, digits, '.', '_', '-' and '/'"
            ));
        }
        if v.len() > MAX_VALUE || v.chars().any(char::is_control) {
            return Err(format!(
                "labels.{k}: the value must be at most {MAX_VALUE} bytes without control characters ({} given)",
                v.len()
            ));
        }
    }
    Ok(())
}

/// Whether `labels` carries every one of `wanted` (key and value equal).
pub fn matches<'a>(
    labels: &Labels,
    mut wanted: impl Iterator<Item = (&'a String, &'a String)>,
) -> bool {
    wanted.all(|(k, v)| labels.get(k) == Some(v))
}

impl Store {
    /// Replace a sandbox's labels (recorded once it is made or claimed for its owner).
    pub fn set_sandbox_labels(&self, id: &str, labels: &Labels) -> super::Result<()> {
        self.with(|c| {
            exec(
                c,
                "UPDATE sandboxes SET labels = ?2 WHERE id = ?1",
                params![id, encode(labels)],
            )
            .map(drop)
        })
    }
}
