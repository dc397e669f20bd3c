//! The mount seam: the calls that change a mount namespace (mount, umount, pivot_root,
//! move_mount) and the working-directory changes that go with them, behind one narrow
//! trait, so that the code assembling a sandbox's root (`sandbox::rootfs`, `tree`,
//! `scratch`, `restore`) runs unchanged against the kernel ([`REAL`]) or against a
//! [`Recorder`] in unit tests, without root.
//!
//! Only these calls go through the seam. Everything else the setup does — every
//! `openat2` walk, `mkdirat`, file creation, `fstatat` — is real in tests too (on a
//! temporary directory): the refusals of the tree code are exercised, not imitated. The
//! recorder performs none of the calls; it writes down each one with its target resolved
//! to the directory it names at that moment (a `/proc/self/fd/N` magic link is read back),
//! so a test checks *where* a real setup would have mounted, with which flags, in which
//! order.

use nix::mount::{MntFlags, MsFlags};
use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

/// The calls of a root's assembly that change the mount namespace or the working
/// directory.
pub trait Mounts: Sync {
    /// mount(2).
    fn mount(
        &self,
        source: Option<&Path>,
        target: &Path,
        fstype: Option<&str>,
        flags: MsFlags,
        data: Option<&str>,
    ) -> nix::Result<()>;
    /// umount2(2).
    fn umount2(&self, target: &Path, flags: MntFlags) -> nix::Result<()>;
    /// pivot_root(2).
    fn pivot_root(&self, new_root: &Path, put_old: &Path) -> nix::Result<()>;
    /// chdir(2).
    fn chdir(&self, path: &Path) -> nix::Result<()>;
    /// fchdir(2).
    fn fchdir(&self, dir: BorrowedFd<'_>) -> nix::Result<()>;
    /// Attach a detached tree at `target` ([`super::move_mount`]).
    fn move_mount(&self, tree: BorrowedFd<'_>, target: &Path) -> io::Result<()>;
}

/// The kernel.
pub struct Kernel;

/// The seam as every sandbox uses it.
pub static REAL: Kernel = Kernel;

impl Mounts for Kernel {
    fn mount(
        &self,
        source: Option<&Path>,
        target: &Path,
        fstype: Option<&str>,
        flags: MsFlags,
        data: Option<&str>,
    ) -> nix::Result<()> {
        nix::mount::mount(source, target, fstype, flags, data)
    }
    fn umount2(&self, target: &Path, flags: MntFlags) -> nix::Result<()> {
        nix::mount::umount2(target, flags)
    }
    fn pivot_root(&self, new_root: &Path, put_old: &Path) -> nix::Result<()> {
        nix::unistd::pivot_root(new_root, put_old)
    }
    fn chdir(&self, path: &Path) -> nix::Result<()> {
        nix::unistd::chdir(path)
    }
    fn fchdir(&self, dir: BorrowedFd<'_>) -> nix::Result<()> {
        nix::unistd::fchdir(dir)
    }
    fn move_mount(&self, tree: BorrowedFd<'_>, target: &Path) -> io::Result<()> {
        super::move_mount(tree, target)
    }
}

#[cfg(test)]
pub use recorder::{Call, Recorder};

#[cfg(test)]
mod recorder {
    use super::Mounts;
    use nix::mount::{MntFlags, MsFlags};
    use std::io;
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    /// One call a setup made, its paths resolved as the kernel would have seen them then.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Call {
        Mount {
            source: Option<PathBuf>,
            target: PathBuf,
            fstype: Option<String>,
            flags: MsFlags,
            data: Option<String>,
        },
        Umount {
            target: PathBuf,
            flags: MntFlags,
        },
        PivotRoot {
            new_root: PathBuf,
            put_old: PathBuf,
        },
        Chdir(PathBuf),
        MoveMount {
            target: PathBuf,
        },
    }

    /// Performs nothing, records everything (see the module doc). Keeps a virtual working
    /// directory, so `pivot_root(".", ".")` after an `fchdir` names the directory entered.
    #[derive(Default)]
    pub struct Recorder {
        calls: Mutex<Vec<Call>>,
        cwd: Mutex<Option<PathBuf>>,
    }

    impl Recorder {
        /// A recorder that lives as long as the test process (a `Tree` holds its seam as
        /// `&'static`).
        pub fn leaked() -> &'static Recorder {
            Box::leak(Box::default())
        }

        /// Every call so far, in order.
        pub fn calls(&self) -> Vec<Call> {
            self.calls.lock().unwrap().clone()
        }

        fn push(&self, c: Call) {
            self.calls.lock().unwrap().push(c);
        }

        /// `p` as the kernel would resolve its start: a magic link of this process's fd
        /// table read back, a relative path joined to the virtual working directory.
        fn resolve(&self, p: &Path) -> PathBuf {
            let p = match p.strip_prefix("/proc/self/fd") {
                Ok(rest) => {
                    let mut parts = rest.components();
                    let fd = parts.next().map(|c| c.as_os_str().to_owned());
                    match fd
                        .and_then(|fd| std::fs::read_link(Path::new("/proc/self/fd").join(fd)).ok())
                    {
                        Some(real) => real.join(parts.as_path()),
                        None => p.to_path_buf(),
                    }
                }
                Err(_) => p.to_path_buf(),
            };
            match (p.is_relative(), self.cwd.lock().unwrap().clone()) {
                (true, Some(cwd)) => {
                    let joined = cwd.join(&p);
                    // `.` names the directory itself.
                    joined.components().collect()
                }
                _ => p,
            }
        }
    }

    impl Mounts for Recorder {
        fn mount(
            &self,
            source: Option<&Path>,
            target: &Path,
            fstype: Option<&str>,
            flags: MsFlags,
            data: Option<&str>,
        ) -> nix::Result<()> {
            let source = source.map(|s| {
                if fstype.is_some() {
                    s.to_path_buf()
                } else {
                    self.resolve(s)
                }
            });
            self.push(Call::Mount {
                source,
                target: self.resolve(target),
                fstype: fstype.map(str::to_string),
                flags,
                data: data.map(str::to_string),
            });
            Ok(())
        }
        fn umount2(&self, target: &Path, flags: MntFlags) -> nix::Result<()> {
            self.push(Call::Umount {
                target: self.resolve(target),
                flags,
            });
            Ok(())
        }
        fn pivot_root(&self, new_root: &Path, put_old: &Path) -> nix::Result<()> {
            self.push(Call::PivotRoot {
                new_root: self.resolve(new_root),
                put_old: self.resolve(put_old),
            });
            Ok(())
        }
        fn chdir(&self, path: &Path) -> nix::Result<()> {
            let to = self.resolve(path);
            *self.cwd.lock().unwrap() = Some(to.clone());
            self.push(Call::Chdir(to));
            Ok(())
        }
        fn fchdir(&self, dir: BorrowedFd<'_>) -> nix::Result<()> {
            let to = self.resolve(&PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())));
            *self.cwd.lock().unwrap() = Some(to.clone());
            self.push(Call::Chdir(to));
            Ok(())
        }
        fn move_mount(&self, _tree: BorrowedFd<'_>, target: &Path) -> io::Result<()> {
            self.push(Call::MoveMount {
                target: self.resolve(target),
            });
            Ok(())
        }
    }
}
