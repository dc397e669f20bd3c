//! `cleanroom attestation pubkey|verify` and `cleanroom sandbox attest`: fetch the signed
//! statement of a sandbox, the server's public key, and verify a statement OFFLINE (no
//! server: the public key and the file are all it needs).

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::{Args, Subcommand};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum AttestationCommand {
    /// Print (or write) the server's attestation public key (SubjectPublicKeyInfo PEM)
    Pubkey {
        /// Write the key to this file instead of stdout
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Verify an attestation file offline: signature, format, validity window
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The attestation (DSSE envelope JSON) written by `cleanroom sandbox attest`
    pub file: PathBuf,
    /// The server's public key: a PEM file (`cleanroom attestation pubkey --out FILE`)
    #[arg(long, value_name = "PUB")]
    pub key: PathBuf,
    /// Print the verified statement as JSON
    #[arg(long)]
    pub json: bool,
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `attestation verify`: exit 0 and the statement when it verifies, else 125 and
/// `cleanroom: error [attestation_*]: …`.
pub fn verify(args: VerifyArgs) -> i32 {
    use cleanroom_client::ErrorCode;
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let key_text = match read(&args.key) {
        Ok(k) => k,
        Err(e) => return fail(ErrorCode::InvalidArgument, &e),
    };
    let key = match cleanroom_attest::parse_public_key(&String::from_utf8_lossy(&key_text)) {
        Ok(k) => k,
        Err(e) => {
            return fail(
                ErrorCode::InvalidArgument,
                &format!("{}: {e}", args.key.display()),
            )
        }
    };
    let envelope = match read(&args.file) {
        Ok(b) => b,
        Err(e) => return fail(ErrorCode::AttestationInvalid, &e),
    };
    match cleanroom_attest::verify(&envelope, &key, now_unix_ms()) {
        Ok(s) if args.json => {
            println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            0
        }
        Ok(s) => {
            println!("verified: {}", args.file.display());
            println!("sandbox_id:       {}", s.sandbox_id);
            println!("owner:            {}", s.owner);
            println!("policy_hash:      {}", s.policy_hash);
            if !s.effective_rules_hash.is_empty() {
                println!("effective_rules:  {}", s.effective_rules_hash);
            }
            println!("image_digest:     {}", or_dash(&s.image_digest));
            println!("init_sha256:      {}", s.init_sha256);
            println!("backend:          {} ({})", s.backend, s.backend_version);
            println!("capabilities:     {}", s.capabilities.join(","));
            if let Some(a) = &s.agent {
                println!("agent:            {}:{}", a.algorithm, a.public_key);
            }
            for (i, k) in s.delegation_chain.iter().enumerate() {
                println!("delegation.{i}:     {}:{}", k.algorithm, k.public_key);
            }
            println!("pool_id:          {}", or_dash(&s.pool_id));
            let utc = |ms: u64| crate::render::unix_time((ms / 1000) as i64);
            println!("created_at:       {}", utc(s.created_at_unix_ms));
            println!("valid_until:      {}", utc(s.valid_until_unix_ms));
            0
        }
        Err(e) => fail(e.code(), &format!("{}: {e}", args.file.display())),
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

fn fail(code: cleanroom_client::ErrorCode, msg: &str) -> i32 {
    render::report(code.as_str(), msg, None);
    EXIT_CLEANROOM_ERROR
}

fn write_out(output: Option<&PathBuf>, text: &str) -> Result<(), ApiError> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| crate::request::invalid(format!("{}: {e}", p.display()))),
        None => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            Ok(())
        }
    }
}

/// `attestation pubkey` (the verify arm never reaches here: it is offline).
pub async fn run(ep: &Target, cmd: AttestationCommand) -> Result<i32, ApiError> {
    match cmd {
        AttestationCommand::Pubkey { out } => {
            let client = Client::connect_target(ep).await?;
            let r = client
                .attestation
                .get_attestation_public_key(GetAttestationPublicKeyRequest::default())
                .await?
                .into_owned();
            write_out(out.as_ref(), &r.public_key_pem)?;
            Ok(0)
        }
        AttestationCommand::Verify(args) => Ok(verify(args)),
    }
}

/// `sandbox attest ID [--out FILE]`: the envelope signed at create/claim.
pub async fn sandbox_attest(
    ep: &Target,
    sandbox_id: String,
    output: Option<PathBuf>,
) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    let r = client
        .attestation
        .get_attestation(GetAttestationRequest {
            sandbox_id,
            ..Default::default()
        })
        .await?
        .into_owned();
    write_out(output.as_ref(), &r.envelope_json)?;
    Ok(0)
}

