//! A snapshot's layer directory as the Linux backend writes it: the sandbox's writable
//! trees copied by [`super::capture`] (`rootfs` = the image root's upper, `tmp`, `root`,
//! `workspace`), and for a sandbox that was itself restored, its parent's image-root
//! layers hard-linked below as `rootfs.1`, `rootfs.2`, … (see [`crate::linux::snapshot`]).

use super::backend::LinuxSandbox;
use super::capture;
use super::procinfo;
use crate::linux::snapshot;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

impl LinuxSandbox {
    /// Capture a frozen sandbox's writable trees into `dest` (see [`crate::Backend::capture_filesystem`]).
    pub(super) async fn capture_layers(
        &self,
        dest: &Path,
        budget: u64,
    ) -> Result<crate::CaptureStats, crate::BackendError> {
        let sbx = self;
        use crate::BackendError;
        if !procinfo::is_same_process(sbx.init_pid, sbx.init_start) {
            return Err(BackendError::Unavailable("the sandbox is gone".into()));
        }
        let upper = match &sbx.upper {
            Some(u) => Some(
                u.try_clone()
                    .map_err(|e| BackendError::io("dup upper", e))?,
            ),
            None => None,
        };
        let (pid, start, id_base) = (sbx.init_pid, sbx.init_start, sbx.id_base);
        let dest = dest.to_path_buf();
        let parent = sbx.restored_from.clone();
        tokio::task::spawn_blocking(move || {
            let mut stats = capture_parts(pid, start, upper, id_base, &dest, budget)?;
            if let Some(parent) = parent {
                carry_rootfs_layers(&parent, &dest, &mut stats)
                    .map_err(BackendError::Unavailable)?;
            }
            Ok(stats)
        })
        .await
        .map_err(|e| BackendError::Unavailable(format!("capture task: {e}")))?
    }
}

/// The blocking part of a capture: each writable tree of the sandbox into `dest/<part>`,
/// and the special-entry manifest next to them. At most `budget` bytes are allocated:
/// past it the capture stops with [`crate::BackendError::NoSpace`] (`resource_exhausted`;
/// the caller removes `dest`).
pub(super) fn capture_parts(
    pid: i32,
    start: u64,
    upper: Option<OwnedFd>,
    id_base: Option<(u32, u32)>,
    dest: &Path,
    budget: u64,
) -> Result<crate::CaptureStats, crate::BackendError> {
    let mut cap = capture::Capture::new(id_base, budget);
    let walked = walk_parts(pid, start, upper, &mut cap, dest);
    if let Err(e) = walked {
        return Err(match cap.over_budget() {
            Some(_) => crate::BackendError::NoSpace(e),
            None => crate::BackendError::Unavailable(e),
        });
    }
    capture::special::write(dest, cap.specials()).map_err(crate::BackendError::Unavailable)?;
    let (files, bytes, allocated_bytes) = (cap.files, cap.bytes, cap.allocated());
    Ok(crate::CaptureStats {
        files,
        bytes,
        allocated_bytes,
        manifest_digest: cap.digest(),
    })
}

fn walk_parts(
    pid: i32,
    start: u64,
    upper: Option<OwnedFd>,
    cap: &mut capture::Capture,
    dest: &Path,
) -> Result<(), String> {
    use nix::fcntl::OFlag;
    let open_dir = |p: &Path, flags: OFlag| {
        nix::fcntl::open(
            p,
            flags | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| format!("open {}: {e}", p.display()))
    };
    // pid 1's root: the host's procfs magic link is the one link followed on purpose
    // (everything below is opened with RESOLVE_IN_ROOT); its identity is checked again
    // after the open (pid reuse).
    let proc_root = format!("/proc/{pid}/root");
    let root = nix::fcntl::open(
        proc_root.as_str(),
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| format!("open {proc_root}: {e}"))?;
    if !procinfo::is_same_process(pid, start) {
        return Err("the sandbox is gone".into());
    }
    let mut parts: Vec<(&str, OwnedFd, bool)> = Vec::new();
    if let Some(u) = upper {
        let u = nix::fcntl::openat(
            &u,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| format!("open image upper: {e}"))?;
        parts.push(("rootfs", u, true));
    }
    for part in snapshot::PARTS {
        parts.push((part, capture::open_in_root(root.as_fd(), part)?, false));
    }
    for (name, src, layer) in parts {
        let out = dest.join(name);
        std::fs::create_dir(&out).map_err(|e| format!("create {}: {e}", out.display()))?;
        let out = open_dir(&out, OFlag::O_RDONLY)?;
        let at = if layer {
            "/".to_string()
        } else {
            format!("/{name}")
        };
        cap.copy_tree(src.as_fd(), out.as_fd(), &format!("/{name}"), &at, layer)?;
    }
    Ok(())
}

