//! Named volumes inside the new root: pid 1 attaches each idmapped mount the server made
//! of a volume (host side, [`crate::linux::host::idmap`]) at its guest path, before
//! `pivot_root`. The guest path is walked and created through [`Tree`] (every component a
//! real directory of this root, never a link an image planted), and the mount lands on
//! the exact inode that walk opened. Read-only mounts were made read-only by the server;
//! writable ones are added to what landlock leaves writable.

use super::tree::{fd_path, Tree};
use crate::linux::config::InitConfig;
use std::os::fd::{AsFd, OwnedFd};

/// Attach `trees` (one per `cfg.volumes` entry, same order). Returns the guest paths of
/// the writable ones (for landlock).
pub(super) fn attach(
    cfg: &InitConfig,
    root: &Tree,
    trees: Vec<OwnedFd>,
) -> Result<Vec<String>, String> {
    if trees.len() != cfg.volumes.len() {
        return Err(format!(
            "{} volume mounts for {} volumes",
            trees.len(),
            cfg.volumes.len()
        ));
    }
    let mut writable = Vec::new();
    for (v, tree) in cfg.volumes.iter().zip(trees) {
        let rel = v.guest_path.trim_start_matches('/');
        if rel.is_empty() {
            return Err("a volume cannot be mounted on the sandbox's root".into());
        }
        let at = root.dir(rel, 0o755)?;
        // `/proc/self/fd/N/.`: move_mount(2) does not follow a final symlink (the magic
        // link itself) without MOVE_MOUNT_T_SYMLINKS; through `.` the walk ends on the
        // directory the fd names.
        root.mounts()
            .move_mount(tree.as_fd(), &fd_path(at.fd()).join("."))
            .map_err(|e| format!("attach volume at {}: {e}", v.guest_path))?;
        if !v.read_only {
            writable.push(v.guest_path.clone());
        }
    }
    Ok(writable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::sys::mounts::{Call, Recorder};
    use std::path::{Path, PathBuf};

    fn config(root: &Path, volumes: &[(&str, bool)]) -> InitConfig {
        InitConfig {
            sandbox_id: "t".into(),
            hostname: "t".into(),
            root_dir: root.to_path_buf(),
            disk_bytes: 1 << 20,
            cgroups: Vec::new(),
            user_namespace: false,
            id_range: None,
            tun: None,
            image_rootfs: None,
            trusted_ca_pem: None,
            restore: None,
            volumes: volumes
                .iter()
                .map(|(p, ro)| crate::VolumeBind {
                    source: PathBuf::from("/unused"),
                    guest_path: p.to_string(),
                    read_only: *ro,
                })
                .collect(),
        }
    }

    fn fd() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    /// Each volume lands on a directory created inside the root (an image's link on the
    /// way is replaced, never followed out of it); only writable ones go to landlock.
    #[test]
    fn volumes_land_inside_the_root_and_only_writable_ones_are_writable() {
        let base = std::env::temp_dir().join(format!("cleanroom-vol-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("srv")).unwrap();
        let rec = Recorder::leaked();
        let tree = Tree::open(&root, true, rec).unwrap();
        let cfg = config(&root, &[("/workspace/data", false), ("/srv/shared", true)]);
        let writable = attach(&cfg, &tree, vec![fd(), fd()]).unwrap();
        assert_eq!(writable, vec!["/workspace/data".to_string()]);
        let targets: Vec<PathBuf> = rec
            .calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::MoveMount { target } => Some(target.components().collect()),
                _ => None,
            })
            .collect();
        assert_eq!(
            targets,
            vec![root.join("workspace/data"), root.join("srv/shared")]
        );
        assert!(root.join("srv").is_dir() && !root.join("srv").is_symlink());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A count that does not match the config fails the setup.
        assert!(attach(&cfg, &tree, vec![fd()]).is_err());
        let _ = std::fs::remove_dir_all(&base);
    }
}
