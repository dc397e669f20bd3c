//! A root server's runtime root (`/run/cleanroom/<instance>`) on a tmpfs of its own when
//! the host's `/run` is not one.
//!
//! The runtime root holds only empty mountpoint directories, a few per sandbox, made at
//! every create and removed at every teardown. Where `/run` is a tmpfs (most hosts) that
//! costs nothing. Where it is a disk filesystem (containers, some VMs, this test host:
//! `/run` on the root ext4, without a journal) each `mkdir` allocates an inode on disk, and
//! ext4 without a journal skips every recently deleted inode when it looks for a free one
//! (`find_inode_bit` → `recently_deleted`, reading each candidate's inode): with sandboxes
//! created and torn down all the time that scan was the largest item in a profile of the
//! server's workers. Measured with a tmpfs on `/run/cleanroom` (docs/performance.md): the
//! server's CPU per claim and its refill 2.07 → 1.53 ms.
//!
//! The tmpfs is the server's own mount (made as host root, on a directory the server made,
//! never inside anything a sandbox or an image controls): `nosuid,nodev,noexec`, mode 0711
//! (sandboxes' mapped roots traverse it to reach their mountpoint), at most 1 MiB of data
//! and a bounded number of inodes. A clean stop detaches it once it is empty; after a crash
//! the next server's sweep detaches it with the rest of the dead instance
//! ([`super::sweep`]); a restart with the same state directory finds it and keeps it.

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Inodes the runtime tmpfs may hold: a few mountpoints per sandbox, for far more
/// sandboxes than a server runs.
const MAX_INODES: u64 = 262_144;

/// What [`ensure_tmpfs`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeFs {
    /// `dir` already was on a tmpfs (the host's `/run`, or this instance's from before).
    AlreadyTmpfs,
    /// A tmpfs was mounted on `dir` now.
    Mounted,
}

/// Put `dir` (an existing directory the server made) on a tmpfs unless it already is on
/// one. A directory that is not empty (an older server's mountpoints on disk) is left as
/// it is: a mount would hide them from reconciliation; they are removed with their
/// sandboxes and the next start mounts.
pub fn ensure_tmpfs(dir: &Path) -> io::Result<RuntimeFs> {
    if is_tmpfs(dir)? {
        return Ok(RuntimeFs::AlreadyTmpfs);
    }
    if std::fs::read_dir(dir)?.next().is_some() {
        return Err(io::Error::other(format!(
            "{} is not empty: left on disk until its old entries are gone",
            dir.display()
        )));
    }
    let opts = format!("mode=0711,size=1m,nr_inodes={MAX_INODES}");
    mount(
        Some("cleanroom-runtime"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some(opts.as_str()),
    )
    .map_err(io::Error::from)?;
    Ok(RuntimeFs::Mounted)
}

/// Whether `dir` is on a tmpfs.
pub fn is_tmpfs(dir: &Path) -> io::Result<bool> {
    let st = nix::sys::statfs::statfs(dir).map_err(io::Error::from)?;
    Ok(st.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC)
}

/// Whether `dir` is the root of a mount (its device differs from its parent's).
pub fn is_mount_root(dir: &Path) -> bool {
    let Some(parent) = dir.parent() else {
        return false;
    };
    match (std::fs::symlink_metadata(dir), std::fs::metadata(parent)) {
        (Ok(d), Ok(p)) => d.is_dir() && d.dev() != p.dev(),
        _ => false,
    }
}

/// Detach the tmpfs mounted on `dir` (a runtime tmpfs), if there is one; nothing else
/// mounted there is touched. Symlinks are not followed. `Ok(false)` when there was none.
pub fn detach(dir: &Path) -> io::Result<bool> {
    if !is_mount_root(dir) || !is_tmpfs(dir).unwrap_or(false) {
        return Ok(false);
    }
    umount2(dir, MntFlags::MNT_DETACH | MntFlags::UMOUNT_NOFOLLOW).map_err(io::Error::from)?;
    Ok(true)
}

/// Remove a runtime root that is empty, detaching its tmpfs first. Whether it is gone; a
/// root with entries left (a sandbox that could not be terminated) keeps its tmpfs for
/// the next server's sweep.
pub fn release(dir: &Path) -> bool {
    if !std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        return false;
    }
    if let Err(e) = detach(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "could not detach the runtime tmpfs");
        return false;
    }
    std::fs::remove_dir(dir).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// Run `f` on a thread of its own mount namespace (`/` private): whatever it mounts
    /// goes away with the thread, even when an assertion fails half-way.
    fn in_private_mount_namespace(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            use nix::sched::{unshare, CloneFlags};
            unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_FS).expect("unshare");
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )
            .expect("make / private");
            f();
        })
        .join()
        .expect("test thread");
    }

    #[test]
    fn a_runtime_dir_is_put_on_a_tmpfs_once_and_detached() {
        if !root() {
            eprintln!("needs root to mount");
            return;
        }
        in_private_mount_namespace(tmpfs_once_and_detached);
    }

    fn tmpfs_once_and_detached() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("srv-0a");
        std::fs::create_dir(&dir).unwrap();
        let first = ensure_tmpfs(&dir).unwrap();
        let on_tmpfs_before = is_tmpfs(base.path()).unwrap();
        assert_eq!(
            first,
            if on_tmpfs_before {
                RuntimeFs::AlreadyTmpfs
            } else {
                RuntimeFs::Mounted
            }
        );
        assert!(is_tmpfs(&dir).unwrap());
        // A second server of the same instance keeps what it finds.
        assert_eq!(ensure_tmpfs(&dir).unwrap(), RuntimeFs::AlreadyTmpfs);
        std::fs::create_dir_all(dir.join("sbx_1/root")).unwrap();
        let detached = detach(&dir).unwrap();
        assert_eq!(detached, first == RuntimeFs::Mounted);
        assert!(!is_mount_root(&dir));
        // What was on the tmpfs went with it; the directory itself is the server's to remove.
        if detached {
            assert!(!dir.join("sbx_1").exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_with_entries_is_not_mounted_over_and_release_keeps_it() {
        if !root() {
            eprintln!("needs root to mount");
            return;
        }
        in_private_mount_namespace(|| {
            let base = tempfile::tempdir().unwrap();
            let dir = base.path().join("srv-0b");
            std::fs::create_dir_all(dir.join("sbx_old/root")).unwrap();
            if !is_tmpfs(base.path()).unwrap() {
                assert!(ensure_tmpfs(&dir).is_err());
                assert!(!is_mount_root(&dir), "mounted over entries");
            }
            // Not empty: release leaves it (and any tmpfs) for later.
            assert!(!release(&dir));
            assert!(dir.join("sbx_old").exists());
            std::fs::remove_dir_all(dir.join("sbx_old")).unwrap();
            assert_eq!(
                ensure_tmpfs(&dir).unwrap(),
                if is_tmpfs(base.path()).unwrap() {
                    RuntimeFs::AlreadyTmpfs
                } else {
                    RuntimeFs::Mounted
                }
            );
            assert!(release(&dir), "an empty runtime root was not released");
            assert!(!dir.exists());
        });
    }

    #[test]
    fn a_plain_directory_is_not_detached() {
        let base = tempfile::tempdir().unwrap();
        assert!(!is_mount_root(base.path()));
        assert!(!detach(base.path()).unwrap());
    }
}
