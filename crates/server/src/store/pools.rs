//! Warm pools and sandbox claims: pool definitions (rebuilt after a restart), and for each
//! sandbox its agent identity, the pool it was claimed from and its signed attestation.

use super::*;

/// Tables of this module (created on open).
pub(super) const POOL_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pools (
  id TEXT PRIMARY KEY,
  owner TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sandbox_claims (
  sandbox_id TEXT PRIMARY KEY,
  pool_id TEXT NOT NULL DEFAULT '',
  agent TEXT NOT NULL DEFAULT '',
  chain TEXT NOT NULL DEFAULT '[]',
  envelope TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS sandbox_claims_by_pool ON sandbox_claims(pool_id);
CREATE INDEX IF NOT EXISTS sandboxes_by_owner_status ON sandboxes(owner, status);
CREATE INDEX IF NOT EXISTS sandboxes_by_status ON sandboxes(status);
";

/// A stored pool definition (`spec` is the pool's JSON, see `engine::pools`).
#[derive(Debug, Clone)]
pub struct PoolRow {
    pub id: String,
    pub owner: crate::model::owner::Owner,
    pub created_at: i64,
    pub spec: String,
}

/// What a sandbox was bound to at create/claim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimRow {
    pub sandbox_id: String,
    pub pool_id: String,
    /// `ed25519:<base64>` or empty.
    pub agent: String,
    /// JSON array of `ed25519:<base64>`.
    pub chain: String,
    /// DSSE envelope JSON (empty before it is signed).
    pub envelope: String,
}

/// Everything one claim writes (see [`Store::commit_claim`]).
#[derive(Debug, Clone, Copy)]
pub struct ClaimCommit<'a> {
    pub sandbox_id: &'a str,
    /// The pool's internal owner (`pool:<id>`).
    pub from: &'a crate::model::owner::Owner,
    /// The claimer.
    pub to: &'a crate::model::owner::Owner,
    pub per_owner: u32,
    pub at: i64,
    pub claim: &'a ClaimRow,
    pub event: &'a EventRow,
    pub image_digest: &'a str,
}

/// What [`Store::commit_claim`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Handed over; the `pool.claim` event has this sequence number.
    Committed { event_seq: i64 },
    /// Still the pool's and READY, but the claimer is at their cap.
    CapReached,
    /// No longer the pool's READY sandbox (terminated, failed, or taken).
    Gone,
}

/// The live sandboxes charged to a principal's per-principal cap: their own and those of
/// every pool of theirs (READY or warming, owned by `pool:<id>`). `who` is an SQL
/// expression naming the principal; a pool's internal owner is charged to the pool's
/// owner (`COALESCE` below), so a warm create and a claim count exactly what a create of
/// the owner's counts. Evaluated inside the statement or transaction that inserts or
/// hands over the sandbox, under the store's lock: concurrent creates, warms and claims
/// across any number of pools cannot slip past the cap together.
pub(super) fn account_live_sql(who: &str) -> String {
    use crate::model::status::sandbox as ss;
    format!(
        "SELECT COUNT(*) FROM sandboxes WHERE status NOT IN ({stopped}, {failed})
           AND (owner = (SELECT COALESCE((SELECT owner FROM pools WHERE 'pool:' || id = {who}), {who}))
                OR owner IN (SELECT 'pool:' || id FROM pools
                             WHERE owner = (SELECT COALESCE((SELECT owner FROM pools WHERE 'pool:' || id = {who}), {who}))))",
        stopped = ss::STOPPED.number(),
        failed = ss::FAILED.number(),
    )
}

