//! Unit tests of the capture walk (links, modes, FIFOs, hard links, the digest).

use super::*;
use std::os::unix::fs::{symlink, PermissionsExt};

fn dir_fd(p: &std::path::Path) -> OwnedFd {
    nix::fcntl::open(
        p,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

#[test]
fn links_are_copied_as_links_and_never_followed() {
    let src = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "host secret").unwrap();
    std::fs::create_dir(src.path().join("d")).unwrap();
    std::fs::write(src.path().join("d/f"), "data").unwrap();
    std::fs::set_permissions(
        src.path().join("d/f"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    // Hostile links: to a host directory, to a host file, a loop.
    symlink(outside.path(), src.path().join("to-dir")).unwrap();
    symlink(outside.path().join("secret"), src.path().join("to-file")).unwrap();
    symlink("loop", src.path().join("loop")).unwrap();
    let dst = tempfile::tempdir().unwrap();
    let mut c = Capture::new(None, u64::MAX);
    c.copy_tree(
        dir_fd(src.path()).as_fd(),
        dir_fd(dst.path()).as_fd(),
        "/t",
        "/t",
        false,
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dst.path().join("d/f")).unwrap(),
        "data"
    );
    let mode = std::fs::metadata(dst.path().join("d/f"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    for l in ["to-dir", "to-file", "loop"] {
        let m = std::fs::symlink_metadata(dst.path().join(l)).unwrap();
        assert!(m.file_type().is_symlink(), "{l} copied as a link");
    }
    assert_eq!(
        std::fs::read_link(dst.path().join("to-file")).unwrap(),
        outside.path().join("secret")
    );
    // Nothing of the link targets was copied.
    let mut found = Vec::new();
    for e in walk(dst.path()) {
        if std::fs::symlink_metadata(&e).unwrap().is_file() {
            found.push(std::fs::read_to_string(&e).unwrap());
        }
    }
    assert_eq!(found, vec!["data".to_string()]);
    assert_eq!(c.bytes, 4);
}

fn walk(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap().flatten() {
        let path = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        }
        out.push(path);
    }
    out
}

#[test]
fn the_manifest_digest_follows_content_and_metadata() {
    let digest = |content: &str, mode: u32| {
        let src = tempfile::tempdir().unwrap();
        std::fs::write(src.path().join("f"), content).unwrap();
        std::fs::set_permissions(src.path().join("f"), std::fs::Permissions::from_mode(mode))
            .unwrap();
        std::fs::set_permissions(src.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let mut c = Capture::new(None, u64::MAX);
        c.copy_tree(
            dir_fd(src.path()).as_fd(),
            dir_fd(dst.path()).as_fd(),
            "/t",
            "/t",
            false,
        )
        .unwrap();
        c.digest()
    };
    assert_eq!(digest("a", 0o644), digest("a", 0o644));
    assert_ne!(digest("a", 0o644), digest("b", 0o644));
    assert_ne!(digest("a", 0o644), digest("a", 0o600));
}

#[test]
fn special_modes_and_fifos_are_stored_as_data_and_listed() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("suid"), "x").unwrap();
    std::fs::set_permissions(
        src.path().join("suid"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .unwrap();
    std::fs::create_dir(src.path().join("sticky")).unwrap();
    std::fs::set_permissions(
        src.path().join("sticky"),
        std::fs::Permissions::from_mode(0o1777),
    )
    .unwrap();
    std::fs::write(src.path().join("plain"), "p").unwrap();
    std::fs::set_permissions(
        src.path().join("plain"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    nix::unistd::mkfifo(&src.path().join("fifo"), Mode::from_bits_truncate(0o640)).unwrap();
    let dst = tempfile::tempdir().unwrap();
    let mut c = Capture::new(None, u64::MAX);
    c.copy_tree(
        dir_fd(src.path()).as_fd(),
        dir_fd(dst.path()).as_fd(),
        "/workspace",
        "/workspace",
        false,
    )
    .unwrap();
    let mode = |n: &str| {
        std::fs::symlink_metadata(dst.path().join(n))
            .unwrap()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("suid"), 0o755);
    assert_eq!(mode("sticky"), 0o755);
    assert_eq!(mode("plain"), 0o640);
    assert!(!dst.path().join("fifo").exists());
    let got: Vec<(special::Kind, Vec<u8>, u32)> = c
        .specials()
        .iter()
        .map(|e| (e.kind, e.path.clone(), e.mode))
        .collect();
    assert_eq!(
        got,
        vec![
            (special::Kind::Fifo, b"/workspace/fifo".to_vec(), 0o640),
            (special::Kind::Mode, b"/workspace/sticky".to_vec(), 0o1777),
            (special::Kind::Mode, b"/workspace/suid".to_vec(), 0o4755),
        ]
    );
    // In an image root's layer a whiteout stands at the FIFO's path.
    let dst = tempfile::tempdir().unwrap();
    let mut c = Capture::new(None, u64::MAX);
    c.copy_tree(
        dir_fd(src.path()).as_fd(),
        dir_fd(dst.path()).as_fd(),
        "/rootfs",
        "/",
        true,
    )
    .unwrap();
    let m = std::fs::symlink_metadata(dst.path().join("fifo")).unwrap();
    assert!(m.file_type().is_char_device() && m.rdev() == 0);
    assert_eq!(c.specials()[0].path, b"/fifo".to_vec());
}

#[test]
fn hard_links_stay_links_and_count_once() {
    use std::os::unix::fs::MetadataExt;
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir(src.path().join("d")).unwrap();
    std::fs::write(src.path().join("f"), vec![1u8; 64 << 10]).unwrap();
    for i in 0..20 {
        std::fs::hard_link(src.path().join("f"), src.path().join(format!("d/l{i}"))).unwrap();
    }
    let dst = tempfile::tempdir().unwrap();
    let mut c = Capture::new(None, u64::MAX);
    c.copy_tree(
        dir_fd(src.path()).as_fd(),
        dir_fd(dst.path()).as_fd(),
        "/t",
        "/t",
        false,
    )
    .unwrap();
    let m = std::fs::metadata(dst.path().join("d/l7")).unwrap();
    assert_eq!(m.nlink(), 21);
    assert_eq!(
        m.ino(),
        std::fs::metadata(dst.path().join("f")).unwrap().ino()
    );
    assert_eq!(c.bytes, 64 << 10);
    assert!(c.allocated() < 128 << 10, "{}", c.allocated());
    // Over a budget smaller than the one copy: refused, flagged.
    let dst = tempfile::tempdir().unwrap();
    let mut c = Capture::new(None, 32 << 10);
    assert!(c
        .copy_tree(
            dir_fd(src.path()).as_fd(),
            dir_fd(dst.path()).as_fd(),
            "/t",
            "/t",
            false,
        )
        .is_err());
    assert_eq!(c.over_budget(), Some(32 << 10));
}
