//! The helper's side of the files API: stat, list, mkdir, remove, upload temp files and
//! their commit, run *inside* the sandbox by a helper pid 1 forked (see [`crate::linux::served`]
//! for why: the sandbox's uid, root, landlock domain and seccomp filter). Tar archives are
//! in [`super::archive`].
//!
//! Every lookup goes through a directory fd opened with `openat2(RESOLVE_NO_MAGICLINKS)` from
//! the sandbox's root and then `*at` calls on the last component, so a final symlink is
//! never followed unless asked for, and `/proc` magic links are never crossed. Whatever a
//! symlink points at, the helper can reach no more than the sandbox could.

use crate::files::{FileAnswer, FileInfo, FileKind, FileOp};
use crate::linux::served::{pseudo_fs, FileRefusal, Refusal};
use crate::linux::sys::openat2;
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use nix::unistd::UnlinkatFlags;
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// Serialized size an `Entries` answer may grow to (the control socket carries 256 KiB).
const LIST_BUDGET: usize = 160 * 1024;
/// Entries one list call returns at most.
pub const MAX_LIST_ENTRIES: u32 = 10_000;
/// Deepest tree a recursive remove or an archive walks.
pub const MAX_DEPTH: usize = 1024;

/// Carry out `op` (everything but `Archive` and `Extract`, see [`super::archive`]).
pub fn run(op: &FileOp, fds: &[OwnedFd]) -> Result<(FileAnswer, Vec<OwnedFd>), FileRefusal> {
    let none = |answer| Ok((answer, Vec::new()));
    match op {
        FileOp::Stat { path, follow } => none(FileAnswer::Info {
            info: stat(path, *follow)?,
        }),
        FileOp::List {
            path,
            start_after,
            max_entries,
        } => {
            let (entries, truncated) = list(path, start_after, *max_entries)?;
            none(FileAnswer::Entries { entries, truncated })
        }
        FileOp::Mkdir {
            path,
            mode,
            parents,
        } => none(FileAnswer::Info {
            info: mkdir(path, *mode, *parents)?,
        }),
        FileOp::Remove {
            path,
            recursive,
            missing_ok,
        } => none(FileAnswer::Removed {
            removed: remove(path, *recursive, *missing_ok)?,
        }),
        FileOp::CreateTemp {
            path,
            create_parents,
            no_overwrite,
        } => {
            let (fd, free_bytes) = create_temp(path, *create_parents, *no_overwrite)?;
            Ok((FileAnswer::Temp { free_bytes }, vec![fd]))
        }
        FileOp::WriteChunk { offset, len } => match fds {
            [file, pipe] => none(FileAnswer::Written {
                len: write_chunk(file, pipe, *offset, *len)?,
            }),
            _ => Err(invalid("a chunk needs a file and a pipe")),
        },
        FileOp::Commit {
            path,
            size,
            mode,
            uid,
            gid,
            no_overwrite,
        } => match fds {
            [file] => none(FileAnswer::Info {
                info: commit(file, path, *size, *mode, (*uid, *gid), *no_overwrite)?,
            }),
            _ => Err(invalid("a commit needs the temporary file")),
        },
        FileOp::Extract { .. } | FileOp::Archive { .. } => {
            Err(invalid("archives are handled by the archive module"))
        }
    }
}

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

fn open_dir_at(dir: impl AsFd, name: &str, shown: &str) -> Result<OwnedFd, FileRefusal> {
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

pub fn kind_of(st: &FileStat) -> FileKind {
    let t = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
    if t == SFlag::S_IFREG {
        FileKind::Regular
    } else if t == SFlag::S_IFDIR {
        FileKind::Directory
    } else if t == SFlag::S_IFLNK {
        FileKind::Symlink
    } else {
        FileKind::Other
    }
}

pub fn info_of(path: &str, st: &FileStat, symlink_target: String) -> FileInfo {
    FileInfo {
        path: path.to_string(),
        kind: kind_of(st),
        size: st.st_size.max(0) as u64,
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        mtime_sec: st.st_mtime,
        mtime_nsec: st.st_mtime_nsec.clamp(0, 999_999_999) as u32,
        symlink_target,
    }
}

/// Stat `name` in `dir` without following it; a symlink's target is read too.
fn stat_at(dir: &OwnedFd, name: &str, path: &str) -> Result<FileInfo, FileRefusal> {
    let st =
        fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| refusal(path, "stat", e))?;
    let target = if kind_of(&st) == FileKind::Symlink {
        nix::fcntl::readlinkat(dir, name)
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        String::new()
    };
    Ok(info_of(path, &st, target))
}

