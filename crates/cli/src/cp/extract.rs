//! Writing what a sandbox sends onto this host.
//!
//! `cleanroom cp SBX:… DEST` usually runs as root next to a root server, so everything the
//! sandbox controls — names, link targets, modes, entry types, and whatever an *earlier*
//! download already placed under DEST — is hostile data. The rule:
//!
//! * DEST itself was chosen by the user and existed before the command started: it is opened
//!   the ordinary way (links in it are the user's). Nothing *beneath* it is followed: every
//!   component is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS)` plus `O_NOFOLLOW | O_DIRECTORY` from a directory fd of DEST.
//!   A link where a directory (or the destination `DEST/<base>`) would be is refused with
//!   [`ErrorCode::DestinationIsLink`] instead of being followed.
//! * Files are written to `O_CREAT | O_EXCL | O_NOFOLLOW` temporary names with a random
//!   suffix in their final directory, then `renameat`ed within that directory fd: a name
//!   planted in advance (a link, a FIFO) is never opened.
//! * Links from the sandbox are created as links (`symlinkat`) and never traversed; hard
//!   links may only point to entries this run extracted (`linkat` without following).
//! * Modes are masked to `0o777` (no setuid, setgid or sticky bit); devices and FIFOs are not
//!   recreated (counted in [`Stats::skipped`]).
//! * An entry named with `..`, an absolute name, or outside the archived base is refused with
//!   its name ([`ErrorCode::UnsafeArchiveEntry`]), never rewritten.

use cleanroom_client::ErrorCode;
use nix::errno::Errno;
use nix::fcntl::{openat2, renameat, AtFlags, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fchmod, fstatat, futimens, mkdirat, FileStat, Mode, SFlag};
use nix::sys::time::TimeSpec;
use nix::unistd::{linkat, symlinkat, unlinkat, UnlinkatFlags};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why writing onto the host was refused. The codes are stable (docs/files.md).
#[derive(Debug)]
pub enum ExtractError {
    /// A symlink is where the destination or a directory on the way would be.
    DestinationIsLink(PathBuf),
    /// An archive entry with `..`, an absolute name, a name outside the archived base, or a
    /// hard link to something this download did not extract.
    UnsafeEntry { name: String, why: &'static str },
    /// Something that is not a link is in the way (a file where a directory goes, …).
    InTheWay { path: PathBuf, what: &'static str },
    /// An operating-system error on a local path (or reading the archive).
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl ExtractError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ExtractError::DestinationIsLink(_) => ErrorCode::DestinationIsLink,
            ExtractError::UnsafeEntry { .. } => ErrorCode::UnsafeArchiveEntry,
            ExtractError::InTheWay { .. } | ExtractError::Io { .. } => ErrorCode::InvalidArgument,
        }
    }

    fn io(path: &Path, e: impl Into<std::io::Error>) -> Self {
        ExtractError::Io {
            path: path.to_path_buf(),
            error: e.into(),
        }
    }
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::DestinationIsLink(p) => write!(
                f,
                "{}: is a symbolic link; a download never writes through links under its destination (remove it or pick another destination)",
                p.display()
            ),
            ExtractError::UnsafeEntry { name, why } => {
                write!(f, "archive entry {name:?} refused: {why}")
            }
            ExtractError::InTheWay { path, what } => write!(f, "{}: {what}", path.display()),
            ExtractError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl From<ExtractError> for cleanroom_client::ApiError {
    fn from(e: ExtractError) -> Self {
        crate::render::local(e.code(), e.to_string())
    }
}

/// Resolution beneath a directory fd: no `..` out, no symlinks, no magic links. A file
/// created this way is 0600 until its mode is set.
fn beneath(flags: OFlag) -> OpenHow {
    let mode = if flags.contains(OFlag::O_CREAT) {
        Mode::from_bits_truncate(0o600)
    } else {
        Mode::empty() // openat2 refuses a mode without O_CREAT
    };
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .mode(mode)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        )
}

