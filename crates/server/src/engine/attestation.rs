//! Attestations and agent identities of sandboxes: the signer is installed once at
//! startup, given to the [`super::EngineBuilder`]; each sandbox's statement is signed at create/claim
//! (see `pools::claim::bind_sandbox`) and served as signed then.

use super::Engine;
use crate::identity::attest::Attestor;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use std::sync::Arc;

/// The identity bound to a sandbox (inspect).
#[derive(Debug, Clone, Default)]
pub struct SandboxIdentity {
    pub agent_public_key: String,
    pub delegation_chain: Vec<String>,
    pub pool_id: String,
}

impl Engine {
    pub(crate) fn attestor(&self) -> Option<&Arc<Attestor>> {
        self.attestor.as_ref()
    }

    /// The server's public key, `None` when no signer is installed.
    pub fn attestation_public_key(&self) -> Option<[u8; 32]> {
        self.attestor().map(|a| a.public_key())
    }

    /// The envelope signed for a sandbox `who` may see.
    pub fn get_attestation(
        &self,
        who: &Principal,
        sandbox_id: &str,
    ) -> Result<String, EngineError> {
        let row = self.owned_sandbox(who, sandbox_id)?;
        self.store
            .get_claim(&row.id)?
            .map(|c| c.envelope)
            .filter(|e| !e.is_empty())
            .ok_or_else(|| {
                EngineError::new(
                    ErrorCode::AttestationNotFound,
                    format!("sandbox {sandbox_id} has no attestation"),
                )
            })
    }

    /// Agent identity, delegation chain and pool of a sandbox (empty when none).
    pub(in crate::engine) fn sandbox_identity(&self, sandbox_id: &str) -> SandboxIdentity {
        match self.store.get_claim(sandbox_id) {
            Ok(Some(c)) => SandboxIdentity {
                agent_public_key: c.agent,
                delegation_chain: serde_json::from_str(&c.chain).unwrap_or_default(),
                pool_id: c.pool_id,
            },
            _ => SandboxIdentity::default(),
        }
    }
}

impl Engine {
    /// The backend's name (attested as `backend`).
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// The backend's capabilities (attested).
    pub fn backend_capabilities(&self) -> Vec<&'static str> {
        cleanroom_vocab::Capability::keys(&self.backend.capabilities())
    }
}