fn stat(path: &str, follow: bool) -> Result<FileInfo, FileRefusal> {
    let norm = normalize(path)?;
    match (split(&norm), follow) {
        ((_, Some(name)), false) => stat_at(&open_dir(split(&norm).0)?, name, &norm),
        _ => {
            let how = OpenHow::new()
                .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
                .resolve(ResolveFlag::RESOLVE_NO_MAGICLINKS);
            let fd =
                openat2(AT_FDCWD, norm.as_str(), how).map_err(|e| refusal(&norm, "stat", e))?;
            let st = fstat(&fd).map_err(|e| refusal(&norm, "stat", e))?;
            Ok(info_of(&norm, &st, String::new()))
        }
    }
}

/// Names in a directory (not `.`/`..`), UTF-8 only (the API speaks strings), sorted.
pub fn names(dir: &OwnedFd, path: &str) -> Result<Vec<String>, FileRefusal> {
    let fd = nix::fcntl::openat(
        dir,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| refusal(path, "list", e))?;
    let mut d = nix::dir::Dir::from_fd(fd).map_err(|e| refusal(path, "list", e))?;
    let mut out = Vec::new();
    for entry in d.iter() {
        let entry = entry.map_err(|e| refusal(path, "list", e))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if let Ok(s) = std::str::from_utf8(name) {
            out.push(s.to_string());
        }
    }
    out.sort();
    Ok(out)
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

fn list(
    path: &str,
    start_after: &str,
    max_entries: u32,
) -> Result<(Vec<FileInfo>, bool), FileRefusal> {
    let norm = normalize(path)?;
    let dir = open_dir(&norm)?;
    let max = match max_entries {
        0 => 1000,
        n => n.min(MAX_LIST_ENTRIES),
    } as usize;
    let mut out = Vec::new();
    let mut budget = 0usize;
    let mut truncated = false;
    for name in names(&dir, &norm)?
        .into_iter()
        .filter(|n| n.as_str() > start_after)
    {
        if out.len() >= max || budget > LIST_BUDGET {
            truncated = true;
            break;
        }
        let p = join(&norm, &name);
        match stat_at(&dir, &name, &p) {
            Ok(info) => {
                // Its exact size in the answer (names may escape to several bytes each).
                budget += serde_json::to_vec(&info)
                    .map(|v| v.len())
                    .unwrap_or(LIST_BUDGET)
                    + 1;
                out.push(info);
            }
            // Removed meanwhile: not an entry any more.
            Err(r) if r.reason == Refusal::NotFound => {}
            Err(r) => return Err(r),
        }
    }
    Ok((out, truncated))
}

/// Create every missing directory of `norm` (mode 0755, the last one `mode`); the last one's
/// fd.
fn mkdir_p(norm: &str, mode: u32) -> Result<OwnedFd, FileRefusal> {
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

fn mkdir(path: &str, mode: u32, parents: bool) -> Result<FileInfo, FileRefusal> {
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

fn remove(path: &str, recursive: bool, missing_ok: bool) -> Result<bool, FileRefusal> {
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
fn remove_tree(parent: &OwnedFd, name: &str, path: &str, depth: usize) -> Result<(), FileRefusal> {
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

/// An anonymous (`O_TMPFILE`) file in the directory of `path`: invisible until committed,
/// gone by itself when the last fd closes. Returns it and the filesystem's free bytes.
fn create_temp(
    path: &str,
    create_parents: bool,
    no_overwrite: bool,
) -> Result<(OwnedFd, u64), FileRefusal> {
    let norm = normalize(path)?;
    let (parent, Some(name)) = split(&norm) else {
        return Err(FileRefusal::new(
            Refusal::TypeMismatch,
            "\"/\" is a directory",
        ));
    };
    let dir = if create_parents {
        mkdir_p(parent, 0o755)?
    } else {
        open_dir(parent)?
    };
    match fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if kind_of(&st) == FileKind::Directory => {
            return Err(FileRefusal::new(
                Refusal::TypeMismatch,
                format!("{norm:?} is a directory"),
            ))
        }
        Ok(_) if no_overwrite => {
            return Err(FileRefusal::new(
                Refusal::Exists,
                format!("{norm:?} already exists"),
            ))
        }
        Ok(_) | Err(Errno::ENOENT) => {}
        Err(e) => return Err(refusal(&norm, "stat", e)),
    }
    let fd = nix::fcntl::openat(
        &dir,
        ".",
        OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o600),
    )
    .map_err(|e| match e {
        Errno::EOPNOTSUPP => FileRefusal::new(
            Refusal::NotReadable,
            format!("{parent:?}: the filesystem has no anonymous temporary files"),
        ),
        e => refusal(parent, "create a file in", e),
    })?;
    let free = nix::sys::statvfs::fstatvfs(&fd)
        .map(|s| {
            // The statvfs field types differ between architectures.
            #[allow(clippy::unnecessary_cast)]
            let (avail, frag) = (s.blocks_available() as u64, s.fragment_size() as u64);
            avail.saturating_mul(frag)
        })
        .unwrap_or(0);
    Ok((fd, free))
}

/// Read `len` bytes from `pipe` and write them to `file` at `offset`.
fn write_chunk(file: &OwnedFd, pipe: &OwnedFd, offset: u64, len: u64) -> Result<u64, FileRefusal> {
    let st = fstat(file).map_err(|e| refusal("upload", "stat", e))?;
    if kind_of(&st) != FileKind::Regular {
        return Err(invalid("the upload is not a regular file"));
    }
    truncate(file, offset)?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut done = 0u64;
    while done < len {
        let want = buf.len().min((len - done) as usize);
        let n = match nix::unistd::read(pipe, &mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(refusal("upload", "read", e)),
        };
        let mut off = 0;
        while off < n {
            let at = (offset + done + off as u64) as i64;
            match nix::sys::uio::pwrite(file, &buf[off..n], at) {
                Ok(0) => return Err(refusal("upload", "write", Errno::ENOSPC)),
                Ok(w) => off += w,
                Err(Errno::EINTR) => {}
                Err(e) => return Err(refusal("upload", "write", e)),
            }
        }
        done += n as u64;
    }
    if done < len {
        return Err(invalid(format!("short chunk: {done} of {len} bytes")));
    }
    Ok(done)
}

/// Cut an upload's temporary file to `size` bytes.
pub fn truncate(file: &OwnedFd, size: u64) -> Result<(), FileRefusal> {
    let len = i64::try_from(size).map_err(|_| invalid("size out of range"))?;
    nix::unistd::ftruncate(file, len).map_err(|e| refusal("upload", "truncate", e))
}

/// Set mode and owner of the temporary file, link it under a temporary name next to the
/// target and rename it over the target: readers see the old file or the whole new one.
fn commit(
    file: &OwnedFd,
    path: &str,
    size: u64,
    mode: u32,
    (uid, gid): (Option<u32>, Option<u32>),
    no_overwrite: bool,
) -> Result<FileInfo, FileRefusal> {
    let norm = normalize(path)?;
    let (parent, Some(name)) = split(&norm) else {
        return Err(FileRefusal::new(
            Refusal::TypeMismatch,
            "\"/\" is a directory",
        ));
    };
    let dir = open_dir(parent)?;
    truncate(file, size)?;
    let mode = if mode == 0 { 0o644 } else { mode & 0o7777 };
    nix::sys::stat::fchmod(file, Mode::from_bits_truncate(mode))
        .map_err(|e| refusal(&norm, "chmod", e))?;
    if uid.is_some() || gid.is_some() {
        nix::unistd::fchown(
            file,
            uid.map(nix::unistd::Uid::from_raw),
            gid.map(nix::unistd::Gid::from_raw),
        )
        .map_err(|e| match e {
            Errno::EPERM | Errno::EINVAL => FileRefusal::new(
                Refusal::PermissionDenied,
                format!("{norm:?}: the sandbox may not give the file that owner"),
            ),
            e => refusal(&norm, "chown", e),
        })?;
    }
    let tmp = format!(
        ".cleanroom-upload-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    nix::unistd::linkat(
        AT_FDCWD,
        proc_path.as_str(),
        &dir,
        tmp.as_str(),
        AtFlags::AT_SYMLINK_FOLLOW,
    )
    .map_err(|e| refusal(&norm, "create", e))?;
    let renamed = if no_overwrite {
        nix::fcntl::renameat2(
            &dir,
            tmp.as_str(),
            &dir,
            name,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )
    } else {
        nix::fcntl::renameat(&dir, tmp.as_str(), &dir, name)
    };
    if let Err(e) = renamed {
        let _ = nix::unistd::unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
        return Err(refusal(&norm, "replace", e));
    }
    let st = fstat(file).map_err(|e| refusal(&norm, "stat", e))?;
    Ok(info_of(&norm, &st, String::new()))
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
