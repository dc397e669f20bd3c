//! The only way the sandbox setup touches a root it is assembling.
//!
//! Pid 1 builds the sandbox's root before `pivot_root`, while the host's tree is still
//! reachable. An image decides what is at every path of its root — `/etc` or `/run` may be
//! a symlink to `/tmp/…` on the host, `../../..` climbing out, dangling, chained — so no
//! path inside a root is ever handed to a path-based syscall here. Everything starts from a
//! directory fd of a mount the setup made itself and goes through `openat2`:
//!
//! * **walks that create** ([`Tree::dir`], [`Tree::create_file`]) take one component at a
//!   time with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: every component must be a real
//!   directory. In an image's copy-on-write layer ([`Tree::cow`]) an entry that is not one
//!   (a link, a file) is removed and replaced — the sandbox's private copy changes, never
//!   the cached image, never anything outside;
//! * **lookups that may follow the image's links** ([`Tree::resolve`],
//!   [`Tree::read_regular`]) use `RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS`: absolute links
//!   and `..` resolve against the sandbox's root, like `chroot` (runc's securejoin), so an
//!   image's own layout (`/etc/ssl/certs/x -> ../../../pki/x`) keeps working;
//! * **mounts** land on the exact inode an fd names (`/proc/self/fd/N` of the host's
//!   procfs), never on a path the kernel would resolve again. They go through the tree's
//!   [`Mounts`] seam (the kernel, or a recorder in unit tests).

use crate::linux::sys::{openat2, Mounts};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, OpenHow, ResolveFlag};
use nix::mount::MsFlags;
use nix::sys::stat::{fstat, fstatat, mkdirat, Mode, SFlag};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// What sits at a name inside a directory (not following a link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Missing,
    Dir,
    File,
    Symlink,
    Other,
}

/// A directory inside a root under construction, held as an `O_PATH` fd.
pub struct Tree {
    fd: OwnedFd,
    /// Path as the sandbox will see it (messages only; never resolved).
    label: String,
    /// This tree is an image's private copy-on-write layer: entries in the way may be
    /// replaced.
    cow: bool,
    /// Where its mounts go.
    m: &'static dyn Mounts,
}

/// The magic link naming `fd` in the host's procfs (valid only before `pivot_root`).
pub fn fd_path(fd: &impl AsRawFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn split(rel: &str) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = rel
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(format!("path {rel:?} must not contain '..'"));
    }
    Ok(parts)
}

fn beneath(flags: OFlag) -> OpenHow {
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW)
        .resolve(
            ResolveFlag::RESOLVE_BENEATH
                | ResolveFlag::RESOLVE_NO_SYMLINKS
                | ResolveFlag::RESOLVE_NO_MAGICLINKS,
        )
}

fn in_root(flags: OFlag) -> OpenHow {
    OpenHow::new()
        .flags(flags | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS)
}

impl Tree {
    /// Open the root of a mount the setup itself just made (its path is the setup's own
    /// mountpoint, not the image's). `cow`: see [`Tree::cow`].
    pub fn open(path: &Path, cow: bool, m: &'static dyn Mounts) -> Result<Tree, String> {
        let fd = nix::fcntl::open(
            path,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| format!("open {}: {e}", path.display()))?;
        Ok(Tree {
            fd,
            label: "/".into(),
            cow,
            m,
        })
    }

