//! Build the sandbox's root filesystem inside its private mount namespace and pivot into it.
//!
//! The host-view root: a fresh tmpfs holding read-only binds of the host's system
//! directories (`/usr`, `/bin`, `/lib*`, `/sbin`, `/etc` with credential files masked), a
//! new `/proc` for the sandbox's pid namespace, a minimal `/dev`, and writable `/tmp`,
//! `/root` and `/workspace`: three directories of one private tmpfs with the sandbox's
//! disk cap (scratch.rs). Nothing here is
//! visible in the host's mount namespace, so nothing can leak there.
//!
//! The image root: an overlay whose lower layer is the shared, read-only unpacked image
//! (for a root server an idmapped mount made by the server, so image files owned by
//! host ids 0..65535 appear as the sandbox's own ids) and whose upper layer lives on a
//! size-capped tmpfs private to this sandbox: writes are copy-on-write, never reach the
//! cache or another sandbox, and vanish with the mount namespace. `/proc`, `/dev`, `/tmp`,
//! `/root` and `/workspace` are mounted over it exactly as for the host view.

use super::tree::{bind_onto, fd_path, Tree};
use crate::linux::config::{InitConfig, WORKSPACE_PATH};
use crate::linux::protocol::SetupFailure;
use crate::linux::snapshot::special::{self, Special};
use crate::linux::sys::Mounts;
use nix::mount::{MntFlags, MsFlags};
use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

mod generated;
#[cfg(test)]
mod tests;

/// A failed setup: what went wrong, and whether the image is the reason (then the server
/// reports `image_unsupported` rather than an internal launch failure).
#[derive(Debug)]
pub struct SetupError {
    pub kind: SetupFailure,
    pub message: String,
}

impl SetupError {
    fn image(message: &str) -> SetupError {
        SetupError {
            kind: SetupFailure::ImageUnsupported,
            message: message.to_string(),
        }
    }
}

impl From<String> for SetupError {
    fn from(message: String) -> Self {
        SetupError {
            kind: SetupFailure::Internal,
            message,
        }
    }
}

impl From<&str> for SetupError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

/// Host directories exposed read-only (symlinks such as merged-usr `/bin` are copied as links).
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt",
];
/// Host files hidden even though their directory is visible.
pub(crate) const MASKED_FILES: &[&str] = &[
    "etc/shadow",
    "etc/gshadow",
    "etc/shadow-",
    "etc/gshadow-",
    "etc/sudoers",
];
/// Device nodes every sandbox gets (its own copies where it can, see devnodes.rs).
pub(super) const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

fn err(what: &str, target: &Path, e: impl std::fmt::Display) -> String {
    format!("{what} {}: {e}", target.display())
}

fn bind(m: &dyn Mounts, src: &Path, dst: &Path, readonly: bool) -> Result<(), String> {
    bind_with(
        m,
        src,
        dst,
        if readonly {
            MsFlags::MS_RDONLY
        } else {
            MsFlags::empty()
        },
    )
}

/// Bind `src` on `dst` (both paths the setup controls: host system dirs, its own tmpfs),
/// remounted nosuid plus `extra` through [`bind_onto`].
fn bind_with(m: &dyn Mounts, src: &Path, dst: &Path, extra: MsFlags) -> Result<(), String> {
    let open = || {
        nix::fcntl::open(
            dst,
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| err("open", dst, e))
    };
    bind_onto(m, src, open, extra)
}

/// Show a host system directory read-only. A read-only overlay with the host dir as its
/// only lower layer reads the same files as a bind would, but the sandbox's mountinfo then
/// names `overlay` instead of the host's block device and its mount options. Where
/// overlay is unavailable (old kernels, odd lower filesystems) a read-only bind is used.
fn system_view(m: &dyn Mounts, host: &Path, inside: &Path, empty: &Path) -> Result<(), String> {
    // A lower-only overlay needs two layers: the host dir above an empty one. The empty
    // one is named relative to the cwd so that no host path of ours shows in the options.
    let (Some(parent), Some(name)) = (empty.parent(), empty.file_name()) else {
        return bind(m, host, inside, true);
    };
    let opts = format!("lowerdir={}:{}", host.display(), name.to_string_lossy());
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let plain = !opts.contains([',', '\\']) && opts.matches(':').count() == 1;
    if plain
        && empty.is_dir()
        && m.chdir(parent).is_ok()
        && m.mount(
            Some(Path::new("cleanroom")),
            inside,
            Some("overlay"),
            flags,
            Some(opts.as_str()),
        )
        .is_ok()
    {
        return Ok(());
    }
    bind(m, host, inside, true)
}

