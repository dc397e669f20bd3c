//! A sandbox's own device nodes (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`,
//! `/dev/urandom`, `/dev/tty`) on its own `/dev` filesystem.
//!
//! Why: a bind of the host's `/dev/null` is the host's inode, shared by every sandbox and
//! every host process. Through it one sandbox could watch another's activity (an inotify
//! watch on `/dev/null` or `/dev/urandom` sees every open, read and write, whoever makes
//! them) and block another's `flock` of it. Nodes of its own are other inodes with the same
//! device numbers: the same devices, nothing shared but the driver.
//!
//! Where: a device node opens only on a filesystem mounted in the host's user namespace —
//! never on one a sandbox's user namespace mounted (the kernel refuses those) — and the
//! server's `/run` is often `nodev`. So the shim, while it is still host root in the host's
//! namespaces (and already in the sandbox's cgroups, which are charged for it), makes the
//! tmpfs that becomes the sandbox's `/dev` and `/dev/shm` (detached: no mountpoint, in no
//! mount namespace; [`scratch::DEV_BYTES`](super::scratch::DEV_BYTES), its root owned by the
//! sandbox's root as when pid 1 mounted it) and `mknod`s copies of the host's nodes in a
//! directory [`NODES`] of it (same device numbers and modes, owned by host root as the
//! host's are). Pid 1 makes `/dev` and `/dev/shm` on it and binds each node from there: no
//! extra filesystem per sandbox (docs/memory.md). The sandbox can make no node there (that
//! needs `CAP_MKNOD` in the host's namespace) and cannot reach [`NODES`] (only the single
//! nodes are bound in). When any of this fails, pid 1 mounts its own `/dev` and binds the
//! host's nodes, as before; an unprivileged server (no `CAP_MKNOD`) always does.

use crate::linux::sys;
use nix::sys::stat::{Mode, SFlag};
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// The directory of the `/dev` filesystem that holds the nodes (never bound in whole).
pub(super) const NODES: &str = "nodes";

/// The detached tmpfs of `size` bytes, root owned by host id `owner` (the sandbox's root),
/// holding in [`NODES`] a copy of each host node of `names` (under `/dev`) that is a
/// character device. Runs in the shim as host root, before its user namespace exists.
pub(super) fn make(names: &[&str], size: u64, owner: u32) -> std::io::Result<OwnedFd> {
    let fs = sys::fsopen(c"tmpfs")?;
    let text = |v: String| {
        CString::new(v).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let size = text(size.to_string())?;
    for (k, v) in [
        (c"source", c"tmpfs"),
        (c"size", size.as_c_str()),
        (c"mode", c"755"),
    ] {
        sys::fsconfig_string(fs.as_fd(), k, v)?;
    }
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_CMD_CREATE, None)?;
    let tree = sys::fsmount(fs.as_fd(), sys::MOUNT_ATTR_NOSUID as libc::c_uint)?;
    // The root is the sandbox root's, as when pid 1 mounted /dev itself (chown, not the
    // uid= option, which mountinfo would show).
    let root = nix::fcntl::openat(
        tree.as_fd(),
        ".",
        nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    std::os::unix::fs::fchown(&root, Some(owner), Some(owner))?;
    let dir_mode = Mode::from_bits_truncate(0o755);
    nix::sys::stat::mkdirat(tree.as_fd(), NODES, dir_mode)?;
    let nodes = nix::fcntl::openat(
        tree.as_fd(),
        NODES,
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_DIRECTORY | nix::fcntl::OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    for name in names {
        // A node the host lacks stays missing here too (pid 1 then tries the host's).
        let Ok(host) = nix::sys::stat::stat(&Path::new("/dev").join(name)) else {
            continue;
        };
        if SFlag::from_bits_truncate(host.st_mode) & SFlag::S_IFMT != SFlag::S_IFCHR {
            continue;
        }
        let mode = Mode::from_bits_truncate(host.st_mode & 0o777);
        nix::sys::stat::mknodat(nodes.as_fd(), *name, SFlag::S_IFCHR, mode, host.st_rdev)?;
        // mknod applied the umask; the node gets exactly the host node's mode.
        nix::sys::stat::fchmodat(
            nodes.as_fd(),
            *name,
            mode,
            nix::sys::stat::FchmodatFlags::NoFollowSymlink,
        )?;
    }
    Ok(tree)
}

/// Whether `p` is a character device (not followed if it is a link).
pub(super) fn is_char_device(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As root (what a root server's shim is): copies with the host's device numbers and
    /// modes, other inodes than the host's, and they work (reading /dev/zero, writing
    /// /dev/null); the filesystem's root belongs to the given owner, the nodes to root.
    #[test]
    fn copies_are_the_same_devices_on_other_inodes() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: mknod needs root");
            return;
        }
        let fs = make(&["null", "zero", "cleanroom-no-such-device"], 1 << 20, 4242).unwrap();
        let root = super::super::tree::fd_path(&fs);
        assert_eq!(nix::sys::stat::stat(&root).unwrap().st_uid, 4242);
        let at = root.join(NODES);
        assert!(!at.join("cleanroom-no-such-device").exists());
        for name in ["null", "zero"] {
            let (own, host) = (
                nix::sys::stat::stat(&at.join(name)).unwrap(),
                nix::sys::stat::stat(&Path::new("/dev").join(name)).unwrap(),
            );
            assert_eq!((own.st_rdev, own.st_mode), (host.st_rdev, host.st_mode));
            assert_ne!((own.st_dev, own.st_ino), (host.st_dev, host.st_ino));
            assert_eq!(own.st_uid, 0);
        }
        std::fs::write(at.join("null"), b"gone").unwrap();
        let mut buf = [1u8; 8];
        std::io::Read::read_exact(&mut std::fs::File::open(at.join("zero")).unwrap(), &mut buf)
            .unwrap();
        assert_eq!(buf, [0; 8]);
    }
}
