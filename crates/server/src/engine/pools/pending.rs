//! A pool sandbox taken for `RunExecution`, claimed in the same commit as the command's
//! start.
//!
//! Why: a claim signs the claimer's attestation and commits the owner change (together
//! ~0.3 ms here), and `RunExecution` used to do both before it asked pid 1 to start the
//! command, then committed the execution's start in a second transaction. Now the
//! sandbox is only taken out of its pool's queue (one taker per entry, its pid 1 checked
//! alive) before the spawn; the claim's writes join the execution's start commit
//! ([`crate::store::Store::start_claimed_execution`]) while pid 1 starts the command.
//!
//! **Nothing is handed out twice and nothing leaks.** Until the commit the sandbox is in
//! no queue and still the pool's in the store, so no other caller can reach it. The claim
//! stays conditional (still the pool's and READY) exactly as [`Engine::claim_sandbox`]'s.
//! A commit that is refused or fails after the spawn stops the command and terminates the
//! sandbox (a process ran in it: it is never offered again); a pending claim dropped
//! before any spawn (the request was refused first) puts its pristine sandbox back at
//! the front of the queue, or terminates it when the pool is gone. A crash in between is
//! what a crash always is: recovery fails every sandbox of the previous process.
//!
//! **Caps.** A transparent claim only matches the caller's own pools, whose sandboxes are
//! already charged to the caller: the per-principal cap never refuses it (the condition
//! is still in the commit, for any other case).

