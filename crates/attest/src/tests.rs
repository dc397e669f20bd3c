use super::*;

const NOW: u64 = 1_800_000_000_000;

fn statement() -> Statement {
    Statement {
        version: STATEMENT_VERSION,
        sandbox_id: "sbx_0123".into(),
        owner: "uid:1000".into(),
        policy_hash: "sha256:aa".into(),
        effective_rules_hash: String::new(),
        image_digest: String::new(),
        init_sha256: "sha256:bb".into(),
        backend: "linux".into(),
        backend_version: "cleanroom 0.1.0; linux 6.1".into(),
        capabilities: vec!["network.egress".into()],
        agent: Some(AgentKey([7; 32]).identity()),
        delegation_chain: vec![AgentKey([8; 32]).identity()],
        pool_id: String::new(),
        created_at_unix_ms: NOW - 1000,
        valid_until_unix_ms: NOW + 1000,
        restored_from_checkpoint: String::new(),
    }
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

#[test]
fn signed_statement_verifies_and_round_trips_through_pem() {
    let (key, pem) = SigningKey::generate().unwrap();
    let again = SigningKey::from_pkcs8_pem(&pem).unwrap();
    assert_eq!(key.public_key(), again.public_key());
    let env = sign(&key, &statement());
    let pub_pem = public_key_pem(&key.public_key());
    let pk = parse_public_key(&pub_pem).unwrap();
    let got = verify(env.to_json().as_bytes(), &pk, NOW).unwrap();
    assert_eq!(got, statement());
}

/// Every way of altering a signed envelope is refused with the right code.
#[test]
fn tampered_envelopes_fail() {
    let (key, _) = SigningKey::generate().unwrap();
    let pk = key.public_key();
    let env = sign(&key, &statement());
    let check = |e: &Envelope, code: cleanroom_vocab::ErrorCode| {
        let err = verify(e.to_json().as_bytes(), &pk, NOW).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
    };
    // A changed field (the sandbox id), re-encoded canonically.
    let mut s = statement();
    s.sandbox_id = "sbx_other".into();
    let mut e = env.clone();
    e.payload = b64().encode(s.canonical());
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    // A different agent key.
    let mut s = statement();
    s.agent = Some(AgentKey([9; 32]).identity());
    let mut e = env.clone();
    e.payload = b64().encode(s.canonical());
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    // An extended validity.
    let mut s = statement();
    s.valid_until_unix_ms += 1;
    let mut e = env.clone();
    e.payload = b64().encode(s.canonical());
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    // One flipped bit of the signature.
    let mut e = env.clone();
    let mut sig = b64().decode(&e.signatures[0].sig).unwrap();
    sig[10] ^= 1;
    e.signatures[0].sig = b64().encode(sig);
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    // Another payload type (the signature covers it).
    let mut e = env.clone();
    e.payload_type = "application/vnd.in-toto+json".into();
    check(&e, cleanroom_vocab::ErrorCode::AttestationInvalid);
    // No signatures at all; a signature under another key id.
    let mut e = env.clone();
    e.signatures.clear();
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    let mut e = env.clone();
    e.signatures[0].keyid = "sha256:00".into();
    check(&e, cleanroom_vocab::ErrorCode::AttestationSignatureInvalid);
    // Garbage and unknown envelope fields.
    assert_eq!(
        verify(b"{not json", &pk, NOW).unwrap_err().code(),
        cleanroom_vocab::ErrorCode::AttestationInvalid
    );
    let mut v: serde_json::Value = serde_json::from_str(&env.to_json()).unwrap();
    v["extra"] = serde_json::json!(1);
    assert_eq!(
        verify(v.to_string().as_bytes(), &pk, NOW)
            .unwrap_err()
            .code(),
        cleanroom_vocab::ErrorCode::AttestationInvalid
    );
}

/// A payload signed but not in canonical form, or of another version, is refused even
/// with a good signature (the signer is trusted, the format is not negotiable).
#[test]
fn non_canonical_or_unknown_fields_fail_even_when_signed() {
    let (key, _) = SigningKey::generate().unwrap();
    let pk = key.public_key();
    let sign_raw = |payload: &[u8]| Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: b64().encode(payload),
        signatures: vec![EnvelopeSignature {
            keyid: key::key_id(&pk),
            sig: b64().encode(key.sign(&pae(PAYLOAD_TYPE, payload))),
        }],
    };
    let pretty = serde_json::to_vec_pretty(&statement()).unwrap();
    let err = verify(sign_raw(&pretty).to_json().as_bytes(), &pk, NOW).unwrap_err();
    assert_eq!(err.code(), cleanroom_vocab::ErrorCode::AttestationInvalid);
    let mut v = serde_json::to_value(statement()).unwrap();
    v["admin"] = serde_json::json!(true);
    let err = verify(
        sign_raw(&serde_json::to_vec(&v).unwrap())
            .to_json()
            .as_bytes(),
        &pk,
        NOW,
    )
    .unwrap_err();
    assert_eq!(err.code(), cleanroom_vocab::ErrorCode::AttestationInvalid);
}

#[test]
fn wrong_key_and_expiry_fail() {
    let (key, _) = SigningKey::generate().unwrap();
    let (other, _) = SigningKey::generate().unwrap();
    let env = sign(&key, &statement()).to_json();
    let err = verify(env.as_bytes(), &other.public_key(), NOW).unwrap_err();
    assert_eq!(
        err.code(),
        cleanroom_vocab::ErrorCode::AttestationSignatureInvalid
    );
    let err = verify(env.as_bytes(), &key.public_key(), NOW + 1001).unwrap_err();
    assert_eq!(err.code(), cleanroom_vocab::ErrorCode::AttestationExpired);
}

