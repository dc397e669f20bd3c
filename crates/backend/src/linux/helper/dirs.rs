//! Changing the tree's directories: mkdir (with parents) and remove (recursive, bounded
//! in depth), each step an `*at` call on a directory fd, never a path walked again.

use super::paths::{invalid, join, normalize, open_dir, open_dir_at, refusal, split};
use super::stat::{names, stat, stat_at};
use crate::files::FileInfo;
use crate::linux::served::{FileRefusal, Refusal};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::UnlinkatFlags;
use std::os::fd::OwnedFd;

/// Deepest tree a recursive remove or an archive walks.
pub const MAX_DEPTH: usize = 1024;

/// Create every missing directory of `norm` (mode 0755, the last one `mode`); the last one's
/// fd.
pub(crate) fn mkdir_p(norm: &str, mode: u32) -> Result<OwnedFd, FileRefusal> {
    let mut dir = open_dir("/")?;
    let mut so_far = String::new();
    let parts: Vec<&str> = norm.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        so_far.push('/');
        so_far.push_str(part);
        let m = if i + 1 == parts.len() { mode } else { 0o755 };
        match nix::sys::stat::mkdirat(&dir, *part, Mode::from_bits_truncate(m)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(refusal(&so_far, "mkdir", e)),
        }
        dir = open_dir_at(&dir, part, &so_far).map_err(|r| match r.reason {
            Refusal::TypeMismatch => FileRefusal::new(
                Refusal::Exists,
                format!("{so_far:?} exists and is not a directory"),
            ),
            _ => r,
        })?;
    }
    Ok(dir)
}

pub(super) fn mkdir(path: &str, mode: u32, parents: bool) -> Result<FileInfo, FileRefusal> {
    let norm = normalize(path)?;
    let mode = if mode == 0 { 0o755 } else { mode & 0o7777 };
    let (parent, name) = split(&norm);
    let Some(name) = name else {
        return if parents {
            stat(&norm, false)
        } else {
            Err(FileRefusal::new(Refusal::Exists, "\"/\" already exists"))
        };
    };
    if parents {
        mkdir_p(&norm, mode)?;
    } else {
        let dir = open_dir(parent)?;
        nix::sys::stat::mkdirat(&dir, name, Mode::from_bits_truncate(mode))
            .map_err(|e| refusal(&norm, "mkdir", e))?;
    }
    let dir = open_dir(parent)?;
    stat_at(&dir, name, &norm)
}

pub(super) fn remove(path: &str, recursive: bool, missing_ok: bool) -> Result<bool, FileRefusal> {
    let norm = normalize(path)?;
    let (parent, Some(name)) = split(&norm) else {
        return Err(invalid("\"/\" cannot be removed"));
    };
    let dir = match open_dir(parent) {
        Err(r) if r.reason == Refusal::NotFound && missing_ok => return Ok(false),
        other => other?,
    };
    match nix::unistd::unlinkat(&dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) => Ok(true),
        Err(Errno::ENOENT) if missing_ok => Ok(false),
        Err(Errno::EISDIR) if recursive => {
            remove_tree(&dir, name, &norm, 0)?;
            Ok(true)
        }
        Err(Errno::EISDIR) => {
            nix::unistd::unlinkat(&dir, name, UnlinkatFlags::RemoveDir)
                .map_err(|e| refusal(&norm, "remove", e))?;
            Ok(true)
        }
        Err(e) => Err(refusal(&norm, "remove", e)),
    }
}

/// Remove the directory `name` in `parent` with everything in it; symlinks inside are
/// unlinked, never followed (`O_NOFOLLOW` on every directory opened).
pub(super) fn remove_tree(
    parent: &OwnedFd,
    name: &str,
    path: &str,
    depth: usize,
) -> Result<(), FileRefusal> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!("{path:?}: the tree is too deep")));
    }
    let dir = nix::fcntl::openat(
        parent,
        name,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| refusal(path, "remove", e))?;
    for entry in names(&dir, path)? {
        let p = join(path, &entry);
        match nix::unistd::unlinkat(&dir, entry.as_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(Errno::EISDIR) => remove_tree(&dir, &entry, &p, depth + 1)?,
            Err(e) => return Err(refusal(&p, "remove", e)),
        }
    }
    match nix::unistd::unlinkat(parent, name, UnlinkatFlags::RemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(refusal(path, "remove", e)),
    }
}