fn mkdir(p: &Path, mode: u32) -> Result<(), String> {
    fs::create_dir_all(p).map_err(|e| err("mkdir", p, e))?;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|e| err("chmod", p, e))
}

/// Attach a detached mount (from `open_tree`) at `target`.
fn attach(m: &dyn Mounts, tree: &OwnedFd, target: &Path) -> Result<(), String> {
    m.move_mount(tree.as_fd(), target)
        .map_err(|e| err("attach image mount", target, e))
}

/// Overlay root for an image: lower = the image (read-only), upper/work on a size-capped
/// tmpfs of this sandbox. Returns the merged directory to pivot into.
fn image_root(
    cfg: &InitConfig,
    m: &dyn Mounts,
    image: &Path,
    lower_tree: Option<OwnedFd>,
    layers: Option<&Path>,
) -> Result<(PathBuf, OwnedFd), String> {
    let base = cfg.root_dir.as_path();
    let opts = format!("mode=755,size={}", cfg.disk_bytes.max(1 << 20));
    m.mount(
        Some(Path::new("tmpfs")),
        base,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(opts.as_str()),
    )
    .map_err(|e| err("mount tmpfs", base, e))?;
    let (lower, upper, work, merged) = (
        base.join("lower"),
        base.join("upper"),
        base.join("work"),
        base.join("merged"),
    );
    for d in [&lower, &upper, &work, &merged] {
        mkdir(d, 0o755)?;
    }
    match lower_tree {
        Some(tree) => attach(m, &tree, &lower)?,
        None => bind(m, image, &lower, true)?,
    }
    // A restored snapshot's copy-on-write layer sits above the image.
    let lowers = match super::restore::rootfs_layer(layers)? {
        Some(snap) => format!("{snap}:{}", lower.display()),
        None => lower.display().to_string(),
    };
    // `userxattr`: overlay metadata in user.* xattrs, which a user namespace may write.
    let data = format!(
        "lowerdir={lowers},upperdir={},workdir={},userxattr",
        upper.display(),
        work.display()
    );
    m.mount(
        Some(Path::new("overlay")),
        &merged,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(data.as_str()),
    )
    .map_err(|e| err("mount overlay", &merged, e))?;
    // The server reads the sandbox's own changes from here for a snapshot (the path is
    // gone after pivot_root; the fd keeps the directory).
    let upper_fd = nix::fcntl::open(
        &upper,
        nix::fcntl::OFlag::O_PATH
            | nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| err("open", &upper, e))?;
    Ok((merged, upper_fd))
}

/// What [`build`] leaves for the server: extra writable paths for landlock, and the image
/// root's upper directory (for snapshots).
pub type Built = (Vec<String>, Option<OwnedFd>);

/// Assemble the root under `cfg.root_dir` and pivot into it. Runs as pid 1 of the sandbox.
/// Returns extra paths landlock must leave writable (an image root's own directories).
pub fn build(
    cfg: &InitConfig,
    (image_lower, snapshot, volumes): (Option<OwnedFd>, Option<OwnedFd>, Vec<OwnedFd>),
    devs: Option<OwnedFd>,
) -> Result<Built, SetupError> {
    let m = &crate::linux::sys::REAL;
    let mut root = assemble(cfg, m, image_lower, snapshot, devs)?;
    // Named volumes last: their guest paths may lie inside the writable dirs above.
    let writable = super::volumes::attach(cfg, &root.tree, volumes)?;
    root.extra.extend(writable);
    pivot(&root.tree)?;
    settle(root)
}

/// A root assembled and not yet entered.
struct Assembled {
    tree: Tree,
    image: bool,
    /// Writable paths for landlock besides the fixed set.
    extra: Vec<String>,
    /// The image root's upper directory (snapshots).
    upper: Option<OwnedFd>,
    /// The restored snapshot's special entries, applied once inside.
    special: Vec<Special>,
}

