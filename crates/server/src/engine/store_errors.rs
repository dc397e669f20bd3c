//! How the store's refusals become engine errors with stable codes: an illegal status
//! transition is `sandbox_not_ready` (with the status it is in and the one refused), a
//! database failure, a stored policy, provision record or owner that does not decode is
//! `internal` (a corrupt row is the server's fault). Here, in the engine that uses both,
//! so that neither `error` nor `store` depends on the other.

use crate::model::error::{EngineError, ErrorCode};
use crate::store::{StoreError, UndecodablePolicy, UndecodableProvision};

impl From<StoreError> for EngineError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Transition(t) => {
                // `sandbox_not_ready`, with the status it is in and the one refused: the
                // code every client already reads for "not in a state for that".
                let err = EngineError::new(ErrorCode::SandboxNotReady, t.to_string())
                    .with("sandbox_id", &t.id)
                    .with("to", t.to.name());
                match t.from {
                    Some(from) => err.with("status", from.name()),
                    None => err,
                }
            }
            e @ StoreError::Sql(_) => EngineError::internal(e.to_string()),
        }
    }
}

impl From<UndecodablePolicy> for EngineError {
    fn from(e: UndecodablePolicy) -> Self {
        let owner = e.owner.clone();
        let key = if owner.starts_with("snap_") {
            "snapshot_id"
        } else {
            "sandbox_id"
        };
        // `internal` (a corrupt row is the server's fault), the same code everywhere.
        EngineError::internal(e.to_string()).with(key, owner)
    }
}

impl From<UndecodableProvision> for EngineError {
    fn from(e: UndecodableProvision) -> Self {
        let id = e.sandbox_id.clone();
        EngineError::internal(e.to_string()).with("sandbox_id", id)
    }
}
