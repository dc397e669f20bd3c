//! A sandbox's own device nodes (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`,
//! `/dev/urandom`, `/dev/tty`).
//!
//! Why: a bind of the host's `/dev/null` is the host's inode, shared by every sandbox and
//! every host process. Through it one sandbox could watch another's activity (an inotify
//! watch on `/dev/null` or `/dev/urandom` sees every open, read and write, whoever makes
//! them) and block another's `flock` of it. Nodes of its own are other inodes with the same
//! device numbers: the same devices, nothing shared but the driver.
//!
//! Where: a device node opens only on a filesystem mounted in the host's user namespace
//! without `nodev` — never one a sandbox's user namespace mounted (the kernel refuses
//! those) and often not the server's `/run` (mounted `nodev`). So the shim, while it is
//! still host root in the host's namespaces, makes a tiny detached tmpfs (no mountpoint, in
//! no mount namespace, 4 KiB, 16 inodes, `nosuid`, `noexec`) and `mknod`s copies of the
//! host's nodes in it (same device numbers and modes, owned by host root as the host's
//! are). Pid 1 binds each onto its `/dev` from there and drops the fd before anything of
//! the sandbox runs. When any of this fails pid 1 binds the host's node, as before; an
//! unprivileged server (no `CAP_MKNOD`) always does.

use super::sys;
use nix::sys::stat::{Mode, SFlag};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// The detached tmpfs holding a copy of each host node of `names` (under `/dev`) that is
/// a character device. Runs in the shim as host root, before its user namespace exists.
pub(super) fn make(names: &[&str]) -> std::io::Result<OwnedFd> {
    let fs = sys::fsopen(c"tmpfs")?;
    for (k, v) in [
        (c"source", c"cleanroom"),
        (c"size", c"4k"),
        (c"nr_inodes", c"16"),
        (c"mode", c"755"),
    ] {
        sys::fsconfig_string(fs.as_fd(), k, v)?;
    }
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_CMD_CREATE, None)?;
    let attrs = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NOEXEC;
    let tree = sys::fsmount(fs.as_fd(), attrs as libc::c_uint)?;
    for name in names {
        // A node the host lacks stays missing here too (pid 1 then tries the host's).
        let Ok(host) = nix::sys::stat::stat(&Path::new("/dev").join(name)) else {
            continue;
        };
        if SFlag::from_bits_truncate(host.st_mode) & SFlag::S_IFMT != SFlag::S_IFCHR {
            continue;
        }
        let mode = Mode::from_bits_truncate(host.st_mode & 0o777);
        nix::sys::stat::mknodat(tree.as_fd(), *name, SFlag::S_IFCHR, mode, host.st_rdev)?;
        // mknod applied the umask; the node gets exactly the host node's mode.
        nix::sys::stat::fchmodat(
            tree.as_fd(),
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
    /// /dev/null).
    #[test]
    fn copies_are_the_same_devices_on_other_inodes() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: mknod needs root");
            return;
        }
        let tree = make(&["null", "zero", "cleanroom-no-such-device"]).unwrap();
        let at = super::super::tree::fd_path(&tree);
        assert!(!at.join("cleanroom-no-such-device").exists());
        for name in ["null", "zero"] {
            let (own, host) = (
                nix::sys::stat::stat(&at.join(name)).unwrap(),
                nix::sys::stat::stat(&Path::new("/dev").join(name)).unwrap(),
            );
            assert_eq!((own.st_rdev, own.st_mode), (host.st_rdev, host.st_mode));
            assert_ne!((own.st_dev, own.st_ino), (host.st_dev, host.st_ino));
        }
        std::fs::write(at.join("null"), b"gone").unwrap();
        let mut buf = [1u8; 8];
        std::io::Read::read_exact(&mut std::fs::File::open(at.join("zero")).unwrap(), &mut buf)
            .unwrap();
        assert_eq!(buf, [0; 8]);
    }
}
