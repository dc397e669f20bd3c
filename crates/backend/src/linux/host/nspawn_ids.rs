//! Coordination with `systemd-nspawn`'s host id ranges.
//!
//! Why: our per-sandbox id blocks ([`super::idslots`]) lie largely inside the range that
//! `systemd-nspawn --private-users=pick` draws 64 Ki-aligned blocks from
//! (0x00080000–0x6FFF0000 as block bases), and nspawn knows nothing of our slot files. A
//! container and a sandbox given overlapping host ids could signal each other's
//! processes and own each other's files as "the same user". nspawn leases a block by an
//! exclusive lock on `/run/systemd/nspawn-uid/<base>`, held for the container's life, and
//! skips a base whose file is locked. That lock is systemd's `make_lock_file`: an *open
//! file description* lock (`F_OFD_SETLK`, `F_WRLCK`), which on Linux never conflicts
//! with a `flock`, so ours is the same kind ([`crate::linux::sys::open_ofd_locked`]). Each of
//! our leases also takes that lock on every nspawn base its block overlaps (our blocks are
//! not 64 Ki-aligned: two bases, one shared with each neighbouring block), skips a block
//! whose base is locked by anyone else, and keeps the locks until every process of the
//! sandbox is gone.
//!
//! The locks are handed to the sandbox's shim with its configuration and held there,
//! not in the server: the shim lives exactly as long as the sandbox's processes (it exits
//! once its pid namespace is empty), and the server's descriptors per sandbox stay three
//! (docs/scale.md: its hard `RLIMIT_NOFILE` bounds how many sandboxes it can hold).
//! Neighbouring blocks overlap the same base; held by one shim, that base keeps the next
//! block out, so in nspawn's range every other block is used (~9,700 blocks in all).
//!
//! A lock taken on a file that nspawn unlinked meanwhile (it removes its lock files on
//! release) is a lock on nothing: after locking, the path must still name the locked
//! inode, else it is tried again, as nspawn itself does.
//!
//! Only where `/run/systemd` exists (a host that can run nspawn). The lock directory must
//! be a real directory owned by root that no one else can write to (else anyone could
//! plant or remove lock files); anything else fails the lease closed. A base whose path is
//! not a regular file is treated as taken; an error opening or locking one (no
//! descriptors left, a read-only or full filesystem) fails the lease, rather than marking
//! every block taken one by one.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Where nspawn keeps its id-range lock files.
pub const NSPAWN_LOCK_DIR: &str = "/run/systemd/nspawn-uid";
/// nspawn's `UID_SHIFT_PICK_MIN` / `_MAX`: the block bases it may pick.
const PICK_MIN: u32 = 0x0008_0000;
const PICK_MAX: u32 = 0x6FFF_0000;
/// nspawn's block size and alignment.
const BLOCK: u32 = 0x1_0000;

/// The nspawn block bases that host ids `base..base + count` overlap.
pub fn bases_overlapping(base: u32, count: u32) -> Vec<u32> {
    if count == 0 {
        return Vec::new();
    }
    let first = base & !(BLOCK - 1);
    let last = base.saturating_add(count - 1) & !(BLOCK - 1);
    (first..=last)
        .step_by(BLOCK as usize)
        .filter(|b| (PICK_MIN..=PICK_MAX).contains(b))
        .collect()
}

/// nspawn's locks on the bases one block overlaps, held while this (or the descriptors
/// taken from it) lives.
#[derive(Debug, Default)]
pub struct Claim {
    files: Vec<File>,
}

impl Claim {
    /// The lock descriptors, for the shim to hold (each is one open file description:
    /// the lock lasts while any copy of it is open).
    pub fn into_fds(self) -> Vec<std::os::fd::OwnedFd> {
        self.files.into_iter().map(Into::into).collect()
    }
}

/// Why a block cannot be claimed.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Another process (nspawn, another server) holds a base's lock: try another block.
    Taken,
    /// The lock directory is unusable (not a directory only its root owner can write
    /// to, cannot be made), or a lock file cannot be opened or locked at all (no
    /// descriptors left, a read-only or full filesystem): no block can be checked, so
    /// none may be handed out.
    Unusable,
}

/// The lock directory to use on this host: `None` where nspawn cannot run.
pub fn host_lock_dir() -> Option<&'static Path> {
    Path::new("/run/systemd")
        .is_dir()
        .then(|| Path::new(NSPAWN_LOCK_DIR))
}

/// Take the locks of every nspawn base that `base..base + count` overlaps, in `dir`.
pub fn claim(dir: &Path, base: u32, count: u32) -> Result<Claim, Refused> {
    let bases = bases_overlapping(base, count);
    let mut claim = Claim::default();
    if bases.is_empty() {
        return Ok(claim);
    }
    usable_dir(dir)?;
    for b in bases {
        // Dropping `claim` on a refusal releases what it took.
        claim.files.push(lock(&dir.join(b.to_string()))?);
    }
    Ok(claim)
}

