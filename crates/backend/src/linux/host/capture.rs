//! Filesystem capture for snapshots: copy a sandbox's writable trees into a layer
//! directory of the server's, without ever resolving a path through them.
//!
//! The sources are directory fds: the image root's copy-on-write upper directory (handed
//! over by pid 1 at setup, see [`crate::linux::sandbox::rootfs`]) and the sandbox's `/tmp`, `/root` and
//! `/workspace` mounts, opened from `/proc/<pid 1>/root` with `openat2(RESOLVE_IN_ROOT |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`. From there the walk goes one
//! component at a time: every entry is `fstatat(AT_SYMLINK_NOFOLLOW)`-ed, directories and
//! files are opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV)`
//! plus `O_NOFOLLOW`, symbolic links are read with `readlinkat` and re-created as links
//! (their targets are data, never followed). Nothing the sandbox controls is resolved with
//! the server's privileges; the sandbox is frozen during the walk, so it cannot race it.
//!
//! The destination is a fresh directory of the server's, written through directory fds
//! as well (`O_EXCL | O_NOFOLLOW`), with ids shifted back to the sandbox's own (on-disk
//! uid N = the sandbox's uid N, the convention of idmapped image layers). Overlay
//! whiteouts (0/0 character devices) and opaque-directory markers
//! (`user.overlay.opaque`) of the upper layer are kept, so the layer means the same when
//! it becomes a lower layer. Other devices and sockets are skipped (a sandbox cannot
//! create devices).
//!
//! What the sandbox wrote is stored as *data* ([`special`]): files and directories with
//! no setuid, setgid or sticky bit and nothing group- or other-writable, no FIFO (an
//! overlay whiteout stands in for one in an image root's layer); the modes and FIFOs the
//! sandbox had are listed in `layers/special` and re-applied inside the restored sandbox.
//! Content is copied extent by extent ([`data`]: sparse files stay sparse), a file with
//! several links is copied once and linked again (`linkat` from its first copy), and
//! every block written is charged to the capture's byte budget *before* it is written:
//! past it the capture stops ([`Capture::over_budget`]) and the caller deletes it.

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use nix::unistd::{Gid, Uid};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

mod data;
pub mod migrate;
pub use crate::linux::snapshot::special;
use special::{stored_mode, Kind, Special};

/// Deepest directory nesting captured (fail closed beyond it).
const MAX_DEPTH: usize = 256;
/// Most entries in one capture.
const MAX_ENTRIES: u64 = 2_000_000;
/// The overlay's opaque-directory marker with `userxattr`.
const OPAQUE: &CStr = c"user.overlay.opaque";

/// Running totals and the manifest hash of one capture.
pub struct Capture {
    /// Host uid/gid of the sandbox's id 0 (root server), subtracted from every owner.
    id_base: Option<(u32, u32)>,
    manifest: Sha256,
    pub files: u64,
    /// Bytes of file content (apparent sizes, each inode once).
    pub bytes: u64,
    /// Host bytes allocated so far, against the budget.
    budget: data::Budget,
    over_budget: Option<u64>,
    /// Entries stored differently from what the sandbox had (see [`special`]).
    specials: Vec<Special>,
    /// Files with several links in the current part: (dev, ino) -> (path of the first
    /// copy relative to the part's copy, content hash).
    links: HashMap<(u64, u64), (Vec<u8>, Vec<u8>)>,
    /// The current part's copy, and where the sandbox sees it (`` for the image root).
    part_dst: Option<OwnedFd>,
    at: Vec<u8>,
    /// The current part is an overlay upper (whiteouts, opaque markers), on device `dev`.
    layer: bool,
    dev: u64,
}

fn err(what: &str, path: &str, e: impl std::fmt::Display) -> String {
    format!("snapshot: {what} {path}: {e}")
}

fn beneath(flags: OFlag) -> OpenHow {
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS
                | ResolveFlag::RESOLVE_NO_XDEV,
        )
}

/// Open `/<name>` of a sandbox whose root is `root` (a `/proc/<pid>/root` fd) as a
/// directory, refusing any symbolic link on the way.
pub fn open_in_root(root: BorrowedFd<'_>, name: &str) -> Result<OwnedFd, String> {
    let how = OpenHow::new()
        .flags(OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(
            ResolveFlag::RESOLVE_IN_ROOT
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        );
    crate::linux::sys::openat2(root, name, how).map_err(|e| err("open", name, e))
}

fn get_opaque(dir: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 4];
    matches!(crate::linux::sys::fgetxattr(dir, OPAQUE, &mut buf), Ok(1)) && buf[0] == b'y'
}

fn set_opaque(dir: BorrowedFd<'_>) -> Result<(), String> {
    crate::linux::sys::fsetxattr(dir, OPAQUE, b"y").map_err(|e| err("mark opaque", "", e))
}

