//! Offline verification of an attestation envelope: no server, only the public key.
//! Fails closed: anything not exactly a version-1 statement signed by the key is refused.

use crate::{key, pae, Envelope, Statement, PAYLOAD_TYPE, STATEMENT_VERSION};
use base64::Engine as _;
use cleanroom_vocab::ErrorCode;
use ring::signature::{UnparsedPublicKey, ED25519};

/// How far in the future a statement's `created_at` may lie and still verify: the signer's
/// and the verifier's clocks are never exactly equal, and a statement checked right after
/// it was signed on a host whose clock runs a little ahead must not be refused. Anything
/// further ahead was not signed "now" and is refused ([`VerifyError::NotYetValid`]).
pub const CLOCK_SKEW_MS: u64 = 60_000;

/// Why an attestation was refused; [`VerifyError::code`] is the stable code.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("not a cleanroom attestation: {0}")]
    Invalid(String),
    #[error("no signature by key {0} verifies")]
    Signature(String),
    /// The verification key is a small-order point: any signature could "verify" under it,
    /// so none is trusted (see [`key::is_small_order`]).
    #[error("key {0} is a small-order point; no signature under it can be trusted")]
    WeakKey(String),
    #[error(
        "the attestation is not valid yet: created at {created_at_unix_ms} (unix ms), now is \
         {now_unix_ms} (more than {CLOCK_SKEW_MS} ms of clock skew)"
    )]
    NotYetValid {
        created_at_unix_ms: u64,
        now_unix_ms: u64,
    },
    #[error("the attestation expired at {valid_until_unix_ms} (unix ms); now is {now_unix_ms}")]
    Expired {
        valid_until_unix_ms: u64,
        now_unix_ms: u64,
    },
}

impl VerifyError {
    pub fn code(&self) -> ErrorCode {
        match self {
            VerifyError::Invalid(_) => ErrorCode::AttestationInvalid,
            VerifyError::Signature(_) | VerifyError::WeakKey(_) => {
                ErrorCode::AttestationSignatureInvalid
            }
            VerifyError::NotYetValid { .. } => ErrorCode::AttestationNotYetValid,
            VerifyError::Expired { .. } => ErrorCode::AttestationExpired,
        }
    }
}

/// Verify `envelope_json` with `public_key` at time `now_unix_ms`; the statement on success.
/// Order: the key (no small-order point), envelope shape, signature over the exact payload
/// bytes, then the payload's format (strict, canonical), then the validity window: not
/// before `created_at` (less [`CLOCK_SKEW_MS`]), not after `valid_until`.
pub fn verify(
    envelope_json: &[u8],
    public_key: &[u8; 32],
    now_unix_ms: u64,
) -> Result<Statement, VerifyError> {
    // The key is checked even though callers should have parsed it with
    // `parse_public_key`: this function takes raw bytes and must fail closed on its own.
    if key::is_small_order(public_key) {
        return Err(VerifyError::WeakKey(key::key_id(public_key)));
    }
    let invalid = |m: String| VerifyError::Invalid(m);
    let env: Envelope =
        serde_json::from_slice(envelope_json).map_err(|e| invalid(format!("envelope: {e}")))?;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(invalid(format!(
            "payloadType {:?}, expected {PAYLOAD_TYPE:?}",
            env.payload_type
        )));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(&env.payload)
        .map_err(|e| invalid(format!("payload is not base64: {e}")))?;
    let message = pae(&env.payload_type, &payload);
    let verifier = UnparsedPublicKey::new(&ED25519, public_key);
    let want_id = key::key_id(public_key);
    let signed = env.signatures.iter().any(|s| {
        s.keyid == want_id
            && b64
                .decode(&s.sig)
                .is_ok_and(|sig| verifier.verify(&message, &sig).is_ok())
    });
    if !signed {
        return Err(VerifyError::Signature(want_id));
    }
    let statement: Statement =
        serde_json::from_slice(&payload).map_err(|e| invalid(format!("statement: {e}")))?;
    if statement.version != STATEMENT_VERSION {
        return Err(invalid(format!(
            "statement version {}, expected {STATEMENT_VERSION}",
            statement.version
        )));
    }
    if statement.canonical() != payload {
        return Err(invalid("the statement is not in canonical form".into()));
    }
    if statement.valid_until_unix_ms < statement.created_at_unix_ms {
        return Err(invalid("valid_until is before created_at".into()));
    }
    if now_unix_ms.saturating_add(CLOCK_SKEW_MS) < statement.created_at_unix_ms {
        return Err(VerifyError::NotYetValid {
            created_at_unix_ms: statement.created_at_unix_ms,
            now_unix_ms,
        });
    }
    if now_unix_ms > statement.valid_until_unix_ms {
        return Err(VerifyError::Expired {
            valid_until_unix_ms: statement.valid_until_unix_ms,
            now_unix_ms,
        });
    }
    Ok(statement)
}