impl Store {
    /// Insert a pool unless its owner already has `max_per_owner` of them (counted and
    /// inserted under the store's one lock, so concurrent creates cannot both slip under
    /// the cap). `false`: at the cap, nothing written.
    pub fn insert_pool(&self, p: &PoolRow, max_per_owner: u32) -> Result<bool> {
        self.with(|c| {
            let have: i64 = c
                .prepare_cached("SELECT COUNT(*) FROM pools WHERE owner = ?1")?
                .query_row([&p.owner], |r| r.get(0))?;
            if have >= i64::from(max_per_owner) {
                return Ok(false);
            }
            c.prepare_cached(
                "INSERT INTO pools (id, owner, created_at, spec) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![p.id, p.owner, p.created_at, p.spec])
            .map(|_| true)
        })
    }

    pub fn delete_pool(&self, id: &str) -> Result<()> {
        self.with(|c| {
            c.prepare_cached("DELETE FROM pools WHERE id = ?1")?
                .execute([id])
                .map(drop)
        })
    }

    pub fn list_pools(&self) -> Result<Vec<PoolRow>> {
        self.with(|c| {
            let mut st =
                c.prepare("SELECT id, owner, created_at, spec FROM pools ORDER BY created_at, id")?;
            let rows = st.query_map([], |r| {
                Ok(PoolRow {
                    id: r.get(0)?,
                    owner: r.get(1)?,
                    created_at: r.get(2)?,
                    spec: r.get(3)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Hand a READY sandbox of a pool to its claimer, in ONE transaction (one WAL commit,
    /// no fsync: see the module doc of [`super`]): the conditional owner change, the claim
    /// record (agent, chain, signed attestation), the `pool.claim` event and the claimer's
    /// hold on the sandbox's image. The owner changes only if the row is still `from`'s and
    /// READY and `to`'s account stays within `per_owner` (0: no cap; see
    /// [`account_live_sql`]); otherwise nothing is written.
    pub fn commit_claim(&self, c: &ClaimCommit<'_>) -> Result<ClaimOutcome> {
        self.with(|conn| {
            let tx = super::write_transaction(conn)?;
            let outcome = claim_on(&tx, c)?;
            if matches!(outcome, ClaimOutcome::Committed { .. }) {
                tx.commit()?;
            }
            Ok(outcome)
        })
    }

    /// Live sandboxes charged to `who`'s per-principal cap (see [`account_live_sql`]).
    pub fn account_live(&self, who: &crate::model::owner::Owner) -> Result<u32> {
        self.with(|c| {
            c.prepare_cached(&account_live_sql("?1"))?
                .query_row([who], |r| r.get(0))
        })
    }

    /// Live sandboxes claimed from `pool_id` (owned by their claimers now).
    pub fn count_claimed(
        &self,
        pool_id: &str,
        pool_owner: &crate::model::owner::Owner,
    ) -> Result<u32> {
        use crate::model::status::sandbox as ss;
        self.with(|c| {
            c.prepare_cached(&format!(
                "SELECT COUNT(*) FROM sandbox_claims k JOIN sandboxes s ON s.id = k.sandbox_id
                     WHERE k.pool_id = ?1 AND s.owner != ?2 AND s.status NOT IN ({}, {})",
                ss::STOPPED.number(),
                ss::FAILED.number()
            ))?
            .query_row(params![pool_id, pool_owner], |r| r.get(0))
        })
    }

    pub fn put_claim(&self, k: &ClaimRow) -> Result<()> {
        self.with(|c| put_claim_on(c, k))
    }

    pub fn get_claim(&self, sandbox_id: &str) -> Result<Option<ClaimRow>> {
        self.with(|c| {
            c.prepare_cached("SELECT sandbox_id, pool_id, agent, chain, envelope FROM sandbox_claims WHERE sandbox_id = ?1")?
                .query_row([sandbox_id],
                |r| {
                    Ok(ClaimRow {
                        sandbox_id: r.get(0)?,
                        pool_id: r.get(1)?,
                        agent: r.get(2)?,
                        chain: r.get(3)?,
                        envelope: r.get(4)?,
                    })
                },
            )
            .optional()
        })
    }
}

/// [`Store::put_claim`] on a connection (or inside a caller's transaction).
pub(super) fn put_claim_on(c: &rusqlite::Connection, k: &ClaimRow) -> rusqlite::Result<()> {
    c.prepare_cached(
        "INSERT INTO sandbox_claims (sandbox_id, pool_id, agent, chain, envelope)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(sandbox_id) DO UPDATE SET pool_id = ?2, agent = ?3, chain = ?4, envelope = ?5",
    )?
    .execute(params![
        k.sandbox_id,
        k.pool_id,
        k.agent,
        k.chain,
        k.envelope
    ])
    .map(drop)
}

/// [`Store::commit_claim`]'s writes, in the caller's transaction (which it commits only
/// when the outcome is `Committed`; any other outcome wrote nothing).
pub(super) fn claim_on(
    tx: &rusqlite::Transaction<'_>,
    c: &ClaimCommit<'_>,
) -> rusqlite::Result<ClaimOutcome> {
    use crate::model::status::sandbox as ss;
    let moved = tx
        .prepare_cached(&format!(
            "UPDATE sandboxes SET owner = ?3, updated_at = ?4
             WHERE id = ?1 AND owner = ?2 AND status = {ready}
               AND (?5 = 0
                    OR ?3 = (SELECT owner FROM pools WHERE 'pool:' || id = ?2)
                    OR ({count}) < ?5)",
            ready = ss::READY.number(),
            count = account_live_sql("?3"),
        ))?
        .execute(params![c.sandbox_id, c.from, c.to, c.at, c.per_owner])?;
    if moved != 1 {
        let still: bool = tx
            .prepare_cached(&format!(
                "SELECT 1 FROM sandboxes WHERE id = ?1 AND owner = ?2 AND status = {}",
                ss::READY.number()
            ))?
            .exists(params![c.sandbox_id, c.from])?;
        return Ok(if still {
            ClaimOutcome::CapReached
        } else {
            ClaimOutcome::Gone
        });
    }
    put_claim_on(tx, c.claim)?;
    let event = EventRow {
        at: c.at,
        ..c.event.clone()
    };
    let seq = append_event_on(tx, &event)?;
    if !c.image_digest.is_empty() {
        tx.prepare_cached("INSERT OR IGNORE INTO image_owners (digest, owner) VALUES (?1, ?2)")?
            .execute(params![c.image_digest, c.to])?;
    }
    Ok(ClaimOutcome::Committed { event_seq: seq })
}
