//! The restore, inside a new sandbox before it is READY: read an archive ([`super`]) from
//! stdin and apply it to `/` as the sandbox's uid 0 without capabilities. The archive is
//! sandbox-made data, so every name is checked ([`component`]), every parent directory is
//! opened one component at a time with `O_NOFOLLOW | O_DIRECTORY` from `/` (a symlink the
//! archive made earlier is never followed), nothing is made outside `/`'s own mount (an
//! entry on another mount is refused), no device is made, and a list of names removes only
//! what sits on the directory's own mount (never a mount point).

use super::{read_header, Answer, Bytes, Meta, Record, Refused, MAGIC, MAX_DEPTH, MAX_ENTRIES};
use super::{walk::list, MAX_EXTENTS};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, Mode, SFlag};
use nix::sys::time::TimeSpec;
use nix::unistd::{Gid, Uid, UnlinkatFlags};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

type Fail = (Refused, String);

/// Apply the archive on stdin to `/`.
pub fn restore() -> Answer {
    let mut input = std::io::BufReader::with_capacity(1 << 20, std::io::stdin().lock());
    let mut state = Apply {
        dir_times: Vec::new(),
        bytes: 0,
    };
    match state.run(&mut input) {
        Ok(entries) => Answer::Done {
            entries,
            bytes: state.bytes,
        },
        Err((kind, message)) => Answer::Refused { kind, message },
    }
}

struct Apply {
    /// Directories whose mtime is set last (their children change it meanwhile).
    dir_times: Vec<(Vec<Vec<u8>>, Meta)>,
    bytes: u64,
}

/// Check one path component of the archive.
pub fn component(c: &[u8]) -> Result<&[u8], Fail> {
    if c.is_empty()
        || c == b"."
        || c == b".."
        || c.contains(&b'/')
        || c.contains(&0)
        || c.len() > 255
    {
        return Err((
            Refused::UnsafeEntry,
            format!(
                "an archive entry named {:?}",
                String::from_utf8_lossy(c).escape_default().to_string()
            ),
        ));
    }
    Ok(c)
}

/// Split an archive path into checked components (empty: `/` itself).
pub fn components(path: &Bytes) -> Result<Vec<Vec<u8>>, Fail> {
    if path.0.is_empty() {
        return Ok(Vec::new());
    }
    if path.0.len() > 4096 {
        return Err((
            Refused::UnsafeEntry,
            "an archive path over 4096 bytes".into(),
        ));
    }
    let parts = path
        .0
        .split(|b| *b == b'/')
        .map(|c| component(c).map(<[u8]>::to_vec))
        .collect::<Result<Vec<_>, _>>()?;
    if parts.len() > MAX_DEPTH {
        return Err((Refused::UnsafeEntry, format!("deeper than {MAX_DEPTH}")));
    }
    Ok(parts)
}

fn shown(parts: &[Vec<u8>]) -> String {
    let joined: Vec<String> = parts
        .iter()
        .map(|p| String::from_utf8_lossy(p).escape_default().to_string())
        .collect();
    format!("/{}", joined.join("/"))
}

fn fail(parts: &[Vec<u8>], what: &str, e: Errno) -> Fail {
    let kind = match e {
        Errno::ENOSPC | Errno::EDQUOT => Refused::NoSpace,
        Errno::EPERM | Errno::EACCES | Errno::EROFS => Refused::PermissionDenied,
        Errno::ELOOP | Errno::ENOTDIR | Errno::EXDEV => Refused::UnsafeEntry,
        _ => Refused::Failed,
    };
    (kind, format!("{what} {}: {e}", shown(parts)))
}

/// Whether `parts` is a mount point other than a writable directory's (fail closed: an
/// unreadable mount table counts everything as one).
fn on_mount(parts: &[Vec<u8>]) -> bool {
    let joined = parts.join(&b'/');
    if parts.len() == 1 && super::is_scratch(&joined) {
        return false;
    }
    super::mount_points().map_or(true, |m| m.contains(&joined))
}

/// Open the directory at `parts` from `/`, one component at a time, never following a
/// link, never entering a mount point (but the writable directories).
fn open_dir(parts: &[Vec<u8>]) -> Result<OwnedFd, Fail> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut fd = nix::fcntl::open("/", flags, Mode::empty()).map_err(|e| fail(&[], "open", e))?;
    for (i, c) in parts.iter().enumerate() {
        if on_mount(&parts[..=i]) {
            return Err(fail(
                &parts[..=i],
                "write into the mount point",
                Errno::EXDEV,
            ));
        }
        // Checked before and after the open: gVisor's `openat` follows a final symlink
        // even with `O_NOFOLLOW | O_DIRECTORY` (measured: it reached the link's target).
        let st = fstatat(&fd, c.as_slice(), AtFlags::AT_SYMLINK_NOFOLLOW)
            .map_err(|e| fail(&parts[..=i], "stat", e))?;
        if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFDIR {
            return Err(fail(
                &parts[..=i],
                "go through the non-directory",
                Errno::ENOTDIR,
            ));
        }
        let next = nix::fcntl::openat(&fd, c.as_slice(), flags, Mode::empty())
            .map_err(|e| fail(&parts[..=i], "open the directory", e))?;
        let now = fstat(&next).map_err(|e| fail(&parts[..=i], "stat", e))?;
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) {
            return Err(fail(
                &parts[..=i],
                "go through the replaced",
                Errno::ENOTDIR,
            ));
        }
        fd = next;
    }
    Ok(fd)
}

