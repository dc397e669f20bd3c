//! The capture, inside the sandbox: walk `/` one directory descriptor at a time and write
//! what the sandbox changed as an archive on stdout ([`super`] for the format and what
//! "changed" means). Never follows a symlink (every open is `O_NOFOLLOW` relative to a
//! directory descriptor and checked against the `fstatat` that chose it), never enters
//! another mount (an entry on another device than its directory is skipped, except the
//! sandbox's `/tmp`, `/root`, `/workspace`), skips sockets and devices.

use super::{write_header, Answer, Bytes, Meta, Record, Refused, MAX_DEPTH, MAX_ENTRIES};
use super::{MAGIC, MAX_EXTENTS};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

struct Walk<W: Write> {
    out: W,
    /// Mount points of the helper's view ([`super::mount_points`]).
    mounts: &'static std::collections::HashSet<Vec<u8>>,
    /// Entries whose inode changed at or after this (s, ns) are the sandbox's.
    since: (i64, i64),
    entries: u64,
    bytes: u64,
    /// First path of each multiply-linked file, by (device, inode).
    links: HashMap<(u64, u64), Vec<u8>>,
}

/// Capture `/` to stdout.
pub fn capture(since: (i64, i64)) -> Answer {
    let out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mounts = match super::mount_points() {
        Ok(m) => m,
        Err(message) => {
            return Answer::Refused {
                kind: Refused::Failed,
                message,
            }
        }
    };
    let mut w = Walk {
        out,
        mounts,
        since,
        entries: 0,
        bytes: 0,
        links: HashMap::new(),
    };
    let result = (|| -> Result<(), Fail> {
        w.out.write_all(MAGIC).map_err(gone)?;
        let root = nix::fcntl::open(
            "/",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| (Refused::Failed, format!("open /: {e}")))?;
        w.dir(root, Vec::new(), 0, false)?;
        let end = Record::End { entries: w.entries };
        write_header(&mut w.out, &end).map_err(gone)?;
        w.out.flush().map_err(gone)
    })();
    match result {
        Ok(()) => Answer::Done {
            entries: w.entries,
            bytes: w.bytes,
        },
        Err((kind, message)) => Answer::Refused { kind, message },
    }
}

type Fail = (Refused, String);

fn gone(e: std::io::Error) -> Fail {
    (Refused::Failed, format!("the server stopped reading: {e}"))
}

fn meta(st: &FileStat) -> Meta {
    Meta {
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        mtime_s: st.st_mtime,
        mtime_ns: st.st_mtime_nsec,
    }
}

fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = parent.to_vec();
    if !p.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

impl<W: Write> Walk<W> {
    fn changed(&self, st: &FileStat, whole: bool) -> bool {
        whole || (st.st_ctime, st.st_ctime_nsec) >= self.since
    }