/// A directory the user named (DEST, or its parent): opened the ordinary way, since it
/// existed before the command started.
pub fn open_user_dir(path: &Path) -> Result<OwnedFd, ExtractError> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ExtractError::io(path, e))
}

/// What is at `name` in `dir` (not following a link); a link is refused.
pub fn no_link_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    shown: &Path,
) -> Result<Option<FileStat>, ExtractError> {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if kind(&st) == SFlag::S_IFLNK => {
            Err(ExtractError::DestinationIsLink(shown.to_path_buf()))
        }
        Ok(st) => Ok(Some(st)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(ExtractError::io(shown, e)),
    }
}

pub fn kind(st: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT
}

/// 96 unpredictable bits, hex (the kernel's random source).
fn random_suffix() -> Result<String, ExtractError> {
    let mut b = [0u8; 12];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| ExtractError::io(Path::new("/dev/urandom"), e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// A fresh temporary name next to `name`: `.NAME.cleanroom-partial-RANDOM` (NAME cut so the
/// whole stays within 255 bytes).
fn temp_name(name: &OsStr) -> Result<Vec<u8>, ExtractError> {
    let b = name.as_bytes();
    let mut t = b".".to_vec();
    t.extend_from_slice(&b[..b.len().min(160)]);
    t.extend_from_slice(b".cleanroom-partial-");
    t.extend_from_slice(random_suffix()?.as_bytes());
    Ok(t)
}

/// Create a new file for writing in `dir` under an unpredictable name, `O_EXCL |
/// O_NOFOLLOW`: returns it and its name.
pub fn create_temp(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    shown: &Path,
) -> Result<(std::fs::File, Vec<u8>), ExtractError> {
    loop {
        let tmp = temp_name(name)?;
        let how = beneath(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL);
        match openat2(dir, tmp.as_slice(), how) {
            Ok(fd) => return Ok((std::fs::File::from(fd), tmp)),
            // 96 random bits taken already: draw again.
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(ExtractError::io(shown, e)),
        }
    }
}

/// Rename the temporary `tmp` over `name`, both in `dir` (a link at `name` is replaced, not
/// followed; a directory there is refused). The temporary is removed on failure.
pub fn commit(
    dir: BorrowedFd<'_>,
    tmp: &[u8],
    name: &OsStr,
    shown: &Path,
) -> Result<(), ExtractError> {
    let done = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if kind(&st) == SFlag::S_IFDIR => Err(ExtractError::InTheWay {
            path: shown.to_path_buf(),
            what: "a directory is in the way",
        }),
        _ => renameat(dir, tmp, dir, name).map_err(|e| ExtractError::io(shown, e)),
    };
    if done.is_err() {
        let _ = unlinkat(dir, tmp, UnlinkatFlags::NoRemoveDir);
    }
    done
}

/// What an extraction did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub entries: u64,
    /// Devices and FIFOs: not recreated.
    pub skipped: u64,
}

/// The components of an archive name: `.` and empty ones dropped; `..`, an absolute name or
/// a NUL refused.
fn components(name: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    if name.starts_with(b"/") {
        return Err("absolute names are not extracted");
    }
    let mut out = Vec::new();
    for c in name.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => return Err("names with `..` are not extracted"),
            c if c.contains(&0) => return Err("a NUL byte in the name"),
            c => out.push(c.to_vec()),
        }
    }
    Ok(out)
}

/// Extracts one tar stream beneath the directory `root`.
pub struct Extractor {
    root: OwnedFd,
    /// How `root` is shown in messages.
    shown: PathBuf,
    /// Every entry name must start with this component, which is replaced by `into`.
    strip: Option<Vec<u8>>,
    into: Vec<Vec<u8>>,
    /// The last directory opened (entries come in walk order).
    cache: Option<(Vec<Vec<u8>>, OwnedFd)>,
    /// Non-directories extracted in this run: the only targets hard links may have.
    extracted: HashSet<Vec<Vec<u8>>>,
    stats: Stats,
}

