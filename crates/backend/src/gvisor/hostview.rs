//! The host-view root of a gVisor sandbox shows the host's system directories with every
//! owner shifted to `nobody` (65534), through idmapped mounts.
//!
//! Why: the sandbox's processes are uid 0 inside gVisor's sentry, and the sentry checks
//! permissions against the owners the gofer reports — the host's. Bound as they are, a
//! host file owned by root with mode 0600 (a key under `/etc`) is *owned by the sandbox's
//! uid 0* and readable by it, capabilities or not. The linux runtime never has this:
//! its sandbox's uid 0 is an unprivileged host uid, and host files appear as `nobody`.
//! Here each system directory is bound from a read-only, nosuid, nodev, detached clone
//! whose ids go through a user namespace mapping only uid/gid 0 to 65534 (every other id
//! is unmapped and so appears as the overflow id, 65534 too): the sandbox sees the files
//! as `nobody`'s and gets their "other" permissions, like the linux runtime's sandboxes.
//!
//! Image roots get an overlay here too ([`image_root`]). The clones are attached under `<scratch>/.host/` inside the scratch mount namespace
//! (which runsc joins, see [`super::scratch`]); the host's namespace never sees them.

use super::scratch::Scratch;
use crate::linux::sys;
use crate::BackendError;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Directory of the scratch tmpfs where the idmapped clones are attached.
const HOST_DIR: &str = ".host";
/// The id host files appear with.
const NOBODY: u32 = 65534;

/// A user namespace whose only mapping is 0 → [`NOBODY`] (uids and gids), made once per
/// server process.
fn nobody_userns() -> Result<&'static OwnedFd, BackendError> {
    static USERNS: OnceLock<Result<OwnedFd, String>> = OnceLock::new();
    USERNS
        .get_or_init(make_userns)
        .as_ref()
        .map_err(|e| BackendError::LaunchFailed(format!("host view id map: {e}")))
}

fn make_userns() -> Result<OwnedFd, String> {
    use nix::unistd::{fork, ForkResult};
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| e.to_string())?;
    // SAFETY: the child only makes raw system calls (unshare, read, _exit) — nothing that
    // allocates or takes a lock another thread of the server may have held at the fork.
    match unsafe { fork() }.map_err(|e| e.to_string())? {
        ForkResult::Child => {
            drop(w);
            let ok = nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER).is_ok();
            // Wait until the parent has written the maps and opened the namespace (EOF).
            let mut b = [0u8; 1];
            let _ = nix::unistd::read(&r, &mut b);
            sys::exit_now(i32::from(!ok))
        }
        ForkResult::Parent { child } => {
            drop(r);
            let made = (|| -> Result<OwnedFd, String> {
                // The child's unshare may not have happened yet: wait for its new namespace.
                let own = std::fs::read_link("/proc/self/ns/user").map_err(|e| e.to_string())?;
                let path = format!("/proc/{child}/ns/user");
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
                while std::fs::read_link(&path).map_err(|e| e.to_string())? == own {
                    if std::time::Instant::now() > deadline {
                        return Err("the id-map helper did not make its namespace".into());
                    }
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                for (file, id) in [("uid_map", NOBODY), ("gid_map", NOBODY)] {
                    std::fs::write(format!("/proc/{child}/{file}"), format!("0 {id} 1\n"))
                        .map_err(|e| format!("{file}: {e}"))?;
                }
                std::fs::File::open(&path)
                    .map(OwnedFd::from)
                    .map_err(|e| e.to_string())
            })();
            drop(w);
            let _ = nix::sys::wait::waitpid(child, None);
            made
        }
    }
}

