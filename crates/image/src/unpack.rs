//! Unpack OCI layers (tar, optionally gzip- or zstd-compressed) into a root directory,
//! safely, as host root.
//!
//! The server runs as root and layers are hostile input, so nothing here trusts a path:
//!
//! * entry paths are normalized; absolute paths and `..` components are refused;
//! * every parent directory is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//!   relative to the root, and the entry itself is created with `*at` calls on that
//!   directory fd (`O_NOFOLLOW`, `O_EXCL`), so a symlink planted by an earlier entry or layer
//!   is never followed — it can't redirect a write outside the root;
//! * hard links must point beneath the root as well (same resolution rules);
//! * device nodes and FIFOs are skipped (never created), setuid/setgid bits are stripped;
//! * ownership is kept within the 0..65535 range a sandbox's user namespace maps (anything
//!   else becomes 0) and only applied when we run as root;
//! * OCI whiteouts: `.wh.NAME` deletes NAME from lower layers, `.wh..wh..opq` empties its
//!   directory of everything lower layers put there.

use crate::ImageError;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fchmodat, FchmodatFlags, Mode};
use nix::unistd::{fchownat, Gid, Uid};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// Whiteout prefix and opaque-directory marker of the OCI image spec.
const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";
/// Ids outside what a sandbox user namespace maps would show as `nobody`.
const MAX_ID: u64 = 65_535;

/// What unpacking may still consume of one image: decompressed tar bytes and entries.
/// Bytes are counted on the decompressed stream as it is read — headers, padding and the
/// data of every entry, created or skipped — so no header (a lying size, a sparse map, a
/// long-name extension) can make more reach the disk than was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackBudget {
    pub bytes_left: u64,
    pub entries_left: u64,
    /// Decompressed bytes read so far (over all layers).
    pub used_bytes: u64,
}

impl UnpackBudget {
    pub fn new(bytes: u64, entries: u64) -> UnpackBudget {
        UnpackBudget {
            bytes_left: bytes,
            entries_left: entries,
            used_bytes: 0,
        }
    }
}

/// Counts what is read through it and fails the read once more than `limit` was read.
struct Counting<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
    limit: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let total = self.read.get() + n as u64;
        self.read.set(total);
        if total > self.limit {
            return Err(std::io::Error::other(
                "decompressed size over the image cap",
            ));
        }
        Ok(n)
    }
}

/// What one layer did that the caller may want to report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LayerReport {
    pub entries: u64,
    /// Entries skipped as unsafe (device nodes, FIFOs, unknown types).
    pub skipped: Vec<String>,
}

fn bad(msg: impl Into<String>) -> ImageError {
    ImageError::UnsafeLayer(msg.into())
}

fn io(ctx: impl std::fmt::Display, e: impl Into<std::io::Error>) -> ImageError {
    ImageError::Io(format!("{ctx}: {}", e.into()))
}

/// Open a (possibly compressed) layer file for reading as a tar stream, by magic bytes.
pub fn decompressed(path: &Path) -> Result<Box<dyn Read>, ImageError> {
    let mut f = File::open(path).map_err(|e| io(format!("open {}", path.display()), e))?;
    let mut magic = [0u8; 4];
    let n = f.read(&mut magic).map_err(|e| io("read layer", e))?;
    drop(f);
    let f = BufReader::new(File::open(path).map_err(|e| io("open layer", e))?);
    Ok(match &magic[..n] {
        [0x1f, 0x8b, ..] => Box::new(flate2::read::GzDecoder::new(f)),
        [0x28, 0xb5, 0x2f, 0xfd] => {
            Box::new(zstd::stream::read::Decoder::new(f).map_err(|e| io("zstd", e))?)
        }
        _ => Box::new(f),
    })
}

