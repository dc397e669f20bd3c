//! Host-wide allocation of the per-sandbox host id ranges.
//!
//! Every sandbox of a root server maps its ids 0..65535 to a private block of host ids. Two
//! sandboxes sharing a block could signal, ptrace-check or read each other's files as "the
//! same user", so no two *live* sandboxes on a host may ever share one — not even when
//! they belong to different servers (other state dirs, other versions).
//!
//! A block is leased by an exclusive `flock` on `/run/cleanroom/idslots/<slot>`: the kernel
//! releases the lock when the holder dies, so a crashed server never leaks slots and two
//! servers never agree on one. Because a sandbox may outlive its server's lock by a few
//! milliseconds (the shim and pid 1 die by `PDEATHSIG`, asynchronously), each lease also
//! records its shim's pid and start time; a slot whose recorded shim is still alive is
//! skipped even when its lock is free. Once that record is written the lock has done its
//! job and is released (the server keeps no descriptor per sandbox for it).

use super::procinfo;
use crate::linux::config::IdRange;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// First host id of the per-sandbox ranges, their size, and how many exist.
pub const ID_BASE: u32 = 1_000_000_000;
pub const ID_COUNT: u32 = 65_536;
pub const ID_SLOTS: u32 = 16_384;

/// One leased id block. Until its holder is recorded the lease is the `flock`; after
/// that the record alone keeps other processes off the block (the lock file is closed:
/// one descriptor fewer per idle sandbox), and this process's own set of held slots keeps
/// it off until the lease is dropped.
#[derive(Debug)]
pub struct IdLease {
    file: Option<File>,
    /// systemd-nspawn's locks on the block's ids ([`super::nspawn_ids`]), until they are
    /// handed to the shim ([`IdLease::take_nspawn_locks`]).
    nspawn: Option<super::nspawn_ids::Claim>,
    range: IdRange,
    /// Where this process records the slot as held (removed on drop).
    dir: PathBuf,
    slot: u32,
}

/// Slots this process holds, per slot directory. A lease skips them without a syscall:
/// scanning them with open+flock made every create linear in the number of live
/// sandboxes (~1,000 opens and failed locks per create at 1,000 idle sandboxes). Slots
/// held by other processes are found by their locks and records — and, once found, are
/// not probed again for [`FOREIGN_RECHECK`] ([`Slots::foreign`]).
#[derive(Default)]
struct Slots {
    mine: std::collections::HashSet<u32>,
    /// Slots found held by another process (a lock or a live recorded holder), and when.
    /// Probing them from slot 0 on every create (six syscalls each) made create→READY
    /// linear in another server's live sandboxes: with ~2,100 of them on the host it took
    /// 35 ms instead of 10. Skipping a slot only delays its reuse, never shares it; the
    /// scan still takes the lowest free slot it probes, so the slot files stay as many as
    /// the most blocks ever held at once.
    foreign: std::collections::HashMap<u32, std::time::Instant>,
}

/// How long a slot found held elsewhere is skipped before it is probed again.
const FOREIGN_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

fn held() -> std::sync::MutexGuard<'static, std::collections::HashMap<PathBuf, Slots>> {
    static HELD: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<PathBuf, Slots>>> =
        std::sync::OnceLock::new();
    HELD.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Slot files opened by [`try_slot`] in this process (tests count the scan's probes).
#[cfg(test)]
static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for IdLease {
    fn drop(&mut self) {
        if let Some(slots) = held().get_mut(&self.dir) {
            slots.mine.remove(&self.slot);
        }
        // `file` closes after this: the lock is released only once the slot is no longer
        // recorded as ours (a concurrent lease may try it and fail the lock: harmless).
    }
}

impl IdLease {
    /// The leased host id block.
    pub fn range(&self) -> IdRange {
        self.range
    }

    /// The descriptors of systemd-nspawn's locks on this block's ids, for the shim to
    /// hold for the sandbox's life (empty where there are none).
    pub fn take_nspawn_locks(&mut self) -> Vec<std::os::fd::OwnedFd> {
        self.nspawn
            .take()
            .map(super::nspawn_ids::Claim::into_fds)
            .unwrap_or_default()
    }

    /// Remember the shim that runs in this block: while that process lives, no other
    /// process takes the block, lock or no lock ([`try_slot`]). Once the record is
    /// written (and flushed to the file) the lock is released; if it cannot be written
    /// the lock stays held for the lease's life, as before (fail closed).
    pub fn record_holder(&mut self, pid: i32, start: u64) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let written = write_record(file, pid, start);
        if written.is_ok() {
            self.file = None;
        }
    }
}