    /// The mount seam this tree's mounts go through.
    pub fn mounts(&self) -> &'static dyn Mounts {
        self.m
    }

    /// True for an image's copy-on-write root (and its subtrees).
    pub fn cow(&self) -> bool {
        self.cow
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    fn child_label(&self, rel: &str) -> String {
        format!(
            "{}/{}",
            self.label.trim_end_matches('/'),
            rel.trim_matches('/')
        )
    }

    fn sub(&self, fd: OwnedFd, rel: &str) -> Tree {
        Tree {
            fd,
            label: self.child_label(rel),
            cow: self.cow,
            m: self.m,
        }
    }

    /// What is at `name` (one component) in this directory, without following it.
    pub fn entry(&self, name: &str) -> Result<Entry, String> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(
                match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
                    SFlag::S_IFDIR => Entry::Dir,
                    SFlag::S_IFREG => Entry::File,
                    SFlag::S_IFLNK => Entry::Symlink,
                    _ => Entry::Other,
                },
            ),
            Err(Errno::ENOENT) => Ok(Entry::Missing),
            Err(e) => Err(format!("stat {}: {e}", self.child_label(name))),
        }
    }

    /// Remove a non-directory entry (copy-on-write trees only).
    pub fn remove(&self, name: &str) -> Result<(), String> {
        if !self.cow {
            return Err(format!(
                "{} is in the way and this root is not the sandbox's own copy",
                self.child_label(name)
            ));
        }
        nix::unistd::unlinkat(&self.fd, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
            .map_err(|e| format!("remove {}: {e}", self.child_label(name)))
    }

    /// The directory at `rel`, every component a real directory: missing ones are created
    /// with `mode`; in a copy-on-write tree a link or file in the way is replaced.
    pub fn dir(&self, rel: &str, mode: u32) -> Result<Tree, String> {
        let mut cur = self
            .fd
            .try_clone()
            .map_err(|e| format!("dup {}: {e}", self.label))?;
        let mut done = self.label.clone();
        for name in split(rel)? {
            let here = Tree {
                fd: cur,
                label: done.clone(),
                cow: self.cow,
                m: self.m,
            };
            let how = || beneath(OFlag::O_PATH | OFlag::O_DIRECTORY);
            cur = match openat2(&here.fd, name, how()) {
                Ok(fd) => fd,
                Err(e @ (Errno::ENOENT | Errno::ELOOP | Errno::ENOTDIR)) => {
                    if e != Errno::ENOENT {
                        here.remove(name)?;
                    }
                    mkdirat(&here.fd, name, Mode::from_bits_truncate(mode))
                        .map_err(|e| format!("mkdir {}: {e}", here.child_label(name)))?;
                    let fd = openat2(&here.fd, name, how())
                        .map_err(|e| format!("open {}: {e}", here.child_label(name)))?;
                    // The exact mode, whatever the umask (through the fd: no path lookup).
                    std::fs::set_permissions(
                        fd_path(&fd),
                        std::os::unix::fs::PermissionsExt::from_mode(mode),
                    )
                    .map_err(|e| format!("chmod {}: {e}", here.child_label(name)))?;
                    fd
                }
                Err(e) => return Err(format!("open {}: {e}", here.child_label(name))),
            };
            done = here.child_label(name);
        }
        Ok(Tree {
            fd: cur,
            label: done,
            cow: self.cow,
            m: self.m,
        })
    }

    /// Create `name` (one component) as a new regular file holding `content`. Never opens
    /// what is already there (`O_EXCL | O_NOFOLLOW`); in a copy-on-write tree a
    /// non-directory in the way is replaced first.
    pub fn create_file(&self, name: &str, content: &[u8], mode: u32) -> Result<(), String> {
        if name.contains('/') || name == ".." || name == "." || name.is_empty() {
            return Err(format!("invalid file name {name:?}"));
        }
        match self.entry(name)? {
            Entry::Missing => {}
            Entry::Dir => return Err(format!("{} is a directory", self.child_label(name))),
            _ => self.remove(name)?,
        }
        let fd = nix::fcntl::openat(
            &self.fd,
            name,
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(mode),
        )
        .map_err(|e| format!("create {}: {e}", self.child_label(name)))?;
        let mut f = std::fs::File::from(fd);
        f.write_all(content)
            .map_err(|e| format!("write {}: {e}", self.child_label(name)))?;
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(|e| format!("chmod {}: {e}", self.child_label(name)))
    }

    /// A symlink `name -> target` (the target is text for the sandbox, never resolved here).
    pub fn symlink(&self, name: &str, target: &str) -> Result<(), String> {
        nix::unistd::symlinkat(target, &self.fd, name)
            .map_err(|e| format!("symlink {}: {e}", self.child_label(name)))
    }

    /// `O_PATH` fd of `name` itself (one component, not followed).
    pub fn leaf(&self, name: &str) -> Result<OwnedFd, String> {
        openat2(&self.fd, name, beneath(OFlag::O_PATH))
            .map_err(|e| format!("open {}: {e}", self.child_label(name)))
    }

    /// Resolve `rel` with the root's own links confined to this tree (absolute links and
    /// `..` stay inside it, magic links refused). `Ok(None)` when nothing is there.
    pub fn resolve(&self, rel: &str, dir: bool) -> Result<Option<Tree>, String> {
        let mut flags = OFlag::O_PATH;
        if dir {
            flags |= OFlag::O_DIRECTORY;
        }
        match openat2(&self.fd, rel.trim_start_matches('/'), in_root(flags)) {
            Ok(fd) => Ok(Some(self.sub(fd, rel))),
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => Ok(None),
            Err(e) => Err(format!("resolve {}: {e}", self.child_label(rel))),
        }
    }

    /// Read up to `max` bytes of the regular file at `rel` (links confined as in
    /// [`Tree::resolve`]; `O_NONBLOCK`, so a FIFO cannot stall the setup). `None` when
    /// there is no regular file.
    pub fn read_regular(&self, rel: &str, max: u64) -> Result<Option<Vec<u8>>, String> {
        let flags = OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
        let fd = match openat2(&self.fd, rel.trim_start_matches('/'), in_root(flags)) {
            Ok(fd) => fd,
            Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP | Errno::ENXIO) => return Ok(None),
            Err(e) => return Err(format!("open {}: {e}", self.child_label(rel))),
        };
        if !is_regular(&fd)? {
            return Ok(None);
        }
        let mut out = Vec::new();
        std::fs::File::from(fd)
            .take(max)
            .read_to_end(&mut out)
            .map_err(|e| format!("read {}: {e}", self.child_label(rel)))?;
        Ok(Some(out))
    }

    /// Mount a new filesystem on the directory `rel` (made as by [`Tree::dir`]) and return
    /// the root of the new mount.
    pub fn mount_fs(
        &self,
        rel: &str,
        mode: u32,
        fstype: &str,
        flags: MsFlags,
        data: Option<&str>,
    ) -> Result<Tree, String> {
        let target = self.dir(rel, mode)?;
        self.m
            .mount(
                Some(Path::new(fstype)),
                &fd_path(&target.fd),
                Some(fstype),
                flags,
                data,
            )
            .map_err(|e| format!("mount {fstype} on {}: {e}", target.label))?;
        // Walk again: the lookup now enters the new mount.
        self.dir(rel, mode)
    }

    /// Make this tree the calling process's working directory (for `pivot_root(".", ".")`).
    pub fn enter(&self) -> Result<(), String> {
        self.m
            .fchdir(self.fd.as_fd())
            .map_err(|e| format!("chdir {}: {e}", self.label))
    }
}