/// Normalize a tar path: relative components only. `None` means the root itself.
fn clean(path: &Path) -> Result<Option<PathBuf>, ImageError> {
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
fn open_dir(root: &File, rel: &Path) -> Result<OwnedFd, ImageError> {
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
fn ensure_dir(root: &File, rel: &Path, as_root: bool) -> Result<OwnedFd, ImageError> {
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
fn remove_entry(dir: &OwnedFd, name: &std::ffi::OsStr) -> Result<(), ImageError> {
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
fn clear_dir(dir: &OwnedFd, keep: &HashSet<PathBuf>, prefix: &Path) -> Result<(), ImageError> {
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

/// Apply one layer to `root`, charging what it reads and creates to `budget`
/// (`image_too_large` once it is exceeded). `as_root` applies ownership (only meaningful
/// for root).
pub fn apply_layer(
    root: &Path,
    layer: &Path,
    as_root: bool,
    budget: &mut UnpackBudget,
) -> Result<LayerReport, ImageError> {
    let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
    let counting = Counting {
        inner: decompressed(layer)?,
        read: read.clone(),
        limit: budget.bytes_left,
    };
    let entries_left = budget.entries_left;
    let result = apply_entries(root, counting, as_root, entries_left);
    let used = read.get();
    budget.used_bytes += used.min(budget.bytes_left);
    if used > budget.bytes_left {
        budget.bytes_left = 0;
        return Err(ImageError::TooLarge(format!(
            "it unpacks to more than the {} bytes allowed",
            budget.used_bytes
        )));
    }
    budget.bytes_left -= used;
    let report = result?;
    budget.entries_left = budget.entries_left.saturating_sub(report.entries);
    Ok(report)
}

fn apply_entries(
    root: &Path,
    stream: impl Read,
    as_root: bool,
    entries_left: u64,
) -> Result<LayerReport, ImageError> {
    let root_dir = File::open(root).map_err(|e| io(format!("open {}", root.display()), e))?;
    let mut archive = tar::Archive::new(stream);
    let mut report = LayerReport::default();
    // Paths this layer created: an opaque marker must not delete them.
    let mut created: HashSet<PathBuf> = HashSet::new();
    let entries = archive
        .entries()
        .map_err(|e| bad(format!("not a tar: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("corrupt tar: {e}")))?;
        report.entries += 1;
        if report.entries > entries_left {
            return Err(ImageError::TooLarge(format!(
                "it has more tar entries than the cap allows ({entries_left} were left)"
            )));
        }
        let raw = entry
            .path()
            .map_err(|e| bad(format!("bad entry path: {e}")))?
            .into_owned();
        let Some(rel) = clean(&raw)? else {
            continue; // "./" itself
        };
        let (parent_rel, name) = match (rel.parent(), rel.file_name()) {
            (Some(p), Some(n)) => (p.to_path_buf(), n.to_os_string()),
            _ => return Err(bad(format!("bad entry path {}", raw.display()))),
        };
        let name_str = name.to_string_lossy();
        // Whiteouts first: they name lower-layer content and create nothing.
        if name_str == OPAQUE {
            let dir = ensure_dir(&root_dir, &parent_rel, as_root)?;
            clear_dir(&dir, &created, &parent_rel)?;
            continue;
        }
        if let Some(target) = name_str.strip_prefix(WHITEOUT) {
            if target.is_empty() || target == "." || target == ".." {
                return Err(bad(format!("bad whiteout {}", raw.display())));
            }
            if let Ok(dir) = open_dir(&root_dir, &parent_rel) {
                remove_entry(&dir, std::ffi::OsStr::new(target))?;
            }
            continue;
        }
        let header = entry.header();
        let kind = header.entry_type();
        let mode = header.mode().unwrap_or(0o644) & 0o1777; // setuid/setgid stripped
        let uid = header.uid().ok().filter(|&u| u <= MAX_ID).unwrap_or(0) as u32;
        let gid = header.gid().ok().filter(|&g| g <= MAX_ID).unwrap_or(0) as u32;
        let link = entry
            .link_name()
            .map_err(|e| bad(format!("bad link name: {e}")))?
            .map(|l| l.into_owned());
        let parent = ensure_dir(&root_dir, &parent_rel, as_root)?;
        use tar::EntryType as T;
        match kind {
            T::Directory => {
                match nix::sys::stat::mkdirat(
                    parent.as_fd(),
                    name.as_os_str(),
                    Mode::from_bits_truncate(0o755),
                ) {
                    Ok(()) => {}
                    Err(nix::errno::Errno::EEXIST) => {
                        // Keep an existing directory (its content merges); replace anything else.
                        if open_dir(&root_dir, &rel).is_err() {
                            remove_entry(&parent, &name)?;
                            nix::sys::stat::mkdirat(
                                parent.as_fd(),
                                name.as_os_str(),
                                Mode::from_bits_truncate(0o755),
                            )
                            .map_err(|e| io(format!("mkdir {}", rel.display()), e))?;
                        }
                    }
                    Err(e) => return Err(io(format!("mkdir {}", rel.display()), e)),
                }
            }
            T::Regular | T::Continuous => {
                remove_if_not_dir(&root_dir, &parent, &rel, &name)?;
                let how = OpenHow::new()
                    .flags(
                        OFlag::O_WRONLY
                            | OFlag::O_CREAT
                            | OFlag::O_EXCL
                            | OFlag::O_NOFOLLOW
                            | OFlag::O_CLOEXEC,
                    )
                    .mode(Mode::from_bits_truncate(0o600))
                    .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
                let fd = openat2(parent.as_fd(), name.as_os_str(), how)
                    .map_err(|e| io(format!("create {}", rel.display()), e))?;
                let mut f = File::from(fd);
                std::io::copy(&mut entry, &mut f)
                    .map_err(|e| io(format!("write {}", rel.display()), e))?;
            }
            T::Symlink => {
                let target =
                    link.ok_or_else(|| bad(format!("symlink {} without target", rel.display())))?;
                remove_if_not_dir(&root_dir, &parent, &rel, &name)?;
                // The target is stored, never resolved here: it only means something inside
                // the sandbox's own mount namespace.
                nix::unistd::symlinkat(target.as_path(), parent.as_fd(), name.as_os_str())
                    .map_err(|e| io(format!("symlink {}", rel.display()), e))?;
            }
            T::Link => {
                let target =
                    link.ok_or_else(|| bad(format!("hard link {} without target", rel.display())))?;
                let target = clean(&target)?.ok_or_else(|| bad("hard link to the root"))?;
                let (tp, tn) = match (target.parent(), target.file_name()) {
                    (Some(p), Some(n)) => (p.to_path_buf(), n.to_os_string()),
                    _ => return Err(bad(format!("bad hard link target {}", target.display()))),
                };
                let tdir = open_dir(&root_dir, &tp)?;
                remove_if_not_dir(&root_dir, &parent, &rel, &name)?;
                nix::unistd::linkat(
                    tdir.as_fd(),
                    tn.as_os_str(),
                    parent.as_fd(),
                    name.as_os_str(),
                    nix::fcntl::AtFlags::empty(),
                )
                .map_err(|e| {
                    bad(format!(
                        "hard link {} -> {}: {e}",
                        rel.display(),
                        target.display()
                    ))
                })?;
                created.insert(rel);
                continue; // a hard link shares the target's mode and owner
            }
            T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink => continue,
            // Device nodes, FIFOs, sparse/unknown types: never created.
            _ => {
                report.skipped.push(rel.display().to_string());
                continue;
            }
        }
        if as_root {
            fchownat(
                parent.as_fd(),
                name.as_os_str(),
                Some(Uid::from_raw(uid)),
                Some(Gid::from_raw(gid)),
                nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .map_err(|e| io(format!("chown {}", rel.display()), e))?;
        }
        if kind != T::Symlink {
            // After chown (which clears setuid bits anyway); directories stay traversable
            // for their owner so later entries can be written by a non-root server.
            let mode = if kind == T::Directory && !as_root {
                mode | 0o700
            } else {
                mode
            };
            fchmodat(
                parent.as_fd(),
                name.as_os_str(),
                Mode::from_bits_truncate(mode),
                FchmodatFlags::NoFollowSymlink,
            )
            .or_else(|e| {
                // Older kernels refuse AT_SYMLINK_NOFOLLOW for fchmodat; the entry is
                // known not to be a symlink here (we just created it with O_NOFOLLOW).
                if e == nix::errno::Errno::EOPNOTSUPP || e == nix::errno::Errno::ENOSYS {
                    fchmodat(
                        parent.as_fd(),
                        name.as_os_str(),
                        Mode::from_bits_truncate(mode),
                        FchmodatFlags::FollowSymlink,
                    )
                } else {
                    Err(e)
                }
            })
            .map_err(|e| io(format!("chmod {}", rel.display()), e))?;
        }
        created.insert(rel);
    }
    let _ = root_dir.as_raw_fd();
    Ok(report)
}

/// Before creating a non-directory at `rel`: remove whatever is there (a directory only
/// when the new entry replaces it).
fn remove_if_not_dir(
    _root: &File,
    parent: &OwnedFd,
    _rel: &Path,
    name: &std::ffi::OsStr,
) -> Result<(), ImageError> {
    remove_entry(parent, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> tempfile::NamedTempFile {
        let mut b = tar::Builder::new(Vec::new());
        build(&mut b);
        let data = b.into_inner().unwrap();
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), data).unwrap();
        f
    }

    fn file(b: &mut tar::Builder<Vec<u8>>, path: &str, body: &[u8], mode: u32) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(body.len() as u64);
        h.set_mode(mode);
        // set_path refuses '..' and absolute paths: write the name bytes raw.
        let name = &mut h.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_cksum();
        b.append(&h, body).unwrap();
    }

    fn special(b: &mut tar::Builder<Vec<u8>>, path: &str, kind: tar::EntryType, link: &str) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(0);
        h.set_mode(0o755);
        let name = &mut h.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
        if !link.is_empty() {
            let l = &mut h.as_old_mut().linkname;
            l[..link.len()].copy_from_slice(link.as_bytes());
        }
        h.set_cksum();
        b.append(&h, &[][..]).unwrap();
    }

    #[test]
    fn traversal_and_absolute_paths_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        for evil in [
            format!("../{}", "escape"),
            "a/../../escape".to_string(),
            format!("{}/abs", outside.path().display()),
        ] {
            let root = tempfile::tempdir().unwrap();
            let l = layer(|b| file(b, &evil, b"x", 0o644));
            let r = apply_layer(
                root.path(),
                l.path(),
                false,
                &mut UnpackBudget::new(u64::MAX, u64::MAX),
            );
            assert!(
                matches!(r, Err(ImageError::UnsafeLayer(_))),
                "{evil}: {r:?}"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn symlinked_parent_is_never_followed() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let target = outside.path().display().to_string();
        let l = layer(|b| {
            special(b, "evil", tar::EntryType::Symlink, &target);
            file(b, "evil/pwned", b"x", 0o644);
        });
        let r = apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        );
        assert!(matches!(r, Err(ImageError::UnsafeLayer(_))), "{r:?}");
        assert!(!outside.path().join("pwned").exists());
        // Writing *over* a symlink replaces the link, never its target.
        let root = tempfile::tempdir().unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let vt = victim.display().to_string();
        let l = layer(|b| {
            special(b, "link", tar::EntryType::Symlink, &vt);
            file(b, "link", b"overwritten", 0o644);
        });
        apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(
            std::fs::read_to_string(root.path().join("link")).unwrap(),
            "overwritten"
        );
    }

    #[test]
    fn devices_fifos_setuid_are_neutralised() {
        let root = tempfile::tempdir().unwrap();
        let l = layer(|b| {
            special(b, "dev/sda", tar::EntryType::Block, "");
            special(b, "dev/mem", tar::EntryType::Char, "");
            special(b, "fifo", tar::EntryType::Fifo, "");
            file(b, "bin/su", b"#!/bin/sh\n", 0o6755);
        });
        let rep = apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        assert_eq!(rep.skipped.len(), 3, "{rep:?}");
        assert!(!root.path().join("dev/sda").exists());
        assert!(!root.path().join("fifo").exists());
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(root.path().join("bin/su"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(m & 0o7777, 0o755);
    }

    #[test]
    fn hard_links_stay_beneath_the_root() {
        let root = tempfile::tempdir().unwrap();
        let l = layer(|b| special(b, "h", tar::EntryType::Link, "../../etc/passwd"));
        assert!(apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX)
        )
        .is_err());
        let l = layer(|b| {
            file(b, "a", b"data", 0o644);
            special(b, "b", tar::EntryType::Link, "a");
        });
        apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("b")).unwrap(),
            "data"
        );
    }

    #[test]
    fn whiteouts_and_opaque_dirs() {
        let root = tempfile::tempdir().unwrap();
        let l1 = layer(|b| {
            file(b, "etc/gone", b"1", 0o644);
            file(b, "etc/kept", b"1", 0o644);
            file(b, "opq/old", b"1", 0o644);
            file(b, "dir/sub/x", b"1", 0o644);
        });
        let l2 = layer(|b| {
            file(b, "opq/new", b"2", 0o644);
            file(b, "opq/implicit/deep", b"2", 0o644);
            special(b, "opq/.wh..wh..opq", tar::EntryType::Regular, "");
            special(b, "etc/.wh.gone", tar::EntryType::Regular, "");
            special(b, ".wh.dir", tar::EntryType::Regular, "");
        });
        apply_layer(
            root.path(),
            l1.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        apply_layer(
            root.path(),
            l2.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        let p = root.path();
        assert!(!p.join("etc/gone").exists());
        assert!(p.join("etc/kept").exists());
        assert!(!p.join("opq/old").exists());
        assert!(
            p.join("opq/new").exists() && p.join("opq/implicit/deep").exists(),
            "same-layer entries survive the opaque marker"
        );
        assert!(!p.join("dir").exists());
        assert!(!p.join(".wh.dir").exists());
    }

    #[test]
    fn gzip_and_zstd_layers() {
        let plain = layer(|b| file(b, "hello", b"hi", 0o644));
        let data = std::fs::read(plain.path()).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &data).unwrap();
        let zs = zstd::encode_all(&data[..], 1).unwrap();
        for bytes in [gz.finish().unwrap(), zs] {
            let f = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(f.path(), bytes).unwrap();
            let root = tempfile::tempdir().unwrap();
            apply_layer(
                root.path(),
                f.path(),
                false,
                &mut UnpackBudget::new(u64::MAX, u64::MAX),
            )
            .unwrap();
            assert_eq!(
                std::fs::read_to_string(root.path().join("hello")).unwrap(),
                "hi"
            );
        }
    }

    fn disk_usage(dir: &Path) -> u64 {
        let mut total = 0;
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let m = e.metadata().unwrap();
            total += if m.is_dir() {
                disk_usage(&e.path())
            } else {
                m.len()
            };
        }
        total
    }

    #[test]
    fn the_budget_counts_the_stream_not_the_headers() {
        // A 4 MiB file against a 1 MiB budget: refused, and no more than the budget
        // reached the disk.
        let root = tempfile::tempdir().unwrap();
        let big = vec![0u8; 4 << 20];
        let l = layer(|b| file(b, "big", &big, 0o644));
        let mut budget = UnpackBudget::new(1 << 20, 100);
        let r = apply_layer(root.path(), l.path(), false, &mut budget);
        assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
        assert!(disk_usage(root.path()) <= 1 << 20);

        // A header that lies about being sparse with a huge real size: skipped, and only
        // its bytes in the stream are charged.
        let root = tempfile::tempdir().unwrap();
        let l = layer(|b| {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::GNUSparse);
            h.set_size(512);
            h.as_gnu_mut().unwrap().set_real_size(1 << 40);
            h.set_path("sparse").unwrap();
            h.set_cksum();
            b.append(&h, &[7u8; 512][..]).unwrap();
        });
        let mut budget = UnpackBudget::new(1 << 20, 100);
        let _ = apply_layer(root.path(), l.path(), false, &mut budget);
        assert!(budget.used_bytes < 1 << 20);
        assert!(disk_usage(root.path()) < 1 << 20);

        // Budgets span layers: two layers of 600 KiB each against 1 MiB.
        let root = tempfile::tempdir().unwrap();
        let part = vec![1u8; 600 << 10];
        let l1 = layer(|b| file(b, "a", &part, 0o644));
        let l2 = layer(|b| file(b, "b", &part, 0o644));
        let mut budget = UnpackBudget::new(1 << 20, 100);
        apply_layer(root.path(), l1.path(), false, &mut budget).unwrap();
        let r = apply_layer(root.path(), l2.path(), false, &mut budget);
        assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
    }

    #[test]
    fn the_budget_caps_entries() {
        let root = tempfile::tempdir().unwrap();
        let l = layer(|b| {
            for i in 0..50 {
                file(b, &format!("f{i}"), b"", 0o644);
            }
        });
        let mut budget = UnpackBudget::new(u64::MAX, 20);
        let r = apply_layer(root.path(), l.path(), false, &mut budget);
        assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
        let mut budget = UnpackBudget::new(u64::MAX, 50);
        let root = tempfile::tempdir().unwrap();
        apply_layer(root.path(), l.path(), false, &mut budget).unwrap();
        assert_eq!(budget.entries_left, 0);
    }
}
