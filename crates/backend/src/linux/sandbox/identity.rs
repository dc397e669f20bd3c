//! Host identifiers a sandbox has no need for, replaced by per-sandbox values.
//!
//! A host's `/etc/machine-id` and the kernel's `boot_id` are stable identifiers of the
//! machine and of its current boot: code in a sandbox could use them to recognise the host
//! across sandboxes or to correlate tenants. Each sandbox gets fresh random values instead
//! (the format programs expect: 32 hex digits; a UUID), bound read-only over the originals.
//!
//! Runs in pid 1 *after* `pivot_root`, so every path here resolves inside the sandbox's
//! own tree; nothing of the host is reachable. The replacement files are made on the
//! sandbox's private `/dev` tmpfs and unlinked once bound (the mount keeps the inode).
//! The binds go through the mount seam ([`crate::linux::sys::mounts`]), so the steps are
//! checked without root below.

use crate::linux::sys::mounts::Mounts;
use nix::mount::MsFlags;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Scratch names on the sandbox's `/dev` tmpfs (unlinked right after use).
const SCRATCH: &str = "dev/.cleanroom-identity";

fn random_bytes<const N: usize>() -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("read /dev/urandom: {e}"))?;
    Ok(b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A random version-4 UUID, as `/proc/sys/kernel/random/boot_id` prints it.
fn uuid_v4() -> Result<String, String> {
    let mut b = random_bytes::<16>()?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex(&b);
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// Bind a read-only file holding `content` over `target` (which must exist); the scratch
/// file is made under `root`'s `/dev` and gone again whether the bind worked or not.
fn replace(m: &dyn Mounts, root: &Path, target: &Path, content: &str) -> Result<(), String> {
    let scratch = root.join(format!("{SCRATCH}-{}", hex(&random_bytes::<8>()?)));
    std::fs::write(&scratch, content).map_err(|e| format!("write {}: {e}", scratch.display()))?;
    let bound = m
        .mount(Some(&scratch), target, None, MsFlags::MS_BIND, None)
        .and_then(|()| {
            m.mount(
                None,
                target,
                None,
                MsFlags::MS_BIND
                    | MsFlags::MS_REMOUNT
                    | MsFlags::MS_RDONLY
                    | MsFlags::MS_NOSUID
                    | MsFlags::MS_NODEV
                    | MsFlags::MS_NOEXEC,
                None,
            )
        });
    let _ = std::fs::remove_file(&scratch);
    bound.map_err(|e| format!("mask {}: {e}", target.display()))
}

/// Replace the host's boot id and (for a host-view root) machine id, in the tree at `root`
/// (`/` once pivoted), through the seam `m`. Each step must succeed: a sandbox that would
/// show the host's identifiers is not started.
pub fn mask_host_identity(m: &dyn Mounts, root: &Path, host_view: bool) -> Result<(), String> {
    let at = |p: &str| -> PathBuf { root.join(p) };
    replace(
        m,
        root,
        &at("proc/sys/kernel/random/boot_id"),
        &format!("{}\n", uuid_v4()?),
    )?;
    // An image brings its own /etc (its machine-id, if any, is the image author's, not
    // the host's); the host view shows the host's /etc read-only.
    let machine_id = at("etc/machine-id");
    if host_view && machine_id.exists() {
        replace(
            m,
            root,
            &machine_id,
            &format!("{}\n", hex(&random_bytes::<16>()?)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::sys::mounts::{Call, Recorder};
    use std::os::fd::BorrowedFd;

    /// A sandbox's tree after `pivot_root`, on a temporary directory.
    fn tree(machine_id: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel/random")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/random/boot_id"), "host\n").unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        if machine_id {
            std::fs::write(dir.path().join("etc/machine-id"), "host\n").unwrap();
        }
        dir
    }

    /// Each masked target: a bind from a scratch file on the tree's /dev, then its
    /// read-only, nosuid, nodev, noexec remount.
    fn masked(calls: &[Call], root: &Path) -> Vec<PathBuf> {
        let ro = MsFlags::MS_BIND
            | MsFlags::MS_REMOUNT
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NODEV
            | MsFlags::MS_NOEXEC;
        assert_eq!(calls.len() % 2, 0, "{calls:?}");
        calls
            .chunks(2)
            .map(|pair| match pair {
                [Call::Mount {
                    source: Some(src),
                    target,
                    fstype: None,
                    flags,
                    ..
                }, Call::Mount {
                    source: None,
                    target: again,
                    fstype: None,
                    flags: remount,
                    ..
                }] => {
                    assert_eq!(*flags, MsFlags::MS_BIND, "{pair:?}");
                    assert_eq!(*remount, ro, "{pair:?}");
                    assert_eq!(target, again);
                    assert!(src.starts_with(root.join("dev")), "{src:?}");
                    target.clone()
                }
                other => panic!("not a masking bind: {other:?}"),
            })
            .collect()
    }

    fn scratch_left(root: &Path) -> Vec<String> {
        std::fs::read_dir(root.join("dev"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_host_view_gets_both_identifiers_bound_read_only_and_no_scratch_is_left() {
        let t = tree(true);
        let m = Recorder::default();
        mask_host_identity(&m, t.path(), true).unwrap();
        assert_eq!(
            masked(&m.calls(), t.path()),
            [
                t.path().join("proc/sys/kernel/random/boot_id"),
                t.path().join("etc/machine-id")
            ]
        );
        assert!(
            scratch_left(t.path()).is_empty(),
            "{:?}",
            scratch_left(t.path())
        );
    }

    #[test]
    fn an_image_root_keeps_its_own_machine_id_and_gets_a_fresh_boot_id() {
        let t = tree(true);
        let m = Recorder::default();
        mask_host_identity(&m, t.path(), false).unwrap();
        assert_eq!(
            masked(&m.calls(), t.path()),
            [t.path().join("proc/sys/kernel/random/boot_id")]
        );
        // A host view without a machine-id has nothing more to mask.
        let t = tree(false);
        let m = Recorder::default();
        mask_host_identity(&m, t.path(), true).unwrap();
        assert_eq!(masked(&m.calls(), t.path()).len(), 1);
    }

    /// The kernel refusing the bind.
    struct Refusing;
    impl Mounts for Refusing {
        fn mount(
            &self,
            _: Option<&Path>,
            _: &Path,
            _: Option<&str>,
            _: MsFlags,
            _: Option<&str>,
        ) -> nix::Result<()> {
            Err(nix::errno::Errno::EPERM)
        }
        fn umount2(&self, _: &Path, _: nix::mount::MntFlags) -> nix::Result<()> {
            unreachable!("identity masking never unmounts")
        }
        fn pivot_root(&self, _: &Path, _: &Path) -> nix::Result<()> {
            unreachable!("identity masking never pivots")
        }
        fn chdir(&self, _: &Path) -> nix::Result<()> {
            unreachable!("identity masking never changes directory")
        }
        fn fchdir(&self, _: BorrowedFd<'_>) -> nix::Result<()> {
            unreachable!("identity masking never changes directory")
        }
        fn move_mount(&self, _: BorrowedFd<'_>, _: &Path) -> std::io::Result<()> {
            unreachable!("identity masking never moves a mount")
        }
    }

    #[test]
    fn a_refused_bind_fails_the_start_and_leaves_no_scratch() {
        let t = tree(true);
        let err = mask_host_identity(&Refusing, t.path(), true).unwrap_err();
        assert!(err.contains("boot_id"), "{err}");
        assert!(scratch_left(t.path()).is_empty());
        // No /dev to write the replacement on: refused before any mount.
        let t = tree(true);
        std::fs::remove_dir(t.path().join("dev")).unwrap();
        let m = Recorder::default();
        assert!(mask_host_identity(&m, t.path(), true).is_err());
        assert!(m.calls().is_empty());
    }

    #[test]
    fn uuid_has_the_boot_id_shape() {
        let u = super::uuid_v4().unwrap();
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{u}");
    }
}