/// Bytes of a holder record: `"<pid> <start>"` padded with spaces, then a newline. Wide
/// enough for any pid and start time (at most 10 + 1 + 20 digits).
const RECORD_LEN: usize = 40;

/// Overwrite the slot file with the holder record, in place: the record has a fixed width
/// so the file is never truncated. A truncate frees the file's block, and on a filesystem
/// mounted with `discard` (as `/run` on a host without a tmpfs there) ext4 discards it
/// synchronously: 0.3–1.9 ms seen here in `submit_bio_wait` under `ftruncate`, on a runtime
/// worker, in every create. Only a longer file (never written by this code) is cut.
fn write_record(file: &mut File, pid: i32, start: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut record = format!("{pid} {start}");
    if record.len() >= RECORD_LEN {
        return Err(std::io::Error::other("holder record too long"));
    }
    record.extend(std::iter::repeat_n(' ', RECORD_LEN - 1 - record.len()));
    record.push('\n');
    file.write_all_at(record.as_bytes(), 0)?;
    if file.metadata()?.len() > RECORD_LEN as u64 {
        file.set_len(RECORD_LEN as u64)?;
    }
    Ok(())
}

/// The directory of slot lock files, private to root.
pub fn slots_dir(runtime_base: &Path) -> PathBuf {
    runtime_base.join("idslots")
}

/// Lease the lowest free block (blocks recently found held elsewhere are not probed),
/// also holding systemd-nspawn's locks on its ids when `nspawn` names nspawn's lock
/// directory ([`super::nspawn_ids`]; a block whose ids an nspawn container holds counts
/// as held elsewhere). `None` when every block is taken (or a lock directory cannot be
/// used: fail closed rather than hand out a possibly shared block).
pub fn lease(dir: &Path, nspawn: Option<&Path>) -> Option<IdLease> {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    // The lock dir must be a real directory owned by us: anything else could be a trap.
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir()
        || std::os::unix::fs::MetadataExt::uid(&meta) != nix::unistd::geteuid().as_raw()
    {
        tracing::error!(dir = %dir.display(), "id slot directory is not ours; refusing to allocate");
        return None;
    }
    // Held across the scan: concurrent leases of this process take turns (each is a few
    // syscalls once held slots are skipped).
    let mut all = held();
    let slots = all.entry(dir.to_path_buf()).or_default();
    let now = std::time::Instant::now();
    slots
        .foreign
        .retain(|_, seen| now.duration_since(*seen) < FOREIGN_RECHECK);
    let Slots { mine, foreign } = slots;
    for slot in 0..ID_SLOTS {
        if mine.contains(&slot) || foreign.contains_key(&slot) {
            continue;
        }
        // A neighbour of a block of ours shares an nspawn base with it, which our shim
        // holds: known without a syscall (probing it would fail every time, and mark it
        // foreign only for a while).
        if nspawn.is_some() && shares_a_base_with(mine, slot) {
            continue;
        }
        // nspawn's locks first: an `IdLease` must not be dropped here, where its own
        // `Drop` would wait for the lock this scan holds.
        let claim = match nspawn.map(|n| super::nspawn_ids::claim(n, block_base(slot), ID_COUNT)) {
            None => None,
            Some(Ok(claim)) => Some(claim),
            Some(Err(super::nspawn_ids::Refused::Taken)) => {
                foreign.insert(slot, now);
                continue;
            }
            Some(Err(super::nspawn_ids::Refused::Unusable)) => return None,
        };
        let Some(mut lease) = try_slot(dir, slot) else {
            foreign.insert(slot, now);
            continue; // `claim` is dropped: nspawn's locks go with it
        };
        lease.nspawn = claim;
        mine.insert(slot);
        return Some(lease);
    }
    None
}

/// Whether `slot`'s block overlaps an nspawn base that a block in `held` overlaps too.
fn shares_a_base_with(held: &std::collections::HashSet<u32>, slot: u32) -> bool {
    let bases = super::nspawn_ids::bases_overlapping(block_base(slot), ID_COUNT);
    [slot.checked_sub(1), slot.checked_add(1)]
        .into_iter()
        .flatten()
        .filter(|n| held.contains(n))
        .any(|n| {
            super::nspawn_ids::bases_overlapping(block_base(n), ID_COUNT)
                .iter()
                .any(|b| bases.contains(b))
        })
}

