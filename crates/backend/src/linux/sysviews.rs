//! Read-only views of the host's system directories (`/usr`, `/etc`, `/opt`, …) that the
//! sandboxes forked by one zygote share.
//!
//! **Why.** A host-view sandbox shows each system directory as a lower-only overlay (its
//! mountinfo then names `overlay`, not the host's block device and options). Mounted by
//! each sandbox that was three superblocks per sandbox, and every superblock registers a
//! memcg-aware shrinker that *every* memory cgroup of the host pays for
//! (docs/memory.md). Now the zygote has one overlay per directory mounted, and each
//! sandbox's pid 1 attaches a clone of that mount (`open_tree(OPEN_TREE_CLONE)`): the same
//! files, the same read-only, nosuid, nodev mount, one superblock per directory per
//! [`MAX_AGE`] instead of one per sandbox.
//!
//! **Who mounts them.** Overlayfs reaches its lower layers with the *mounter's*
//! credentials (after checking the reader's own on the overlay inode). The views are
//! therefore never mounted by host root: a short-lived helper forked from the zygote moves
//! into a user namespace of its own whose only id, 0, is the host's `nobody` ([`NOBODY`]),
//! drops every supplementary group, and mounts them there. A reader gets at most what
//! both it and `nobody` may read — what a sandbox got from the overlay it mounted as its
//! own unprivileged root. The superblocks belong to the helper's user namespace, so no
//! sandbox (whose namespace is not below it) can reconfigure them, and setuid bits on
//! them are ignored.
//!
//! **Freshness.** An overlay caches lookups: a file the host adds or replaces after some
//! sandbox looked for it can stay hidden behind the cached entry. A view older than
//! [`MAX_AGE`] is rebuilt at the next fork, and every zygote (rotated after 128 forks)
//! builds its own, so a new sandbox sees the host's system files as of at most a few
//! seconds before its creation.
//!
//! **Failure.** When the views cannot be built (no overlayfs in user namespaces, a
//! helper that does not answer within [`HELPER_TIMEOUT`]), sandboxes mount their own
//! overlay per directory, as before; a view pid 1 cannot clone is mounted the same way.
//! Nothing here widens what a sandbox sees.

use super::protocol;
use super::sys;
use nix::sched::{unshare, CloneFlags};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use nix::unistd::{fork, ForkResult, Gid, Pid, Uid};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// Oldest a set of views may be when a sandbox is forked (see "Freshness" above).
pub(super) const MAX_AGE: Duration = Duration::from_secs(5);
/// How long the zygote waits for its helper (a fork and a few mount calls: milliseconds).
const HELPER_TIMEOUT: Duration = Duration::from_secs(5);
/// The host id the helper's user namespace maps its only id (0) to.
const NOBODY: u32 = 65534;

/// One shared view: the system directory it shows (a name of `rootfs::SYSTEM_DIRS`) and
/// its detached, read-only mount.
#[derive(Debug)]
pub struct View {
    pub dir: String,
    pub tree: OwnedFd,
}

/// The zygote's current views and when they were built (or last attempted).
#[derive(Default)]
pub(super) struct Shared {
    views: Vec<View>,
    attempted: Option<Instant>,
}

impl Shared {
    /// The views for the next fork, rebuilt first when older than [`MAX_AGE`]. Only a root
    /// zygote builds views (an unprivileged server's sandboxes mount their own). A failed
    /// build is logged and retried after [`MAX_AGE`]; until then forks get no views.
    pub(super) fn current(&mut self, dirs: &[&str]) -> &[View] {
        if !nix::unistd::geteuid().is_root() {
            return &[];
        }
        if self.attempted.is_some_and(|t| t.elapsed() < MAX_AGE) {
            return &self.views;
        }
        // Old views go first: sandboxes that attached them keep their own clones.
        self.views.clear();
        self.attempted = Some(Instant::now());
        match build(dirs) {
            Ok(v) => self.views = v,
            Err(e) => eprintln!(
                "cleanroom zygote: shared system views unavailable, sandboxes mount their own: {e}"
            ),
        }
        &self.views
    }
}

