//! Restoring a filesystem snapshot inside pid 1's setup (before `pivot_root`).
//!
//! The snapshot's layer directory (`rootfs`, `tmp`, `root`, `workspace`, written by
//! [`crate::linux::host::capture`]) is attached read-only at a mountpoint the server made next to the
//! root mountpoint (`<sandbox dir>/snap`): for a root server as the idmapped, detached
//! mount the server handed over (on-disk uid N shows as the sandbox's uid N), otherwise
//! as a read-only bind. Each captured part then becomes the lower layer of an overlay
//! whose upper and work directories live on a fresh, size-capped tmpfs of this sandbox
//! (`<sandbox dir>/upper-<part>`): many sandboxes restored from one snapshot share its
//! files and each writes only to its own upper (fork). The image root's part is stacked
//! above the image (`lowerdir=snap/rootfs:image`). After `pivot_root` none of these
//! paths is reachable from the sandbox; the overlays keep their layers alive.

use super::tree::Tree;
use crate::linux::config::InitConfig;
use crate::linux::snapshot::rootfs_layers;
use crate::linux::sys::Mounts;
use nix::mount::MsFlags;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where the snapshot layers are attached (made by the server, see `provision`).
pub fn layers_mountpoint(cfg: &InitConfig) -> PathBuf {
    cfg.root_dir.with_file_name("snap")
}

/// Where a restored part's private upper tmpfs goes (made by the server).
pub fn upper_mountpoint(cfg: &InitConfig, part: &str) -> PathBuf {
    cfg.root_dir.with_file_name(format!("upper-{part}"))
}

/// Attach the snapshot (if any) and return where its layers are.
pub fn attach(
    cfg: &InitConfig,
    m: &dyn Mounts,
    tree: Option<OwnedFd>,
) -> Result<Option<PathBuf>, String> {
    let Some(src) = &cfg.restore else {
        return Ok(None);
    };
    let at = layers_mountpoint(cfg);
    match tree {
        Some(t) => m
            .move_mount(t.as_fd(), &at)
            .map_err(|e| format!("attach snapshot layers at {}: {e}", at.display()))?,
        None => m
            .mount(
                Some(src.as_path()),
                &at,
                None,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None,
            )
            .and_then(|()| {
                m.mount(
                    None,
                    &at,
                    None,
                    MsFlags::MS_REMOUNT
                        | MsFlags::MS_BIND
                        | MsFlags::MS_RDONLY
                        | MsFlags::MS_NOSUID
                        | MsFlags::MS_NODEV,
                    None,
                )
            })
            .map_err(|e| format!("bind snapshot layers at {}: {e}", at.display()))?,
    }
    Ok(Some(at))
}

/// Overlay option paths must not carry the option syntax's separators.
fn plain(p: &Path) -> Result<String, String> {
    let s = p.display().to_string();
    if s.contains([',', ':', '\\']) {
        return Err(format!("path {s} cannot be used in overlay options"));
    }
    Ok(s)
}

/// The lower layers (`a:b:…`) the image root gets from the snapshot, if it has any.
pub fn rootfs_layer(layers: Option<&Path>) -> Result<Option<String>, String> {
    let Some(l) = layers else { return Ok(None) };
    let all = rootfs_layers(l);
    if all.is_empty() {
        return Ok(None);
    }
    let parts: Result<Vec<String>, String> = all.iter().map(|p| plain(p)).collect();
    Ok(Some(parts?.join(":")))
}

/// Mount `inside` (one of [`PARTS`]) of `tree` as an overlay of the snapshot's part and a
/// private upper. Returns false when the snapshot has no such part (the caller mounts a
/// plain tmpfs).
pub fn overlay_part(
    cfg: &InitConfig,
    tree: &Tree,
    inside: &str,
    mode: &str,
    layers: Option<&Path>,
) -> Result<bool, String> {
    let Some(lower) = layers.map(|l| l.join(inside)).filter(|p| p.is_dir()) else {
        return Ok(false);
    };
    let scratch = upper_mountpoint(cfg, inside);
    let opts = format!("mode=755,size={}", cfg.disk_bytes.max(1 << 20));
    tree.mounts()
        .mount(
            Some(Path::new("tmpfs")),
            &scratch,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
            Some(opts.as_str()),
        )
        .map_err(|e| format!("mount tmpfs on {}: {e}", scratch.display()))?;
    let (upper, work) = (scratch.join("upper"), scratch.join("work"));
    let mode = u32::from_str_radix(mode, 8).map_err(|e| format!("mode {mode}: {e}"))?;
    for d in [&upper, &work] {
        std::fs::create_dir(d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", upper.display()))?;
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        plain(&lower)?,
        plain(&upper)?,
        plain(&work)?
    );
    tree.mount_fs(
        inside,
        0o755,
        "overlay",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(data.as_str()),
    )?;
    Ok(true)
}
