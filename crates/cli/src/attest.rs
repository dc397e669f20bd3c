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
    /// The server's public key: a PEM file (`cleanroom attestation pubkey -o FILE`)
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
            println!("created_at_ms:    {}", s.created_at_unix_ms);
            println!("valid_until_ms:   {}", s.valid_until_unix_ms);
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

/// An agent key argument: the key itself (`ed25519:<base64>`, base64) or `@FILE` (a PEM
/// or one of those forms in a file).
pub fn key_arg(value: &str) -> Result<String, ApiError> {
    match value.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| crate::request::invalid(format!("{path}: {e}"))),
        None => Ok(value.to_string()),
    }
}