impl Capture {
    /// A capture that may allocate at most `budget` bytes on the host.
    pub fn new(id_base: Option<(u32, u32)>, budget: u64) -> Capture {
        Capture {
            id_base,
            manifest: Sha256::new(),
            files: 0,
            bytes: 0,
            budget: data::Budget {
                limit: budget,
                used: 0,
            },
            over_budget: None,
            specials: Vec::new(),
            links: HashMap::new(),
            part_dst: None,
            at: Vec::new(),
            layer: false,
            dev: 0,
        }
    }

    /// Host bytes the copy allocated (data blocks and directories, each inode once).
    pub fn allocated(&self) -> u64 {
        self.budget.used
    }

    /// The budget, if the capture stopped because the next write would have passed it.
    pub fn over_budget(&self) -> Option<u64> {
        self.over_budget
    }

    /// The entries to re-apply inside a restored sandbox.
    pub fn specials(&self) -> &[Special] {
        &self.specials
    }

    fn charge(&mut self, bytes: u64, path: &str) -> Result<(), String> {
        self.budget
            .charge(bytes)
            .map_err(|e| self.copy_err(path, e))
    }

    fn copy_err(&mut self, path: &str, e: data::CopyError) -> String {
        match e {
            data::CopyError::OverBudget { limit } => {
                self.over_budget = Some(limit);
                err(
                    "copy",
                    path,
                    format!("the snapshot would pass its budget of {limit} bytes"),
                )
            }
            data::CopyError::Io(e) => err("copy", path, e),
        }
    }

    /// Where the sandbox sees `rel` (a path relative to the current part).
    fn inside(&self, rel: &[u8]) -> Vec<u8> {
        let mut p = self.at.clone();
        p.push(b'/');
        p.extend_from_slice(rel);
        p
    }

    /// Note an entry whose stored mode differs from the sandbox's (a FIFO always).
    fn special(&mut self, kind: Kind, rel: &[u8], st: &FileStat) {
        let mode = st.st_mode & 0o7777;
        if kind == Kind::Mode && (rel.is_empty() || stored_mode(mode) == mode) {
            return; // a part's own root gets its mode from the restore's setup
        }
        // An unprivileged server's sandbox maps only its id 0 (the server's own ids).
        let (uid, gid) = match self.id_base {
            Some(_) => self.owner(st),
            None => (0, 0),
        };
        self.specials.push(Special {
            kind,
            path: self.inside(rel),
            mode,
            uid,
            gid,
            mtime: (st.st_mtime, st.st_mtime_nsec),
        });
    }

    /// The sandbox-relative owner of `st` (unchanged for an unprivileged server).
    fn owner(&self, st: &FileStat) -> (u32, u32) {
        match self.id_base {
            Some((u, g)) => (
                st.st_uid.checked_sub(u).unwrap_or(65534),
                st.st_gid.checked_sub(g).unwrap_or(65534),
            ),
            None => (st.st_uid, st.st_gid),
        }
    }

    fn record(&mut self, path: &str, kind: &str, st: &FileStat, extra: &[u8]) {
        let (uid, gid) = self.owner(st);
        let line = format!("{path}\0{kind}\0{:o}\0{uid}\0{gid}\0", st.st_mode & 0o7777);
        self.manifest.update((line.len() as u64).to_le_bytes());
        self.manifest.update(line.as_bytes());
        self.manifest.update((extra.len() as u64).to_le_bytes());
        self.manifest.update(extra);
        self.files += 1;
    }

