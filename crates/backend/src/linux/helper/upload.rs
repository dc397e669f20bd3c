//! Uploads: an anonymous temporary file next to its target, chunks spliced into it from
//! a pipe, and the commit that gives it its size, mode and owner and renames it into place
//! (refusing to replace when asked not to).

use super::dirs::mkdir_p;
use super::paths::{invalid, normalize, open_dir, refusal, split};
use super::stat::{info_of, kind_of};
use crate::files::{FileInfo, FileKind};
use crate::linux::served::{FileRefusal, Refusal};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, AT_FDCWD};
use nix::sys::stat::{fstat, fstatat, Mode};
use nix::unistd::UnlinkatFlags;
use std::os::fd::{AsRawFd, OwnedFd};

/// An anonymous (`O_TMPFILE`) file in the directory of `path`: invisible until committed,
/// gone by itself when the last fd closes. Returns it and the filesystem's free bytes.
pub(super) fn create_temp(
    path: &str,
    create_parents: bool,
    no_overwrite: bool,
) -> Result<(OwnedFd, u64), FileRefusal> {
    let (dir, parent) = upload_dir(path, create_parents, no_overwrite)?;
    let parent = parent.as_str();
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
    let free = free_bytes(&fd);
    Ok((fd, free))
}

/// The directory an upload to `path` writes its temporary file in (made first with
/// `create_parents`) and its normalized path, after refusing what no upload may replace:
/// `/` or a directory (`TypeMismatch`), and with `no_overwrite` anything there (`Exists`).
/// Shared by both runtimes' helpers: only how the temporary file is made differs.
pub(crate) fn upload_dir(
    path: &str,
    create_parents: bool,
    no_overwrite: bool,
) -> Result<(OwnedFd, String), FileRefusal> {
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
    Ok((dir, parent.to_string()))
}

/// Free bytes of the filesystem holding `fd` (0 when unknown).
pub(crate) fn free_bytes(fd: &OwnedFd) -> u64 {
    nix::sys::statvfs::fstatvfs(fd)
        .map(|s| {
            // The statvfs field types differ between architectures.
            #[allow(clippy::unnecessary_cast)]
            let (avail, frag) = (s.blocks_available() as u64, s.fragment_size() as u64);
            avail.saturating_mul(frag)
        })
        .unwrap_or(0)
}

/// Read `len` bytes from `pipe` and write them to `file` at `offset`.
pub(super) fn write_chunk(
    file: &OwnedFd,
    pipe: &OwnedFd,
    offset: u64,
    len: u64,
) -> Result<u64, FileRefusal> {
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

/// Give an upload's temporary file its final `size`, `mode` (0: 0644) and owner — the last
/// steps before it is renamed over `norm` — for both runtimes' helpers. An owner the
/// sandbox's identity may not give is `permission_denied`.
pub(crate) fn finish_file(
    file: &OwnedFd,
    norm: &str,
    size: u64,
    mode: u32,
    (uid, gid): (Option<u32>, Option<u32>),
) -> Result<(), FileRefusal> {
    truncate(file, size)?;
    let mode = if mode == 0 { 0o644 } else { mode & 0o7777 };
    nix::sys::stat::fchmod(file, Mode::from_bits_truncate(mode))
        .map_err(|e| refusal(norm, "chmod", e))?;
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
            e => refusal(norm, "chown", e),
        })?;
    }
    Ok(())
}

/// Set mode and owner of the temporary file, link it under a temporary name next to the
/// target and rename it over the target: readers see the old file or the whole new one.
pub(super) fn commit(
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
    finish_file(file, &norm, size, mode, (uid, gid))?;
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