/// The first host id of `slot`'s block.
fn block_base(slot: u32) -> u32 {
    ID_BASE + slot * ID_COUNT
}

fn try_slot(dir: &Path, slot: u32) -> Option<IdLease> {
    #[cfg(test)]
    PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Non-blocking, so it never stalls the caller.
    let mut file = crate::linux::sys::open_locked(&dir.join(slot.to_string())).ok()??;
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let mut parts = text.split_whitespace();
    if let (Some(Ok(pid)), Some(Ok(start))) = (
        parts.next().map(str::parse::<i32>),
        parts.next().map(str::parse::<u64>),
    ) {
        if procinfo::is_same_process(pid, start) {
            // The previous holder's sandbox is still dying: not free yet.
            return None;
        }
    }
    Some(IdLease {
        file: Some(file),
        nspawn: None,
        range: IdRange {
            host_base: block_base(slot),
            count: ID_COUNT,
        },
        dir: dir.to_path_buf(),
        slot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_leases_never_share_a_block_and_drop_frees_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = lease(dir.path(), None).unwrap();
        let b = lease(dir.path(), None).unwrap();
        assert_ne!(a.range(), b.range());
        let first = a.range();
        drop(a);
        let c = lease(dir.path(), None).unwrap();
        assert_eq!(c.range(), first);
        drop(b);
    }

    /// Blocks that another process's live sandboxes hold are probed once, not by every
    /// lease (create→READY was linear in another server's live sandboxes).
    #[test]
    fn blocks_held_elsewhere_are_passed_once_not_on_every_lease() {
        use std::sync::atomic::Ordering::Relaxed;
        let dir = tempfile::tempdir().unwrap();
        // 300 blocks of a live holder that is not this process's lease (as another
        // server's shims would record them).
        let me = std::process::id() as i32;
        let start = procinfo::start_time(me).unwrap();
        for slot in 0..300u32 {
            let mut f = File::create(dir.path().join(slot.to_string())).unwrap();
            write_record(&mut f, me, start).unwrap();
        }
        let before = PROBES.load(Relaxed);
        let a = lease(dir.path(), None).unwrap();
        assert_eq!(a.range().host_base, ID_BASE + 300 * ID_COUNT);
        assert!(
            PROBES.load(Relaxed) - before >= 301,
            "the first lease scans past them"
        );
        let mut leases = Vec::new();
        let before = PROBES.load(Relaxed);
        for _ in 0..20 {
            leases.push(lease(dir.path(), None).unwrap());
        }
        let probes = PROBES.load(Relaxed) - before;
        // Other tests lease concurrently in other directories; their probes are few.
        assert!(probes < 150, "20 leases probed {probes} slot files");
        // The lowest free blocks, in order: no slot file is made past what is needed.
        let bases: Vec<u32> = leases.iter().map(|l| l.range().host_base).collect();
        let want: Vec<u32> = (301..321).map(|s| ID_BASE + s * ID_COUNT).collect();
        assert_eq!(bases, want);
        // A block freed below them is found again (it was never marked as held elsewhere).
        let freed = leases.remove(0).range();
        assert_eq!(lease(dir.path(), None).unwrap().range(), freed);
        drop(a);
    }

    #[test]
    fn a_live_recorded_holder_keeps_its_block_after_the_lock_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = lease(dir.path(), None).unwrap();
        let me = std::process::id() as i32;
        a.record_holder(me, procinfo::start_time(me).unwrap());
        let first = a.range();
        drop(a);
        let b = lease(dir.path(), None).unwrap();
        assert_ne!(
            b.range(),
            first,
            "block of a live holder was handed out again"
        );
    }

    #[test]
    fn a_record_replaces_any_earlier_one_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0");
        // A previous holder's record, longer than any this code writes, and a short one.
        for old in [
            "4194304 18446744073709551615 and some trailing bytes of an older format\n",
            "1 2\n",
        ] {
            std::fs::write(&path, old).unwrap();
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap();
            write_record(&mut file, 77, 12345).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.len(), RECORD_LEN, "{text:?}");
            assert_eq!(text.split_whitespace().collect::<Vec<_>>(), ["77", "12345"]);
        }
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        write_record(&mut file, i32::MAX, u64::MAX).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>(),
            [i32::MAX.to_string(), u64::MAX.to_string()]
        );
    }

    #[test]
    fn a_recorded_lease_holds_no_descriptor_and_still_keeps_its_block() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = lease(dir.path(), None).unwrap();
        let me = std::process::id() as i32;
        a.record_holder(me, procinfo::start_time(me).unwrap());
        assert!(
            a.file.is_none(),
            "the lock file stays open after the record"
        );
        // Another process sees the lock free but the holder alive: not its block.
        let path = dir.path().join("0");
        let other = crate::linux::sys::open_locked(&path).unwrap();
        assert!(other.is_some(), "the lock was not released");
        drop(other);
        assert!(try_slot(dir.path(), 0).is_none());
    }

    /// A block whose ids systemd-nspawn holds (its lock on a 64 Ki-aligned base the block
    /// overlaps) is passed over, and so is the neighbour of a block leased here.
    #[test]
    fn blocks_whose_ids_nspawn_holds_are_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let nspawn = tempfile::tempdir().unwrap();
        // nspawn holds the base that blocks 0 and 1 both overlap.
        let shared = super::super::nspawn_ids::bases_overlapping(block_base(0), ID_COUNT)[1];
        let held =
            super::super::nspawn_ids::nspawn_style_lock(&nspawn.path().join(shared.to_string()))
                .unwrap();
        let a = lease(dir.path(), Some(nspawn.path())).unwrap();
        assert_eq!(a.range().host_base, block_base(2));
        let b = lease(dir.path(), Some(nspawn.path())).unwrap();
        assert_eq!(b.range().host_base, block_base(4));
        // Block 5, next to `b`, is passed over without trying its locks: only block 6's
        // two bases are tried.
        let attempts = || super::super::nspawn_ids::LOCK_ATTEMPTS.with(|n| n.get());
        let before = attempts();
        let c = lease(dir.path(), Some(nspawn.path())).unwrap();
        assert_eq!(c.range().host_base, block_base(6));
        assert_eq!(attempts() - before, 2, "lock files tried for one lease");
        drop(c);
        // While `a` lives nspawn cannot take its ids' bases; after, it can.
        let first = super::super::nspawn_ids::bases_overlapping(block_base(2), ID_COUNT)[0];
        let path = nspawn.path().join(first.to_string());
        assert!(super::super::nspawn_ids::nspawn_style_lock(&path).is_none());
        drop(a);
        assert!(super::super::nspawn_ids::nspawn_style_lock(&path).is_some());
        drop((b, held));
    }

    /// An error on nspawn's lock files (here a read-only filesystem; in life no
    /// descriptors left, a full disk) fails the lease at the first block: it used to count
    /// as "taken", so one lease probed all ~13,400 blocks in nspawn's range and marked them
    /// foreign.
    #[test]
    fn an_error_on_nspawns_lock_files_fails_the_lease_after_one_attempt() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root to mount a read-only directory");
            return;
        }
        use nix::mount::{mount, umount2, MntFlags, MsFlags};
        struct Unmount(std::path::PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = umount2(&self.0, MntFlags::MNT_DETACH);
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let nspawn = tempfile::tempdir().unwrap();
        mount(
            Some(nspawn.path()),
            nspawn.path(),
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
        .unwrap();
        let _unmount = Unmount(nspawn.path().to_path_buf());
        mount(
            None::<&str>,
            nspawn.path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None::<&str>,
        )
        .unwrap();
        let attempts = || super::super::nspawn_ids::LOCK_ATTEMPTS.with(|n| n.get());
        let before = attempts();
        assert!(lease(dir.path(), Some(nspawn.path())).is_none());
        assert_eq!(attempts() - before, 1, "lock files tried before giving up");
    }

    #[test]
    fn another_process_holding_a_lock_is_respected() {
        // flock conflicts between open file descriptions, as between two servers.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0");
        let other = File::create(&path).unwrap();
        assert!(crate::linux::sys::try_lock_exclusive(std::os::fd::AsFd::as_fd(&other)).unwrap());
        let a = lease(dir.path(), None).unwrap();
        assert_eq!(a.range().host_base, ID_BASE + ID_COUNT);
    }
}