    /// Hex sha256 of everything recorded so far.
    pub fn digest(self) -> String {
        let d: [u8; 32] = self.manifest.finalize().into();
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Copy the tree under `src` (an open directory) into the existing directory `dst`
    /// (ours) as part `label` (a manifest prefix), which the sandbox sees at `at` (`/`
    /// for the image root, `/tmp`, …). `layer`: `src` is an overlay upper directory
    /// (whiteouts and opaque markers are meaningful).
    pub fn copy_tree(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        label: &str,
        at: &str,
        layer: bool,
    ) -> Result<(), String> {
        let st = fstat(src).map_err(|e| err("stat", label, e))?;
        self.links.clear();
        self.part_dst = Some(dst.try_clone_to_owned().map_err(|e| err("dup", label, e))?);
        self.at = at.trim_end_matches('/').as_bytes().to_vec();
        self.charge(data::BLOCK, label)?;
        (self.layer, self.dev) = (layer, st.st_dev);
        self.copy_dir(src, dst, label, b"", 0)?;
        self.apply_meta(dst, None, &st)?;
        self.record(label, "dir", &st, b"");
        self.links.clear();
        self.part_dst = None;
        Ok(())
    }

    /// Link `name` in `dst` to the first copy of a file with several links, if there is
    /// one; returns its content hash.
    fn link_again(
        &mut self,
        key: (u64, u64),
        dst: BorrowedFd<'_>,
        name: &CStr,
        child: &str,
    ) -> Result<Option<Vec<u8>>, String> {
        let Some((first, hash)) = self.links.get(&key).cloned() else {
            return Ok(None);
        };
        let Some(root) = &self.part_dst else {
            return Ok(None);
        };
        let (parent, last) = match first.iter().rposition(|b| *b == b'/') {
            Some(i) => (&first[..i], &first[i + 1..]),
            None => (&b"."[..], &first[..]),
        };
        // Our own copy: directories we made, resolved without links all the same.
        let dir = crate::linux::sys::openat2(
            root,
            OsStr::from_bytes(parent),
            beneath(OFlag::O_PATH | OFlag::O_DIRECTORY),
        )
        .map_err(|e| err("open first copy of", child, e))?;
        nix::unistd::linkat(
            &dir,
            OsStr::from_bytes(last),
            dst,
            name,
            nix::fcntl::AtFlags::empty(),
        )
        .map_err(|e| err("link", child, e))?;
        Ok(Some(hash))
    }

    fn copy_dir(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        path: &str,
        rel: &[u8],
        depth: usize,
    ) -> Result<(), String> {
        let (layer, dev) = (self.layer, self.dev);
        if depth > MAX_DEPTH {
            return Err(err(
                "directory nesting deeper than",
                &MAX_DEPTH.to_string(),
                path,
            ));
        }
        if layer && get_opaque(src) {
            set_opaque(dst)?;
            self.manifest.update(format!("{path}\0opaque\0").as_bytes());
        }
        let mut names: Vec<CString> = Vec::new();
        let listing = nix::fcntl::openat(
            src,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| err("open", path, e))?;
        let mut dir = nix::dir::Dir::from_fd(listing).map_err(|e| err("list", path, e))?;
        for entry in dir.iter() {
            let entry = entry.map_err(|e| err("list", path, e))?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            names.push(name.to_owned());
        }
        names.sort();
        for name in names {
            if self.files >= MAX_ENTRIES {
                return Err(err("more entries than", &MAX_ENTRIES.to_string(), path));
            }
            let child = format!(
                "{}/{}",
                path.trim_end_matches('/'),
                OsStr::from_bytes(name.as_bytes()).to_string_lossy()
            );
            let mut child_rel = rel.to_vec();
            if !child_rel.is_empty() {
                child_rel.push(b'/');
            }
            child_rel.extend_from_slice(name.as_bytes());
            let name = name.as_c_str();
            let st = fstatat(src, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| err("stat", &child, e))?;
            let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
            match kind {
                SFlag::S_IFDIR => {
                    if st.st_dev != dev {
                        continue; // another mount: not part of this filesystem
                    }
                    let sub = crate::linux::sys::openat2(
                        src,
                        name,
                        beneath(OFlag::O_RDONLY | OFlag::O_DIRECTORY),
                    )
                    .map_err(|e| err("open", &child, e))?;
                    self.charge(data::BLOCK, &child)?;
                    nix::sys::stat::mkdirat(dst, name, Mode::from_bits_truncate(0o700))
                        .map_err(|e| err("mkdir", &child, e))?;
                    let out = crate::linux::sys::openat2(
                        dst,
                        name,
                        beneath(OFlag::O_RDONLY | OFlag::O_DIRECTORY),
                    )
                    .map_err(|e| err("open copy of", &child, e))?;
                    self.copy_dir(sub.as_fd(), out.as_fd(), &child, &child_rel, depth + 1)?;
                    self.apply_meta(out.as_fd(), None, &st)?;
                    self.special(Kind::Mode, &child_rel, &st);
                    self.record(&child, "dir", &st, b"");
                }
                SFlag::S_IFREG => {
                    let key = (st.st_dev, st.st_ino);
                    if st.st_nlink > 1 {
                        if let Some(hash) = self.link_again(key, dst, name, &child)? {
                            self.special(Kind::Mode, &child_rel, &st);
                            self.record(&child, "file", &st, &hash);
                            continue;
                        }
                    }
                    let f = crate::linux::sys::openat2(
                        src,
                        name,
                        beneath(OFlag::O_RDONLY | OFlag::O_NONBLOCK),
                    )
                    .map_err(|e| err("open", &child, e))?;
                    let now = fstat(f.as_fd()).map_err(|e| err("stat", &child, e))?;
                    if now.st_ino != st.st_ino || now.st_dev != st.st_dev {
                        return Err(err("file changed during capture", &child, "inode"));
                    }
                    let out = nix::fcntl::openat(
                        dst,
                        name,
                        OFlag::O_WRONLY
                            | OFlag::O_CREAT
                            | OFlag::O_EXCL
                            | OFlag::O_NOFOLLOW
                            | OFlag::O_CLOEXEC,
                        Mode::from_bits_truncate(0o600),
                    )
                    .map_err(|e| err("create copy of", &child, e))?;
                    let size = now.st_size.max(0) as u64;
                    let hash = data::copy_sparse(&f, &out, size, &mut self.budget)
                        .map_err(|e| self.copy_err(&child, e))?;
                    self.bytes += size;
                    self.apply_meta(out.as_fd(), None, &st)?;
                    if st.st_nlink > 1 {
                        self.links.insert(key, (child_rel.clone(), hash.clone()));
                    }
                    self.special(Kind::Mode, &child_rel, &st);
                    self.record(&child, "file", &st, &hash);
                }
                SFlag::S_IFLNK => {
                    let target = nix::fcntl::readlinkat(src, name)
                        .map_err(|e| err("readlink", &child, e))?;
                    nix::unistd::symlinkat(target.as_os_str(), dst, name)
                        .map_err(|e| err("symlink", &child, e))?;
                    self.apply_meta(dst, Some(name), &st)?;
                    self.record(&child, "link", &st, target.as_bytes());
                }
                SFlag::S_IFCHR if layer && st.st_rdev == 0 => {
                    // An overlay whiteout: this path was deleted from the layers below.
                    nix::sys::stat::mknodat(dst, name, SFlag::S_IFCHR, Mode::empty(), 0)
                        .map_err(|e| err("whiteout", &child, e))?;
                    self.apply_meta(dst, Some(name), &st)?;
                    self.record(&child, "whiteout", &st, b"");
                }
                SFlag::S_IFIFO => {
                    // Never a FIFO on the host: listed for the restore to make inside the
                    // sandbox. In an image root's layer a whiteout keeps whatever the
                    // image has at this path hidden, as the FIFO did.
                    if layer {
                        nix::sys::stat::mknodat(dst, name, SFlag::S_IFCHR, Mode::empty(), 0)
                            .map_err(|e| err("whiteout for fifo", &child, e))?;
                        self.apply_meta(dst, Some(name), &st)?;
                    }
                    self.special(Kind::Fifo, &child_rel, &st);
                    self.record(&child, "fifo", &st, b"");
                }
                // Sockets and device nodes are not state a snapshot can carry.
                _ => {}
            }
        }
        Ok(())
    }

    /// Owner, mode and modification time of a copied entry: on `fd` itself (`name`
    /// None) or on `name` in directory `fd` without following it.
    fn apply_meta(
        &self,
        fd: BorrowedFd<'_>,
        name: Option<&CStr>,
        st: &FileStat,
    ) -> Result<(), String> {
        let (uid, gid) = self.owner(st);
        let (uid, gid) = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
        let mtime = nix::sys::time::TimeSpec::new(st.st_mtime, st.st_mtime_nsec);
        let is_link = st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFLNK.bits();
        // Stored as data: no set-id or sticky bit, nothing group/other-writable (the
        // sandbox's own mode is in the special manifest when it differs).
        let mode = Mode::from_bits_truncate(stored_mode(st.st_mode));
        // Not root (unprivileged server): the copy stays the server's own; ids were
        // the server's anyway.
        let chown_ok = |r: nix::Result<()>| match r {
            Err(nix::errno::Errno::EPERM) if self.id_base.is_none() => Ok(()),
            other => other,
        };
        match name {
            None => {
                chown_ok(nix::unistd::fchown(fd, uid, gid)).map_err(|e| err("chown", "", e))?;
                nix::sys::stat::fchmod(fd, mode).map_err(|e| err("chmod", "", e))?;
                nix::sys::stat::futimens(fd, &mtime, &mtime).map_err(|e| err("utimes", "", e))?;
            }
            Some(n) => {
                chown_ok(nix::unistd::fchownat(
                    fd,
                    n,
                    uid,
                    gid,
                    nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
                ))
                .map_err(|e| err("chown", "", e))?;
                if !is_link {
                    // A whiteout we just made (never a link: not followed).
                    nix::sys::stat::fchmodat(
                        fd,
                        n,
                        mode,
                        nix::sys::stat::FchmodatFlags::FollowSymlink,
                    )
                    .map_err(|e| err("chmod", "", e))?;
                }
                nix::sys::stat::utimensat(
                    fd,
                    n,
                    &mtime,
                    &mtime,
                    nix::sys::stat::UtimensatFlags::NoFollowSymlink,
                )
                .map_err(|e| err("utimes", "", e))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
