//! Paths as the file helper takes them: lexical normalization (no `..`, no `/proc`, `/sys`,
//! `/dev`), the refusal vocabulary an errno maps to, and opening a directory without
//! crossing a magic link or landing on a pseudo file system. Every other helper module
//! resolves through here.

use crate::linux::served::{pseudo_fs, FileRefusal, Refusal};
use crate::linux::sys::openat2;
use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

pub(crate) fn invalid(message: impl Into<String>) -> FileRefusal {
    FileRefusal::new(Refusal::Invalid, message)
}

/// Lexically normalize an absolute path: no `.`, no repeated `/`; `..` is refused (what it
/// means depends on symlinks inside the sandbox); `/proc`, `/sys`, `/dev` are not served.
pub fn normalize(path: &str) -> Result<String, FileRefusal> {
    if !path.starts_with('/') || path.contains('\0') || path.len() > 4096 {
        return Err(invalid(format!("{path:?}: the path must be absolute")));
    }
    let mut parts = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => return Err(invalid(format!("{path:?}: `..` is not accepted"))),
            c => parts.push(c),
        }
    }
    if let Some(first @ ("proc" | "sys" | "dev")) = parts.first().copied() {
        return Err(FileRefusal::new(
            Refusal::NotRegular,
            format!("files under /{first} are not served"),
        ));
    }
    Ok(format!("/{}", parts.join("/")))
}

/// `(parent, last component)` of a normalized path; `None` for `/`.
pub fn split(norm: &str) -> (&str, Option<&str>) {
    match norm.rsplit_once('/') {
        Some((_, "")) | None => ("/", None),
        Some(("", name)) => ("/", Some(name)),
        Some((parent, name)) => (parent, Some(name)),
    }
}

/// Map an errno of an operation on `path` to the refusal vocabulary.
pub fn refusal(path: &str, what: &str, e: Errno) -> FileRefusal {
    let (reason, why) = match e {
        Errno::ENOENT => (Refusal::NotFound, "no such file or directory"),
        Errno::ENOTDIR => (Refusal::TypeMismatch, "not a directory"),
        Errno::EISDIR => (Refusal::TypeMismatch, "is a directory"),
        Errno::EACCES | Errno::EPERM | Errno::EROFS => {
            (Refusal::PermissionDenied, "the sandbox may not do this")
        }
        Errno::EBUSY => (Refusal::PermissionDenied, "busy (a mount point?)"),
        Errno::EEXIST => (Refusal::Exists, "already exists"),
        Errno::ENOTEMPTY => (Refusal::NotEmpty, "directory not empty"),
        Errno::ENOSPC | Errno::EDQUOT | Errno::EFBIG => {
            (Refusal::NoSpace, "the sandbox's disk limit is reached")
        }
        Errno::EXDEV => (Refusal::NotRegular, "crosses a /proc magic link"),
        Errno::ELOOP => (Refusal::NotReadable, "loops or crosses a /proc magic link"),
        Errno::ENAMETOOLONG | Errno::EINVAL => (Refusal::Invalid, "invalid name"),
        other => {
            return FileRefusal::new(Refusal::NotReadable, format!("{what} {path:?}: {other}"))
        }
    };
    FileRefusal::new(reason, format!("{what} {path:?}: {why}"))
}

/// Open a directory (following symlinks inside the sandbox, never magic links) as `O_PATH`.
pub fn open_dir(path: &str) -> Result<OwnedFd, FileRefusal> {
    open_dir_at(AT_FDCWD, path, path)
}

pub(super) fn open_dir_at(dir: impl AsFd, name: &str, shown: &str) -> Result<OwnedFd, FileRefusal> {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
    let fd = openat2(dir, name, how).map_err(|e| refusal(shown, "open", e))?;
    if let Some(fs) = pseudo_fs(&fd) {
        return Err(FileRefusal::new(
            Refusal::NotReadable,
            format!("{shown:?}: files on {fs} are not served"),
        ));
    }
    Ok(fd)
}

pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `name` as a path component for `*at` calls.
pub fn os(name: &str) -> &OsStr {
    OsStr::from_bytes(name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_refuses_dotdot_and_pseudo_trees() {
        assert_eq!(normalize("/a//b/./c/").unwrap(), "/a/b/c");
        assert_eq!(normalize("/").unwrap(), "/");
        assert_eq!(normalize("//").unwrap(), "/");
        for p in ["a/b", "/a/../b", "/..", ""] {
            assert_eq!(normalize(p).unwrap_err().reason, Refusal::Invalid, "{p}");
        }
        for p in ["/proc/1/root", "/sys", "//dev/./null"] {
            assert_eq!(normalize(p).unwrap_err().reason, Refusal::NotRegular, "{p}");
        }
    }

    #[test]
    fn split_names_parent_and_last_component() {
        assert_eq!(split("/"), ("/", None));
        assert_eq!(split("/a"), ("/", Some("a")));
        assert_eq!(split("/a/b/c"), ("/a/b", Some("c")));
    }

    #[test]
    fn errnos_map_to_the_refusal_vocabulary() {
        assert_eq!(refusal("/x", "w", Errno::ENOSPC).reason, Refusal::NoSpace);
        assert_eq!(refusal("/x", "w", Errno::EDQUOT).reason, Refusal::NoSpace);
        assert_eq!(
            refusal("/x", "w", Errno::EACCES).reason,
            Refusal::PermissionDenied
        );
        assert_eq!(
            refusal("/x", "w", Errno::EROFS).reason,
            Refusal::PermissionDenied
        );
        assert_eq!(
            refusal("/x", "w", Errno::ENOTEMPTY).reason,
            Refusal::NotEmpty
        );
        assert_eq!(
            refusal("/x", "w", Errno::EISDIR).reason,
            Refusal::TypeMismatch
        );
    }
}
