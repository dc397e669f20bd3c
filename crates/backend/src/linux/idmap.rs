//! What only the host's root can do for a sandbox's user namespace: write its id maps and
//! shift the shared image's ids through an idmapped mount.

use super::config;
use crate::BackendError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// A detached, read-only, nosuid/nodev clone of `src` whose ids are shifted through the
/// user namespace of `shim_pid` (host uid N on disk appears as that namespace's uid N).
/// Made here because only the host's root may idmap a host filesystem; pid 1 attaches it.
pub(super) fn idmapped_tree(src: &Path, shim_pid: i32) -> Result<OwnedFd, BackendError> {
    use std::os::fd::FromRawFd;
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const MOUNT_ATTR_NOSUID: u64 = 0x2;
    const MOUNT_ATTR_NODEV: u64 = 0x4;
    const MOUNT_ATTR_IDMAP: u64 = 0x0010_0000;
    let path = std::ffi::CString::new(src.as_os_str().as_encoded_bytes())
        .map_err(|e| BackendError::LaunchFailed(format!("image path: {e}")))?;
    // SAFETY: open_tree(2) on a NUL-terminated path; the result is a new fd we own.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(BackendError::io(
            format!("open_tree {}", src.display()),
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd was just returned by open_tree and is owned by nobody else.
    let tree = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let userns = std::fs::File::open(format!("/proc/{shim_pid}/ns/user"))
        .map_err(|e| BackendError::io("open sandbox user namespace", e))?;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: 0,
        userns_fd: userns.as_raw_fd() as u64,
    };
    // SAFETY: mount_setattr(2) on our detached tree with a correctly sized attr struct.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        return Err(BackendError::io(
            "idmap the image mount",
            std::io::Error::last_os_error(),
        ));
    }
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