/// Attach an idmapped, read-only clone of each host directory in `dirs` (names under `/`)
/// under `<scratch>/.host/` in the scratch namespace; returns where each one is (the
/// path runsc binds from).
pub fn attach(scratch: &Scratch, dirs: &[&str]) -> Result<Vec<(String, PathBuf)>, BackendError> {
    let userns = nobody_userns()?
        .try_clone()
        .map_err(|e| BackendError::io("dup user namespace", e))?;
    let mntns = scratch
        .mntns
        .try_clone()
        .map_err(|e| BackendError::io("dup mount namespace", e))?;
    let base = scratch.dir.join(HOST_DIR);
    let dirs: Vec<String> = dirs.iter().map(|d| d.to_string()).collect();
    let worker = std::thread::Builder::new()
        .name("gvisor-hostview".into())
        .spawn(move || -> std::io::Result<Vec<(String, PathBuf)>> {
            use nix::sched::{setns, unshare, CloneFlags};
            // A thread of its own (it never runs anything else), with its own fs state so
            // it may join the scratch namespace.
            unshare(CloneFlags::CLONE_FS)?;
            setns(mntns.as_fd(), CloneFlags::CLONE_NEWNS)?;
            std::fs::create_dir(&base)?;
            let mut out = Vec::new();
            for d in dirs {
                let target = base.join(&d);
                std::fs::create_dir(&target)?;
                let tree = sys::open_tree_clone(&Path::new("/").join(&d))?;
                sys::mount_setattr(
                    tree.as_fd(),
                    sys::MOUNT_ATTR_IDMAP
                        | sys::MOUNT_ATTR_RDONLY
                        | sys::MOUNT_ATTR_NOSUID
                        | sys::MOUNT_ATTR_NODEV,
                    Some(userns.as_fd()),
                )?;
                sys::move_mount(tree.as_fd(), &target)?;
                out.push((d, target));
            }
            Ok(out)
        })
        .map_err(|e| BackendError::io("spawn host view thread", e))?;
    worker
        .join()
        .map_err(|_| BackendError::LaunchFailed("host view thread panicked".into()))?
        .map_err(|e| BackendError::LaunchFailed(format!("host view (idmapped binds): {e}")))
}

/// Make `name` (one component) in the overlay root `root` a directory when the image has
/// something else there — a link (to a host path, relative, dangling), a file: it is
/// removed (a whiteout in the upper layer; the image cache is never written) and a
/// directory made, so the scratch directory is bound there, confined to the sandbox, as
/// the linux runtime does in its copy-on-write layer. Nothing is followed: `*at` calls on
/// one component, `AT_SYMLINK_NOFOLLOW`.
fn dir_at(root: &std::fs::File, name: &str) -> std::io::Result<()> {
    use nix::fcntl::AtFlags;
    use nix::sys::stat::{fstatat, mkdirat, Mode, SFlag};
    match fstatat(root, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR => Ok(()),
        Ok(_) => {
            nix::unistd::unlinkat(root, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?;
            Ok(mkdirat(root, name, Mode::from_bits_truncate(0o755))?)
        }
        Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// An image root runsc may make its mount points in: an overlay of the image (read-only
/// lower layer: the shared cache is never written) with its upper layer on the scratch
/// tmpfs, mounted in the scratch namespace at `<scratch>/.root/merged`. runsc's gofer
/// creates the mount points an image lacks (`/tmp`, `/workspace`, `/run/cleanroom-init`,
/// …) there, and what an image has in place of `/tmp`, `/root` or `/workspace` is replaced
/// by a directory ([`dir_at`]); the sandbox's own writes still go to the sentry's overlay
/// (`--overlay2`).
pub fn image_root(scratch: &Scratch, image: &Path) -> Result<PathBuf, BackendError> {
    let mntns = scratch
        .mntns
        .try_clone()
        .map_err(|e| BackendError::io("dup mount namespace", e))?;
    let base = scratch.dir.join(".root");
    let image = image.to_path_buf();
    let bad = |p: &Path| {
        p.as_os_str()
            .as_encoded_bytes()
            .iter()
            .any(|b| b",:\n".contains(b))
    };
    if bad(&image) || bad(&base) {
        return Err(BackendError::LaunchFailed(format!(
            "image root path {} cannot be an overlay layer",
            image.display()
        )));
    }
    let worker = std::thread::Builder::new()
        .name("gvisor-imageroot".into())
        .spawn(move || -> std::io::Result<PathBuf> {
            use nix::mount::{mount, MsFlags};
            use nix::sched::{setns, unshare, CloneFlags};
            unshare(CloneFlags::CLONE_FS)?;
            setns(mntns.as_fd(), CloneFlags::CLONE_NEWNS)?;
            let (upper, work, merged) =
                (base.join("upper"), base.join("work"), base.join("merged"));
            for d in [&base, &upper, &work, &merged] {
                std::fs::create_dir(d)?;
            }
            let data = format!(
                "lowerdir={},upperdir={},workdir={}",
                image.display(),
                upper.display(),
                work.display()
            );
            mount(
                Some("overlay"),
                &merged,
                Some("overlay"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                Some(data.as_str()),
            )?;
            let root = std::fs::File::open(&merged)?;
            for (_, _, dest) in super::scratch::DIRS {
                dir_at(&root, dest.trim_start_matches('/'))?;
            }
            Ok(merged)
        })
        .map_err(|e| BackendError::io("spawn image root thread", e))?;
    worker
        .join()
        .map_err(|_| BackendError::LaunchFailed("image root thread panicked".into()))?
        .map_err(|e| BackendError::LaunchFailed(format!("image root overlay: {e}")))
}
