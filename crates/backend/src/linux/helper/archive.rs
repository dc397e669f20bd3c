//! Directory trees as tar streams, produced and consumed *inside* the sandbox by a file
//! helper (the sandbox's identity, see [`crate::linux::served`]). The server only moves the bytes
//! through a pipe or a temporary file it never resolves.
//!
//! Producing walks with `openat(O_NOFOLLOW)` from directory fds: symlinks are archived as
//! symlinks, never followed; FIFOs, sockets and devices are skipped, and so are directories
//! and files on kernel pseudo filesystems (`/proc` under an archived `/`). Consuming uses the
//! `tar` crate's `unpack_in` (no writes through links it made; an entry named with `..` or
//! an absolute name is refused with its name, never rewritten or skipped)
//! for regular files, directories, symlinks and hard links only; other entry types are
//! skipped (the sandbox could not create devices anyway).

use super::dirs::MAX_DEPTH;
use super::paths::{invalid, normalize, open_dir, refusal, split};
use super::stat::{kind_of, names};
use crate::files::{FileAnswer, FileKind};
use crate::linux::served::{check_served, pseudo_fs, FileRefusal, Refusal};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Write `path` (a file or a whole tree) as a tar archive into `out`. `started` is called
/// once `path` was found (the server then starts streaming).
pub fn archive(
    path: &str,
    out: OwnedFd,
    started: &mut dyn FnMut(),
) -> Result<FileAnswer, FileRefusal> {
    let norm = normalize(path)?;
    let (parent_path, name) = split(&norm);
    let mut builder = tar::Builder::new(std::io::BufWriter::with_capacity(
        256 * 1024,
        std::fs::File::from(out),
    ));
    match name {
        None => {
            let root = open_dir("/")?;
            started();
            add_dir_contents(&mut builder, &root, "/", Path::new("."), 0)?;
        }
        Some(name) => {
            let parent = open_dir(parent_path)?;
            // Not found is reported before anything is streamed.
            fstatat(&parent, name, AtFlags::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| refusal(&norm, "archive", e))?;
            started();
            add(&mut builder, &parent, name, &norm, Path::new(name), 0)?;
        }
    }
    let mut inner = builder
        .into_inner()
        .map_err(|e| io_refusal(&norm, "archive", e))?;
    inner.flush().map_err(|e| io_refusal(&norm, "archive", e))?;
    Ok(FileAnswer::Done)
}

type Builder = tar::Builder<std::io::BufWriter<std::fs::File>>;

fn io_refusal(path: &str, what: &str, e: std::io::Error) -> FileRefusal {
    match e.raw_os_error() {
        Some(n) => refusal(path, what, Errno::from_raw(n)),
        None => invalid(format!("{what} {path:?}: {e}")),
    }
}

fn header(st: &FileStat, kind: tar::EntryType) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(st.st_mode & 0o7777);
    h.set_uid(st.st_uid as u64);
    h.set_gid(st.st_gid as u64);
    h.set_mtime(st.st_mtime.max(0) as u64);
    h.set_size(0);
    h
}

/// Append the entry `name` of `parent` (shown as `path`) under `archived`.
fn add(
    b: &mut Builder,
    parent: &OwnedFd,
    name: &str,
    path: &str,
    archived: &Path,
    depth: usize,
) -> Result<(), FileRefusal> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!("{path:?}: the tree is too deep")));
    }
    let st = match fstatat(parent, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        // Removed while we walk: not part of the tree any more.
        Err(Errno::ENOENT) if depth > 0 => return Ok(()),
        Err(e) => return Err(refusal(path, "archive", e)),
    };
    let io = |e| io_refusal(path, "archive", e);
    match kind_of(&st) {
        FileKind::Directory => {
            let dir = match nix::fcntl::openat(
                parent,
                name,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                Ok(d) => d,
                Err(Errno::ENOENT) if depth > 0 => return Ok(()),
                Err(e) => return Err(refusal(path, "archive", e)),
            };
            if pseudo_fs(&dir).is_some() {
                return Ok(());
            }
            let mut h = header(&st, tar::EntryType::Directory);
            b.append_data(&mut h, archived, std::io::empty())
                .map_err(io)?;
            add_dir_contents(b, &dir, path, archived, depth + 1)
        }
        FileKind::Regular => {
            let fd = match nix::fcntl::openat(
                parent,
                name,
                OFlag::O_RDONLY
                    | OFlag::O_NOFOLLOW
                    | OFlag::O_NONBLOCK
                    | OFlag::O_NOCTTY
                    | OFlag::O_CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::ENOENT) if depth > 0 => return Ok(()),
                Err(e) => return Err(refusal(path, "read", e)),
            };
            // A file on a pseudo filesystem (or swapped for one) is skipped, not served.
            if check_served(&fd).is_err() {
                return Ok(());
            }
            let st = fstat(&fd).map_err(|e| refusal(path, "stat", e))?;
            let size = st.st_size.max(0) as u64;
            let mut h = header(&st, tar::EntryType::Regular);
            h.set_size(size);
            // Exactly `size` bytes: a file that shrank meanwhile is padded, one that grew
            // is cut (the header was written first).
            let data = std::fs::File::from(fd)
                .take(size)
                .chain(std::io::repeat(0))
                .take(size);
            b.append_data(&mut h, archived, data).map_err(io)
        }
        FileKind::Symlink => {
            let target = match nix::fcntl::readlinkat(parent, name) {
                Ok(t) => t,
                Err(Errno::ENOENT) if depth > 0 => return Ok(()),
                Err(e) => return Err(refusal(path, "readlink", e)),
            };
            let mut h = header(&st, tar::EntryType::Symlink);
            b.append_link(&mut h, archived, PathBuf::from(target))
                .map_err(io)
        }
        FileKind::Other => Ok(()),
    }
}