impl Extractor {
    /// Entries named `strip/REST` (or, without `strip`, `REST`) land at `root/into/REST`.
    pub fn new(root: OwnedFd, shown: PathBuf, strip: Option<&[u8]>, into: Option<&[u8]>) -> Self {
        Extractor {
            root,
            shown,
            strip: strip.map(<[u8]>::to_vec),
            into: into.map(|i| vec![i.to_vec()]).unwrap_or_default(),
            cache: None,
            extracted: HashSet::new(),
            stats: Stats::default(),
        }
    }

    fn show(&self, comps: &[Vec<u8>]) -> PathBuf {
        let mut p = self.shown.clone();
        for c in comps {
            p.push(OsStr::from_bytes(c));
        }
        p
    }

    /// Where an archive name lands, relative to `root`.
    fn map(&self, name: &[u8]) -> Result<Vec<Vec<u8>>, ExtractError> {
        let unsafe_entry = |why| ExtractError::UnsafeEntry {
            name: String::from_utf8_lossy(name).into_owned(),
            why,
        };
        let mut comps = components(name).map_err(unsafe_entry)?;
        if let Some(base) = &self.strip {
            if comps.first() != Some(base) {
                return Err(unsafe_entry("outside the directory that was archived"));
            }
            comps.remove(0);
        }
        let mut out = self.into.clone();
        out.extend(comps);
        Ok(out)
    }