/// Everything before `pivot_root`: the root's mounts, through the seam `m`.
fn assemble(
    cfg: &InitConfig,
    m: &'static dyn Mounts,
    image_lower: Option<OwnedFd>,
    snapshot: Option<OwnedFd>,
    devs: Option<OwnedFd>,
) -> Result<Assembled, SetupError> {
    m.mount(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
    )
    .map_err(|e| err("make-rprivate", Path::new("/"), e))?;
    let layers = super::restore::attach(cfg, m, snapshot)?;
    if let Some(image) = &cfg.image_rootfs {
        let (root, upper) = image_root(cfg, m, image, image_lower, layers.as_deref())?;
        let mut built = populate(cfg, m, &root, true, layers.as_deref(), devs.as_ref())?;
        built.upper = Some(upper);
        return Ok(built);
    }
    let root = cfg.root_dir.as_path();
    m.mount(
        Some(Path::new("tmpfs")),
        root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=755,size=16m"),
    )
    .map_err(|e| err("mount tmpfs", root, e))?;

    // Made by the server next to the root mountpoint (see `LinuxBackend::provision`).
    let empty = root.with_file_name("empty");
    for dir in SYSTEM_DIRS {
        let host = Path::new("/").join(dir);
        let inside = root.join(dir);
        let Ok(meta) = fs::symlink_metadata(&host) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&host).map_err(|e| err("readlink", &host, e))?;
            symlink(&target, &inside).map_err(|e| err("symlink", &inside, e))?;
        } else if meta.is_dir() {
            mkdir(&inside, 0o755)?;
            system_view(m, &host, &inside, &empty)?;
        }
    }
    for file in MASKED_FILES {
        let inside = root.join(file);
        if inside.exists() {
            bind_with(
                m,
                Path::new("/dev/null"),
                &inside,
                MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC,
            )?;
        }
    }

    populate(cfg, m, root, false, layers.as_deref(), devs.as_ref())
}

/// After `pivot_root`: a restored snapshot's special entries, the host's identifiers
/// masked, and the host view's skeleton read-only.
fn settle(root: Assembled) -> Result<Built, SetupError> {
    special::apply(&root.special)?;
    super::identity::mask_host_identity(root.tree.mounts(), Path::new("/"), !root.image)?;
    if !root.image {
        // The tmpfs skeleton itself is read-only from now on; only the binds are writable.
        root.tree
            .mounts()
            .mount(
                None,
                Path::new("/"),
                None,
                MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                None,
            )
            .map_err(|e| err("remount ro", Path::new("/"), e))?;
    }
    Ok((root.extra, root.upper))
}

/// Where the setup keeps the files it generates (resolver config, sandbox CA, bundle): a
/// small tmpfs it mounts itself, so nothing an image put there is ever written through.
const OWN_DIR: &str = "run/cleanroom";

/// Mount /proc, /dev and the writable tmpfs dirs into `root`. Every path inside `root`
/// goes through [`Tree`]: an image root's links never lead outside it.
fn populate(
    cfg: &InitConfig,
    m: &'static dyn Mounts,
    root: &Path,
    image: bool,
    layers: Option<&Path>,
    devs: Option<&OwnedFd>,
) -> Result<Assembled, SetupError> {
    let tree = Tree::open(root, image, m)?;
    // An image root is the image's copy-on-write tree: the setup's files get a small tmpfs
    // of their own, read-only once written. The host view's skeleton is the setup's own
    // tmpfs already (read-only after pivot_root, before any sandbox process exists): a
    // directory of it saves a superblock per sandbox (docs/memory.md).
    let own = if image {
        tree.mount_fs(
            OWN_DIR,
            0o755,
            "tmpfs",
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some("mode=755,size=16m"),
        )?
    } else {
        tree.dir(OWN_DIR, 0o755)?
    };
    if let Some(tun) = &cfg.tun {
        generated::point_dns_at_gateway(&tree, &own, tun.gateway)?;
    }
    if let Some(pem) = &cfg.trusted_ca_pem {
        generated::install_ca(&tree, &own, pem)?;
    }
    // What the setup wrote there is fixed for the sandbox's life.
    if image {
        m.mount(
            None,
            &fd_path(own.fd()),
            None,
            MsFlags::MS_REMOUNT
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV
                | MsFlags::MS_NOEXEC,
            None,
        )
        .map_err(|e| format!("remount /{OWN_DIR} read-only: {e}"))?;
    }
    tree.mount_fs(
        "proc",
        0o555,
        "proc",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None,
    )?;
    build_dev(cfg, &tree, devs)?;

    // Writable filesystems: directories of ONE private tmpfs with the sandbox's disk cap
    // (charged to its memory cgroup), bound in, gone with the mount namespace. One
    // superblock instead of one per directory: see docs/memory.md (every superblock is a
    // memcg-aware shrinker, and every memory cgroup on the host pays for every shrinker).
    let mut fresh = Vec::new();
    for (inside, mode) in [
        ("tmp", 0o1777),
        ("root", 0o700),
        (WORKSPACE_PATH.trim_start_matches('/'), 0o755),
    ] {
        // Restored from a snapshot: its files below, a fresh private upper above.
        if !super::restore::overlay_part(cfg, &tree, inside, &format!("{mode:o}"), layers)? {
            fresh.push((inside, mode));
        }
    }
    super::scratch::bind_dirs(cfg, &tree, &fresh)?;
    tree.dir("home", 0o755)?;

    // What landlock leaves writable besides the fixed set: an image's own top-level
    // directories (writes go to the sandbox's copy-on-write upper layer).
    let mut extra = Vec::new();
    if image {
        for e in fs::read_dir(root)
            .map_err(|e| err("read", root, e))?
            .flatten()
        {
            let name = e.file_name().to_string_lossy().to_string();
            let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && !["proc", "sys", "dev"].contains(&name.as_str()) {
                extra.push(format!("/{name}"));
            }
        }
    }
    // The snapshot's modes and FIFOs, stored as data on the host (snapshot/special.rs):
    // read from beside its layers now, applied inside the sandbox's own root once the
    // host is out of reach (`settle`), before any sandbox process exists.
    let special = special::read(layers)?;
    Ok(Assembled {
        tree,
        image,
        extra,
        upper: None,
        special,
    })
}