    fn count(&mut self) -> Result<(), Fail> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err((
                Refused::NoSpace,
                format!("more than {MAX_ENTRIES} entries to capture"),
            ));
        }
        Ok(())
    }

    /// Capture the directory `fd` at `path` (`whole`: take everything under it).
    fn dir(&mut self, fd: OwnedFd, path: Vec<u8>, depth: usize, whole: bool) -> Result<(), Fail> {
        if depth > MAX_DEPTH {
            return Err((
                Refused::UnsafeEntry,
                format!("deeper than {MAX_DEPTH} directories"),
            ));
        }
        let st = fstat(&fd).map_err(|e| io(&path, e))?;
        let names = list(&fd).map_err(|e| io(&path, e))?;
        if self.changed(&st, whole) {
            self.count()?;
            let rec = Record::Dir {
                path: Bytes(path.clone()),
                meta: meta(&st),
                names: names.iter().cloned().map(Bytes).collect(),
            };
            write_header(&mut self.out, &rec).map_err(gone)?;
        }
        for name in names {
            let child = match fstatat(&fd, name.as_slice(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(c) => c,
                // Removed meanwhile (the sandbox runs on during the capture).
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(io(&join(&path, &name), e)),
            };
            let p = join(&path, &name);
            let top_scratch = depth == 0 && super::is_scratch(&name);
            // Another mount: the setup's, the host view's, a pseudo filesystem.
            if self.mounts.contains(&p) && !top_scratch {
                continue;
            }
            let whole = whole || top_scratch;
            match SFlag::from_bits_truncate(child.st_mode & SFlag::S_IFMT.bits()) {
                SFlag::S_IFDIR => {
                    let sub = match open_at(&fd, &name, OFlag::O_DIRECTORY, &child) {
                        Ok(s) => s,
                        Err(Errno::ENOENT) => continue,
                        Err(e) => return Err(io(&p, e)),
                    };
                    self.dir(sub, p, depth + 1, whole)?;
                }
                _ if !self.changed(&child, whole) => {}
                SFlag::S_IFREG => self.file(&fd, &name, p, &child)?,
                SFlag::S_IFLNK => {
                    let target = match nix::fcntl::readlinkat(&fd, name.as_slice()) {
                        Ok(t) => t.as_bytes().to_vec(),
                        Err(Errno::ENOENT) => continue,
                        Err(e) => return Err(io(&p, e)),
                    };
                    self.count()?;
                    let rec = Record::Symlink {
                        path: Bytes(p),
                        meta: meta(&child),
                        target: Bytes(target),
                    };
                    write_header(&mut self.out, &rec).map_err(gone)?;
                }
                SFlag::S_IFIFO => {
                    self.count()?;
                    let rec = Record::Fifo {
                        path: Bytes(p),
                        meta: meta(&child),
                    };
                    write_header(&mut self.out, &rec).map_err(gone)?;
                }
                // Sockets and devices are not state (as under the linux runtime).
                _ => {}
            }
        }
        Ok(())
    }

    /// One regular file: a link record for a later name of a multiply-linked file, else
    /// its header (data extents from `SEEK_DATA`/`SEEK_HOLE`) and the extents' bytes.
    fn file(
        &mut self,
        dir: &OwnedFd,
        name: &[u8],
        path: Vec<u8>,
        st: &FileStat,
    ) -> Result<(), Fail> {
        #[allow(clippy::unnecessary_cast)]
        let key = (st.st_dev as u64, st.st_ino as u64);
        if st.st_nlink > 1 {
            if let Some(first) = self.links.get(&key).cloned() {
                self.count()?;
                let rec = Record::Link {
                    path: Bytes(path),
                    target: Bytes(first),
                };
                return write_header(&mut self.out, &rec).map_err(gone);
            }
        }
        let fd = match open_at(dir, name, OFlag::O_NONBLOCK, st) {
            Ok(f) => f,
            Err(Errno::ENOENT) => return Ok(()),
            Err(e) => return Err(io(&path, e)),
        };
        // The size now, read once: the extents and the bytes follow from it.
        let size = fstat(&fd).map_err(|e| io(&path, e))?.st_size.max(0) as u64;
        let mut extents = extents(&fd, size).map_err(|e| io(&path, e))?;
        // gVisor's filesystems answer SEEK_DATA with the whole file: find the holes by
        // their zeros instead (a hole stays a hole in the restore, as under linux).
        if size >= ZERO_SCAN_FROM && extents == [(0, size)] {
            extents = nonzero_extents(&fd, size).map_err(|e| io(&path, e))?;
        }
        self.count()?;
        let rec = Record::File {
            path: Bytes(path.clone()),
            meta: meta(st),
            size,
            extents: extents.clone(),
        };
        write_header(&mut self.out, &rec).map_err(gone)?;
        let mut buf = vec![0u8; 256 * 1024];
        for (off, len) in extents {
            let (mut at, end) = (off, off + len);
            while at < end {
                let want = buf.len().min((end - at) as usize);
                let n = match nix::sys::uio::pread(&fd, &mut buf[..want], at as i64) {
                    Ok(n) => n,
                    Err(Errno::EINTR) => continue,
                    Err(e) => return Err(io(&path, e)),
                };
                // Shrunk meanwhile (the sandbox runs on): zeros keep the framing.
                if n == 0 {
                    buf[..want].fill(0);
                }
                let n = if n == 0 { want } else { n };
                self.out.write_all(&buf[..n]).map_err(gone)?;
                at += n as u64;
            }
            self.bytes += len;
        }
        if st.st_nlink > 1 {
            self.links.insert(key, path);
        }
        Ok(())
    }
}

