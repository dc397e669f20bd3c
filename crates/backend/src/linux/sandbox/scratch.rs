//! Several mountpoints of a sandbox as directories of one private tmpfs, each bound in on
//! its own: the writable `/tmp`, `/root`, `/workspace` ([`bind_dirs`]), and `/dev` with
//! `/dev/shm` ([`bind_dirs_with`], from rootfs.rs).
//!
//! Why one filesystem: every mounted filesystem (superblock) registers a memcg-aware
//! shrinker, and the kernel gives *every* memory cgroup of the host a slot for every
//! shrinker id ever in use at once (`shrinker_nr_max` only grows; 1 KiB per 64 ids per
//! memory cgroup, unaccounted `kmalloc-1k`). With one memory cgroup and a dozen
//! superblocks per sandbox that cost is quadratic in the number of sandboxes (docs/memory.md).
//! Three tmpfs mounts become one here (and two for `/dev`).
//!
//! What changes for the sandbox: the three directories share the sandbox's disk cap
//! (`disk_bytes` for all of them together, where each had its own before: the host
//! memory they can take is smaller, never larger). Each stays its own mount (nosuid,
//! nodev), so a rename or hard link between them fails with EXDEV as before, and `..` at
//! a bind's root stays there: nothing else of the filesystem is reachable. The
//! filesystem's own root is mounted only on the setup's empty directory outside the
//! sandbox root and detached before `pivot_root`; it is never visible inside.

use super::tree::{bind_onto, fd_path, Tree};
use crate::linux::config::InitConfig;
use nix::mount::{MntFlags, MsFlags};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Mount one tmpfs (size `cfg.disk_bytes`) on the setup's empty directory (next to the
/// root mountpoint, outside the sandbox root), make a directory per `(inside, mode)` on
/// it, bind each onto `inside` of `tree` (nosuid, nodev), and detach the tmpfs' own root
/// again.
pub fn bind_dirs(cfg: &InitConfig, tree: &Tree, dirs: &[(&str, u32)]) -> Result<(), String> {
    let dirs: Vec<(&str, u32, MsFlags)> = dirs
        .iter()
        .map(|(d, m)| (*d, *m, MsFlags::MS_NODEV))
        .collect();
    bind_dirs_with(cfg, tree, cfg.disk_bytes.max(1 << 20), &dirs, None)
}

/// Size of the filesystem holding `/dev` and `/dev/shm` (what the two had apart).
pub const DEV_BYTES: u64 = (64 << 20) + (64 << 10);

/// [`bind_dirs`] with a size and per-directory mount flags (besides nosuid, which every
/// bind gets). Directories are bound in order: a later one may lie inside an earlier one.
/// With `made`, the directories are made on that detached filesystem instead of a new
/// tmpfs (the `/dev` the shim made with the sandbox's own device nodes, devnodes.rs).
pub fn bind_dirs_with(
    cfg: &InitConfig,
    tree: &Tree,
    size: u64,
    dirs: &[(&str, u32, MsFlags)],
    made: Option<&std::os::fd::OwnedFd>,
) -> Result<(), String> {
    if dirs.is_empty() {
        return Ok(());
    }
    if let Some(fs) = made {
        return bind_all(&fd_path(fs), tree, dirs);
    }
    let at = cfg.root_dir.with_file_name("empty");
    let opts = format!("mode=755,size={size}");
    let m = tree.mounts();
    m.mount(
        Some(Path::new("tmpfs")),
        &at,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some(opts.as_str()),
    )
    .map_err(|e| format!("mount tmpfs on {}: {e}", at.display()))?;
    let bound = bind_all(&at, tree, dirs);
    // The binds keep the filesystem; its root leaves this namespace now.
    let detached = m
        .umount2(&at, MntFlags::MNT_DETACH)
        .map_err(|e| format!("detach the writable tmpfs from {}: {e}", at.display()));
    bound.and(detached)
}

fn bind_all(at: &Path, tree: &Tree, dirs: &[(&str, u32, MsFlags)]) -> Result<(), String> {
    for (inside, mode, flags) in dirs {
        // Names are fixed, one component each (no path of the sandbox's is involved).
        let name = inside.replace('/', "_");
        let src = at.join(&name);
        std::fs::create_dir(&src).map_err(|e| format!("mkdir {}: {e}", src.display()))?;
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(*mode))
            .map_err(|e| format!("chmod {}: {e}", src.display()))?;
        bind_onto(
            tree.mounts(),
            &src,
            || {
                tree.dir(inside, 0o755)
                    .and_then(|t| t.fd().try_clone().map_err(|e| e.to_string()))
            },
            *flags,
        )?;
        // The bind's root is the directory made above: check it landed there.
        let landed = tree.dir(inside, 0o755)?;
        let st = nix::sys::stat::stat(&fd_path(landed.fd()))
            .map_err(|e| format!("stat /{inside}: {e}"))?;
        if st.st_mode & 0o7777 != *mode {
            return Err(format!(
                "/{inside} has mode {:o} after the bind, expected {mode:o}",
                st.st_mode & 0o7777
            ));
        }
    }
    Ok(())
}