fn is_scratch(parts: &[Vec<u8>]) -> bool {
    parts.len() == 1 && super::is_scratch(&parts[0])
}

/// Remove `name` (at `parts`) from `dir`, recursively for a directory, never a mount
/// point.
fn remove(dir: &OwnedFd, name: &[u8], parts: &[Vec<u8>]) -> Result<(), Errno> {
    if on_mount(parts) {
        return Err(Errno::EBUSY);
    }
    let st = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    if SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFDIR {
        return nix::unistd::unlinkat(dir, name, UnlinkatFlags::NoRemoveDir);
    }
    if parts.len() > MAX_DEPTH {
        return Err(Errno::ELOOP);
    }
    let sub = nix::fcntl::openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    for n in list(&sub)? {
        let mut p = parts.to_vec();
        p.push(n.clone());
        remove(&sub, &n, &p)?;
    }
    nix::unistd::unlinkat(dir, name, UnlinkatFlags::RemoveDir)
}

/// Make room for a new entry `name` in `dir` (whatever the image or an earlier record had).
fn clear(dir: &OwnedFd, name: &[u8], parts: &[Vec<u8>]) -> Result<(), Fail> {
    remove(dir, name, parts).map_err(|e| fail(parts, "replace", e))
}

fn own(dir: &OwnedFd, name: &[u8], meta: &Meta, parts: &[Vec<u8>]) -> Result<(), Fail> {
    let st =
        fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).map_err(|e| fail(parts, "stat", e))?;
    if (st.st_uid, st.st_gid) != (meta.uid, meta.gid) {
        nix::unistd::fchownat(
            dir,
            name,
            Some(Uid::from_raw(meta.uid)),
            Some(Gid::from_raw(meta.gid)),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        )
        .map_err(|e| fail(parts, "give its owner to", e))?;
    }
    Ok(())
}

fn times(meta: &Meta) -> [TimeSpec; 2] {
    let m = TimeSpec::new(meta.mtime_s, meta.mtime_ns.clamp(0, 999_999_999));
    [m, m]
}

fn set_mtime(dir: &OwnedFd, name: &[u8], meta: &Meta, parts: &[Vec<u8>]) -> Result<(), Fail> {
    let [a, m] = times(meta);
    nix::sys::stat::utimensat(
        dir,
        name,
        &a,
        &m,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    )
    .map_err(|e| fail(parts, "set the time of", e))
}

fn mode(meta: &Meta) -> Mode {
    Mode::from_bits_truncate(meta.mode & 0o7777)
}

impl Apply {
    fn run(&mut self, input: &mut impl Read) -> Result<u64, Fail> {
        let mut magic = [0u8; 16];
        input
            .read_exact(&mut magic)
            .map_err(|e| (Refused::Malformed, format!("no archive: {e}")))?;
        if &magic != MAGIC {
            return Err((Refused::Malformed, "not a gvisor snapshot archive".into()));
        }
        let mut entries = 0u64;
        loop {
            let rec = read_header(input).map_err(|m| (Refused::Malformed, m))?;
            if let Record::End { entries: n } = rec {
                if n != entries {
                    return Err((
                        Refused::Malformed,
                        format!("{entries} entries, {n} announced"),
                    ));
                }
                break;
            }
            entries += 1;
            if entries > MAX_ENTRIES {
                return Err((Refused::NoSpace, format!("more than {MAX_ENTRIES} entries")));
            }
            self.record(rec, input)?;
        }
        // Directory times last, deepest first.
        for (parts, meta) in self.dir_times.iter().rev() {
            if let Some((name, parent)) = parts.split_last() {
                let dir = open_dir(parent)?;
                // A read-only root (the host view's) holds only the runtime's mount points,
                // whose times the sandbox could not have set either.
                let read_only = nix::sys::statvfs::fstatvfs(&dir)
                    .is_ok_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
                if !read_only {
                    set_mtime(&dir, name, meta, parts)?;
                }
            }
        }
        Ok(entries)
    }

