//! ed25519 keys: the server's signing key (a PKCS#8 v2 document, kept as PEM in a 0600
//! file by the server) and the public-key encodings users pass around: a SubjectPublicKeyInfo
//! PEM (`-----BEGIN PUBLIC KEY-----`, what `openssl pkey -pubout` prints) or
//! `ed25519:<base64 of the 32 raw bytes>`.

use crate::AgentIdentity;
use base64::Engine as _;
use ring::signature::{Ed25519KeyPair, KeyPair};
use sha2::{Digest, Sha256};

/// DER prefix of an ed25519 SubjectPublicKeyInfo (RFC 8410): SEQUENCE { SEQUENCE { OID
/// 1.3.101.112 }, BIT STRING (0 unused bits) } followed by the 32 key bytes.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The `y` encodings of the 8 small-order points of edwards25519 and of their
/// non-canonical aliases, with the sign bit (bit 255, the top bit of the last byte)
/// cleared: each entry stands for two encodings, sign bit 0 and 1, 14 in all. This is
/// libsodium's `has_small_order` list (`ge25519_has_small_order`), compared the same way.
///
/// Why: for a small-order public key `A`, `[8][S]B = [8]R + [8][k]A` degenerates (`[8]A`
/// is the identity), so signatures can be forged without any secret — with the identity
/// key `01 00…00`, `R = 01 00…00, S = 0` verifies EVERY message under ring's verifier.
/// Such a key identifies no one and must never be accepted.
pub const SMALL_ORDER_ENCODINGS: [[u8; 32]; 7] = [
    // y = 0: order 4 (x = ±sqrt(-1); the sign bit picks which).
    [0; 32],
    // y = 1: the identity, order 1 (with the sign bit set: non-canonical, x = 0).
    [
        0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0,
    ],
    // y = 2707385501144840649318225287225658788936804267575313519463743609750303402022:
    // two points of order 8.
    [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98,
        0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53,
        0xfc, 0x05,
    ],
    // y = 55188659117513257062467267217118295137698188065244968500265048394206261417927:
    // the other two points of order 8.
    [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67,
        0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac,
        0x03, 0x7a,
    ],
    // y = p - 1 = -1: order 2 (with the sign bit set: non-canonical, x = 0).
    [
        0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    // y = p (non-canonical 0): order 4.
    [
        0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
    // y = p + 1 (non-canonical 1): the identity.
    [
        0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0x7f,
    ],
];

/// Whether `key` encodes a small-order point (see [`SMALL_ORDER_ENCODINGS`]): the sign bit
/// is ignored, as libsodium does, so both encodings of each `y` match.
pub fn is_small_order(key: &[u8; 32]) -> bool {
    let mut y = *key;
    y[31] &= 0x7f;
    SMALL_ORDER_ENCODINGS.contains(&y)
}

/// Why a key could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

/// The server's ed25519 signing key.
pub struct SigningKey(Ed25519KeyPair);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", key_id(&self.public_key()))
    }
}

impl SigningKey {
    /// A fresh key and its PKCS#8 PEM (to be stored by the caller, privately).
    pub fn generate() -> Result<(SigningKey, String), KeyError> {
        let rng = ring::rand::SystemRandom::new();
        let doc = Ed25519KeyPair::generate_pkcs8(&rng)
            .map_err(|_| KeyError("cannot generate an ed25519 key".into()))?;
        let pem = pem::encode(&pem::Pem::new("PRIVATE KEY", doc.as_ref().to_vec()));
        Ok((Self::from_pkcs8_pem(&pem)?, pem))
    }

    /// Load a key from its PKCS#8 PEM.
    pub fn from_pkcs8_pem(text: &str) -> Result<SigningKey, KeyError> {
        let p = pem::parse(text).map_err(|e| KeyError(format!("not a PEM key: {e}")))?;
        if p.tag() != "PRIVATE KEY" {
            return Err(KeyError(format!("expected PRIVATE KEY, found {}", p.tag())));
        }
        Ed25519KeyPair::from_pkcs8(p.contents())
            .or_else(|_| Ed25519KeyPair::from_pkcs8_maybe_unchecked(p.contents()))
            .map(SigningKey)
            .map_err(|e| KeyError(format!("not an ed25519 PKCS#8 key: {e}")))
    }

    /// The raw 32-byte public key.
    pub fn public_key(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.0.public_key().as_ref());
        out
    }

    /// Sign `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        let mut out = [0u8; 64];
        out.copy_from_slice(self.0.sign(message).as_ref());
        out
    }
}