fn add_dir_contents(
    b: &mut Builder,
    dir: &OwnedFd,
    path: &str,
    archived: &Path,
    depth: usize,
) -> Result<(), FileRefusal> {
    for entry in names(dir, path)? {
        let p = if path == "/" {
            format!("/{entry}")
        } else {
            format!("{path}/{entry}")
        };
        if depth == 0 && path == "/" && matches!(entry.as_str(), "proc" | "sys" | "dev") {
            continue;
        }
        add(b, dir, &entry, &p, &archived.join(&entry), depth + 1)?;
    }
    Ok(())
}

/// Extract the tar archive in `file` into the existing directory `path`.
pub fn extract(path: &str, size: u64, file: OwnedFd) -> Result<FileAnswer, FileRefusal> {
    let norm = normalize(path)?;
    super::upload::truncate(&file, size)?;
    let dir = open_dir(&norm)?;
    let st = fstat(&dir).map_err(|e| refusal(&norm, "stat", e))?;
    let mut f = std::fs::File::from(file);
    let bad = |e: std::io::Error| match e.raw_os_error() {
        Some(_) => io_refusal(&norm, "extract", e),
        None => invalid(format!("{norm:?}: not a valid tar archive: {e}")),
    };
    // A first pass over the names only (seeking over the data): an archive with one
    // refused name leaves nothing extracted.
    {
        use std::io::Seek;
        f.rewind().map_err(bad)?;
        let mut names = tar::Archive::new(std::io::BufReader::with_capacity(64 * 1024, &f));
        for entry in names.entries_with_seek().map_err(bad)? {
            let entry = entry.map_err(bad)?;
            check_entry(&entry)?;
        }
        f.rewind().map_err(bad)?;
    }
    let mut archive = tar::Archive::new(std::io::BufReader::with_capacity(256 * 1024, f));
    archive.set_overwrite(true);
    archive.set_preserve_permissions(false);
    archive.set_preserve_ownerships(false);
    archive.set_unpack_xattrs(false);
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        use tar::EntryType as T;
        match entry.header().entry_type() {
            T::Regular | T::Continuous | T::Directory | T::Symlink | T::Link | T::GNUSparse => {}
            _ => continue,
        }
        check_entry(&entry)?;
        // Paths inside the sandbox's root: the helper's `/` is the sandbox's.
        entry.unpack_in(&norm).map_err(|e| {
            // The tar crate wraps the OS error with the entry's name.
            let os = std::error::Error::source(&e)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .and_then(|s| s.raw_os_error())
                .or(e.raw_os_error());
            match os {
                Some(n) => refusal(&norm, "extract into", Errno::from_raw(n)),
                None => invalid(format!("{norm:?}: {e}")),
            }
        })?;
    }
    Ok(FileAnswer::Info {
        info: super::stat::info_of(&norm, &st, String::new()),
    })
}

/// `unpack_in` would strip a leading `/` and skip `..` entries silently: such a name (or
/// hard link target) is refused instead, with the entry's name.
fn check_entry<R: Read>(entry: &tar::Entry<'_, R>) -> Result<(), FileRefusal> {
    check_entry_name(&entry.path_bytes())?;
    if entry.header().entry_type() == tar::EntryType::Link {
        if let Some(target) = entry.link_name_bytes() {
            check_entry_name(&target)?;
        }
    }
    Ok(())
}

/// An uploaded archive's entry name (or hard link target) is refused, with its name, when
/// it is absolute or has a `..` component: never rewritten or skipped silently.
fn check_entry_name(name: &[u8]) -> Result<(), FileRefusal> {
    let why = if name.starts_with(b"/") {
        "absolute names are not extracted"
    } else if name.split(|b| *b == b'/').any(|c| c == b"..") {
        "names with `..` are not extracted"
    } else {
        return Ok(());
    };
    Err(FileRefusal::new(
        Refusal::UnsafeArchiveEntry,
        format!(
            "archive entry {:?} refused: {why}",
            String::from_utf8_lossy(name)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_with_dotdot_or_a_root_are_refused_by_name() {
        for bad in ["../x", "/abs", "a/../../b", ".."] {
            let e = check_entry_name(bad.as_bytes()).expect_err(bad);
            assert!(e.message.contains(&format!("{bad:?}")), "{}", e.message);
        }
        for ok in ["a", "./a/b", "a/..b", "a/b../c"] {
            assert!(check_entry_name(ok.as_bytes()).is_ok(), "{ok}");
        }
    }

    #[test]
    fn headers_keep_mode_and_kind() {
        let st = fstat(std::fs::File::open("/").unwrap()).unwrap();
        let h = header(&st, tar::EntryType::Directory);
        assert_eq!(h.mode().unwrap(), st.st_mode & 0o7777);
        assert!(h.entry_type().is_dir());
    }
}
