//! The writable `/tmp`, `/root` and `/workspace` of a gVisor sandbox: three directories of
//! **one** host tmpfs of the sandbox's disk size, bound in, so the disk limit bounds their
//! sum — as under the linux runtime (`linux/sandbox/scratch.rs`). A tmpfs of gVisor's own
//! per mountpoint would give each one the whole limit (three times it in all). Every mount
//! is overlaid by the sentry (`--overlay2=all:dir=<tmpfs>/.overlay`, [`OVERLAY`]): the
//! writes — to the root too — live in the overlay, whose filestore is a file on this
//! tmpfs, so the cap bounds them all and a memory checkpoint captures them (files written
//! to the host side of a bind would not be captured).
//!
//! The tmpfs is mounted in a mount namespace of its own, made on a short-lived thread (the
//! host's namespace never sees it) and held by fd: `runsc run` joins it before making its
//! private namespace (`launch.rs`), so runsc's gofer — which serves the binds and sits in
//! the sandbox's cgroup — finds it, and the pages the sandbox writes are charged to the
//! sandbox's memory cgroup. The server keeps a descriptor of the tmpfs' root only to
//! `fstatvfs` it (usage); it never resolves a path under it. Everything goes when the last
//! of the server's fds and runsc's processes does (after a server SIGKILL: once `reconcile`
//! has killed runsc).

use crate::BackendError;
use nix::mount::{mount, MsFlags};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The directories of the tmpfs, their mode and where the sandbox sees them.
pub const DIRS: [(&str, u32, &str); 3] = [
    ("tmp", 0o1777, "/tmp"),
    ("root", 0o700, "/root"),
    ("workspace", 0o755, crate::WORKSPACE_PATH),
];

/// The directory of the tmpfs where gVisor keeps its overlay filestore (`--overlay2
/// all:dir=…`): every write of the sandbox — to its root and to the three directories —
/// lands in the sentry's overlay, whose backing file is here. So one tmpfs of the disk size
/// bounds all of them, and the writes are sentry memory that a checkpoint captures (host
/// files under a bind mount would not be: a restore into a fresh scratch would find the
/// directories empty).
pub const OVERLAY: &str = ".overlay";

/// Smallest tmpfs made (a zero limit is refused earlier; this keeps the mount valid).
const MIN_BYTES: u64 = 1 << 20;

/// One sandbox's scratch filesystem (see the module doc).
pub struct Scratch {
    /// The mount namespace holding the tmpfs (runsc joins it).
    pub mntns: OwnedFd,
    /// The tmpfs' root, only for `fstatvfs`.
    root: OwnedFd,
    /// Where it is mounted inside `mntns` (the bundle's `scratch`).
    pub dir: PathBuf,
}

impl Scratch {
    /// Bytes used and the size of the tmpfs.
    pub fn usage(&self) -> Option<(u64, u64)> {
        let st = nix::sys::statvfs::fstatvfs(self.root.as_fd()).ok()?;
        let frsize = st.fragment_size();
        let size = (st.blocks() as u64).saturating_mul(frsize);
        let free = (st.blocks_free() as u64).saturating_mul(frsize);
        Some((size.saturating_sub(free), size))
    }

    /// `--overlay2` for runsc: every mount overlaid, the filestore in [`OVERLAY`].
    pub fn overlay_flag(&self) -> String {
        format!("--overlay2=all:dir={}", self.dir.join(OVERLAY).display())
    }

    /// The host path (inside `mntns`) of one of [`DIRS`].
    pub fn source(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Mount a tmpfs of `bytes` on `dir` (an empty directory of the server's) in a new mount
/// namespace, with [`DIRS`] on it. Runs on a thread that exists only for this: a thread
/// that changed its mount namespace must never run anything else.
pub fn create(dir: &Path, bytes: u64) -> Result<Scratch, BackendError> {
    std::fs::create_dir(dir)
        .map_err(|e| BackendError::io(format!("create {}", dir.display()), e))?;
    let dir = dir.to_path_buf();
    let worker = std::thread::Builder::new()
        .name("gvisor-scratch".into())
        .spawn(move || -> std::io::Result<Scratch> {
            use nix::sched::{unshare, CloneFlags};
            // CLONE_NEWNS also unshares this thread's root and cwd (CLONE_FS).
            unshare(CloneFlags::CLONE_NEWNS)?;
            let none: Option<&str> = None;
            mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)?;
            mount(
                Some("tmpfs"),
                &dir,
                Some("tmpfs"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some(format!("mode=755,size={}", bytes.max(MIN_BYTES)).as_str()),
            )?;
            for (name, mode, _) in DIRS {
                let d = dir.join(name);
                std::fs::create_dir(&d)?;
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode))?;
            }
            std::fs::create_dir(dir.join(OVERLAY))?;
            std::fs::set_permissions(dir.join(OVERLAY), std::fs::Permissions::from_mode(0o700))?;
            let mntns: OwnedFd = std::fs::File::open("/proc/thread-self/ns/mnt")?.into();
            let root: OwnedFd = std::fs::File::open(&dir)?.into();
            Ok(Scratch { mntns, root, dir })
        })
        .map_err(|e| BackendError::io("spawn scratch thread", e))?;
    worker
        .join()
        .map_err(|_| BackendError::LaunchFailed("scratch thread panicked".into()))?
        .map_err(|e| BackendError::LaunchFailed(format!("scratch filesystem: {e}")))
}