/// A minimal `/dev`: a tmpfs with the harmless devices bound in (the sandbox's own copies
/// where the shim made them, `devs`, else the host's), the usual links, a private devpts
/// and a shm directory. `/dev` and `/dev/shm` are two directories of ONE tmpfs (64 MiB +
/// 64 KiB for both, what the two had before), both `nodev`: one superblock per sandbox
/// for both (docs/memory.md).
fn build_dev(cfg: &InitConfig, tree: &Tree, devs: Option<&OwnedFd>) -> Result<(), String> {
    // `nodev` on /dev itself too: every device node is a bind of its own (with its own
    // flags), so nothing else on the filesystem opens as a device — the shim's filesystem
    // belongs to the host's user namespace, where the kernel's own refusal does not apply.
    let dirs = [
        ("dev", 0o755, MsFlags::MS_NODEV | MsFlags::MS_NOEXEC),
        ("dev/shm", 0o1777, MsFlags::MS_NODEV | MsFlags::MS_NOEXEC),
    ];
    let (first, rest) = dirs.split_at(1);
    let size = super::scratch::DEV_BYTES;
    let own_dev =
        || -> Result<(), String> { super::scratch::bind_dirs_with(cfg, tree, size, &dirs, None) };
    // The shim's /dev filesystem (devnodes.rs). Only the very first bind may fail and fall
    // back (a kernel that cannot bind from a detached mount, before ~6.15): then pid 1
    // mounts its own /dev and binds the host's nodes, as before. Any later failure fails
    // the launch.
    let devs = match devs {
        Some(fs) => match super::scratch::bind_dirs_with(cfg, tree, size, first, Some(fs)) {
            Ok(()) => {
                super::scratch::bind_dirs_with(cfg, tree, size, rest, Some(fs))?;
                Some(fs)
            }
            Err(e) => {
                eprintln!("cleanroom sandbox: own /dev unavailable, using the host's nodes: {e}");
                own_dev()?;
                None
            }
        },
        None => {
            own_dev()?;
            None
        }
    };
    let dev = tree.dir("dev", 0o755)?;
    for name in DEVICES {
        dev.create_file(name, b"", 0o644)?;
        // This sandbox's own node (devnodes.rs) where the shim made one; the host's only
        // where it could not (the host lacks it, or an unprivileged server).
        let src = match devs.map(|d| fd_path(d).join(super::devnodes::NODES).join(name)) {
            Some(own) if super::devnodes::is_char_device(&own) => own,
            _ => Path::new("/dev").join(name),
        };
        bind_onto(tree.mounts(), &src, || dev.leaf(name), MsFlags::MS_NOEXEC)?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        dev.symlink(link, target)?;
    }
    dev.mount_fs(
        "pts",
        0o755,
        "devpts",
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )?;
    Ok(())
}

/// pivot_root(".", ".") then detach the old root: the host tree is gone from this namespace.
fn pivot(root: &Tree) -> Result<(), String> {
    let m = root.mounts();
    root.enter()?;
    m.pivot_root(Path::new("."), Path::new("."))
        .map_err(|e| format!("pivot_root: {e}"))?;
    m.umount2(Path::new("."), MntFlags::MNT_DETACH)
        .map_err(|e| format!("umount old root: {e}"))?;
    m.chdir(Path::new("/"))
        .map_err(|e| err("chdir", Path::new("/"), e))
}
