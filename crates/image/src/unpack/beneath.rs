//! Path handling beneath an image root that never follows a symlink: tar paths are
//! normalized, every directory is opened with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`, and removals go through directory fds (`unlinkat`).

use super::{bad, io};
use crate::ImageError;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::Mode;
use nix::unistd::{fchownat, Gid, Uid};
use std::collections::HashSet;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// Normalize a tar path: relative components only. `None` means the root itself.
pub(super) fn clean(path: &Path) -> Result<Option<PathBuf>, ImageError> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(bad(format!("absolute path {}", path.display())))
            }
            Component::ParentDir => return Err(bad(format!("path with '..': {}", path.display()))),
        }
    }
    Ok(if out.as_os_str().is_empty() {
        None
    } else {
        Some(out)
    })
}

/// Open a directory beneath `root` without following any symlink on the way.
pub(super) fn open_dir(root: &File, rel: &Path) -> Result<OwnedFd, ImageError> {
    let how = OpenHow::new()
        .flags(OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
    let target = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    openat2(root.as_fd(), target, how).map_err(|e| {
        bad(format!(
            "{} is not a directory beneath the root (symlink or missing): {e}",
            rel.display()
        ))
    })
}

/// `mkdir -p` beneath the root, refusing symlinks; returns the directory's fd.
pub(super) fn ensure_dir(root: &File, rel: &Path, as_root: bool) -> Result<OwnedFd, ImageError> {
    let mut cur = PathBuf::new();
    for c in rel.components() {
        let parent = open_dir(root, &cur)?;
        cur.push(c);
        match nix::sys::stat::mkdirat(
            parent.as_fd(),
            c.as_os_str(),
            Mode::from_bits_truncate(0o755),
        ) {
            Ok(()) => {
                if as_root {
                    let _ = fchownat(
                        parent.as_fd(),
                        c.as_os_str(),
                        Some(Uid::from_raw(0)),
                        Some(Gid::from_raw(0)),
                        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                    );
                }
            }
            Err(nix::errno::Errno::EEXIST) => {}
            Err(e) => return Err(io(format!("mkdir {}", cur.display()), e)),
        }
    }
    open_dir(root, rel)
}

/// Remove `name` in `dir` whatever it is, never following symlinks.
pub(super) fn remove_entry(dir: &OwnedFd, name: &std::ffi::OsStr) -> Result<(), ImageError> {
    use nix::unistd::{unlinkat, UnlinkatFlags};
    match unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(nix::errno::Errno::EISDIR) | Err(nix::errno::Errno::EPERM) => {
            // A directory: empty it through an fd opened without following links.
            let how = OpenHow::new()
                .flags(OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
                .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
            let sub = openat2(dir.as_fd(), name, how).map_err(|e| io("open dir to remove", e))?;
            clear_dir(&sub, &HashSet::new(), Path::new(""))?;
            unlinkat(dir.as_fd(), name, UnlinkatFlags::RemoveDir)
                .map_err(|e| io(format!("rmdir {name:?}"), e))
        }
        Err(e) => Err(io(format!("unlink {name:?}"), e)),
    }
}

/// Remove every child of `dir` except those whose path (`prefix/child`) is in `keep`.
pub(super) fn clear_dir(
    dir: &OwnedFd,
    keep: &HashSet<PathBuf>,
    prefix: &Path,
) -> Result<(), ImageError> {
    let dup = dir.try_clone().map_err(|e| io("dup", e))?;
    let mut d = nix::dir::Dir::from_fd(dup).map_err(|e| io("readdir", e))?;
    let names: Vec<std::ffi::OsString> = d
        .iter()
        .filter_map(Result::ok)
        .map(|e| {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::OsStr::from_bytes(e.file_name().to_bytes()).to_os_string()
        })
        .filter(|n| n != "." && n != "..")
        .collect();
    for name in names {
        // Keep what this layer created, including directories it created implicitly as
        // parents of its own entries.
        let child = prefix.join(&name);
        if keep.iter().any(|k| k.starts_with(&child)) {
            continue;
        }
        remove_entry(dir, &name)?;
    }
    Ok(())
}
