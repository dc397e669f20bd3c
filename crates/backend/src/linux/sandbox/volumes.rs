//! Named volumes inside the new root: pid 1 attaches each idmapped mount the server made
//! of a volume (host side, [`crate::linux::host::idmap`]) at its guest path, before
//! `pivot_root`. The guest path is walked and created through [`Tree`] (every component a
//! real directory of this root, never a link an image planted), and the mount lands on
//! the exact inode that walk opened. Read-only mounts were made read-only by the server;
//! writable ones are added to what landlock leaves writable.

use super::tree::{fd_path, Tree};
use crate::linux::config::InitConfig;
use std::os::fd::{AsFd, OwnedFd};

/// Attach `trees` (one per `cfg.volumes` entry, same order). Returns the guest paths of
/// the writable ones (for landlock).
pub(super) fn attach(
    cfg: &InitConfig,
    root: &Tree,
    trees: Vec<OwnedFd>,
) -> Result<Vec<String>, String> {
    if trees.len() != cfg.volumes.len() {
        return Err(format!(
            "{} volume mounts for {} volumes",
            trees.len(),
            cfg.volumes.len()
        ));
    }
    let mut writable = Vec::new();
    for (v, tree) in cfg.volumes.iter().zip(trees) {
        let rel = v.guest_path.trim_start_matches('/');
        if rel.is_empty() {
            return Err("a volume cannot be mounted on the sandbox's root".into());
        }
        let at = root.dir(rel, 0o755)?;
        // `/proc/self/fd/N/.`: move_mount(2) does not follow a final symlink (the magic
        // link itself) without MOVE_MOUNT_T_SYMLINKS; through `.` the walk ends on the
        // directory the fd names.
        root.mounts()
            .move_mount(tree.as_fd(), &fd_path(at.fd()).join("."))
            .map_err(|e| format!("attach volume at {}: {e}", v.guest_path))?;
        if !v.read_only {
            writable.push(v.guest_path.clone());
        }
    }
    Ok(writable)
}