    /// The directory `comps` beneath `root`, created (0755 before the umask) where missing,
    /// never through a link.
    fn dir(&mut self, comps: &[Vec<u8>]) -> Result<BorrowedFd<'_>, ExtractError> {
        if comps.is_empty() {
            return Ok(self.root.as_fd());
        }
        if !matches!(&self.cache, Some((c, _)) if c.as_slice() == comps) {
            let mut cur: Option<OwnedFd> = None;
            for (i, c) in comps.iter().enumerate() {
                let shown = self.show(&comps[..=i]);
                let at = cur.as_ref().map_or(self.root.as_fd(), |f| f.as_fd());
                let how = || beneath(OFlag::O_RDONLY | OFlag::O_DIRECTORY);
                let fd = match openat2(at, c.as_slice(), how()) {
                    Err(Errno::ENOENT) => {
                        match mkdirat(at, c.as_slice(), Mode::from_bits_truncate(0o755)) {
                            Ok(()) | Err(Errno::EEXIST) => {}
                            Err(e) => return Err(ExtractError::io(&shown, e)),
                        }
                        openat2(at, c.as_slice(), how())
                    }
                    r => r,
                };
                cur = Some(match fd {
                    Ok(fd) => fd,
                    // A link is refused (ELOOP, or ENOTDIR as O_DIRECTORY sees it first).
                    Err(Errno::ELOOP | Errno::ENOTDIR) => {
                        no_link_at(at, OsStr::from_bytes(c), &shown)?;
                        return Err(ExtractError::InTheWay {
                            path: shown,
                            what: "not a directory",
                        });
                    }
                    Err(e) => return Err(ExtractError::io(&shown, e)),
                });
            }
            self.cache = cur.map(|fd| (comps.to_vec(), fd));
        }
        match &self.cache {
            Some((_, fd)) => Ok(fd.as_fd()),
            None => Ok(self.root.as_fd()),
        }
    }

    /// Extract every entry of `archive`.
    pub fn run(mut self, archive: impl Read) -> Result<Stats, ExtractError> {
        let mut a = tar::Archive::new(archive);
        let read_err = |e: std::io::Error| ExtractError::io(Path::new("archive"), e);
        for entry in a.entries().map_err(read_err)? {
            let entry = entry.map_err(read_err)?;
            self.entry(entry)?;
        }
        Ok(self.stats)
    }

    fn entry<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), ExtractError> {
        use tar::EntryType as T;
        let ty = entry.header().entry_type();
        match ty {
            T::Regular | T::Continuous | T::GNUSparse | T::Directory | T::Symlink | T::Link => {}
            T::Char | T::Block | T::Fifo => {
                self.stats.skipped += 1;
                return Ok(());
            }
            // Metadata-only records (global pax headers, …).
            _ => return Ok(()),
        }
        let raw = entry.path_bytes().into_owned();
        let comps = self.map(&raw)?;
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        let Some((name, parent)) = comps.split_last() else {
            // The destination directory itself.
            if ty == T::Directory {
                return Ok(());
            }
            return Err(ExtractError::UnsafeEntry {
                name: String::from_utf8_lossy(&raw).into_owned(),
                why: "not a directory, where the destination directory is",
            });
        };
        let name = OsStr::from_bytes(name);
        let shown = self.show(&comps);
        // A hard link's target: an entry this run extracted, resolved beneath root.
        let link_src = if ty == T::Link {
            let target = entry.link_name_bytes().map(|t| t.into_owned());
            let Some(target) = target else {
                return Err(ExtractError::UnsafeEntry {
                    name: String::from_utf8_lossy(&raw).into_owned(),
                    why: "a hard link without a target",
                });
            };
            let tcomps = self.map(&target)?;
            if !self.extracted.contains(&tcomps) {
                return Err(ExtractError::UnsafeEntry {
                    name: String::from_utf8_lossy(&raw).into_owned(),
                    why: "a hard link to something this download did not extract",
                });
            }
            Some(tcomps)
        } else {
            None
        };
        let src_dir = match &link_src {
            Some(t) => Some(self.open_existing_dir(&t[..t.len() - 1])?),
            None => None,
        };
        let dir = self.dir(parent)?;
        match ty {
            T::Directory => match no_link_at(dir, name, &shown)? {
                Some(st) if kind(&st) == SFlag::S_IFDIR => {}
                Some(_) => {
                    return Err(ExtractError::InTheWay {
                        path: shown,
                        what: "not a directory",
                    })
                }
                None => mkdirat(dir, name, Mode::from_bits_truncate(mode | 0o700))
                    .map_err(|e| ExtractError::io(&shown, e))?,
            },
            T::Symlink => {
                let Some(target) = entry.link_name_bytes().map(|t| t.into_owned()) else {
                    return Err(ExtractError::UnsafeEntry {
                        name: String::from_utf8_lossy(&raw).into_owned(),
                        why: "a symbolic link without a target",
                    });
                };
                let tmp = temp_name(name)?;
                symlinkat(target.as_slice(), dir, tmp.as_slice())
                    .map_err(|e| ExtractError::io(&shown, e))?;
                commit(dir, &tmp, name, &shown)?;
            }
            T::Link => {
                let (Some(src_dir), Some(t)) = (&src_dir, &link_src) else {
                    return Ok(());
                };
                let src_name = t.last().map(Vec::as_slice).unwrap_or_default();
                let tmp = temp_name(name)?;
                // No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink itself.
                linkat(
                    src_dir.as_fd(),
                    src_name,
                    dir,
                    tmp.as_slice(),
                    AtFlags::empty(),
                )
                .map_err(|e| ExtractError::io(&shown, e))?;
                commit(dir, &tmp, name, &shown)?;
            }
            _ => {
                let (mut f, tmp) = create_temp(dir, name, &shown)?;
                let written = std::io::copy(&mut entry, &mut f)
                    .map_err(|e| ExtractError::io(&shown, e))
                    .and_then(|_| {
                        fchmod(&f, Mode::from_bits_truncate(mode))
                            .map_err(|e| ExtractError::io(&shown, e))
                    });
                if let Ok(mtime) = entry.header().mtime() {
                    // Best effort, like `tar`: the time is metadata, not a refusal.
                    let t = TimeSpec::new(i64::try_from(mtime).unwrap_or(0), 0);
                    let _ = futimens(&f, &TimeSpec::UTIME_OMIT, &t);
                }
                drop(f);
                if let Err(e) = written {
                    let _ = unlinkat(dir, tmp.as_slice(), UnlinkatFlags::NoRemoveDir);
                    return Err(e);
                }
                commit(dir, &tmp, name, &shown)?;
            }
        }
        self.stats.entries += 1;
        if ty != T::Directory {
            self.extracted.insert(comps);
        }
        Ok(())
    }

    /// A directory that must already exist beneath root (no creation, no links).
    fn open_existing_dir(&self, comps: &[Vec<u8>]) -> Result<OwnedFd, ExtractError> {
        let rel: PathBuf = comps.iter().map(|c| OsStr::from_bytes(c)).collect();
        let rel = if comps.is_empty() {
            PathBuf::from(".")
        } else {
            rel
        };
        let shown = self.show(comps);
        openat2(
            self.root.as_fd(),
            rel.as_path(),
            beneath(OFlag::O_PATH | OFlag::O_DIRECTORY),
        )
        .map_err(|e| match e {
            Errno::ELOOP | Errno::ENOTDIR => ExtractError::InTheWay {
                path: shown,
                what: "not a directory (or a link)",
            },
            e => ExtractError::io(&shown, e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_refused_not_rewritten() {
        assert_eq!(
            components(b"a/./b//c/").unwrap(),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
        assert!(components(b"/etc/passwd").is_err());
        assert!(components(b"a/../../x").is_err());
        assert!(components(b"..").is_err());
        assert!(components(b"./").unwrap().is_empty());
    }

    /// A tar stream written header by header, names as given (the tar crate's own setters
    /// refuse `..` and absolute names, a sandbox's stream need not).
    fn tar_of(entries: &[(&str, tar::EntryType, &str, u32)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, ty, data, mode) in entries {
            let mut h = tar::Header::new_old();
            h.set_entry_type(*ty);
            h.set_mode(*mode);
            h.set_mtime(1_000_000_000);
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            let body: &[u8] = match ty {
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    h.as_old_mut().linkname[..data.len()].copy_from_slice(data.as_bytes());
                    b""
                }
                _ => data.as_bytes(),
            };
            h.set_size(body.len() as u64);
            h.set_cksum();
            b.append(&h, body).expect("append");
        }
        b.into_inner().expect("tar")
    }

    fn run(dest: &Path, tar: &[u8]) -> Result<Stats, ExtractError> {
        let root = open_user_dir(dest)?;
        Extractor::new(root, dest.to_path_buf(), Some(b"d"), Some(b"d")).run(tar)
    }

    #[test]
    fn links_are_created_never_followed() {
        use tar::EntryType as T;
        let tmp = tempfile::tempdir().expect("tempdir");
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).expect("mkdir");
        let dest = tmp.path().join("dest");
        std::fs::create_dir(&dest).expect("mkdir");
        let first = tar_of(&[
            ("d", T::Directory, "", 0o755),
            (
                "d/link",
                T::Symlink,
                outside.to_str().expect("utf-8"),
                0o777,
            ),
            ("d/suid", T::Regular, "x", 0o6755),
            ("d/fifo", T::Fifo, "", 0o644),
            ("d/hard", T::Link, "d/suid", 0o644),
        ]);
        let st = run(&dest, &first).expect("first");
        assert_eq!(st.skipped, 1);
        assert!(!dest.join("d/fifo").exists());
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(dest.join("d/suid")).expect("suid");
        assert_eq!(m.permissions().mode() & 0o7777, 0o755);
        use std::os::unix::fs::MetadataExt;
        assert_eq!(m.mtime(), 1_000_000_000);
        // The second archive has a real directory where the link now is.
        let second = tar_of(&[("d/link/pwned", T::Regular, "bytes", 0o644)]);
        let e = run(&dest, &second).expect_err("through a link");
        assert_eq!(e.code(), ErrorCode::DestinationIsLink, "{e}");
        assert_eq!(std::fs::read_dir(&outside).expect("ls").count(), 0);
        for bad in ["../x", "/abs", "e/x"] {
            let t = tar_of(&[(bad, T::Regular, "x", 0o644)]);
            let e = run(&dest, &t).expect_err(bad);
            assert_eq!(e.code(), ErrorCode::UnsafeArchiveEntry, "{e}");
        }
        let t = tar_of(&[("d/h2", T::Link, "/etc/passwd", 0o644)]);
        assert_eq!(
            run(&dest, &t).expect_err("link").code(),
            ErrorCode::UnsafeArchiveEntry
        );
    }
}
