//! Build the sandbox's root filesystem inside its private mount namespace and pivot into it.
//!
//! The host-view root: a fresh tmpfs holding read-only binds of the host's system
//! directories (`/usr`, `/bin`, `/lib*`, `/sbin`, `/etc` with credential files masked), a
//! new `/proc` for the sandbox's pid namespace, a minimal `/dev`, and writable,
//! size-capped tmpfs `/tmp`, `/root` and `/workspace`. Nothing here is
//! visible in the host's mount namespace, so nothing can leak there.
//!
//! The image root: an overlay whose lower layer is the shared, read-only unpacked image
//! (for a root server an idmapped mount made by the server, so image files owned by
//! host ids 0..65535 appear as the sandbox's own ids) and whose upper layer lives on a
//! size-capped tmpfs private to this sandbox: writes are copy-on-write, never reach the
//! cache or another sandbox, and vanish with the mount namespace. `/proc`, `/dev`, `/tmp`,
//! `/root` and `/workspace` are mounted over it exactly as for the host view.

use super::config::{InitConfig, WORKSPACE_PATH};
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

/// Host directories exposed read-only (symlinks such as merged-usr `/bin` are copied as links).
const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt",
];
/// Host files hidden even though their directory is visible.
const MASKED_FILES: &[&str] = &[
    "etc/shadow",
    "etc/gshadow",
    "etc/shadow-",
    "etc/gshadow-",
    "etc/sudoers",
];
/// Device nodes bind-mounted from the host.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

fn err(what: &str, target: &Path, e: impl std::fmt::Display) -> String {
    format!("{what} {}: {e}", target.display())
}

fn bind(src: &Path, dst: &Path, readonly: bool) -> Result<(), String> {
    bind_with(
        src,
        dst,
        if readonly {
            MsFlags::MS_RDONLY
        } else {
            MsFlags::empty()
        },
    )
}

/// Bind `src` on `dst`, then remount it nosuid plus `extra` flags. Every bind in the sandbox
/// goes through here: no mount may honour setuid bits.
fn bind_with(src: &Path, dst: &Path, extra: MsFlags) -> Result<(), String> {
    mount(
        Some(src),
        dst,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| err("bind mount", dst, e))?;
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
    mount(None::<&str>, dst, None::<&str>, flags, None::<&str>).map_err(|e| err("remount", dst, e))
}

/// Show a host system directory read-only. A read-only overlay with the host dir as its
/// only lower layer reads the same files as a bind would, but the sandbox's mountinfo then
/// names `overlay` instead of the host's block device and its mount options. Where
/// overlay is unavailable (old kernels, odd lower filesystems) a read-only bind is used.
fn system_view(host: &Path, inside: &Path, empty: &Path) -> Result<(), String> {
    // A lower-only overlay needs two layers: the host dir above an empty one. The empty
    // one is named relative to the cwd so that no host path of ours shows in the options.
    let (Some(parent), Some(name)) = (empty.parent(), empty.file_name()) else {
        return bind(host, inside, true);
    };
    let opts = format!("lowerdir={}:{}", host.display(), name.to_string_lossy());
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let plain = !opts.contains([',', '\\']) && opts.matches(':').count() == 1;
    if plain
        && empty.is_dir()
        && nix::unistd::chdir(parent).is_ok()
        && mount(
            Some("cleanroom"),
            inside,
            Some("overlay"),
            flags,
            Some(opts.as_str()),
        )
        .is_ok()
    {
        return Ok(());
    }
    bind(host, inside, true)
}

fn mkdir(p: &Path, mode: u32) -> Result<(), String> {
    fs::create_dir_all(p).map_err(|e| err("mkdir", p, e))?;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).map_err(|e| err("chmod", p, e))
}

fn touch(p: &Path) -> Result<(), String> {
    fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(p)
        .map(drop)
        .map_err(|e| err("create", p, e))
}

