//! Reading the tree: stat (with or without following a final symlink) and paged, bounded
//! directory listings.

use super::paths::{join, normalize, open_dir, refusal, split};
use crate::files::{FileInfo, FileKind};
use crate::linux::served::{FileRefusal, Refusal};
use crate::linux::sys::openat2;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::os::fd::OwnedFd;

/// Serialized size an `Entries` answer may grow to (the control socket carries 256 KiB).
const LIST_BUDGET: usize = 160 * 1024;
/// Entries one list call returns at most.
pub const MAX_LIST_ENTRIES: u32 = 10_000;

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
pub(super) fn stat_at(dir: &OwnedFd, name: &str, path: &str) -> Result<FileInfo, FileRefusal> {
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

pub(super) fn stat(path: &str, follow: bool) -> Result<FileInfo, FileRefusal> {
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

pub(super) fn list(
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
