//! Filesystem capture for snapshots: copy a sandbox's writable trees into a layer
//! directory of the server's, without ever resolving a path through them.
//!
//! The sources are directory fds: the image root's copy-on-write upper directory (handed
//! over by pid 1 at setup, see [`super::rootfs`]) and the sandbox's `/tmp`, `/root` and
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
//! create devices); hard links become separate copies.

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};
use nix::unistd::{Gid, Uid};
use sha2::{Digest, Sha256};
use std::ffi::{CStr, CString, OsStr};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

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
    pub bytes: u64,
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
    super::sys::openat2(root, name, how).map_err(|e| err("open", name, e))
}

fn get_opaque(dir: BorrowedFd<'_>) -> bool {
    let mut buf = [0u8; 4];
    // SAFETY: fgetxattr writes at most buf.len() bytes into buf; both outlive the call.
    let n = unsafe {
        libc::fgetxattr(
            dir.as_raw_fd(),
            OPAQUE.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n == 1 && buf[0] == b'y'
}

fn set_opaque(dir: BorrowedFd<'_>) -> Result<(), String> {
    // SAFETY: the name and value are valid for the call; the fd is open.
    let r =
        unsafe { libc::fsetxattr(dir.as_raw_fd(), OPAQUE.as_ptr(), b"y".as_ptr().cast(), 1, 0) };
    if r != 0 {
        return Err(err("mark opaque", "", std::io::Error::last_os_error()));
    }
    Ok(())
}

impl Capture {
    pub fn new(id_base: Option<(u32, u32)>) -> Capture {
        Capture {
            id_base,
            manifest: Sha256::new(),
            files: 0,
            bytes: 0,
        }
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
    /// (ours) as part `label` (a manifest prefix). `layer`: `src` is an overlay upper
    /// directory (whiteouts and opaque markers are meaningful).
    pub fn copy_tree(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        label: &str,
        layer: bool,
    ) -> Result<(), String> {
        let st = fstat(src).map_err(|e| err("stat", label, e))?;
        self.copy_dir(src, dst, label, layer, st.st_dev, 0)?;
        self.apply_meta(dst, None, &st)?;
        self.record(label, "dir", &st, b"");
        Ok(())
    }

    fn copy_dir(
        &mut self,
        src: BorrowedFd<'_>,
        dst: BorrowedFd<'_>,
        path: &str,
        layer: bool,
        dev: u64,
        depth: usize,
    ) -> Result<(), String> {
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
            let name = name.as_c_str();
            let st = fstatat(src, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .map_err(|e| err("stat", &child, e))?;
            let kind = SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits());
            match kind {
                SFlag::S_IFDIR => {
                    if st.st_dev != dev {
                        continue; // another mount: not part of this filesystem
                    }
                    let sub = super::sys::openat2(
                        src,
                        name,
                        beneath(OFlag::O_RDONLY | OFlag::O_DIRECTORY),
                    )
                    .map_err(|e| err("open", &child, e))?;
                    nix::sys::stat::mkdirat(dst, name, Mode::from_bits_truncate(0o700))
                        .map_err(|e| err("mkdir", &child, e))?;
                    let out = super::sys::openat2(
                        dst,
                        name,
                        beneath(OFlag::O_RDONLY | OFlag::O_DIRECTORY),
                    )
                    .map_err(|e| err("open copy of", &child, e))?;
                    self.copy_dir(sub.as_fd(), out.as_fd(), &child, layer, dev, depth + 1)?;
                    self.apply_meta(out.as_fd(), None, &st)?;
                    self.record(&child, "dir", &st, b"");
                }
                SFlag::S_IFREG => {
                    let f = super::sys::openat2(
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
                    let hash = copy_hashing(f, &out).map_err(|e| err("copy", &child, e))?;
                    self.bytes += now.st_size as u64;
                    self.apply_meta(out.as_fd(), None, &st)?;
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
                    nix::sys::stat::mknodat(
                        dst,
                        name,
                        SFlag::S_IFIFO,
                        Mode::from_bits_truncate(0o600),
                        0,
                    )
                    .map_err(|e| err("fifo", &child, e))?;
                    self.apply_meta(dst, Some(name), &st)?;
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
        let mode = Mode::from_bits_truncate(st.st_mode & 0o7777);
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
                    // A fifo or whiteout we just made (never a link: not followed).
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

/// Copy `src` into `dst`, returning the sha256 of the content.
fn copy_hashing(src: OwnedFd, dst: &OwnedFd) -> std::io::Result<Vec<u8>> {
    let mut src = std::fs::File::from(src);
    let mut out = std::fs::File::from(dst.try_clone()?);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
        out.write_all(&buf[..n])?;
    }
    let d: [u8; 32] = h.finalize().into();
    Ok(d.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn dir_fd(p: &std::path::Path) -> OwnedFd {
        nix::fcntl::open(
            p,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn links_are_copied_as_links_and_never_followed() {
        let src = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "host secret").unwrap();
        std::fs::create_dir(src.path().join("d")).unwrap();
        std::fs::write(src.path().join("d/f"), "data").unwrap();
        std::fs::set_permissions(
            src.path().join("d/f"),
            std::fs::Permissions::from_mode(0o640),
        )
        .unwrap();
        // Hostile links: to a host directory, to a host file, a loop.
        symlink(outside.path(), src.path().join("to-dir")).unwrap();
        symlink(outside.path().join("secret"), src.path().join("to-file")).unwrap();
        symlink("loop", src.path().join("loop")).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let mut c = Capture::new(None);
        c.copy_tree(
            dir_fd(src.path()).as_fd(),
            dir_fd(dst.path()).as_fd(),
            "/t",
            false,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(dst.path().join("d/f")).unwrap(),
            "data"
        );
        let mode = std::fs::metadata(dst.path().join("d/f"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o640);
        for l in ["to-dir", "to-file", "loop"] {
            let m = std::fs::symlink_metadata(dst.path().join(l)).unwrap();
            assert!(m.file_type().is_symlink(), "{l} copied as a link");
        }
        assert_eq!(
            std::fs::read_link(dst.path().join("to-file")).unwrap(),
            outside.path().join("secret")
        );
        // Nothing of the link targets was copied.
        let mut found = Vec::new();
        for e in walk(dst.path()) {
            if std::fs::symlink_metadata(&e).unwrap().is_file() {
                found.push(std::fs::read_to_string(&e).unwrap());
            }
        }
        assert_eq!(found, vec!["data".to_string()]);
        assert_eq!(c.bytes, 4);
    }

    fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(p).unwrap().flatten() {
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                out.extend(walk(&path));
            }
            out.push(path);
        }
        out
    }

    #[test]
    fn the_manifest_digest_follows_content_and_metadata() {
        let digest = |content: &str, mode: u32| {
            let src = tempfile::tempdir().unwrap();
            std::fs::write(src.path().join("f"), content).unwrap();
            std::fs::set_permissions(src.path().join("f"), std::fs::Permissions::from_mode(mode))
                .unwrap();
            std::fs::set_permissions(src.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let dst = tempfile::tempdir().unwrap();
            let mut c = Capture::new(None);
            c.copy_tree(
                dir_fd(src.path()).as_fd(),
                dir_fd(dst.path()).as_fd(),
                "/t",
                false,
            )
            .unwrap();
            c.digest()
        };
        assert_eq!(digest("a", 0o644), digest("a", 0o644));
        assert_ne!(digest("a", 0o644), digest("b", 0o644));
        assert_ne!(digest("a", 0o644), digest("a", 0o600));
    }
}