/// Attach a detached mount (from `open_tree`) at `target`.
fn attach(tree: &OwnedFd, target: &Path) -> Result<(), String> {
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    let t = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())
        .map_err(|e| err("path", target, e))?;
    // SAFETY: move_mount(2) with valid fds and NUL-terminated paths.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if rc != 0 {
        return Err(err(
            "attach image mount",
            target,
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Overlay root for an image: lower = the image (read-only), upper/work on a size-capped
/// tmpfs of this sandbox. Returns the merged directory to pivot into.
fn image_root(
    cfg: &InitConfig,
    image: &Path,
    lower_tree: Option<OwnedFd>,
) -> Result<PathBuf, String> {
    let base = cfg.root_dir.as_path();
    let opts = format!("mode=755,size={}", cfg.disk_bytes.max(1 << 20));
    mount(
        Some("tmpfs"),
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
        Some(tree) => attach(&tree, &lower)?,
        None => bind(image, &lower, true)?,
    }
    // `userxattr`: overlay metadata in user.* xattrs, which a user namespace may write.
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper.display(),
        work.display()
    );
    mount(
        Some("overlay"),
        &merged,
        Some("overlay"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(data.as_str()),
    )
    .map_err(|e| err("mount overlay", &merged, e))?;
    Ok(merged)
}

/// Assemble the root under `cfg.root_dir` and pivot into it. Runs as pid 1 of the sandbox.
/// Returns extra paths landlock must leave writable (an image root's own directories).
pub fn build(cfg: &InitConfig, image_lower: Option<OwnedFd>) -> Result<Vec<String>, String> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| err("make-rprivate", Path::new("/"), e))?;
    if let Some(image) = &cfg.image_rootfs {
        let root = image_root(cfg, image, image_lower)?;
        return populate(cfg, &root, true);
    }
    let root = cfg.root_dir.as_path();
    mount(
        Some("tmpfs"),
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
            system_view(&host, &inside, &empty)?;
        }
    }
    for file in MASKED_FILES {
        let inside = root.join(file);
        if inside.exists() {
            bind_with(
                Path::new("/dev/null"),
                &inside,
                MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC,
            )?;
        }
    }

    populate(cfg, root, false)
}

/// Mount /proc, /dev and the writable tmpfs dirs into `root`, then pivot into it.
fn populate(cfg: &InitConfig, root: &Path, image: bool) -> Result<Vec<String>, String> {
    if let Some(tun) = &cfg.tun {
        point_dns_at_gateway(root, tun.gateway)?;
    }
    if let Some(pem) = &cfg.trusted_ca_pem {
        install_ca(root, pem)?;
    }
    let proc_dir = root.join("proc");
    mkdir(&proc_dir, 0o555)?;
    mount(
        Some("proc"),
        &proc_dir,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| err("mount proc", &proc_dir, e))?;

    build_dev(&root.join("dev"))?;

    // Writable filesystems: private tmpfs mounts with a size cap (and charged to the
    // sandbox's memory cgroup), gone with the mount namespace.
    for (inside, mode) in [
        ("tmp", "1777"),
        ("root", "700"),
        (WORKSPACE_PATH.trim_start_matches('/'), "755"),
    ] {
        let dst = root.join(inside);
        mkdir(&dst, 0o755)?;
        let opts = format!("mode={mode},size={}", cfg.disk_bytes.max(1 << 20));
        mount(
            Some("tmpfs"),
            &dst,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts.as_str()),
        )
        .map_err(|e| err("mount tmpfs", &dst, e))?;
    }
    mkdir(&root.join("run"), 0o755)?;
    mkdir(&root.join("home"), 0o755)?;

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
    pivot(root)?;
    super::identity::mask_host_identity(!image)?;
    if image {
        return Ok(extra);
    }
    // The tmpfs skeleton itself is read-only from now on; only the binds above are writable.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        None::<&str>,
    )
    .map_err(|e| err("remount ro", Path::new("/"), e))?;
    Ok(extra)
}

