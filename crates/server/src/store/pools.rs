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
    pub owner: String,
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

impl Store {
    pub fn insert_pool(&self, p: &PoolRow) -> Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO pools (id, owner, created_at, spec) VALUES (?1, ?2, ?3, ?4)",
                params![p.id, p.owner, p.created_at, p.spec],
            )
            .map(drop)
        })
    }

    pub fn delete_pool(&self, id: &str) -> Result<()> {
        self.with(|c| c.execute("DELETE FROM pools WHERE id = ?1", [id]).map(drop))
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

    /// Hand a READY sandbox from `from` (a pool's owner) to `to`, unless `to` would exceed
    /// `per_owner` live sandboxes (0: no cap). One locked statement: two claims cannot both
    /// take the sandbox, nor both slip under the cap. `Ok(false)`: not handed over.
    pub fn transfer_sandbox(&self, id: &str, from: &str, to: &str, per_owner: u32) -> Result<bool> {
        use crate::status::sandbox as ss;
        self.with(|c| {
            let n = c.execute(
                &format!(
                    "UPDATE sandboxes SET owner = ?3, updated_at = ?4
                     WHERE id = ?1 AND owner = ?2 AND status = {ready}
                       AND (?5 = 0 OR (SELECT COUNT(*) FROM sandboxes
                            WHERE owner = ?3 AND status NOT IN ({stopped}, {failed})) < ?5)",
                    ready = ss::READY,
                    stopped = ss::STOPPED,
                    failed = ss::FAILED
                ),
                params![id, from, to, now_micros(), per_owner],
            )?;
            Ok(n == 1)
        })
    }

    /// Live sandboxes owned by any of `owners`.
    pub fn count_live_owned(&self, owners: &[String]) -> Result<u32> {
        use crate::status::sandbox as ss;
        self.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT COUNT(*) FROM sandboxes WHERE owner = ?1 AND status NOT IN ({}, {})",
                ss::STOPPED,
                ss::FAILED
            ))?;
            let mut total = 0u32;
            for o in owners {
                total += st.query_row([o], |r| r.get::<_, u32>(0))?;
            }
            Ok(total)
        })
    }

    /// Live sandboxes claimed from `pool_id` (owned by their claimers now).
    pub fn count_claimed(&self, pool_id: &str, pool_owner: &str) -> Result<u32> {
        use crate::status::sandbox as ss;
        self.with(|c| {
            c.query_row(
                &format!(
                    "SELECT COUNT(*) FROM sandbox_claims k JOIN sandboxes s ON s.id = k.sandbox_id
                     WHERE k.pool_id = ?1 AND s.owner != ?2 AND s.status NOT IN ({}, {})",
                    ss::STOPPED,
                    ss::FAILED
                ),
                params![pool_id, pool_owner],
                |r| r.get(0),
            )
        })
    }

    pub fn put_claim(&self, k: &ClaimRow) -> Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO sandbox_claims (sandbox_id, pool_id, agent, chain, envelope)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(sandbox_id) DO UPDATE SET pool_id = ?2, agent = ?3, chain = ?4, envelope = ?5",
                params![k.sandbox_id, k.pool_id, k.agent, k.chain, k.envelope],
            )
            .map(drop)
        })
    }

    pub fn get_claim(&self, sandbox_id: &str) -> Result<Option<ClaimRow>> {
        self.with(|c| {
            c.query_row(
                "SELECT sandbox_id, pool_id, agent, chain, envelope FROM sandbox_claims WHERE sandbox_id = ?1",
                [sandbox_id],
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
