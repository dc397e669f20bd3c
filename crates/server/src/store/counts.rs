//! Sandboxes counted by status and runtime for `/metrics` ([`crate::rest::scrape`]):
//! one grouped query, so a scrape costs the same with a million stopped rows kept.

use super::Store;
use crate::model::status::SandboxStatus;

impl Store {
    /// `(status, backend, count)` for every pair present; rows whose status number is
    /// unknown are left out (a corrupt row is not a status).
    pub fn sandbox_counts(&self) -> super::Result<Vec<(SandboxStatus, String, u64)>> {
        let rows = self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT status, backend, COUNT(*) FROM sandboxes GROUP BY status, backend",
            )?;
            let rows = st.query_map([], |r| {
                Ok((
                    r.get::<_, i32>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(s, b, n)| Some((SandboxStatus::from_number(s)?, b, n.max(0) as u64)))
            .collect())
    }
}
