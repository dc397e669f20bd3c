//! Image ownership: which principals hold a cached image (pulled it or rooted a sandbox
//! on it). The cache itself is shared by digest.

use super::*;

impl Store {
    /// Record that `owner` pulled (or rooted a sandbox on) image `digest`.
    pub fn add_image_owner(&self, digest: &str, owner: &Owner) -> Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT OR IGNORE INTO image_owners (digest, owner) VALUES (?1, ?2)",
                params![digest, owner],
            )
            .map(drop)
        })
    }

    /// Principals that hold image `digest`.
    pub fn image_owners(&self, digest: &str) -> Result<Vec<Owner>> {
        self.with(|c| {
            let mut st = c.prepare("SELECT owner FROM image_owners WHERE digest = ?1")?;
            let rows = st.query_map([digest], |r| r.get(0))?;
            rows.collect()
        })
    }

    /// Drop `owner`'s claim on `digest` (`None`: every claim).
    pub fn remove_image_owner(&self, digest: &str, owner: Option<&Owner>) -> Result<()> {
        self.with(|c| {
            match owner {
                Some(o) => c.execute(
                    "DELETE FROM image_owners WHERE digest = ?1 AND owner = ?2",
                    params![digest, o],
                ),
                None => c.execute("DELETE FROM image_owners WHERE digest = ?1", [digest]),
            }
            .map(drop)
        })
    }
}