/// What the helper and the zygote say to each other.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Step {
    /// Helper: in its new user and mount namespaces; write my id maps.
    Unshared,
    /// Zygote: the maps are written.
    Mapped,
    /// Helper: the views, one fd each, in this order.
    Views(Vec<String>),
    /// Helper: nothing was mounted.
    Failed(String),
}

/// Mount one view per directory of `dirs` that is a real directory on the host (links
/// such as merged-usr `/bin` are copied as links by the setup) through a helper process.
/// Runs in the single-threaded zygote.
pub(super) fn build(dirs: &[&str]) -> Result<Vec<View>, String> {
    let wanted: Vec<String> = dirs
        .iter()
        .filter(|d| {
            std::fs::symlink_metadata(Path::new("/").join(d)).is_ok_and(|m| m.file_type().is_dir())
        })
        .map(|d| d.to_string())
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(|e| format!("socketpair: {e}"))?;
    // SAFETY: the zygote is single-threaded (no runtime, no helper threads), so the child
    // may run arbitrary code; it never returns (it exits below).
    match unsafe { fork() }.map_err(|e| format!("fork: {e}"))? {
        ForkResult::Child => {
            drop(ours);
            let fd = theirs.as_raw_fd();
            if let Err(e) = helper(fd, &wanted) {
                let _ = protocol::send(fd, &Step::Failed(e), &[]);
                std::process::exit(1)
            }
            std::process::exit(0)
        }
        ForkResult::Parent { child } => {
            drop(theirs);
            let got = from_helper(&ours, child, &wanted);
            if got.is_err() {
                // Our own unreaped child: the pid is still its.
                let _ = sys::kill(child.as_raw(), nix::sys::signal::Signal::SIGKILL);
            }
            // Reaped here, never by the zygote's loop (which counts shims).
            let _ = nix::sys::wait::waitpid(child, None);
            got
        }
    }
}

/// The zygote's side: write the helper's id maps, then take its views.
fn from_helper(sock: &OwnedFd, child: Pid, wanted: &[String]) -> Result<Vec<View>, String> {
    let deadline = Instant::now() + HELPER_TIMEOUT;
    match next(sock, deadline)? {
        (Step::Unshared, _) => {}
        (other, _) => return Err(format!("helper: {other:?}")),
    }
    let map = format!("0 {NOBODY} 1\n");
    for file in ["uid_map", "gid_map"] {
        std::fs::write(format!("/proc/{child}/{file}"), &map)
            .map_err(|e| format!("write the helper's {file}: {e}"))?;
    }
    protocol::send(sock.as_raw_fd(), &Step::Mapped, &[])
        .map_err(|e| format!("helper socket: {e}"))?;
    match next(sock, deadline)? {
        (Step::Views(names), trees)
            if names.len() == trees.len() && names.iter().all(|n| wanted.contains(n)) =>
        {
            Ok(names
                .into_iter()
                .zip(trees)
                .map(|(dir, tree)| View { dir, tree })
                .collect())
        }
        (other, _) => Err(format!("helper: {other:?}")),
    }
}

/// The next message from the helper, waiting at most until `deadline`.
fn next(sock: &OwnedFd, deadline: Instant) -> Result<(Step, Vec<OwnedFd>), String> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = u16::try_from(left.as_millis()).unwrap_or(u16::MAX);
        if ms == 0 {
            return Err("the helper did not answer in time".into());
        }
        let mut fds = [nix::poll::PollFd::new(
            sock.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(format!("poll: {e}")),
        }
        return match protocol::recv::<Step>(sock.as_raw_fd()) {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err("the helper exited".into()),
            Err(e) => Err(format!("helper socket: {e}")),
        };
    }
}