/// The sandbox's only resolver is the gateway: a generated `resolv.conf` is bound over the
/// host's (or written where the host's symlink points, for a systemd-resolved host).
fn point_dns_at_gateway(root: &Path, gateway: std::net::Ipv4Addr) -> Result<(), String> {
    let content = format!("# written by cleanroom: the egress gateway answers DNS\nnameserver {gateway}\noptions edns0\n");
    let etc_conf = root.join("etc/resolv.conf");
    let own = root.join("run/cleanroom-resolv.conf");
    mkdir(&root.join("run"), 0o755)?;
    match fs::symlink_metadata(&etc_conf) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = fs::read_link(&etc_conf).map_err(|e| err("readlink", &etc_conf, e))?;
            let Ok(rel) = target.strip_prefix("/run") else {
                return Err(format!(
                    "/etc/resolv.conf points at {}, outside /run: cannot redirect DNS",
                    target.display()
                ));
            };
            let inside = root.join("run").join(rel);
            if let Some(parent) = inside.parent() {
                fs::create_dir_all(parent).map_err(|e| err("mkdir", parent, e))?;
            }
            fs::write(&inside, content).map_err(|e| err("write", &inside, e))
        }
        Ok(_) => {
            fs::write(&own, content).map_err(|e| err("write", &own, e))?;
            bind_with(&own, &etc_conf, MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC)
        }
        // None yet: an image root's /etc is writable (its copy-on-write layer); the host
        // view's is not, and a sandbox without a resolver config is refused, not half-made.
        Err(_) => {
            if let Some(etc) = etc_conf.parent() {
                let _ = fs::create_dir_all(etc);
            }
            fs::write(&etc_conf, content)
                .map_err(|e| format!("cannot point /etc/resolv.conf at the egress gateway: {e}"))
        }
    }
}

/// The system CA bundle a root may carry (Debian, Ubuntu, Alpine and friends).
const SYSTEM_BUNDLE: &str = "etc/ssl/certs/ca-certificates.crt";

/// Make the sandbox trust one extra CA: written alone and as part of a full bundle under
/// /run (a tmpfs-backed or copy-on-write path of this sandbox only), and the bundle bound
/// read-only over the root's system bundle, so tools that read the default path trust it
/// too. The host's own bundle is never modified.
fn install_ca(root: &Path, pem: &str) -> Result<(), String> {
    let run = root.join("run/cleanroom");
    fs::create_dir_all(&run).map_err(|e| err("mkdir", &run, e))?;
    let alone = root.join(crate::SANDBOX_CA_PATH.trim_start_matches('/'));
    fs::write(&alone, pem).map_err(|e| err("write", &alone, e))?;
    let system = root.join(SYSTEM_BUNDLE);
    // A symlinked bundle is left alone: resolving it here would follow the link on the
    // host's tree, not the sandbox's.
    let regular = fs::symlink_metadata(&system)
        .map(|m| m.file_type().is_file())
        .unwrap_or(false);
    let mut bundle = if regular {
        fs::read_to_string(&system).map_err(|e| err("read", &system, e))?
    } else {
        String::new()
    };
    if !bundle.is_empty() && !bundle.ends_with('\n') {
        bundle.push('\n');
    }
    bundle.push_str(pem);
    let combined = root.join(crate::SANDBOX_CA_BUNDLE.trim_start_matches('/'));
    fs::write(&combined, bundle).map_err(|e| err("write", &combined, e))?;
    if regular {
        bind_with(&combined, &system, MsFlags::MS_RDONLY | MsFlags::MS_NOEXEC)?;
    }
    Ok(())
}

fn build_dev(dev: &Path) -> Result<(), String> {
    mkdir(dev, 0o755)?;
    mount(
        Some("tmpfs"),
        dev,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("mode=755,size=64k"),
    )
    .map_err(|e| err("mount tmpfs", dev, e))?;
    for name in DEVICES {
        let target = dev.join(name);
        touch(&target)?;
        let host = Path::new("/dev").join(name);
        bind_with(&host, &target, MsFlags::MS_NOEXEC)?;
    }
    for (link, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        symlink(target, dev.join(link)).map_err(|e| err("symlink", &dev.join(link), e))?;
    }
    let pts = dev.join("pts");
    mkdir(&pts, 0o755)?;
    mount(
        Some("devpts"),
        &pts,
        Some("devpts"),
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=620"),
    )
    .map_err(|e| err("mount devpts", &pts, e))?;
    let shm = dev.join("shm");
    mkdir(&shm, 0o1777)?;
    mount(
        Some("tmpfs"),
        &shm,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("mode=1777,size=64m"),
    )
    .map_err(|e| err("mount tmpfs", &shm, e))
}

/// pivot_root(".", ".") then detach the old root: the host tree is gone from this namespace.
fn pivot(root: &Path) -> Result<(), String> {
    nix::unistd::chdir(root).map_err(|e| err("chdir", root, e))?;
    nix::unistd::pivot_root(".", ".").map_err(|e| err("pivot_root", root, e))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(|e| err("umount old root", root, e))?;
    nix::unistd::chdir("/").map_err(|e| err("chdir", Path::new("/"), e))
}