    fn record(&mut self, rec: Record, input: &mut impl Read) -> Result<(), Fail> {
        match rec {
            Record::Dir { path, meta, names } => {
                let parts = components(&path)?;
                let keep: Vec<Vec<u8>> = names
                    .iter()
                    .map(|n| component(&n.0).map(<[u8]>::to_vec))
                    .collect::<Result<_, _>>()?;
                let fd = match parts.split_last() {
                    None => open_dir(&[])?,
                    Some((name, parent)) => {
                        let pfd = open_dir(parent)?;
                        let is_dir = fstatat(&pfd, name.as_slice(), AtFlags::AT_SYMLINK_NOFOLLOW)
                            .is_ok_and(|st| {
                                SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits())
                                    == SFlag::S_IFDIR
                            });
                        if !is_dir {
                            clear(&pfd, name, &parts)?;
                            nix::sys::stat::mkdirat(
                                &pfd,
                                name.as_slice(),
                                Mode::from_bits_truncate(0o700),
                            )
                            .map_err(|e| fail(&parts, "make the directory", e))?;
                        }
                        own(&pfd, name, &meta, &parts)?;
                        open_dir(&parts)?
                    }
                };
                for have in list(&fd).map_err(|e| fail(&parts, "list", e))? {
                    if keep.contains(&have) {
                        continue;
                    }
                    let mut p = parts.clone();
                    p.push(have.clone());
                    // A mount point (the setup's, the runtime's) is not the sandbox's.
                    if !on_mount(&p) {
                        clear(&fd, &have, &p)?;
                    }
                }
                let now = fstat(&fd).map_err(|e| fail(&parts, "stat", e))?;
                if now.st_mode & 0o7777 != meta.mode & 0o7777 {
                    nix::sys::stat::fchmod(&fd, mode(&meta))
                        .map_err(|e| fail(&parts, "chmod", e))?;
                }
                // The root and the writable directories' roots are the runtime's mount
                // points: their times are not the sandbox's to keep.
                if !(parts.is_empty() || is_scratch(&parts)) {
                    self.dir_times.push((parts, meta));
                }
                Ok(())
            }
            Record::File {
                path,
                meta,
                size,
                extents,
            } => {
                let parts = components(&path)?;
                let (name, parent) = parts
                    .split_last()
                    .ok_or_else(|| (Refused::UnsafeEntry, "a file named /".to_string()))?;
                let dir = open_dir(parent)?;
                if extents.len() > MAX_EXTENTS {
                    return Err((Refused::Malformed, format!("{} extents", extents.len())));
                }
                let fd = self.new_file(&dir, name, &meta, &parts)?;
                let mut end = 0u64;
                let mut buf = vec![0u8; 256 * 1024];
                for (off, len) in extents {
                    if off < end || off.checked_add(len).is_none_or(|e| e > size) {
                        return Err((
                            Refused::Malformed,
                            format!("bad extents in {}", shown(&parts)),
                        ));
                    }
                    end = off + len;
                    let mut at = off;
                    while at < end {
                        let want = buf.len().min((end - at) as usize);
                        input.read_exact(&mut buf[..want]).map_err(|e| {
                            (Refused::Malformed, format!("the archive is cut short: {e}"))
                        })?;
                        write_all_at(&fd, &buf[..want], at)
                            .map_err(|e| fail(&parts, "write", e))?;
                        at += want as u64;
                    }
                    self.bytes += len;
                }
                nix::unistd::ftruncate(&fd, size as i64).map_err(|e| fail(&parts, "size", e))?;
                nix::sys::stat::fchmod(&fd, mode(&meta)).map_err(|e| fail(&parts, "chmod", e))?;
                let [a, m] = times(&meta);
                nix::sys::stat::futimens(&fd, &a, &m)
                    .map_err(|e| fail(&parts, "set the time of", e))
            }
            Record::Link { path, target } => {
                let parts = components(&path)?;
                let tparts = components(&target)?;
                let ((name, parent), (tname, tparent)) = parts
                    .split_last()
                    .zip(tparts.split_last())
                    .ok_or_else(|| (Refused::UnsafeEntry, "a link to or at /".to_string()))?;
                let (dir, tdir) = (open_dir(parent)?, open_dir(tparent)?);
                clear(&dir, name, &parts)?;
                nix::unistd::linkat(
                    &tdir,
                    tname.as_slice(),
                    &dir,
                    name.as_slice(),
                    AtFlags::empty(),
                )
                .map_err(|e| fail(&parts, "link", e))
            }
            Record::Symlink { path, meta, target } => {
                let parts = components(&path)?;
                let (name, parent) = parts
                    .split_last()
                    .ok_or_else(|| (Refused::UnsafeEntry, "a symlink named /".to_string()))?;
                if target.0.is_empty() || target.0.contains(&0) || target.0.len() > 4096 {
                    return Err((
                        Refused::UnsafeEntry,
                        format!("a bad link target at {}", shown(&parts)),
                    ));
                }
                let dir = open_dir(parent)?;
                // Already there (a runtime's skeleton link, say): nothing to change.
                if nix::fcntl::readlinkat(&dir, name.as_slice())
                    .is_ok_and(|t| t.as_bytes() == target.0.as_slice())
                {
                    return Ok(());
                }
                clear(&dir, name, &parts)?;
                // The target is data: made as a link, never followed here.
                nix::unistd::symlinkat(
                    <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&target.0),
                    &dir,
                    name.as_slice(),
                )
                .map_err(|e| fail(&parts, "make the symlink", e))?;
                own(&dir, name, &meta, &parts)?;
                set_mtime(&dir, name, &meta, &parts)
            }
            Record::Fifo { path, meta } => {
                let parts = components(&path)?;
                let (name, parent) = parts
                    .split_last()
                    .ok_or_else(|| (Refused::UnsafeEntry, "a fifo named /".to_string()))?;
                let dir = open_dir(parent)?;
                clear(&dir, name, &parts)?;
                nix::unistd::mkfifoat(&dir, name.as_slice(), Mode::from_bits_truncate(0o600))
                    .map_err(|e| fail(&parts, "make the fifo", e))?;
                own(&dir, name, &meta, &parts)?;
                nix::sys::stat::fchmodat(
                    &dir,
                    name.as_slice(),
                    mode(&meta),
                    nix::sys::stat::FchmodatFlags::NoFollowSymlink,
                )
                .map_err(|e| fail(&parts, "chmod", e))?;
                set_mtime(&dir, name, &meta, &parts)
            }
            Record::End { .. } => Ok(()),
        }
    }

    /// The file a record fills: the image's own file when it has the record's owner and
    /// no other name (so an owner the sandbox could not give a new file is kept), else a
    /// new one in its place.
    fn new_file(
        &self,
        dir: &OwnedFd,
        name: &[u8],
        meta: &Meta,
        parts: &[Vec<u8>],
    ) -> Result<OwnedFd, Fail> {
        let flags = OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        if let Ok(st) = fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            let regular =
                SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFREG;
            if regular && st.st_nlink == 1 && (st.st_uid, st.st_gid) == (meta.uid, meta.gid) {
                if let Ok(fd) =
                    nix::fcntl::openat(dir, name, flags | OFlag::O_NONBLOCK, Mode::empty())
                {
                    let now = fstat(&fd).map_err(|e| fail(parts, "stat", e))?;
                    if now.st_ino == st.st_ino {
                        nix::unistd::ftruncate(&fd, 0).map_err(|e| fail(parts, "truncate", e))?;
                        return Ok(fd);
                    }
                }
            }
        }
        clear(dir, name, parts)?;
        let fd = nix::fcntl::openat(
            dir,
            name,
            flags | OFlag::O_CREAT | OFlag::O_EXCL,
            Mode::from_bits_truncate(0o600),
        )
        .map_err(|e| fail(parts, "create", e))?;
        if (meta.uid, meta.gid) != (0, 0) {
            nix::unistd::fchown(
                &fd,
                Some(Uid::from_raw(meta.uid)),
                Some(Gid::from_raw(meta.gid)),
            )
            .map_err(|e| fail(parts, "give its owner to", e))?;
        }
        Ok(fd)
    }
}