fn io(path: &[u8], e: Errno) -> Fail {
    let shown = String::from_utf8_lossy(path);
    (Refused::Failed, format!("/{shown}: {e}"))
}

/// Open `name` in `dir` without following a link, and only if it is still the inode
/// `st` described.
fn open_at(dir: &OwnedFd, name: &[u8], flags: OFlag, st: &FileStat) -> Result<OwnedFd, Errno> {
    let fd = nix::fcntl::openat(
        dir,
        name,
        flags | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let now = fstat(&fd)?;
    // Replaced since the stat that chose it (the sandbox runs on): not what was listed.
    if now.st_ino != st.st_ino || now.st_dev != st.st_dev {
        return Err(Errno::ESTALE);
    }
    Ok(fd)
}

/// The names in a directory (not `.`, `..`), sorted so the same tree gives the same bytes.
pub fn list(fd: &OwnedFd) -> Result<Vec<Vec<u8>>, Errno> {
    let dup = fd.as_fd().try_clone_to_owned().map_err(|_| Errno::EMFILE)?;
    let mut dir = nix::dir::Dir::from_fd(dup)?;
    let mut names = Vec::new();
    for e in dir.iter() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    names.sort();
    Ok(names)
}

/// Files at least this large are scanned for zero blocks when SEEK_DATA finds no hole.
const ZERO_SCAN_FROM: u64 = 1 << 20;
/// The granularity of that scan.
const ZERO_BLOCK: usize = 64 * 1024;

/// The extents of `fd` that are not all zeros, in [`ZERO_BLOCK`]s (merged, ascending,
/// at most [`MAX_EXTENTS`]: past it, the rest is one extent).
fn nonzero_extents(fd: &OwnedFd, size: u64) -> Result<Vec<(u64, u64)>, Errno> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut buf = vec![0u8; ZERO_BLOCK];
    let mut at = 0u64;
    while at < size {
        let want = buf.len().min((size - at) as usize);
        let n = match nix::sys::uio::pread(fd, &mut buf[..want], at as i64) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e),
        };
        if buf[..n].iter().any(|b| *b != 0) {
            let len = out.len();
            match out.last_mut() {
                Some((o, l)) if *o + *l == at => *l += n as u64,
                Some((o, l)) if len >= MAX_EXTENTS => {
                    *l = size - *o;
                    return Ok(out);
                }
                _ => out.push((at, n as u64)),
            }
        }
        at += n as u64;
    }
    Ok(out)
}

/// Data extents of a file of `size` bytes; where `SEEK_DATA` is not supported, the whole
/// file is one extent.
fn extents(fd: &OwnedFd, size: u64) -> Result<Vec<(u64, u64)>, Errno> {
    use nix::unistd::{lseek, Whence};
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < size {
        let data = match lseek(fd, at as i64, Whence::SeekData) {
            Ok(d) => d as u64,
            Err(Errno::ENXIO) => break,
            Err(Errno::EINVAL) if out.is_empty() => return Ok(vec![(0, size)]),
            Err(e) => return Err(e),
        };
        if data >= size {
            break;
        }
        let hole = match lseek(fd, data as i64, Whence::SeekHole) {
            Ok(h) => (h as u64).min(size),
            Err(e) => return Err(e),
        };
        if hole <= data {
            return Err(Errno::EIO);
        }
        out.push((data, hole - data));
        at = hole;
        if out.len() > MAX_EXTENTS {
            // Too fragmented to list: the rest in one piece (its holes read as zeros).
            out.pop();
            out.push((data, size - data));
            break;
        }
    }
    Ok(out)
}