/// Largest key file `@FILE` reads: a public key is well under 1 KiB; the cap keeps
/// `@/dev/zero` from eating memory.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// An agent or delegation key argument (`--agent-key`, `--delegation`): the key itself
/// (`ed25519:<base64>`, base64) or `@FILE` (an SPKI PEM or one of those forms in a file),
/// returned as the normalised `ed25519:<base64>`.
///
/// Why it parses here rather than leaving it to the server: the request carries whatever
/// this returns, possibly over TCP, so a private key given by mistake (`@agent.pem`) must
/// be refused before anything is sent. Anything that is not a valid public key is refused
/// too (fail closed); only the 32 public bytes ever leave.
pub fn key_arg(flag: &str, value: &str) -> Result<String, ApiError> {
    use crate::request::invalid;
    use std::io::Read as _;
    let (origin, bytes) = match value.strip_prefix('@') {
        Some(path) => {
            let mut bytes = Vec::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_KEY_FILE + 1).read_to_end(&mut bytes))
                .map_err(|e| invalid(format!("{flag} {path}: {e}")))?;
            if bytes.len() as u64 > MAX_KEY_FILE {
                return Err(invalid(format!(
                    "{flag} {path}: larger than {MAX_KEY_FILE} bytes; not a public key"
                )));
            }
            (format!("{flag} {path}"), bytes)
        }
        None => (flag.to_string(), value.as_bytes().to_vec()),
    };
    // Never echo the value in these messages: it may be a secret.
    if cleanroom_attest::key::holds_private_key(&bytes) {
        return Err(invalid(format!(
            "{origin}: this is a PRIVATE key; {flag} takes the agent's PUBLIC key and nothing \
             was sent. Derive it with `openssl pkey -in PRIVATE.pem -pubout -out agent.pub` \
             and pass `{flag} @agent.pub`"
        )));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| invalid(format!("{origin}: not a public key (not text)")))?;
    cleanroom_attest::AgentKey::parse(text)
        .map(|k| k.display())
        .map_err(|e| invalid(format!("{origin}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Private keys in every form a user may have at hand are refused locally, with a
    /// message naming the remedy and without echoing the key.
    #[test]
    fn key_arg_refuses_private_keys_and_normalises_public_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (key, private_pem) = cleanroom_attest::SigningKey::generate().unwrap();
        let body: String = private_pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        let want = cleanroom_attest::AgentKey(key.public_key()).display();
        let write = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            format!("@{}", p.display())
        };
        let public_pem = cleanroom_attest::public_key_pem(&key.public_key());
        let encrypted = private_pem.replace("PRIVATE KEY", "ENCRYPTED PRIVATE KEY");
        let openssh = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n\
                       -----END OPENSSH PRIVATE KEY-----\n";
        let both = format!("{public_pem}{private_pem}");
        let relabelled = private_pem.replace("PRIVATE KEY", "PUBLIC KEY");
        for (what, arg) in [
            ("PKCS#8 PEM", write("agent.pem", private_pem.as_bytes())),
            ("encrypted PEM", write("enc.pem", encrypted.as_bytes())),
            ("OpenSSH", write("id_ed25519", openssh.as_bytes())),
            ("public then private", write("both.pem", both.as_bytes())),
            (
                "PKCS#8 under a PUBLIC label",
                write("lie.pem", relabelled.as_bytes()),
            ),
            ("PKCS#8 DER", write("agent.der", &der)),
            ("PKCS#8 base64", write("agent.b64", b64(&der).as_bytes())),
            ("inline PEM", private_pem.clone()),
            ("inline base64", format!("ed25519:{}", b64(&der))),
        ] {
            for flag in ["--agent-key", "--delegation"] {
                let err = key_arg(flag, &arg).expect_err(what);
                assert_eq!(err.code, "invalid_argument", "{what}");
                assert!(
                    err.message.contains("PRIVATE key"),
                    "{what}: {}",
                    err.message
                );
                assert!(err.message.contains("-pubout"), "{what}: {}", err.message);
                assert!(!err.message.contains(&b64(&der)[..20]), "{what} echoed");
            }
        }
        // identity_args (create and pool claim) refuses a private key anywhere in the chain.
        let private = write("chain.pem", private_pem.as_bytes());
        assert!(
            crate::pools::identity_args(Some(&want), &[want.clone(), private.clone()]).is_err()
        );
        assert!(crate::pools::identity_args(Some(&private), &[]).is_err());

        // Public keys in each accepted form go out normalised.
        for arg in [
            write("agent.pub", public_pem.as_bytes()),
            write("agent.txt", format!("{want}\n").as_bytes()),
            want.clone(),
            b64(&key.public_key()),
        ] {
            assert_eq!(key_arg("--agent-key", &arg).unwrap(), want, "{arg}");
        }
        assert_eq!(
            crate::pools::identity_args(Some(&want), &[b64(&key.public_key())]).unwrap(),
            (want.clone(), vec![want.clone()])
        );
        // Not a key at all, binary junk, a missing file: refused locally too.
        for arg in [
            "ed25519:AAAA".to_string(),
            // The identity point: a small-order key, under which signatures are forgeable.
            "ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_string(),
            write("junk", &[0xff, 0xfe, 0x00]),
            "@/nonexistent/k".into(),
        ] {
            assert!(key_arg("--agent-key", &arg).is_err(), "{arg}");
        }
    }
}
