//! Verifications this server process remembers, so that restoring the same unchanged
//! checkpoint again (a fork of N, or a restore right after the checkpoint was stored) does
//! not read and hash every image byte again (docs/checkpoints.md, "Integrity").
//!
//! A seal binds an image file's path to its recorded sha256 and to the file's state when
//! this process hashed it — device, inode, size, modification and change times — taken
//! from the open file before and after hashing (a file that changed meanwhile is not
//! sealed). Writing to a file, truncating it, or putting another file in its place changes
//! its inode or its change time, which no caller can set back (only the system clock
//! moves it); such a file no longer matches its seal and is hashed in full again, so a
//! flipped bit or a swapped file is still refused before the runtime reads it. What a
//! seal does not see: a change made in the same filesystem timestamp tick as the file's
//! last write (kernels before 6.13 count change times in scheduler ticks, ≤ 10 ms; only
//! root can write the state directory), and a disk that silently returns other bytes than
//! were written. Seals live in memory only: after a restart every file is hashed again.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most seals kept (a principal holds at most 32 checkpoints of ~3 files); past it the
/// table starts over (the next restore of each hashes once more).
const MAX_SEALS: usize = 4096;

/// A file's identity and change state (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of an open file.
    pub fn of(file: &std::fs::File) -> std::io::Result<Stamp> {
        let m = file.metadata()?;
        Ok(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// What was verified: this sha256, for the file in this state.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seal {
    stamp: Stamp,
    sha256: String,
}

static SEALS: Mutex<Option<HashMap<PathBuf, Seal>>> = Mutex::new(None);

/// Remember that `path`, in state `stamp`, has content `sha256`.
pub fn remember(path: &Path, stamp: Stamp, sha256: &str) {
    let Ok(mut seals) = SEALS.lock() else {
        return;
    };
    let seals = seals.get_or_insert_with(HashMap::new);
    if seals.len() >= MAX_SEALS {
        seals.clear();
    }
    seals.insert(
        path.to_path_buf(),
        Seal {
            stamp,
            sha256: sha256.to_string(),
        },
    );
}

/// Was `path`, in exactly the state `stamp`, verified to have content `sha256`?
pub fn holds(path: &Path, stamp: &Stamp, sha256: &str) -> bool {
    let Ok(seals) = SEALS.lock() else {
        return false;
    };
    seals
        .as_ref()
        .and_then(|s| s.get(path))
        .is_some_and(|s| s.stamp == *stamp && s.sha256 == sha256)
}

/// Forget every seal under `dir` (a removed checkpoint).
pub fn forget_under(dir: &Path) {
    if let Ok(mut seals) = SEALS.lock() {
        if let Some(s) = seals.as_mut() {
            s.retain(|p, _| !p.starts_with(dir));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_holds_only_for_the_same_file_unchanged() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pages.img");
        std::fs::write(&p, b"abc").unwrap();
        let stamp = Stamp::of(&std::fs::File::open(&p).unwrap()).unwrap();
        remember(&p, stamp, "h");
        assert!(holds(&p, &stamp, "h"));
        assert!(!holds(&p, &stamp, "other"));
        // Rewritten with the same bytes: the change time moves, the seal no longer holds.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&p, b"abc").unwrap();
        let now = Stamp::of(&std::fs::File::open(&p).unwrap()).unwrap();
        assert_ne!(now, stamp);
        assert!(!holds(&p, &now, "h"));
        // Another file put in its place: another inode.
        let q = d.path().join("other");
        std::fs::write(&q, b"abc").unwrap();
        std::fs::rename(&q, &p).unwrap();
        let swapped = Stamp::of(&std::fs::File::open(&p).unwrap()).unwrap();
        assert_ne!(swapped.ino, stamp.ino);
        forget_under(d.path());
        assert!(!holds(&p, &stamp, "h"));
    }
}
