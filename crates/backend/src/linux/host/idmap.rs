//! What only the host's root can do for a sandbox's user namespace: write its id maps and
//! shift the shared image's ids through an idmapped mount.

use crate::linux::config;
use crate::linux::sys;
use crate::BackendError;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

/// A detached, read-only, nosuid/nodev clone of `src` whose ids are shifted through the
/// user namespace of `shim_pid` (host uid N on disk appears as that namespace's uid N).
/// Made here because only the host's root may idmap a host filesystem; pid 1 attaches it.
pub(super) fn idmapped_tree(src: &Path, shim_pid: i32) -> Result<OwnedFd, BackendError> {
    idmapped(src, shim_pid, true)
}

/// [`idmapped_tree`] of a named volume's mountpoint: writable unless `read_only` (the
/// sandbox's writes land on the volume with its own ids 0..65535, the same for every
/// sandbox that mounts it).
pub(super) fn idmapped_volume(
    v: &crate::VolumeBind,
    shim_pid: i32,
) -> Result<OwnedFd, BackendError> {
    idmapped(&v.source, shim_pid, v.read_only)
}

fn idmapped(src: &Path, shim_pid: i32, read_only: bool) -> Result<OwnedFd, BackendError> {
    use sys::{MOUNT_ATTR_IDMAP, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
    let tree = sys::open_tree_clone(src)
        .map_err(|e| BackendError::io(format!("open_tree {}", src.display()), e))?;
    let userns = std::fs::File::open(format!("/proc/{shim_pid}/ns/user"))
        .map_err(|e| BackendError::io("open sandbox user namespace", e))?;
    sys::mount_setattr(
        tree.as_fd(),
        MOUNT_ATTR_IDMAP
            | MOUNT_ATTR_NOSUID
            | MOUNT_ATTR_NODEV
            | if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        Some(userns.as_fd()),
    )
    .map_err(|e| BackendError::io(format!("idmap the mount of {}", src.display()), e))?;
    Ok(tree)
}

/// Map ids 0..count of the shim's new user namespace to the sandbox's host range.
pub(super) fn write_id_maps(shim_pid: i32, r: config::IdRange) -> Result<(), BackendError> {
    let map = format!("0 {} {}\n", r.host_base, r.count);
    for file in ["uid_map", "gid_map"] {
        std::fs::write(format!("/proc/{shim_pid}/{file}"), &map)
            .map_err(|e| BackendError::io(format!("write {file} of pid {shim_pid}"), e))?;
    }
    Ok(())
}
