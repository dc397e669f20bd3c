//! A snapshot's layer directory, the format the server writes (capture, in
//! [`crate::linux::host`]) and pid 1 reads (restore, in [`crate::linux::sandbox`]): the
//! parts it may hold, how the image root's layers stack, and the manifest of entries kept
//! as data only ([`special`]).

pub mod special;

use std::path::{Path, PathBuf};

/// Parts a snapshot may hold besides the image's `rootfs`.
pub const PARTS: &[&str] = &["tmp", "root", "workspace"];

/// Most image-root layers one snapshot may stack (its own plus its ancestors'); the
/// kernel's overlay takes at most 500 lower layers.
pub const MAX_ROOTFS_LAYERS: usize = 64;

/// The image-root layers of a snapshot, newest first: `rootfs` (the source sandbox's own
/// upper), then `rootfs.1`, `rootfs.2`, … (the layers it was itself restored from).
pub fn rootfs_layers(layers: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for i in 0..MAX_ROOTFS_LAYERS {
        let p = match i {
            0 => layers.join("rootfs"),
            n => layers.join(format!("rootfs.{n}")),
        };
        if !p.is_dir() {
            break;
        }
        out.push(p);
    }
    out
}
