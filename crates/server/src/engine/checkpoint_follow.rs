//! Hashing a checkpoint's image files while the runtime writes them, so that storing a
//! checkpoint costs the runtime's own time plus the tail of the last file — not a second
//! pass over every byte afterwards (docs/checkpoints.md, "Costs measured here").
//!
//! A thread follows the image directory: it opens each file as it appears (flat names,
//! `O_NOFOLLOW`, regular files only, at most [`super::checkpoint_image::MAX_FILES`]) and
//! hashes what has been written so far, reading on from where it stopped. `runsc
//! checkpoint` writes its files front to back with plain `write(2)`s (measured with strace
//! on runsc 20240729: `checkpoint.img`, then `pages_meta.img` and `pages.img`, every write
//! appended), and a reader never sees past the file's size, which the kernel raises only
//! after the bytes are in place. Once the runtime has exited, [`Follower::finish`] makes a
//! last pass to the end of every file and checks that each file's size is what was
//! hashed. Were a runtime ever to rewrite a region it had already written, the recorded
//! digest would not match the file and the first verification that reads it
//! ([`super::checkpoint_image::verify`] after a server restart, or of a changed file)
//! would refuse the checkpoint (`checkpoint_corrupt`): it fails closed, never open.

use super::checkpoint_image::{hex, open_regular, FileEntry, MAX_FILES};
use super::checkpoint_seal::Stamp;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long the follower waits when no file grew (the runtime writes MiBs per ms when it
/// writes at all).
const IDLE: Duration = Duration::from_millis(2);
/// Read size: small enough that the bytes read are still in the CPU's cache when hashed.
const CHUNK: usize = 256 << 10;

/// One image file as hashed: its manifest entry and the file's state when it was hashed.
#[derive(Debug, Clone)]
pub struct Hashed {
    pub entry: FileEntry,
    pub stamp: Stamp,
}

/// A file being followed.
struct Open {
    file: std::fs::File,
    hash: Sha256,
    size: u64,
}

/// The thread hashing an image directory (see the module doc).
pub struct Follower {
    done: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<std::io::Result<Vec<Hashed>>>,
}

impl Follower {
    /// Start following `image` (an empty directory the runtime is about to write into).
    pub fn start(image: &Path) -> std::io::Result<Follower> {
        let done = Arc::new(AtomicBool::new(false));
        let (d, dir) = (done.clone(), image.to_path_buf());
        let thread = std::thread::Builder::new()
            .name("checkpoint-hash".into())
            .spawn(move || follow(&dir, &d))?;
        Ok(Follower { done, thread })
    }

    /// The runtime has exited: hash what is left and describe every file (sorted by name).
    /// Blocking: call it off the async runtime.
    pub fn finish(self) -> std::io::Result<Vec<Hashed>> {
        self.done.store(true, Ordering::Release);
        self.thread.thread().unpark();
        self.thread
            .join()
            .map_err(|_| std::io::Error::other("the hashing thread panicked"))?
    }

    /// The runtime failed: stop and drop what was hashed.
    pub fn abandon(self) {
        self.done.store(true, Ordering::Release);
        self.thread.thread().unpark();
    }
}

fn follow(dir: &Path, done: &AtomicBool) -> std::io::Result<Vec<Hashed>> {
    let mut files: BTreeMap<String, Open> = BTreeMap::new();
    let mut buf = vec![0u8; CHUNK];
    loop {
        // Read before the pass: when it says done, this pass sees every byte written.
        let last = done.load(Ordering::Acquire);
        scan(dir, &mut files)?;
        let mut grew = false;
        for f in files.values_mut() {
            grew |= drain(f, &mut buf)?;
        }
        if last {
            break;
        }
        if !grew {
            std::thread::park_timeout(IDLE);
        }
    }
    files
        .into_iter()
        .map(|(name, f)| {
            let stamp = Stamp::of(&f.file)?;
            if stamp.size != f.size {
                return Err(std::io::Error::other(format!(
                    "{name} is {} bytes but {} were hashed",
                    stamp.size, f.size
                )));
            }
            Ok(Hashed {
                entry: FileEntry {
                    name,
                    size: f.size,
                    sha256: hex(&f.hash.finalize()),
                },
                stamp,
            })
        })
        .collect()
}

/// Open the files of `dir` not yet followed.
fn scan(dir: &Path, files: &mut BTreeMap<String, Open>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let name = entry?
            .file_name()
            .into_string()
            .map_err(|_| std::io::Error::other("an image file name is not UTF-8"))?;
        if files.contains_key(&name) {
            continue;
        }
        if files.len() >= MAX_FILES {
            return Err(std::io::Error::other("too many image files"));
        }
        let path: PathBuf = dir.join(&name);
        let file = open_regular(&path)?;
        files.insert(
            name,
            Open {
                file,
                hash: Sha256::new(),
                size: 0,
            },
        );
    }
    Ok(())
}

/// Hash `f` from where it stopped to its current end; whether anything was read.
fn drain(f: &mut Open, buf: &mut [u8]) -> std::io::Result<bool> {
    let before = f.size;
    loop {
        let n = match f.file.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            return Ok(f.size > before);
        }
        f.hash.update(&buf[..n]);
        f.size += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn files_written_while_followed_hash_as_a_second_pass_would() {
        let d = tempfile::tempdir().unwrap();
        let follower = Follower::start(d.path()).unwrap();
        let mut expected = BTreeMap::new();
        for (name, len) in [("checkpoint.img", 300_001usize), ("pages.img", 5 << 20)] {
            let mut f = std::fs::File::create_new(d.path().join(name)).unwrap();
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            // Written in uneven pieces with pauses, so the follower reads partial files.
            for piece in bytes.chunks(77_777) {
                f.write_all(piece).unwrap();
                std::thread::sleep(Duration::from_micros(300));
            }
            expected.insert(name.to_string(), (len as u64, hex(&Sha256::digest(&bytes))));
        }
        std::fs::File::create_new(d.path().join("empty.img")).unwrap();
        expected.insert("empty.img".into(), (0, hex(&Sha256::digest(b""))));
        let hashed = follower.finish().unwrap();
        let got: BTreeMap<String, (u64, String)> = hashed
            .iter()
            .map(|h| (h.entry.name.clone(), (h.entry.size, h.entry.sha256.clone())))
            .collect();
        assert_eq!(got, expected);
        assert!(hashed.iter().all(|h| h.stamp.size == h.entry.size));
    }

    #[test]
    fn a_link_or_a_directory_in_the_image_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let follower = Follower::start(d.path()).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("checkpoint.img")).unwrap();
        assert!(follower.finish().is_err());
        let d = tempfile::tempdir().unwrap();
        let follower = Follower::start(d.path()).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        assert!(follower.finish().is_err());
    }
}
