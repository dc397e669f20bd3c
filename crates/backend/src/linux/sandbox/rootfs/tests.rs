//! Root-free tests of the root's assembly: the real setup code (every walk, mkdir, file and
//! refusal real, on a temporary directory) runs against the mount seam's [`Recorder`],
//! and the tests check the mounts it would have made — where, with which flags, in which
//! order — and what it refused. Run as any user; nothing is mounted.

use super::*;
use crate::linux::sys::mounts::{Call, Recorder};
use std::os::unix::fs::symlink;

/// A scratch layout like the server's: `<base>/root` (the root mountpoint), `<base>/empty`
/// (the setup's empty directory) and `<base>/outside` (stands for the host: nothing may
/// land there). Removed on drop.
struct Layout(PathBuf);

impl Layout {
    fn new(tag: &str) -> Layout {
        let base =
            std::env::temp_dir().join(format!("cleanroom-rootfs-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        for d in ["root", "empty", "outside"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        Layout(base)
    }
    fn root(&self) -> PathBuf {
        self.0.join("root")
    }
    fn outside(&self) -> PathBuf {
        self.0.join("outside")
    }
    /// What the binds of the writable dirs would show (their modes are checked after
    /// each bind): made up front in `dir`, since nothing is really bound.
    fn writable_dirs(dir: &Path) {
        for (d, mode) in [("tmp", 0o1777), ("root", 0o700), ("dev/shm", 0o1777)] {
            fs::create_dir_all(dir.join(d)).unwrap();
            fs::set_permissions(dir.join(d), fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    fn config(&self, image: Option<PathBuf>) -> InitConfig {
        InitConfig {
            sandbox_id: "t".into(),
            hostname: "t".into(),
            root_dir: self.root(),
            disk_bytes: 1 << 20,
            cgroups: Vec::new(),
            user_namespace: false,
            id_range: None,
            tun: Some(crate::TunConfig {
                guest: "10.0.0.2".parse().unwrap(),
                gateway: "10.0.0.1".parse().unwrap(),
                mtu: 1500,
                plane: crate::Plane::Tun,
            }),
            image_rootfs: image,
            trusted_ca_pem: Some("-----BEGIN CERTIFICATE-----\n".into()),
            restore: None,
            volumes: Vec::new(),
        }
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn mounts(calls: &[Call]) -> Vec<(&Path, Option<&str>, MsFlags)> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::Mount {
                target,
                fstype,
                flags,
                ..
            } => Some((target.as_path(), fstype.as_deref(), *flags)),
            _ => None,
        })
        .collect()
}

/// Every filesystem mounted nosuid (and nodev, but for devpts, whose nodes are its own);
/// every bind followed by a remount of the same target that adds nosuid; nothing
/// mounted outside `base` except the first call (`/` made private).
fn check_flags_and_places(calls: &[Call], base: &Path) {
    let all = mounts(calls);
    assert_eq!(all[0].0, Path::new("/"));
    assert_eq!(all[0].2, MsFlags::MS_REC | MsFlags::MS_PRIVATE);
    for (i, (target, fstype, flags)) in all.iter().enumerate().skip(1) {
        assert!(
            target.starts_with(base),
            "mount outside the layout: {target:?}"
        );
        if let Some(fs) = fstype {
            assert!(flags.contains(MsFlags::MS_NOSUID), "{fs} on {target:?}");
            if *fs != "devpts" {
                assert!(flags.contains(MsFlags::MS_NODEV), "{fs} on {target:?}");
            }
        } else if flags.contains(MsFlags::MS_BIND) && !flags.contains(MsFlags::MS_REMOUNT) {
            let (t2, _, f2) = all.get(i + 1).expect("a bind is the last mount");
            assert_eq!(t2, target, "the remount after a bind names its target");
            assert!(
                f2.contains(MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_NOSUID),
                "bind on {target:?} remounted with {f2:?}"
            );
        }
    }
}

/// The last four calls: enter the root, pivot into it, detach the old root, `cd /`.
fn check_pivot(calls: &[Call], root: &Path) {
    let n = calls.len();
    assert!(n >= 4);
    assert_eq!(
        calls[n - 4..].to_vec(),
        vec![
            Call::Chdir(root.to_path_buf()),
            Call::PivotRoot {
                new_root: root.to_path_buf(),
                put_old: root.to_path_buf(),
            },
            Call::Umount {
                target: root.to_path_buf(),
                flags: MntFlags::MNT_DETACH,
            },
            Call::Chdir(PathBuf::from("/")),
        ]
    );
}

#[test]
fn an_image_root_is_assembled_inside_its_own_layers_and_pivoted_into() {
    let l = Layout::new("image");
    let image = l.0.join("image");
    fs::create_dir_all(&image).unwrap();
    // The overlay is not really mounted: its merged directory stands for the image, with
    // links an image may carry pointing at the host.
    let merged = l.root().join("merged");
    fs::create_dir_all(merged.join("etc")).unwrap();
    let victim = l.outside().join("resolv");
    symlink(&victim, merged.join("etc/resolv.conf")).unwrap();
    symlink(l.outside(), merged.join("run")).unwrap();
    symlink(l.outside(), merged.join("proc")).unwrap();
    Layout::writable_dirs(&merged);
    let m = Recorder::leaked();
    let built = assemble(&l.config(Some(image.clone())), m, None, None, None).unwrap();
    pivot(&built.tree).unwrap();
    let calls = m.calls();
    check_flags_and_places(&calls, &l.0);
    check_pivot(&calls, &merged);
    let all = mounts(&calls);
    // The image's links were replaced in its copy-on-write layer, never followed.
    for (inside, fstype) in [
        ("run/cleanroom", "tmpfs"),
        ("proc", "proc"),
        ("dev/pts", "devpts"),
    ] {
        let at = merged.join(inside);
        assert!(
            all.iter().any(|(t, f, _)| *t == at && *f == Some(fstype)),
            "{fstype} on {at:?}: {all:#?}"
        );
        assert!(fs::symlink_metadata(&at).unwrap().is_dir());
    }
    assert!(all
        .iter()
        .any(|(t, f, _)| *t == merged.join("etc/resolv.conf") && f.is_none()));
    assert!(!victim.exists());
    assert_eq!(fs::read_dir(l.outside()).unwrap().count(), 0);
    // The overlay root itself: nosuid, nodev, the image below.
    let overlay = calls
        .iter()
        .find_map(|c| match c {
            Call::Mount {
                fstype: Some(f),
                data: Some(d),
                target,
                ..
            } if f == "overlay" && *target == merged => Some(d.clone()),
            _ => None,
        })
        .expect("overlay mount");
    assert!(overlay.starts_with(&format!("lowerdir={}", l.root().join("lower").display())));
    assert!(built.upper.is_some());
}

#[test]
fn a_host_view_is_pivoted_into_and_its_binds_are_nosuid() {
    let l = Layout::new("host");
    Layout::writable_dirs(&l.root());
    fs::create_dir_all(l.root().join("etc")).unwrap();
    fs::write(l.root().join("etc/resolv.conf"), "").unwrap();
    let m = Recorder::leaked();
    let built = assemble(&l.config(None), m, None, None, None).unwrap();
    pivot(&built.tree).unwrap();
    let calls = m.calls();
    check_flags_and_places(&calls, &l.0);
    check_pivot(&calls, &l.root());
    // The host's system directories are shown read-only.
    assert!(mounts(&calls).iter().any(|(t, _, f)| {
        *t == l.root().join("usr") && f.contains(MsFlags::MS_RDONLY | MsFlags::MS_NOSUID)
    }));
}

#[test]
fn a_link_in_the_way_of_a_host_view_mount_is_refused_before_any_mount() {
    let l = Layout::new("link");
    let m = Recorder::leaked();
    let tree = Tree::open(&l.root(), false, m).unwrap();
    symlink(l.outside(), l.root().join("proc")).unwrap();
    let e = tree
        .mount_fs("proc", 0o555, "proc", MsFlags::MS_NOSUID, None)
        .err()
        .unwrap();
    assert!(e.contains("not the sandbox's own copy"), "{e}");
    assert_eq!(m.calls(), Vec::new());
    assert!(fs::symlink_metadata(l.root().join("proc"))
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_dotdot_mount_target_is_refused_before_any_mount() {
    let l = Layout::new("dotdot");
    let m = Recorder::leaked();
    for cow in [false, true] {
        let tree = Tree::open(&l.root(), cow, m).unwrap();
        let e = tree
            .mount_fs(
                "dev/../../outside",
                0o755,
                "tmpfs",
                MsFlags::MS_NOSUID,
                None,
            )
            .err()
            .unwrap();
        assert!(e.contains("must not contain '..'"), "{e}");
    }
    assert_eq!(m.calls(), Vec::new());
    assert_eq!(fs::read_dir(l.outside()).unwrap().count(), 0);
}

#[test]
fn a_host_resolv_conf_link_out_of_run_is_refused_without_a_bind() {
    let l = Layout::new("resolv");
    Layout::writable_dirs(&l.root());
    fs::create_dir_all(l.root().join("etc")).unwrap();
    symlink("../outside/resolv", l.root().join("etc/resolv.conf")).unwrap();
    let m = Recorder::leaked();
    let e = assemble(&l.config(None), m, None, None, None)
        .err()
        .unwrap();
    assert!(e.message.contains("outside /run"), "{}", e.message);
    let target = l.root().join("etc/resolv.conf");
    assert!(!mounts(&m.calls()).iter().any(|(t, _, _)| *t == target));
    assert_eq!(fs::read_dir(l.outside()).unwrap().count(), 0);
}

#[test]
fn a_restored_part_is_an_overlay_of_the_read_only_snapshot_and_a_private_upper() {
    let l = Layout::new("restore");
    Layout::writable_dirs(&l.root());
    fs::create_dir_all(l.root().join("etc")).unwrap();
    fs::write(l.root().join("etc/resolv.conf"), "").unwrap();
    // What the server makes next to the root mountpoint for a restore, and (standing for
    // the bound snapshot, since nothing is really bound) its `tmp` part.
    let (snap, upper) = (l.0.join("snap"), l.0.join("upper-tmp"));
    fs::create_dir_all(snap.join("tmp")).unwrap();
    fs::create_dir_all(&upper).unwrap();
    let mut cfg = l.config(None);
    cfg.restore = Some(l.0.join("layers"));
    let m = Recorder::leaked();
    let built = assemble(&cfg, m, None, None, None).unwrap();
    pivot(&built.tree).unwrap();
    let calls = m.calls();
    check_flags_and_places(&calls, &l.0);
    check_pivot(&calls, &l.root());
    let all = mounts(&calls);
    // The snapshot is attached read-only (and nosuid, nodev) at `snap`.
    assert!(all.iter().any(|(t, f, fl)| *t == snap
        && f.is_none()
        && fl.contains(MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NODEV)));
    // `/tmp` is an overlay of its part with an upper on the sandbox's own tmpfs; `/root`
    // (no part in the snapshot) is a fresh bind.
    assert!(all
        .iter()
        .any(|(t, f, _)| *t == upper && *f == Some("tmpfs")));
    let tmp = calls
        .iter()
        .find_map(|c| match c {
            Call::Mount {
                target,
                fstype: Some(f),
                data: Some(d),
                ..
            } if *target == l.root().join("tmp") && f == "overlay" => Some(d.clone()),
            _ => None,
        })
        .expect("an overlay on /tmp");
    assert_eq!(
        tmp,
        format!(
            "lowerdir={},upperdir={},workdir={},userxattr",
            snap.join("tmp").display(),
            upper.join("upper").display(),
            upper.join("work").display()
        )
    );
    assert!(!all
        .iter()
        .any(|(t, f, _)| *t == l.root().join("root") && *f == Some("overlay")));
}
