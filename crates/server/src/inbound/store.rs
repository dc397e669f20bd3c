//! The exposures of every sandbox, kept in `exposures.json` in the state directory
//! (mode 0600, replaced atomically on each change) so a restarted server knows them. An
//! exposure lives no longer than its sandbox: rows whose sandbox is gone or stopped are
//! dropped whenever the set is read ([`super::Inbound::prune`]), and none outlives its
//! expiry. Bounded: at most [`MAX_PER_SANDBOX`] per sandbox.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Exposures one sandbox may have at once.
pub const MAX_PER_SANDBOX: usize = 32;

/// One exposed port.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Exposure {
    /// `exp_<32 hex>`: the URL's path segment.
    pub id: String,
    pub sandbox_id: String,
    pub port: u16,
    /// The principal who exposed it.
    pub created_by: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; the exposure and its token end then.
    pub expires_at: i64,
}

/// The stored set.
pub struct ExposureFile {
    path: PathBuf,
    pub items: Vec<Exposure>,
}

impl ExposureFile {
    /// Read `dir/exposures.json` (missing: empty). A file that does not decode is an error:
    /// the server does not start on a store it cannot read (fail closed).
    pub fn open(dir: &Path) -> std::io::Result<ExposureFile> {
        let path = dir.join("exposures.json");
        let items = match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(ExposureFile { path, items })
    }

    /// Write the set (a temporary file renamed over the old one).
    pub fn save(&self) -> std::io::Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&serde_json::to_vec(&self.items).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    pub fn get(&self, id: &str) -> Option<&Exposure> {
        self.items.iter().find(|e| e.id == id)
    }

    pub fn of_sandbox(&self, sandbox_id: &str) -> Vec<Exposure> {
        let mut v: Vec<Exposure> = self
            .items
            .iter()
            .filter(|e| e.sandbox_id == sandbox_id)
            .cloned()
            .collect();
        v.sort_by_key(|e| (e.port, e.created_at));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_survives_a_reopen() {
        let d = tempfile::tempdir().unwrap();
        let mut f = ExposureFile::open(d.path()).unwrap();
        assert!(f.items.is_empty());
        let e = Exposure {
            id: "exp_1".into(),
            sandbox_id: "sbx_1".into(),
            port: 8000,
            created_by: "uid:0".into(),
            created_at: 1,
            expires_at: 2,
        };
        f.items.push(e.clone());
        f.save().unwrap();
        let g = ExposureFile::open(d.path()).unwrap();
        assert_eq!(g.get("exp_1"), Some(&e));
        assert_eq!(g.of_sandbox("sbx_1"), vec![e]);
        // A corrupt file is refused, not treated as empty.
        std::fs::write(d.path().join("exposures.json"), b"{").unwrap();
        assert!(ExposureFile::open(d.path()).is_err());
    }
}
