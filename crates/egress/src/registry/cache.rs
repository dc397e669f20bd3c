//! The content-addressed artifact cache shared by every sandbox of a server.
//!
//! Artifacts are stored under their lockfile digest (`<dir>/<algo>-<hex>`), so a cache
//! entry can only ever be served for a request whose lockfile pins exactly those bytes,
//! whichever sandbox fetched it first. Every read is verified against the digest again (a
//! corrupted or replaced file is dropped and fetched anew, never served). Writes go to a
//! unique temporary file renamed into place, so concurrent writers of the same artifact
//! (two sandboxes installing at once, or two servers sharing a state dir) each produce a
//! complete file and the last rename wins with identical bytes. The total size is capped;
//! the least recently used entries (file mtime, touched on every hit) are evicted first.

use cleanroom_policy::lockfile::{Digest, HashAlgo};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Default cap of the cache's total size.
pub const DEFAULT_CAP_BYTES: u64 = 2 << 30;

/// Does `data` hash to `d`?
pub fn verify(d: &Digest, data: &[u8]) -> bool {
    let algo = match d.algo {
        HashAlgo::Sha512 => &ring::digest::SHA512,
        HashAlgo::Sha256 => &ring::digest::SHA256,
        HashAlgo::Sha1 => &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
    };
    ring::digest::digest(algo, data).as_ref() == d.bytes.as_slice()
}

/// Server-wide artifact cache (cheap to clone).
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    cap: u64,
    /// Serializes evictions (entries themselves need no lock: see the module doc).
    evicting: Mutex<()>,
}

impl ArtifactCache {
    /// Open (creating) the cache in `dir`, capped at `cap` bytes. Leftover temporary files of
    /// an interrupted write are removed.
    pub fn open(dir: &Path, cap: u64) -> std::io::Result<ArtifactCache> {
        std::fs::create_dir_all(dir)?;
        for e in std::fs::read_dir(dir)?.flatten() {
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(ArtifactCache {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                cap,
                evicting: Mutex::new(()),
            }),
        })
    }

    fn path(&self, d: &Digest) -> PathBuf {
        self.inner.dir.join(d.key())
    }

    /// The artifact with digest `d`, verified; `None` when absent or corrupt (then removed).
    pub async fn get(&self, d: &Digest) -> Option<Vec<u8>> {
        let (this, d) = (self.clone(), d.clone());
        tokio::task::spawn_blocking(move || this.get_blocking(&d))
            .await
            .ok()
            .flatten()
    }

    fn get_blocking(&self, d: &Digest) -> Option<Vec<u8>> {
        let path = self.path(d);
        let data = std::fs::read(&path).ok()?;
        if !verify(d, &data) {
            tracing::warn!(path = %path.display(), "registry cache entry failed verification; dropped");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        // Recently used: evicted last.
        if let Ok(f) = std::fs::File::options().write(true).open(&path) {
            let _ = f.set_modified(SystemTime::now());
        }
        Some(data)
    }

    /// Store verified `data` under `d` (the caller verified it; checked again here, so a
    /// caller's mistake cannot poison the cache). Errors are logged, never fatal: the
    /// artifact is still served from memory.
    pub async fn put(&self, d: &Digest, data: bytes::Bytes) {
        let (this, d) = (self.clone(), d.clone());
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(e) = this.put_blocking(&d, &data) {
                tracing::warn!(error = %e, "cannot write the registry cache");
            }
        })
        .await;
    }

    fn put_blocking(&self, d: &Digest, data: &[u8]) -> std::io::Result<()> {
        if !verify(d, data) || data.len() as u64 > self.inner.cap {
            return Ok(());
        }
        let tmp = self.inner.dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create_new(&tmp)?;
            f.write_all(data)?;
            f.sync_data()?;
            std::fs::rename(&tmp, self.path(d))
        };
        let r = write();
        if r.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        r?;
        self.evict()
    }

    /// Remove least recently used entries until the total is within the cap.
    fn evict(&self) -> std::io::Result<()> {
        let _held = self
            .inner
            .evicting
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let mut entries = Vec::new();
        let mut total = 0u64;
        for e in std::fs::read_dir(&self.inner.dir)?.flatten() {
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                continue;
            }
            let Ok(m) = e.metadata() else { continue };
            if !m.is_file() {
                continue;
            }
            total += m.len();
            entries.push((
                m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                m.len(),
                e.path(),
            ));
        }
        if total <= self.inner.cap {
            return Ok(());
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.inner.cap {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_policy::lockfile::HashAlgo;

    fn digest_of(data: &[u8]) -> Digest {
        Digest {
            algo: HashAlgo::Sha512,
            bytes: ring::digest::digest(&ring::digest::SHA512, data)
                .as_ref()
                .to_vec(),
        }
    }

    #[tokio::test]
    async fn stores_verifies_and_evicts_lru() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::open(dir.path(), 250).unwrap();
        let (a, b, c) = (vec![1u8; 100], vec![2u8; 100], vec![3u8; 100]);
        let (da, db, dc) = (digest_of(&a), digest_of(&b), digest_of(&c));
        // Wrong bytes under a digest are never stored.
        cache.put(&da, b.clone().into()).await;
        assert!(cache.get(&da).await.is_none());
        cache.put(&da, a.clone().into()).await;
        std::thread::sleep(std::time::Duration::from_millis(20));
        cache.put(&db, b.clone().into()).await;
        std::thread::sleep(std::time::Duration::from_millis(20));
        // a is used again: b is now the least recently used.
        assert_eq!(cache.get(&da).await.as_deref(), Some(&a[..]));
        std::thread::sleep(std::time::Duration::from_millis(20));
        cache.put(&dc, c.clone().into()).await;
        assert!(cache.get(&db).await.is_none(), "LRU entry evicted");
        assert!(cache.get(&da).await.is_some() && cache.get(&dc).await.is_some());
        // A corrupted entry is dropped on read, never served.
        std::fs::write(dir.path().join(dc.key()), b"tampered").unwrap();
        assert!(cache.get(&dc).await.is_none());
        assert!(!dir.path().join(dc.key()).exists());
    }

    #[tokio::test]
    async fn concurrent_writers_leave_one_whole_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::open(dir.path(), 1 << 30).unwrap();
        let data = vec![7u8; 1 << 20];
        let d = digest_of(&data);
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (cache, d, data) = (cache.clone(), d.clone(), bytes::Bytes::from(data.clone()));
            tasks.push(tokio::spawn(async move { cache.put(&d, data).await }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(cache.get(&d).await.as_deref(), Some(&data[..]));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