/// The helper (a fork of the zygote): become `nobody` in a user namespace of its own and
/// mount the views there.
fn helper(sock: RawFd, dirs: &[String]) -> Result<(), String> {
    let zygote = nix::unistd::getppid();
    sys::kill_with_parent().map_err(|e| format!("set parent-death signal: {e}"))?;
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("unshare(user, mount): {e}"))?;
    protocol::send(sock, &Step::Unshared, &[]).map_err(|e| format!("socket: {e}"))?;
    match protocol::recv::<Step>(sock) {
        Ok(Some((Step::Mapped, _))) => {}
        other => return Err(format!("expected the id maps, got {other:?}")),
    }
    // Until now our credentials were still host root's (only our capabilities were the
    // new namespace's); from here they are `nobody`'s, with no supplementary groups.
    let (root_uid, root_gid) = (Uid::from_raw(0), Gid::from_raw(0));
    nix::unistd::setgroups(&[])
        .and_then(|()| nix::unistd::setresgid(root_gid, root_gid, root_gid))
        .and_then(|()| nix::unistd::setresuid(root_uid, root_uid, root_uid))
        .map_err(|e| format!("become nobody: {e}"))?;
    // The euid change cleared the parent-death signal: arm it again.
    sys::kill_with_parent().map_err(|e| format!("set parent-death signal: {e}"))?;
    if nix::unistd::getppid() != zygote {
        return Err("the zygote exited".into());
    }
    let empty = empty_layer()?;
    // Lower layers are named relative to the empty tmpfs (our cwd), so the options the
    // sandbox's mountinfo shows name no host path but the system directory's own.
    nix::unistd::fchdir(empty.as_fd()).map_err(|e| format!("fchdir: {e}"))?;
    let mut trees = Vec::with_capacity(dirs.len());
    for dir in dirs {
        trees.push(overlay(dir).map_err(|e| format!("overlay of /{dir}: {e}"))?);
    }
    let raw: Vec<RawFd> = trees.iter().map(|t| t.as_raw_fd()).collect();
    protocol::send(sock, &Step::Views(dirs.to_vec()), &raw).map_err(|e| format!("socket: {e}"))
}

/// A tiny detached tmpfs holding one empty directory, `empty`: a lower-only overlay needs
/// two layers, the host directory above an empty one.
fn empty_layer() -> Result<OwnedFd, String> {
    let fs = sys::fsopen(c"tmpfs").map_err(|e| format!("fsopen(tmpfs): {e}"))?;
    for (k, v) in [
        (c"source", c"cleanroom"),
        (c"size", c"4k"),
        (c"nr_inodes", c"4"),
        (c"mode", c"755"),
    ] {
        sys::fsconfig_string(fs.as_fd(), k, v).map_err(|e| format!("tmpfs {k:?}: {e}"))?;
    }
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_CMD_CREATE, None)
        .map_err(|e| format!("create tmpfs: {e}"))?;
    let attrs = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV | sys::MOUNT_ATTR_NOEXEC;
    let tree = sys::fsmount(fs.as_fd(), attrs as libc::c_uint)
        .map_err(|e| format!("fsmount(tmpfs): {e}"))?;
    nix::sys::stat::mkdirat(
        tree.as_fd(),
        "empty",
        nix::sys::stat::Mode::from_bits_truncate(0o755),
    )
    .map_err(|e| format!("mkdir empty: {e}"))?;
    sys::mount_setattr(tree.as_fd(), sys::MOUNT_ATTR_RDONLY, None)
        .map_err(|e| format!("read-only tmpfs: {e}"))?;
    Ok(tree)
}

/// The read-only, lower-only overlay of host `/dir` over `empty` (in the cwd).
fn overlay(dir: &str) -> std::io::Result<OwnedFd> {
    let lower = std::ffi::CString::new(format!("/{dir}:empty"))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let fs = sys::fsopen(c"overlay")?;
    sys::fsconfig_string(fs.as_fd(), c"source", c"cleanroom")?;
    sys::fsconfig_string(fs.as_fd(), c"lowerdir", &lower)?;
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_SET_FLAG, Some(c"ro"))?;
    sys::fsconfig(fs.as_fd(), sys::FSCONFIG_CMD_CREATE, None)?;
    let attrs = sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
    sys::fsmount(fs.as_fd(), attrs as libc::c_uint)
}