/// `sha256:<hex>` of the raw public key: the DSSE `keyid`.
pub fn key_id(public_key: &[u8; 32]) -> String {
    let digest = Sha256::digest(public_key);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The SubjectPublicKeyInfo PEM of a raw public key.
pub fn public_key_pem(public_key: &[u8; 32]) -> String {
    let mut der = SPKI_PREFIX.to_vec();
    der.extend_from_slice(public_key);
    pem::encode(&pem::Pem::new("PUBLIC KEY", der))
}

/// Parse a public key given as SPKI PEM, `ed25519:<base64>` or bare base64 of 32 bytes.
/// Refuses anything else (other algorithms, wrong lengths) and every small-order point
/// ([`is_small_order`]: under such a key anyone can forge signatures). Every key the
/// project accepts goes through here: the attestation verification key, agent identities
/// and delegation chains.
pub fn parse_public_key(text: &str) -> Result<[u8; 32], KeyError> {
    let text = text.trim();
    let raw: Vec<u8> = if text.starts_with("-----BEGIN") {
        let p = pem::parse(text).map_err(|e| KeyError(format!("not a PEM public key: {e}")))?;
        if p.tag() != "PUBLIC KEY" {
            return Err(KeyError(format!("expected PUBLIC KEY, found {}", p.tag())));
        }
        let der = p.contents();
        if der.len() != SPKI_PREFIX.len() + 32 || der[..SPKI_PREFIX.len()] != SPKI_PREFIX {
            return Err(KeyError("not an ed25519 public key".into()));
        }
        der[SPKI_PREFIX.len()..].to_vec()
    } else {
        let b64 = text.strip_prefix("ed25519:").unwrap_or(text);
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| KeyError(format!("public key is not base64: {e}")))?
    };
    let key: [u8; 32] = raw
        .as_slice()
        .try_into()
        .map_err(|_| KeyError(format!("an ed25519 key is 32 bytes, not {}", raw.len())))?;
    if is_small_order(&key) {
        return Err(KeyError(
            "a small-order point is not a key (anyone can forge signatures under it)".into(),
        ));
    }
    Ok(key)
}

/// Whether `bytes` (a key file's contents or a key argument) hold private key material:
/// a PEM block whose label names a private key (`PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`,
/// `OPENSSH PRIVATE KEY`, ...), or a PKCS#8 `PrivateKeyInfo` as DER, inside any PEM block,
/// or base64 (optionally `ed25519:`-prefixed).
///
/// Why: where a *public* key is expected (agent identities, delegation chains) a client
/// must refuse such input locally instead of sending it on; [`parse_public_key`] alone
/// would only refuse it after the bytes had left the machine. Errs towards `true`: a
/// structurally PKCS#8-shaped DER is enough, whatever its algorithm.
pub fn holds_private_key(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let private_label = text.lines().any(|l| {
        let l = l.trim().to_ascii_uppercase();
        l.starts_with("-----BEGIN") && l.contains("PRIVATE KEY")
    });
    if private_label || is_pkcs8_der(bytes) {
        return true;
    }
    if let Ok(blocks) = pem::parse_many(bytes) {
        if blocks.iter().any(|p| is_pkcs8_der(p.contents())) {
            return true;
        }
    }
    let compact: String = text.split_whitespace().collect();
    let b64 = compact.strip_prefix("ed25519:").unwrap_or(&compact);
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .is_ok_and(|der| is_pkcs8_der(&der))
}

/// A DER `SEQUENCE` that opens with `INTEGER 0|1` then an `AlgorithmIdentifier`
/// `SEQUENCE`: the shape of PKCS#8 `PrivateKeyInfo` / `OneAsymmetricKey` (RFC 5958), which a
/// SubjectPublicKeyInfo (it opens with the `AlgorithmIdentifier`) never has. ring's own
/// ed25519 PKCS#8 parser is asked too.
fn is_pkcs8_der(der: &[u8]) -> bool {
    if Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).is_ok() {
        return true;
    }
    let Some((&0x30, rest)) = der.split_first() else {
        return false;
    };
    // Skip the outer length (short form, or long form of up to 4 bytes); its value is not
    // checked so that a truncated document still counts.
    let body = match rest.split_first() {
        Some((&l, body)) if l < 0x80 => body,
        Some((&l, body)) if (0x81..=0x84).contains(&l) => {
            body.get(usize::from(l - 0x80)..).unwrap_or_default()
        }
        _ => return false,
    };
    matches!(body, [0x02, 0x01, 0x00 | 0x01, 0x30, ..])
}

/// A validated agent identity key, as recorded and attested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentKey(pub [u8; 32]);

impl AgentKey {
    /// Parse one identity key (see [`parse_public_key`]).
    pub fn parse(text: &str) -> Result<AgentKey, KeyError> {
        parse_public_key(text).map(AgentKey)
    }

    /// `ed25519:<base64>`: the one form stored, shown and attested.
    pub fn display(&self) -> String {
        format!(
            "ed25519:{}",
            base64::engine::general_purpose::STANDARD.encode(self.0)
        )
    }

    /// The statement's form.
    pub fn identity(&self) -> AgentIdentity {
        AgentIdentity {
            algorithm: "ed25519".into(),
            public_key: base64::engine::general_purpose::STANDARD.encode(self.0),
        }
    }
}