use super::{PoolHandle, Warm};
use crate::engine::Engine;
use crate::identity::attest::AgentBinding;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::sync::lock;
use crate::store::{ClaimCommit, ClaimOutcome, EventRow, ExecutionRow, SandboxCaps, SandboxRow};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What [`Engine::create_or_take`] produced. (Made once per request and moved a couple of
/// times: the variants' size difference costs nothing worth a box.)
#[allow(clippy::large_enum_variant)]
pub enum Taken {
    /// A sandbox already the caller's (fresh, or claimed and committed).
    Made(SandboxRow),
    /// A pool's sandbox whose claim is still to be committed.
    Pending(PendingClaim),
}

/// A READY sandbox out of its pool's queue for one caller, not yet committed as theirs
/// (see the module doc). Consumed by [`PendingClaim::commit`] or
/// [`PendingClaim::commit_with_start`]; dropped unconsumed, it goes back.
pub struct PendingClaim {
    engine: Arc<Engine>,
    pool: Arc<PoolHandle>,
    /// `None` once consumed.
    warm: Option<Warm>,
    /// The sandbox's row as the claimer will own it.
    row: SandboxRow,
    who: Principal,
    binding: AgentBinding,
    caps: SandboxCaps,
    /// The claim's own time before the spawn (template key, pool lookup, the take and its
    /// liveness check). The spawn that follows is the command's, not the claim's: the
    /// claim latency is this plus the commit's own time ([`Self::commit_parts`]).
    taken: Duration,
    /// A process was spawned in it: it is never put back.
    ran: bool,
}

/// A pending claim the store did not take: the sandbox left its pool meanwhile (a
/// teardown), or — not for a transparent claim — the caller is at their cap (the same
/// error as [`Engine::claim_sandbox`]'s).
fn refused(
    pool_id: &str,
    who: &Principal,
    caps: SandboxCaps,
    outcome: ClaimOutcome,
) -> EngineError {
    match outcome {
        ClaimOutcome::CapReached => super::claim::cap_reached(who, caps),
        _ => EngineError::new(
            ErrorCode::NoReadySandboxes,
            format!("the sandbox taken from pool {pool_id} was torn down while it was claimed; try again"),
        ),
    }
    .with("pool_id", pool_id)
}

impl PendingClaim {
    pub(super) fn new(
        engine: Arc<Engine>,
        pool: Arc<PoolHandle>,
        warm: Warm,
        who: Principal,
        binding: AgentBinding,
        caps: SandboxCaps,
        since: Instant,
    ) -> PendingClaim {
        let mut row = warm.row.clone();
        row.owner = who.owner();
        PendingClaim {
            engine,
            pool,
            warm: Some(warm),
            row,
            who,
            binding,
            caps,
            taken: since.elapsed(),
            ran: false,
        }
    }

    /// A process was spawned in the sandbox (and stopped again): should the claim be
    /// refused, the sandbox is terminated, never put back.
    pub fn ran_a_process(&mut self) {
        self.ran = true;
    }

    /// The sandbox, as the claimer will own it.
    pub fn row(&self) -> &SandboxRow {
        &self.row
    }

    /// Commit the claim alone (no command is started with it). A cap refusal leaves the
    /// pristine sandbox to its pool, as [`Engine::claim_sandbox`] does.
    pub fn commit(mut self) -> Result<SandboxRow, EngineError> {
        let Some(warm) = self.warm.take() else {
            return Err(EngineError::internal("a pending claim was committed twice"));
        };
        match self.commit_parts(&warm.row, |store, c| store.commit_claim(c)) {
            Ok((row, _)) => Ok(row),
            Err((e, Some(ClaimOutcome::CapReached))) => {
                self.put_back(warm);
                Err(e)
            }
            // Gone: someone else's teardown has it. A failed commit: state unknown.
            Err((e, Some(_))) => Err(e),
            Err((e, None)) => {
                self.terminate();
                Err(e)
            }
        }
    }

    /// Commit the claim with the start of `e` (its row and `events`), right after its
    /// process was spawned: one transaction. Returns the last event's sequence. On any
    /// failure the sandbox, in which a process ran, is terminated; the caller stops the
    /// process and removes its log.
    pub fn commit_with_start(
        mut self,
        e: &ExecutionRow,
        events: &[&EventRow],
    ) -> Result<i64, EngineError> {
        let Some(warm) = self.warm.take() else {
            return Err(EngineError::internal("a pending claim was committed twice"));
        };
        match self.commit_parts(&warm.row, |store, c| {
            store.start_claimed_execution(c, e, events)
        }) {
            Ok((_, seq)) => Ok(seq),
            Err((e, _)) => {
                self.terminate();
                Err(e)
            }
        }
    }

    /// Sign, and write with `write`; the committed row and last event sequence, or the
    /// error with the store's refusal (`None`: the write itself failed).
    fn commit_parts(
        &self,
        base: &SandboxRow,
        write: impl FnOnce(&crate::store::Store, &ClaimCommit<'_>) -> crate::store::Result<ClaimOutcome>,
    ) -> Result<(SandboxRow, i64), (EngineError, Option<ClaimOutcome>)> {
        let t0 = Instant::now();
        let engine = &self.engine;
        let (row, claim, event) = engine.claim_parts(&self.pool, &self.who, &self.binding, base);
        let from = self.pool.internal_owner();
        let outcome = write(
            &engine.store,
            &ClaimCommit {
                sandbox_id: &row.id,
                from: &from,
                to: &self.who.owner(),
                per_owner: self.caps.per_owner,
                at: row.updated_at,
                claim: &claim,
                event: &event,
                image_digest: &row.image_digest,
            },
        )
        .map_err(|e| (EngineError::from(e), None))?;
        match outcome {
            ClaimOutcome::Committed { event_seq } => {
                engine.events.committed(event_seq);
                let spent = self.taken + t0.elapsed();
                Engine::record_claim(&self.pool, spent.as_micros() as u64);
                self.pool.wake.notify_one();
                Ok((row, event_seq))
            }
            refusal => Err((
                refused(&self.pool.id, &self.who, self.caps, refusal),
                Some(refusal),
            )),
        }
    }

    /// Back to the front of its pool's queue; terminated instead when a process ran in it
    /// or the pool is stopping (`destroy_pool` sets `stopped` before it drains the queue under
    /// the same lock, so the sandbox is either drained there or terminated here).
    fn put_back(&self, warm: Warm) {
        let mut st = lock(&self.pool.state);
        if !self.ran && !self.pool.stopped.load(Ordering::SeqCst) {
            st.ready.push_front(warm);
            return;
        }
        drop(st);
        self.terminate();
    }

    /// Terminate the sandbox (it left the pool for good: the warming task replaces it).
    fn terminate(&self) {
        if let Err(e) = self.engine.terminate_sandbox_in_background(&self.row.id) {
            tracing::warn!(sandbox_id = %self.row.id, error = %e, "could not terminate a sandbox whose claim failed");
        }
        self.pool.wake.notify_one();
    }
}

impl Drop for PendingClaim {
    /// Never committed nor spawned into: the pristine sandbox goes back.
    fn drop(&mut self) {
        if let Some(warm) = self.warm.take() {
            self.put_back(warm);
        }
    }
}