/// A snapshot of a sandbox restored from `parent`: the parent's image-root layers go
/// below this sandbox's own upper (`rootfs.1`, `rootfs.2`, …), hard-linked (the server's
/// own read-only files: nothing is copied, links are linked as links, never followed).
pub(super) fn carry_rootfs_layers(
    parent: &Path,
    dest: &Path,
    stats: &mut crate::CaptureStats,
) -> Result<(), String> {
    let layers = snapshot::rootfs_layers(parent);
    if layers.is_empty() || !dest.join("rootfs").is_dir() {
        return Ok(());
    }
    if layers.len() + 1 > snapshot::MAX_ROOTFS_LAYERS {
        return Err(format!(
            "snapshot chain deeper than {} image-root layers",
            snapshot::MAX_ROOTFS_LAYERS
        ));
    }
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(stats.manifest_digest.as_bytes());
    for (i, layer) in layers.iter().enumerate() {
        let out = dest.join(format!("rootfs.{}", i + 1));
        link_tree(layer, &out, &mut h, 0)?;
    }
    let d: [u8; 32] = h.finalize().into();
    stats.manifest_digest = d.iter().map(|b| format!("{b:02x}")).collect();
    Ok(())
}

/// Hard-link the server's own tree `src` into `dst` (directories re-created with their
/// mode, owner and opaque marker; every other entry linked, a link as a link).
fn link_tree(src: &Path, dst: &Path, h: &mut sha2::Sha256, depth: usize) -> Result<(), String> {
    use sha2::Digest;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let e = |what: &str, p: &Path, err: std::io::Error| format!("{what} {}: {err}", p.display());
    if depth > 300 {
        return Err(format!("{} nests too deep", src.display()));
    }
    let meta = std::fs::symlink_metadata(src).map_err(|x| e("stat", src, x))?;
    std::fs::create_dir(dst).map_err(|x| e("mkdir", dst, x))?;
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(meta.mode() & 0o7777))
        .map_err(|x| e("chmod", dst, x))?;
    let _ = nix::unistd::chown(
        dst,
        Some(nix::unistd::Uid::from_raw(meta.uid())),
        Some(nix::unistd::Gid::from_raw(meta.gid())),
    );
    if let Ok(Some(v)) = xattr_get(src) {
        xattr_set(dst, &v)?;
    }
    let mut names: Vec<_> = std::fs::read_dir(src)
        .map_err(|x| e("list", src, x))?
        .flatten()
        .map(|d| d.file_name())
        .collect();
    names.sort();
    for name in names {
        let (s, d) = (src.join(&name), dst.join(&name));
        h.update(name.as_encoded_bytes());
        let m = std::fs::symlink_metadata(&s).map_err(|x| e("stat", &s, x))?;
        h.update(m.ino().to_le_bytes());
        if m.file_type().is_dir() {
            link_tree(&s, &d, h, depth + 1)?;
        } else {
            std::fs::hard_link(&s, &d).map_err(|x| e("link", &s, x))?;
        }
    }
    Ok(())
}

/// The overlay opaque marker of one of the server's own directories.
fn xattr_get(p: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = [0u8; 4];
    let n = crate::linux::sys::lgetxattr(p, c"user.overlay.opaque", &mut buf).unwrap_or(0);
    Ok((n > 0).then(|| buf[..n].to_vec()))
}

fn xattr_set(p: &Path, v: &[u8]) -> Result<(), String> {
    crate::linux::sys::lsetxattr(p, c"user.overlay.opaque", v)
        .map_err(|e| format!("mark {} opaque: {e}", p.display()))
}
