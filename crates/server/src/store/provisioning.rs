//! A fresh sandbox's two store steps, each ONE transaction (one WAL commit, no fsync; see
//! the module doc of [`super`]) with the `sandbox.status` event it causes: PROVISIONING
//! (the row within the caps, its snapshot facts) before the backend builds it, and READY
//! (the backend's provision record) after. They were six commits — the row, its event,
//! its snapshot facts; the record, the status, its event — on the path of every create
//! without a pool and of every pool refill. Every later status (STOPPING, STOPPED,
//! FAILED) is one commit with its event too.

use super::pools::put_claim_on;
use super::snapshots::snapshot_info_on;
use super::{
    append_event_on, insert_sandbox_on, write_status_on, CapHit, ClaimRow, EventRow, Result,
    SandboxCaps, SandboxRow, Store,
};
use crate::model::status::SandboxStatus;
use rusqlite::params;

impl Store {
    /// PROVISIONING: the row `s` if the caps allow it, its snapshot facts (`origin`, the
    /// limits as JSON) and `event`. `Ok(Err(hit))`: a cap refused it, nothing is written.
    /// Returns the event's sequence.
    pub fn begin_sandbox(
        &self,
        s: &SandboxRow,
        caps: SandboxCaps,
        (origin, limits): (&str, &str),
        event: &EventRow,
    ) -> Result<std::result::Result<i64, CapHit>> {
        self.with(|c| {
            let tx = super::write_transaction(c)?;
            if let Some(hit) = insert_sandbox_on(&tx, s, caps)? {
                return Ok(Err(hit));
            }
            snapshot_info_on(&tx, &s.id, origin, limits)?;
            let seq = append_event_on(&tx, event)?;
            tx.commit()?;
            Ok(Ok(seq))
        })
    }

    /// A sandbox's status (STOPPING, STOPPED, FAILED …) and `event`, in one commit.
    /// Returns the event's sequence.
    pub fn sandbox_status_changed(
        &self,
        id: &str,
        status: SandboxStatus,
        message: &str,
        event: &EventRow,
    ) -> Result<i64> {
        self.with_tx(|tx| {
            write_status_on(tx, id, None, status, Some(message))?;
            Ok(append_event_on(tx, event)?)
        })
    }

    /// READY: the backend's provision record, the status and `event`, with the binding
    /// the sandbox was created for (its agent identity and signed attestation) when there
    /// is one. Returns the event's sequence.
    pub fn sandbox_ready(
        &self,
        id: &str,
        provisioned: &cleanroom_backend::ProvisionedSandbox,
        event: &EventRow,
        binding: Option<&ClaimRow>,
    ) -> Result<i64> {
        self.with_tx(|tx| {
            write_status_on(tx, id, None, SandboxStatus::Ready, Some(""))?;
            tx.execute(
                "UPDATE sandboxes SET provisioned = ?2 WHERE id = ?1",
                params![id, super::StoredProvision::encode(provisioned)],
            )?;
            if let Some(claim) = binding {
                put_claim_on(tx, claim)?;
            }
            Ok(append_event_on(tx, event)?)
        })
    }
}
