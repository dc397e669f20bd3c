//! An execution's two store steps, each ONE transaction (one WAL commit, no fsync; see the
//! module doc of [`super`]) with the `execution.status` events it causes: started (QUEUED
//! and RUNNING, right after its process was spawned) and ended. They were eight commits,
//! then three (queued, running, ended), all on the exec round trip's critical path.

use super::pools::{claim_on, ClaimCommit, ClaimOutcome};
use super::{
    append_event_on, clear_active_execution_on, finish_execution_on, insert_execution_on,
    set_sandbox_executions_on, EventRow, ExecutionRow, Result, Store,
};

impl Store {
    /// A new execution, already RUNNING (`e.status`, `e.started_at`), written right after
    /// its process was spawned (so the commit is not on the way to the command's start):
    /// the row, the sandbox's last and active execution, and `events` (its QUEUED and
    /// RUNNING events, in that order). A process never outlives a missing row: the caller
    /// stops it when this fails, and a server that dies in between fails every sandbox on
    /// restart. A spawn that fails is recorded by [`Store::execution_ended`]. Returns the
    /// last event's sequence.
    pub fn start_execution(&self, e: &ExecutionRow, events: &[&EventRow]) -> Result<i64> {
        self.with(|c| {
            let tx = super::write_transaction(c)?;
            insert_execution_on(&tx, e)?;
            set_sandbox_executions_on(&tx, &e.sandbox_id, &e.id, &e.id)?;
            let mut seq = 0;
            for event in events {
                seq = append_event_on(&tx, event)?;
            }
            tx.commit()?;
            Ok(seq)
        })
    }

    /// [`Store::start_execution`] in a sandbox just taken from a pool, with the claim that
    /// makes it the caller's ([`Store::commit_claim`]'s writes) in the same transaction:
    /// `RunExecution`'s one commit after the spawn. Nothing is written unless the claim
    /// is `Committed`, whose `event_seq` is then the last event's.
    pub fn start_claimed_execution(
        &self,
        claim: &ClaimCommit<'_>,
        e: &ExecutionRow,
        events: &[&EventRow],
    ) -> Result<ClaimOutcome> {
        self.with(|c| {
            let tx = super::write_transaction(c)?;
            let mut seq = match claim_on(&tx, claim)? {
                ClaimOutcome::Committed { event_seq } => event_seq,
                refused => return Ok(refused),
            };
            insert_execution_on(&tx, e)?;
            set_sandbox_executions_on(&tx, &e.sandbox_id, &e.id, &e.id)?;
            for event in events {
                seq = append_event_on(&tx, event)?;
            }
            tx.commit()?;
            Ok(ClaimOutcome::Committed { event_seq: seq })
        })
    }

    /// The end: the row's result and `finished_at` (the caller's, so that what it reports
    /// is what is stored), the sandbox's active execution cleared (if it is still this
    /// one), and the event. Returns the event's sequence.
    pub fn execution_ended(
        &self,
        exec_id: &str,
        sandbox_id: &str,
        result: (i32, i32, &str),
        finished_at: i64,
        event: &EventRow,
    ) -> Result<i64> {
        self.with(|c| {
            let tx = super::write_transaction(c)?;
            finish_execution_on(&tx, exec_id, result, finished_at)?;
            clear_active_execution_on(&tx, sandbox_id, exec_id)?;
            let seq = append_event_on(&tx, event)?;
            tx.commit()?;
            Ok(seq)
        })
    }
}