/// Is `fd` a regular file?
pub fn is_regular(fd: &impl AsFd) -> Result<bool, String> {
    let st = fstat(fd.as_fd()).map_err(|e| format!("fstat: {e}"))?;
    Ok(SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFREG)
}

/// Bind `src` (a host path, or [`fd_path`] of a file the setup made) onto the inode
/// `target()` names, then remount it nosuid plus `extra` (the remount re-resolves through
/// `target()`, which now lands on the new mount). Every bind in the sandbox goes through
/// here: no mount may honour setuid bits.
pub fn bind_onto(
    m: &dyn Mounts,
    src: &Path,
    target: impl Fn() -> Result<OwnedFd, String>,
    extra: MsFlags,
) -> Result<(), String> {
    let dst = target()?;
    m.mount(
        Some(src),
        &fd_path(&dst),
        None,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None,
    )
    .map_err(|e| format!("bind mount {}: {e}", src.display()))?;
    let mut flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_NOSUID | extra;
    // Keep nodev/noexec that the source mount already carries (required inside a user ns).
    if let Ok(st) = nix::sys::statvfs::statvfs(src) {
        use nix::sys::statvfs::FsFlags;
        if st.flags().contains(FsFlags::ST_NODEV) {
            flags |= MsFlags::MS_NODEV;
        }
        if st.flags().contains(FsFlags::ST_NOEXEC) {
            flags |= MsFlags::MS_NOEXEC;
        }
    }
    let top = target()?;
    m.mount(None, &fd_path(&top), None, flags, None)
        .map_err(|e| format!("remount {}: {e}", src.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh (root, outside) pair of directories; removed on drop.
    struct Dirs(PathBuf);
    impl Dirs {
        fn new(tag: &str) -> Dirs {
            let base =
                std::env::temp_dir().join(format!("cleanroom-tree-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            std::fs::create_dir_all(base.join("root")).unwrap();
            std::fs::create_dir_all(base.join("outside")).unwrap();
            Dirs(base)
        }
        fn root(&self) -> PathBuf {
            self.0.join("root")
        }
        fn outside(&self) -> PathBuf {
            self.0.join("outside")
        }
        fn outside_entries(&self) -> usize {
            std::fs::read_dir(self.outside()).unwrap().count()
        }
    }
    impl Drop for Dirs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn walks_never_follow_links_and_replace_them_only_in_a_cow_root() {
        let d = Dirs::new("dir");
        symlink(d.outside(), d.root().join("tmp")).unwrap();
        symlink("../outside", d.root().join("run")).unwrap();
        std::fs::write(d.root().join("proc"), "a file").unwrap();
        let host_view = Tree::open(&d.root(), false, &crate::linux::sys::REAL).unwrap();
        for rel in ["tmp/x", "run/cleanroom", "proc"] {
            assert!(host_view.dir(rel, 0o755).is_err(), "{rel}");
        }
        assert!(host_view.dir("a/../b", 0o755).is_err());
        let image = Tree::open(&d.root(), true, &crate::linux::sys::REAL).unwrap();
        for rel in ["tmp/x", "run/cleanroom", "proc"] {
            image.dir(rel, 0o700).unwrap();
            let m = std::fs::symlink_metadata(d.root().join(rel)).unwrap();
            assert!(m.is_dir(), "{rel}");
        }
        assert_eq!(d.outside_entries(), 0);
    }

    #[test]
    fn files_are_created_never_written_through_a_link() {
        let d = Dirs::new("file");
        std::fs::create_dir(d.root().join("etc")).unwrap();
        let victim = d.outside().join("victim");
        symlink(&victim, d.root().join("etc/resolv.conf")).unwrap();
        let etc = Tree::open(&d.root(), false, &crate::linux::sys::REAL)
            .unwrap()
            .dir("etc", 0o755)
            .unwrap();
        assert!(etc.create_file("resolv.conf", b"x", 0o644).is_err());
        assert!(etc.create_file("../escape", b"x", 0o644).is_err());
        let etc = Tree::open(&d.root(), true, &crate::linux::sys::REAL)
            .unwrap()
            .dir("etc", 0o755)
            .unwrap();
        etc.create_file("resolv.conf", b"ours", 0o644).unwrap();
        assert_eq!(
            std::fs::read(d.root().join("etc/resolv.conf")).unwrap(),
            b"ours"
        );
        assert!(!victim.exists());
        assert_eq!(d.outside_entries(), 0);
    }

    #[test]
    fn lookups_keep_links_inside_the_root() {
        let d = Dirs::new("resolve");
        std::fs::write(d.outside().join("secret"), "host").unwrap();
        let abs = format!("{}/secret", d.outside().display());
        symlink(&abs, d.root().join("abs")).unwrap();
        symlink(
            "../../../../../../../..".to_string() + &abs,
            d.root().join("rel"),
        )
        .unwrap();
        std::fs::create_dir(d.root().join("pki")).unwrap();
        std::fs::write(d.root().join("pki/own"), "mine").unwrap();
        symlink("/pki/own", d.root().join("inside")).unwrap();
        let tree = Tree::open(&d.root(), true, &crate::linux::sys::REAL).unwrap();
        for rel in ["abs", "rel"] {
            assert_eq!(tree.read_regular(rel, 100).unwrap(), None, "{rel}");
            assert!(tree.resolve(rel, false).unwrap().is_none(), "{rel}");
        }
        assert_eq!(tree.read_regular("inside", 100).unwrap().unwrap(), b"mine");
        let t = tree.resolve("inside", false).unwrap().unwrap();
        assert!(is_regular(t.fd()).unwrap());
    }
}