fn write_all_at(fd: &OwnedFd, mut data: &[u8], mut at: u64) -> Result<(), Errno> {
    while !data.is_empty() {
        match nix::sys::uio::pwrite(fd.as_fd(), data, at as i64) {
            Ok(0) => return Err(Errno::ENOSPC),
            Ok(n) => {
                data = &data[n..];
                at += n as u64;
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_refused() {
        for bad in [&b".."[..], b".", b"", b"a/b", b"a\0b"] {
            assert_eq!(
                component(bad).unwrap_err().0,
                Refused::UnsafeEntry,
                "{bad:?}"
            );
        }
        assert!(component(&[b'x'; 256]).is_err());
        assert!(component(b"ok \x1b[31m\n").is_ok());
        for bad in [&b"a/../b"[..], b"/etc", b"a//b", b"a/"] {
            assert_eq!(
                components(&Bytes(bad.to_vec())).unwrap_err().0,
                Refused::UnsafeEntry,
                "{bad:?}"
            );
        }
        let deep = vec!["d"; MAX_DEPTH + 1].join("/");
        assert!(components(&Bytes(deep.into_bytes())).is_err());
        assert_eq!(
            components(&Bytes(Vec::new())).unwrap(),
            Vec::<Vec<u8>>::new()
        );
    }
}
