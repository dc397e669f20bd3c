//! The server's attestation signer: an ed25519 key generated once and kept 0600 in the
//! state dir (`attestation.key`, PKCS#8 PEM), the facts that do not change while the
//! server runs (hash of the init binary, backend and version, capabilities), and the
//! signing of one statement per sandbox at create/claim.
//!
//! The format and the offline check live in `cleanroom-attest`; this module only knows
//! where the key lives and what the server states.

use crate::error::EngineError;
use crate::store::SandboxRow;
use cleanroom_attest::{sign, AgentKey, Envelope, SigningKey, Statement, STATEMENT_VERSION};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// How long a statement is valid after it is signed.
pub const VALIDITY: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// Key file name in the state dir.
pub const KEY_FILE: &str = "attestation.key";

/// Signs sandbox statements.
pub struct Attestor {
    key: SigningKey,
    init_sha256: String,
    backend: String,
    backend_version: String,
    capabilities: Vec<String>,
}

/// An agent identity and its delegation chain, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentBinding {
    pub agent: Option<AgentKey>,
    pub chain: Vec<AgentKey>,
}

/// Longest delegation chain accepted.
pub const MAX_CHAIN: usize = 16;

impl AgentBinding {
    /// Parse the request's fields; any malformed key is `invalid_argument` (fail closed: a
    /// sandbox is never attested with an identity other than the one asked for).
    pub fn parse(agent: &str, chain: &[String]) -> Result<AgentBinding, EngineError> {
        let bad = |field: &str, e: cleanroom_attest::key::KeyError| {
            EngineError::invalid(format!("{field}: {e}")).with("field", field)
        };
        if agent.trim().is_empty() {
            if !chain.is_empty() {
                return Err(EngineError::invalid(
                    "delegation_chain given without agent_public_key",
                ));
            }
            return Ok(AgentBinding::default());
        }
        if chain.len() > MAX_CHAIN {
            return Err(EngineError::invalid(format!(
                "delegation_chain has {} keys; at most {MAX_CHAIN}",
                chain.len()
            )));
        }
        let agent = AgentKey::parse(agent).map_err(|e| bad("agent_public_key", e))?;
        let chain = chain
            .iter()
            .map(|k| AgentKey::parse(k).map_err(|e| bad("delegation_chain", e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AgentBinding {
            agent: Some(agent),
            chain,
        })
    }

    pub fn agent_display(&self) -> String {
        self.agent.map(|a| a.display()).unwrap_or_default()
    }

    pub fn chain_display(&self) -> Vec<String> {
        self.chain.iter().map(AgentKey::display).collect()
    }
}

impl Attestor {
    /// Load `state_dir/attestation.key`, or create it (0600, never overwritten). A key file
    /// that others can read or that another uid owns is refused like the secrets file.
    pub fn load_or_create(
        state_dir: &Path,
        init_exe: &Path,
        backend: &str,
        capabilities: &[&str],
    ) -> Result<Attestor, String> {
        let path = state_dir.join(KEY_FILE);
        let key = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let (key, pem) = SigningKey::generate().map_err(|e| e.to_string())?;
                f.write_all(pem.as_bytes())
                    .and_then(|_| f.sync_all())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                key
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = crate::private_file::read_private(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                SigningKey::from_pkcs8_pem(&text).map_err(|e| format!("{}: {e}", path.display()))?
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let init_sha256 = file_sha256(init_exe)
            .map_err(|e| format!("hash of the init binary {}: {e}", init_exe.display()))?;
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let mut capabilities: Vec<String> = capabilities.iter().map(|c| c.to_string()).collect();
        capabilities.sort();
        Ok(Attestor {
            key,
            init_sha256,
            backend: backend.into(),
            backend_version: format!("cleanroom {}; linux {kernel}", env!("CARGO_PKG_VERSION")),
            capabilities,
        })
    }

    /// The raw public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.public_key()
    }

    /// Sign the statement for `row` as it is now (owner, policy, image), bound to `who`.
    pub fn attest(&self, row: &SandboxRow, who: &AgentBinding, pool_id: &str) -> Envelope {
        let now = crate::store::now_micros().max(0) as u64 / 1000;
        let statement = Statement {
            version: STATEMENT_VERSION,
            sandbox_id: row.id.clone(),
            owner: row.owner.clone(),
            policy_hash: row.policy_hash.clone(),
            image_digest: row.image_digest.clone(),
            init_sha256: self.init_sha256.clone(),
            backend: self.backend.clone(),
            backend_version: self.backend_version.clone(),
            capabilities: self.capabilities.clone(),
            agent: who.agent.map(|a| a.identity()),
            delegation_chain: who.chain.iter().map(AgentKey::identity).collect(),
            pool_id: pool_id.into(),
            created_at_unix_ms: now,
            valid_until_unix_ms: now + VALIDITY.as_millis() as u64,
        };
        sign(&self.key, &statement)
    }
}

/// `sha256:<hex>` of a file, streamed. ring's assembly SHA-256, not the `sha2` crate: the
/// binary is tens of MiB and this runs at every server start (also in unoptimised builds).
fn file_sha256(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    let hex: String = h
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(format!("sha256:{hex}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The identity point (`01 00…00`): under it `R = identity, S = 0` verifies anything.
    const IDENTITY: &str = "ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    /// A point of order 4 (`00…00 80`), not the all-zero encoding.
    const ORDER_4: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA=";
    const GOOD: &str = "ed25519:BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=";

    /// Small-order agent and delegation keys are refused (the same parser as every other
    /// key); an ordinary key still binds.
    #[test]
    fn agent_binding_refuses_small_order_keys() {
        for (agent, chain) in [
            (IDENTITY, vec![]),
            (ORDER_4, vec![]),
            (GOOD, vec![IDENTITY.to_string()]),
            (GOOD, vec![GOOD.to_string(), ORDER_4.to_string()]),
        ] {
            assert!(
                AgentBinding::parse(agent, &chain).is_err(),
                "{agent} {chain:?} accepted"
            );
        }
        let b = AgentBinding::parse(GOOD, &[GOOD.to_string()]).unwrap();
        assert_eq!(b.agent_display(), GOOD);
        assert_eq!(b.chain_display(), vec![GOOD.to_string()]);
    }
}
