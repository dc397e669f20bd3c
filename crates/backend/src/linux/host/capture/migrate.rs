//! Snapshots stored before their content was stored as data (issue 30): at server start,
//! every layer without a `special` manifest gets the same treatment a capture gives it
//! now — set-id, sticky and group/other-write bits removed, FIFOs removed (a whiteout in
//! an image root's layer) — with what was removed listed in a new manifest, so their
//! restores still get the sandbox's modes and FIFOs. A capture always writes the manifest
//! (empty or not), so each snapshot is treated once.
//!
//! The walk is path based (`symlink_metadata`, never following a link; a link is never
//! descended into): the tree is the server's own, written only by the server, mounted
//! read-only into sandboxes, and this runs at start before any request is served.

use super::special::{self, stored_mode, Kind, Special};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

const MAX_DEPTH: usize = 300;

/// Treat one snapshot's `layers` directory; returns how many entries changed (0 and no
/// work when it has a manifest already).
pub fn store_as_data(layers: &Path) -> Result<usize, String> {
    if std::fs::symlink_metadata(layers.join(special::FILE)).is_ok() {
        return Ok(0);
    }
    // Only a root server's store holds the sandbox's own ids; an unprivileged server's
    // sandbox maps only its id 0.
    let mapped = nix::unistd::geteuid().is_root();
    let mut out = Vec::new();
    let mut changed = 0;
    let names: Vec<_> = std::fs::read_dir(layers)
        .map_err(|e| format!("list {}: {e}", layers.display()))?
        .flatten()
        .map(|e| e.file_name())
        .collect();
    for name in names {
        let n = name.to_string_lossy();
        // The image root's own layer and the parts are listed; the parent layers
        // (`rootfs.N`, links to the parent snapshot's files) are only stripped.
        let (at, layer): (Option<&[u8]>, bool) = match n.as_ref() {
            "rootfs" => (Some(b""), true),
            "tmp" | "root" | "workspace" => (Some(name.as_bytes()), false),
            _ if n.starts_with("rootfs.") => (None, true),
            _ => continue,
        };
        let dir = layers.join(&name);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let at = at.map(|a| {
            let mut p = Vec::new();
            if !a.is_empty() {
                p.push(b'/');
                p.extend_from_slice(a);
            }
            p
        });
        walk(
            &dir,
            at.as_deref(),
            layer,
            mapped,
            &mut out,
            &mut changed,
            0,
        )?;
    }
    special::write(layers, &out)?;
    Ok(changed)
}

fn walk(
    dir: &Path,
    at: Option<&[u8]>,
    layer: bool,
    mapped: bool,
    out: &mut Vec<Special>,
    changed: &mut usize,
    depth: usize,
) -> Result<(), String> {
    let e = |what: &str, p: &Path, err: std::io::Error| format!("{what} {}: {err}", p.display());
    if depth > MAX_DEPTH {
        return Err(format!("{} nests too deep", dir.display()));
    }
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .map_err(|x| e("list", dir, x))?
        .flatten()
        .map(|d| d.file_name())
        .collect();
    names.sort();
    for name in names {
        let p = dir.join(&name);
        let m = std::fs::symlink_metadata(&p).map_err(|x| e("stat", &p, x))?;
        let inside = at.map(|a| {
            let mut v = a.to_vec();
            v.push(b'/');
            v.extend_from_slice(name.as_bytes());
            v
        });
        let entry = |kind| Special {
            kind,
            path: inside.clone().unwrap_or_default(),
            mode: m.mode() & 0o7777,
            uid: if mapped { m.uid() } else { 0 },
            gid: if mapped { m.gid() } else { 0 },
            mtime: (m.mtime(), m.mtime_nsec()),
        };
        let ft = m.file_type();
        if ft.is_dir() {
            walk(
                &p,
                inside.as_deref(),
                layer,
                mapped,
                out,
                changed,
                depth + 1,
            )?;
        }
        if ft.is_fifo() {
            if inside.is_some() {
                out.push(entry(Kind::Fifo));
            }
            std::fs::remove_file(&p).map_err(|x| e("remove", &p, x))?;
            if layer {
                nix::sys::stat::mknod(
                    &p,
                    nix::sys::stat::SFlag::S_IFCHR,
                    nix::sys::stat::Mode::empty(),
                    0,
                )
                .map_err(|x| e("whiteout", &p, x.into()))?;
            }
            *changed += 1;
        } else if (ft.is_dir() || ft.is_file()) && stored_mode(m.mode()) != m.mode() & 0o7777 {
            if inside.is_some() {
                out.push(entry(Kind::Mode));
            }
            // A file or directory of ours (checked just above, not a link).
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(stored_mode(m.mode())))
                .map_err(|x| e("chmod", &p, x))?;
            *changed += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_store_is_made_data_once_and_its_modes_are_listed() {
        let t = tempfile::tempdir().unwrap();
        let l = t.path();
        for d in ["rootfs/etc", "workspace/s", "rootfs.1"] {
            std::fs::create_dir_all(l.join(d)).unwrap();
        }
        let set = |p: &str, mode| {
            std::fs::set_permissions(l.join(p), std::fs::Permissions::from_mode(mode)).unwrap()
        };
        std::fs::write(l.join("rootfs/etc/su"), "x").unwrap();
        set("rootfs/etc/su", 0o4755);
        set("workspace/s", 0o1777);
        std::fs::write(l.join("rootfs.1/old"), "o").unwrap();
        set("rootfs.1/old", 0o2755);
        nix::unistd::mkfifo(
            &l.join("workspace/f"),
            nix::sys::stat::Mode::from_bits_truncate(0o640),
        )
        .unwrap();
        nix::unistd::mkfifo(
            &l.join("rootfs/etc/p"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        assert_eq!(store_as_data(l).unwrap(), 5);
        let mode = |p: &str| std::fs::symlink_metadata(l.join(p)).unwrap().mode() & 0o7777;
        assert_eq!(mode("rootfs/etc/su"), 0o755);
        assert_eq!(mode("workspace/s"), 0o755);
        assert_eq!(mode("rootfs.1/old"), 0o755);
        assert!(std::fs::symlink_metadata(l.join("workspace/f")).is_err());
        let w = std::fs::symlink_metadata(l.join("rootfs/etc/p")).unwrap();
        assert!(w.file_type().is_char_device() && w.rdev() == 0);
        let got: Vec<(Kind, Vec<u8>, u32)> = special::read(Some(l))
            .unwrap()
            .into_iter()
            .map(|e| (e.kind, e.path, e.mode))
            .collect();
        assert_eq!(
            got,
            vec![
                (Kind::Fifo, b"/etc/p".to_vec(), 0o600),
                (Kind::Mode, b"/etc/su".to_vec(), 0o4755),
                (Kind::Fifo, b"/workspace/f".to_vec(), 0o640),
                (Kind::Mode, b"/workspace/s".to_vec(), 0o1777),
            ]
        );
        // Once only.
        assert_eq!(store_as_data(l).unwrap(), 0);
    }
}
