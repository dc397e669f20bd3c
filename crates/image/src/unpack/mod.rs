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

mod beneath;

use crate::ImageError;
use beneath::{clean, clear_dir, ensure_dir, open_dir, remove_entry};
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fchmodat, FchmodatFlags, Mode};
use nix::unistd::{fchownat, Gid, Uid};
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

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
mod tests;