/// In a forked shim: the views at fds `first`, `first + 1`, … (close-on-exec), so that
/// everything from `first + views.len()` up can be closed. Runs before the shim closes
/// the zygote's fds.
pub(super) fn place(views: &[View], first: RawFd) -> std::io::Result<Vec<View>> {
    let end = first + views.len() as RawFd;
    // Copies above the target range first, so no target overwrites a view not yet moved.
    let mut high = Vec::with_capacity(views.len());
    for v in views {
        let fd = nix::fcntl::fcntl(v.tree.as_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(end))?;
        high.push(fd);
    }
    let mut placed = Vec::with_capacity(views.len());
    for (i, (v, fd)) in views.iter().zip(high).enumerate() {
        let target = first + i as RawFd;
        // SAFETY: dup3 onto a number this process owns (whatever it held is the zygote's
        // and closed with it, atomically); `fd` stays open until the call returns.
        let rc = unsafe { libc::dup3(fd, target, libc::O_CLOEXEC) };
        let _ = nix::unistd::close(fd);
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        placed.push(View {
            dir: v.dir.clone(),
            // SAFETY: `target` was just made a copy of the view by dup3 and nothing else
            // in this process owns it.
            tree: unsafe { std::os::fd::FromRawFd::from_raw_fd(target) },
        });
    }
    Ok(placed)
}

/// In pid 1: attach a clone of `view` at `target` (a directory of the sandbox's root).
pub(super) fn attach(view: &View, target: &Path) -> std::io::Result<()> {
    let clone = sys::open_tree_clone_fd(view.tree.as_fd())?;
    sys::move_mount(clone.as_fd(), target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Read `name` through `view` (a detached mount used as a directory fd).
    fn read_through(view: &View, name: &str) -> nix::Result<String> {
        let fd = nix::fcntl::openat(
            view.tree.as_fd(),
            name,
            nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        let mut out = String::new();
        std::io::Read::read_to_string(&mut std::fs::File::from(fd), &mut out)
            .map_err(|_| nix::errno::Errno::EIO)?;
        Ok(out)
    }

    /// The views are mounted by `nobody`, never by host root: host root itself (the test
    /// runs as root, as a root server does) cannot read a root-only file through a view,
    /// while a world-readable one reads as on the host. Fails if the helper kept host
    /// root's credentials (then the root-only file reads).
    #[test]
    fn views_read_with_nobodys_rights_never_host_roots() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: needs root (the zygote of a root server builds views)");
            return;
        }
        // A system directory of our own under /: SYSTEM_DIRS are names below the root.
        let name = format!("cleanroom-views-test-{}", std::process::id());
        let dir = Path::new("/").join(&name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for (file, mode) in [("public", 0o644), ("rootonly", 0o600)] {
            std::fs::write(dir.join(file), file).unwrap();
            std::fs::set_permissions(dir.join(file), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }
        let views = build(&[name.as_str()]);
        let seen = views.as_ref().map(|v| {
            let made = nix::fcntl::openat(
                v[0].tree.as_fd(),
                "new",
                nix::fcntl::OFlag::O_CREAT
                    | nix::fcntl::OFlag::O_WRONLY
                    | nix::fcntl::OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::from_bits_truncate(0o644),
            );
            (
                v.len(),
                v[0].dir.clone(),
                read_through(&v[0], "public"),
                read_through(&v[0], "rootonly"),
                made.map(drop),
            )
        });
        let _ = std::fs::remove_dir_all(&dir);
        let (n, shown, public, rootonly, made) = seen.unwrap();
        assert_eq!((n, shown), (1, name));
        assert_eq!(public.unwrap(), "public");
        assert_eq!(rootonly, Err(nix::errno::Errno::EACCES));
        // Read-only, whoever asks.
        assert_eq!(made, Err(nix::errno::Errno::EROFS));
    }

    #[test]
    fn a_host_directory_that_is_missing_or_a_link_gets_no_view() {
        assert!(build(&["cleanroom-no-such-dir"]).unwrap().is_empty());
    }

    #[test]
    fn place_puts_views_at_consecutive_fds() {
        let a = View {
            dir: "a".into(),
            tree: nix::unistd::pipe().unwrap().0,
        };
        let b = View {
            dir: "b".into(),
            tree: nix::unistd::pipe().unwrap().0,
        };
        // Far above anything the harness has open, so the targets are ours to take.
        let placed = place(&[a, b], 900).unwrap();
        let fds: Vec<RawFd> = placed.iter().map(|v| v.tree.as_raw_fd()).collect();
        assert_eq!(fds, [900, 901]);
        assert_eq!(placed[1].dir, "b");
        let flags =
            nix::fcntl::fcntl(placed[0].tree.as_fd(), nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }
}
