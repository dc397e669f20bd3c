//! Sandbox attestations: what the server states about a sandbox at create/claim time,
//! signed with its ed25519 key, verifiable offline with nothing but the public key.
//!
//! The wire shape is a DSSE envelope (the in-toto signing envelope): `payloadType`,
//! base64 `payload` (the canonical JSON of a [`Statement`]) and `signatures`, each an
//! ed25519 signature over the DSSE pre-authentication encoding `PAE(payloadType,
//! payload)`. Signing the exact payload bytes (not a re-serialisation) means a verifier
//! never has to agree with the signer on JSON canonicalisation; the payload is still
//! required to be the canonical encoding so one statement has exactly one byte form.
//!
//! * [`Statement`]: the signed facts;
//! * [`key`]: the server's signing key (PKCS#8 PEM) and public-key encodings;
//! * [`verify`]: the offline check (signature, format, validity window).

pub mod key;
mod verify;

pub use key::{parse_public_key, public_key_pem, AgentKey, SigningKey};
pub use verify::{verify, VerifyError, CLOCK_SKEW_MS};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The DSSE `payloadType` of a Cleanroom attestation statement (version 1).
pub const PAYLOAD_TYPE: &str = "application/vnd.cleanroom.attestation.v1+json";
/// Current statement version.
pub const STATEMENT_VERSION: u32 = 1;

/// An agent identity (seed 002 "NHI"): an ed25519 public key, base64 (standard, padded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentIdentity {
    /// Always `ed25519` in version 1.
    pub algorithm: String,
    pub public_key: String,
}

/// The signed facts about one sandbox. Field order is the canonical order (serde
/// serialises struct fields in declaration order; no maps, so the encoding is unique).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    pub version: u32,
    pub sandbox_id: String,
    /// Principal the sandbox belongs to (at claim: the claimer).
    pub owner: String,
    pub policy_hash: String,
    /// `sha256:…` of the sandbox's effective egress rules (the policy's plus live rules:
    /// `UpdateSandboxNetwork`), in statements signed after a live change; absent before
    /// (the policy's rules are then the effective ones), so older statements stay as they
    /// were.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub effective_rules_hash: String,
    /// `sha256:…` of the image the root is built on; empty for the host-view root.
    pub image_digest: String,
    /// `sha256:<hex>` of the binary that runs as the sandbox's pid 1.
    pub init_sha256: String,
    pub backend: String,
    /// Server version and kernel release (`cleanroom 0.1.0; linux 6.1.0-…`).
    pub backend_version: String,
    /// Backend capabilities in force (sorted).
    pub capabilities: Vec<String>,
    /// The agent the sandbox was created for / claimed by, when one was given.
    pub agent: Option<AgentIdentity>,
    /// Delegation chain from the agent towards a human principal, as given (not
    /// signature-checked: the chain carries keys only, see `docs/pools.md`).
    pub delegation_chain: Vec<AgentIdentity>,
    /// Warm pool the sandbox was claimed from; empty for a fresh create.
    pub pool_id: String,
    pub created_at_unix_ms: u64,
    pub valid_until_unix_ms: u64,
    /// `sha256:…` content digest of the memory checkpoint the sandbox was restored from
    /// (docs/checkpoints.md); absent for every other sandbox, so their canonical bytes
    /// are unchanged.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub restored_from_checkpoint: String,
}

impl Statement {
    /// The canonical payload bytes.
    pub fn canonical(&self) -> Vec<u8> {
        // Serialising a struct of strings, integers and vectors cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    /// `sha256:<hex>` of the raw 32-byte public key.
    pub keyid: String,
    /// base64 ed25519 signature over `PAE(payloadType, payload)`.
    pub sig: String,
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

impl Envelope {
    /// Pretty JSON, as written by `cleanroom sandbox attest`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// DSSE pre-authentication encoding: `DSSEv1 SP len(type) SP type SP len(body) SP body`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Sign `statement` into an envelope.
pub fn sign(key: &SigningKey, statement: &Statement) -> Envelope {
    let payload = statement.canonical();
    let sig = key.sign(&pae(PAYLOAD_TYPE, &payload));
    let b64 = base64::engine::general_purpose::STANDARD;
    Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: b64.encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: key::key_id(&key.public_key()),
            sig: b64.encode(sig),
        }],
    }
}

#[cfg(test)]
mod tests;