#[test]
fn public_key_parsing_refuses_hostile_input() {
    let (key, _) = SigningKey::generate().unwrap();
    let pk = key.public_key();
    assert_eq!(parse_public_key(&AgentKey(pk).display()).unwrap(), pk);
    assert_eq!(parse_public_key(&b64().encode(pk)).unwrap(), pk);
    for bad in [
        "",
        "ed25519:",
        "ed25519:AAAA",
        "not base64 !!",
        &b64().encode([0u8; 32]),
        &b64().encode([1u8; 33]),
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VxAyEA\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ] {
        assert!(parse_public_key(bad).is_err(), "{bad:?} accepted");
    }
}

/// A statement whose `created_at` lies in the future is refused with its own code, past a
/// small clock-skew allowance; within the allowance it verifies.
#[test]
fn statement_from_the_future_fails_beyond_the_clock_skew() {
    let (key, _) = SigningKey::generate().unwrap();
    let at = |created_at_unix_ms: u64| {
        let s = Statement {
            created_at_unix_ms,
            valid_until_unix_ms: created_at_unix_ms + 24 * 3600 * 1000,
            ..statement()
        };
        verify(sign(&key, &s).to_json().as_bytes(), &key.public_key(), NOW)
    };
    let err = at(NOW + 10 * 60 * 1000).unwrap_err();
    assert_eq!(
        err.code(),
        cleanroom_vocab::ErrorCode::AttestationNotYetValid,
        "{err}"
    );
    assert!(at(NOW + 10 * 1000).is_ok());
    assert!(at(NOW + CLOCK_SKEW_MS).is_ok());
    let err = at(NOW + CLOCK_SKEW_MS + 1).unwrap_err();
    assert_eq!(
        err.code(),
        cleanroom_vocab::ErrorCode::AttestationNotYetValid
    );
    assert!(at(NOW).is_ok());
}

fn unhex(s: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

/// The 8 small-order points' canonical encodings and their 6 known non-canonical ones,
/// written out independently of `key::SMALL_ORDER_ENCODINGS` (as listed by libsodium,
/// ed25519-zebra and "Taming the many EdDSAs").
const SMALL_ORDER_HEX: [&str; 14] = [
    "0100000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
    // Non-canonical: x = 0 with the sign bit set, and y >= p.
    "0100000000000000000000000000000000000000000000000000000000000080",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
];

/// An envelope of `statement()` "signed" with `sig` under `public_key`'s key id.
fn forged(public_key: &[u8; 32], sig: &[u8]) -> String {
    Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: b64().encode(statement().canonical()),
        signatures: vec![EnvelopeSignature {
            keyid: key::key_id(public_key),
            sig: b64().encode(sig),
        }],
    }
    .to_json()
}

/// The identity point as a public key: `R = identity, S = 0` is a valid signature of every
/// message under ring's verifier. Parsing and verification must refuse the key.
#[test]
fn identity_key_forgery_is_refused() {
    let mut identity = [0u8; 32];
    identity[0] = 1;
    let mut sig = [0u8; 64];
    sig[0] = 1;
    // The attack is real: ring alone accepts the forgery, for any message.
    let ring_key = ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, identity);
    assert!(ring_key.verify(b"anything at all", &sig).is_ok());
    assert!(ring_key.verify(b"something else", &sig).is_ok());

    for text in [
        AgentKey(identity).display(),
        b64().encode(identity),
        public_key_pem(&identity),
    ] {
        assert!(parse_public_key(&text).is_err(), "{text} accepted");
        assert!(AgentKey::parse(&text).is_err(), "{text} accepted");
    }
    let err = verify(forged(&identity, &sig).as_bytes(), &identity, NOW).unwrap_err();
    assert_eq!(
        err.code(),
        cleanroom_vocab::ErrorCode::AttestationSignatureInvalid,
        "{err}"
    );
}

/// Every small-order encoding is refused (all three text forms, and by `verify`), the
/// crate's list covers exactly these 14, and a real key still parses and verifies.
#[test]
fn every_small_order_encoding_is_refused_and_real_keys_work() {
    let listed: std::collections::BTreeSet<[u8; 32]> =
        SMALL_ORDER_HEX.iter().map(|h| unhex(h)).collect();
    assert_eq!(listed.len(), 14);
    let mut ours = std::collections::BTreeSet::new();
    for y in key::SMALL_ORDER_ENCODINGS {
        for sign in [0, 0x80] {
            let mut k = y;
            k[31] |= sign;
            ours.insert(k);
        }
    }
    assert_eq!(ours, listed);
    let mut identity_sig = [0u8; 64];
    identity_sig[0] = 1;
    for k in &listed {
        assert!(key::is_small_order(k));
        for text in [AgentKey(*k).display(), b64().encode(k), public_key_pem(k)] {
            assert!(parse_public_key(&text).is_err(), "{text} accepted");
        }
        let err = verify(forged(k, &identity_sig).as_bytes(), k, NOW).unwrap_err();
        assert_eq!(
            err.code(),
            cleanroom_vocab::ErrorCode::AttestationSignatureInvalid
        );
    }
    // A real key, in every form, still works.
    let (key, _) = SigningKey::generate().unwrap();
    let pk = key.public_key();
    assert!(!key::is_small_order(&pk));
    for text in [
        AgentKey(pk).display(),
        b64().encode(pk),
        public_key_pem(&pk),
    ] {
        assert_eq!(parse_public_key(&text).unwrap(), pk);
    }
    let env = sign(&key, &statement()).to_json();
    assert_eq!(verify(env.as_bytes(), &pk, NOW).unwrap(), statement());
}