/// nspawn makes the directory 0755; it must be a real directory owned by root, writable
/// by no one else.
fn usable_dir(dir: &Path) -> Result<(), Refused> {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new().mode(0o755).create(dir);
    let meta = std::fs::symlink_metadata(dir).map_err(|_| Refused::Unusable)?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o022 != 0 {
        tracing::error!(dir = %dir.display(), "nspawn's id lock directory is not a directory only we can write to; refusing to allocate ids");
        return Err(Refused::Unusable);
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Lock files this thread tried to lock (tests count a lease's probes).
    pub static LOCK_ATTEMPTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// An exclusive lock on `path` that still names the locked file. `Taken` when another
/// open file description holds it or the path is not a regular file; `Unusable` when it
/// cannot be opened or locked at all.
fn lock(path: &Path) -> Result<File, Refused> {
    use crate::linux::sys::OfdLock;
    #[cfg(test)]
    LOCK_ATTEMPTS.with(|n| n.set(n.get() + 1));
    for _ in 0..4 {
        let file = match crate::linux::sys::open_ofd_locked(path) {
            Ok(OfdLock::Locked(file)) => file,
            Ok(OfdLock::Held | OfdLock::NotAFile) => return Err(Refused::Taken),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot take nspawn's id lock; refusing to allocate ids");
                return Err(Refused::Unusable);
            }
        };
        let (Ok(locked), Ok(named)) = (file.metadata(), std::fs::symlink_metadata(path)) else {
            continue; // unlinked between open and lock: try the new file
        };
        if locked.dev() == named.dev() && locked.ino() == named.ino() && locked.nlink() > 0 {
            return Ok(file);
        }
    }
    Err(Refused::Taken)
}

/// What systemd's `make_lock_file` (`src/basic/lock-util.c`) does for nspawn: open with
/// `O_CREAT|O_RDWR|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY` and mode 0600, then `fcntl(F_OFD_SETLK)`
/// with `F_WRLCK` over the whole file. Spelled out here rather than through `sys`, so that
/// tests check our locks against nspawn's kind of lock, not against our own.
#[cfg(test)]
pub(crate) fn nspawn_style_lock(path: &Path) -> Option<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .expect("open lock file");
    let lock = libc::flock {
        l_type: libc::F_WRLCK as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    // SAFETY: fcntl(2) on an open descriptor with a pointer to a live `flock`.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
    (r == 0).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_the_aligned_blocks_a_range_overlaps_within_nspawns_range() {
        assert_eq!(bases_overlapping(0x0008_0000, BLOCK), vec![0x0008_0000]);
        assert_eq!(
            bases_overlapping(1_000_000_000, BLOCK),
            vec![999_948_288, 1_000_013_824]
        );
        assert_eq!(bases_overlapping(0, BLOCK), Vec::<u32>::new());
        assert_eq!(bases_overlapping(0x7000_0000, BLOCK), Vec::<u32>::new());
        assert_eq!(bases_overlapping(0x6FFF_8000, BLOCK), vec![0x6FFF_0000]);
    }

    #[test]
    fn nspawn_cannot_lock_a_claimed_base_and_a_base_it_holds_refuses_the_claim() {
        let dir = tempfile::tempdir().unwrap();
        let a = claim(dir.path(), 1_000_000_000, BLOCK).unwrap();
        let shared = dir.path().join("1000013824");
        // The neighbouring block overlaps a base `a` holds: refused, and it takes nothing.
        assert_eq!(
            claim(dir.path(), 1_000_000_000 + BLOCK, BLOCK).unwrap_err(),
            Refused::Taken
        );
        let third = dir.path().join("1000079360");
        assert!(nspawn_style_lock(&third).is_some());
        // nspawn (its own open file description, its own kind of lock) cannot take `a`'s
        // bases.
        assert!(nspawn_style_lock(&shared).is_none());
        assert!(nspawn_style_lock(&dir.path().join("999948288")).is_none());
        // Handed over as descriptors (to the shim), the locks last while they are open.
        let fds = a.into_fds();
        assert_eq!(fds.len(), 2);
        assert!(nspawn_style_lock(&shared).is_none());
        drop(fds);
        let held = nspawn_style_lock(&shared).expect("free once the descriptors close");
        // And a base nspawn holds keeps our claim out.
        assert_eq!(
            claim(dir.path(), 1_000_000_000, BLOCK).unwrap_err(),
            Refused::Taken
        );
        drop(held);
        assert!(claim(dir.path(), 1_000_000_000, BLOCK).is_ok());
    }

    #[test]
    fn a_lock_directory_that_is_not_ours_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let link = dir.path().join("nspawn-uid");
        std::os::unix::fs::symlink(target.path(), &link).unwrap();
        assert_eq!(
            claim(&link, 1_000_000_000, BLOCK).unwrap_err(),
            Refused::Unusable
        );
    }

    /// Anyone who can write to the directory could plant lock files (and hold every base)
    /// or unlink ours (and let nspawn lock a fresh file on a base a sandbox uses).
    #[test]
    fn a_lock_directory_others_can_write_to_fails_closed() {
        use std::os::unix::fs::PermissionsExt;
        for mode in [0o777, 0o775, 0o757, 0o1777] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(
                claim(dir.path(), 1_000_000_000, BLOCK).unwrap_err(),
                Refused::Unusable,
                "mode {mode:o}"
            );
        }
    }

    /// A FIFO, a directory or a link at a base's path is no lock file: that block is
    /// passed over, without the server opening a FIFO or a device for writing.
    #[test]
    fn a_base_whose_path_is_not_a_regular_file_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let bases = bases_overlapping(1_000_000_000, BLOCK);
        let first = dir.path().join(bases[0].to_string());
        nix::unistd::mkfifo(&first, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert_eq!(
            claim(dir.path(), 1_000_000_000, BLOCK).unwrap_err(),
            Refused::Taken
        );
        std::fs::remove_file(&first).unwrap();
        std::fs::create_dir(&first).unwrap();
        assert_eq!(
            claim(dir.path(), 1_000_000_000, BLOCK).unwrap_err(),
            Refused::Taken
        );
        std::fs::remove_dir(&first).unwrap();
        std::os::unix::fs::symlink("/dev/null", &first).unwrap();
        assert_eq!(
            claim(dir.path(), 1_000_000_000, BLOCK).unwrap_err(),
            Refused::Taken
        );
        std::fs::remove_file(&first).unwrap();
        assert!(claim(dir.path(), 1_000_000_000, BLOCK).is_ok());
    }
}
