//! Unit tests of layer unpacking (hostile tar entries against a real directory). Layers are
//! written with the shared test builder (`cleanroom-layer-fixture`, also the e2e harness's).

use super::*;
use cleanroom_layer_fixture::Layer;

fn layer(build: impl FnOnce(&mut Layer)) -> tempfile::NamedTempFile {
    let mut b = Layer::new();
    build(&mut b);
    let data = b.tar();
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), data).unwrap();
    f
}

/// A regular file; the name is written raw (`..` and absolute paths as given).
fn file(b: &mut Layer, path: &str, body: &[u8], mode: u32) {
    *b = std::mem::take(b).file(path, body, mode);
}

/// An entry of any `kind` with raw name and link bytes.
fn special(b: &mut Layer, path: &str, kind: tar::EntryType, link: &str) {
    *b = std::mem::take(b).special(path, kind, link);
}

#[test]
fn traversal_and_absolute_paths_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    for evil in [
        format!("../{}", "escape"),
        "a/../../escape".to_string(),
        format!("{}/abs", outside.path().display()),
    ] {
        let root = tempfile::tempdir().unwrap();
        let l = layer(|b| file(b, &evil, b"x", 0o644));
        let r = apply_layer(
            root.path(),
            l.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        );
        assert!(
            matches!(r, Err(ImageError::UnsafeLayer(_))),
            "{evil}: {r:?}"
        );
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn symlinked_parent_is_never_followed() {
    let outside = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let target = outside.path().display().to_string();
    let l = layer(|b| {
        special(b, "evil", tar::EntryType::Symlink, &target);
        file(b, "evil/pwned", b"x", 0o644);
    });
    let r = apply_layer(
        root.path(),
        l.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    );
    assert!(matches!(r, Err(ImageError::UnsafeLayer(_))), "{r:?}");
    assert!(!outside.path().join("pwned").exists());
    // Writing *over* a symlink replaces the link, never its target.
    let root = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let vt = victim.display().to_string();
    let l = layer(|b| {
        special(b, "link", tar::EntryType::Symlink, &vt);
        file(b, "link", b"overwritten", 0o644);
    });
    apply_layer(
        root.path(),
        l.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(
        std::fs::read_to_string(root.path().join("link")).unwrap(),
        "overwritten"
    );
}

#[test]
fn devices_fifos_setuid_are_neutralised() {
    let root = tempfile::tempdir().unwrap();
    let l = layer(|b| {
        special(b, "dev/sda", tar::EntryType::Block, "");
        special(b, "dev/mem", tar::EntryType::Char, "");
        special(b, "fifo", tar::EntryType::Fifo, "");
        file(b, "bin/su", b"#!/bin/sh\n", 0o6755);
    });
    let rep = apply_layer(
        root.path(),
        l.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    )
    .unwrap();
    assert_eq!(rep.skipped.len(), 3, "{rep:?}");
    assert!(!root.path().join("dev/sda").exists());
    assert!(!root.path().join("fifo").exists());
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::metadata(root.path().join("bin/su"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(m & 0o7777, 0o755);
}

#[test]
fn hard_links_stay_beneath_the_root() {
    let root = tempfile::tempdir().unwrap();
    let l = layer(|b| special(b, "h", tar::EntryType::Link, "../../etc/passwd"));
    assert!(apply_layer(
        root.path(),
        l.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX)
    )
    .is_err());
    let l = layer(|b| {
        file(b, "a", b"data", 0o644);
        special(b, "b", tar::EntryType::Link, "a");
    });
    apply_layer(
        root.path(),
        l.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.path().join("b")).unwrap(),
        "data"
    );
}

#[test]
fn whiteouts_and_opaque_dirs() {
    let root = tempfile::tempdir().unwrap();
    let l1 = layer(|b| {
        file(b, "etc/gone", b"1", 0o644);
        file(b, "etc/kept", b"1", 0o644);
        file(b, "opq/old", b"1", 0o644);
        file(b, "dir/sub/x", b"1", 0o644);
    });
    let l2 = layer(|b| {
        file(b, "opq/new", b"2", 0o644);
        file(b, "opq/implicit/deep", b"2", 0o644);
        special(b, "opq/.wh..wh..opq", tar::EntryType::Regular, "");
        special(b, "etc/.wh.gone", tar::EntryType::Regular, "");
        special(b, ".wh.dir", tar::EntryType::Regular, "");
    });
    apply_layer(
        root.path(),
        l1.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    )
    .unwrap();
    apply_layer(
        root.path(),
        l2.path(),
        false,
        &mut UnpackBudget::new(u64::MAX, u64::MAX),
    )
    .unwrap();
    let p = root.path();
    assert!(!p.join("etc/gone").exists());
    assert!(p.join("etc/kept").exists());
    assert!(!p.join("opq/old").exists());
    assert!(
        p.join("opq/new").exists() && p.join("opq/implicit/deep").exists(),
        "same-layer entries survive the opaque marker"
    );
    assert!(!p.join("dir").exists());
    assert!(!p.join(".wh.dir").exists());
}

#[test]
fn gzip_and_zstd_layers() {
    let plain = layer(|b| file(b, "hello", b"hi", 0o644));
    let data = std::fs::read(plain.path()).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &data).unwrap();
    let zs = zstd::encode_all(&data[..], 1).unwrap();
    for bytes in [gz.finish().unwrap(), zs] {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        let root = tempfile::tempdir().unwrap();
        apply_layer(
            root.path(),
            f.path(),
            false,
            &mut UnpackBudget::new(u64::MAX, u64::MAX),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("hello")).unwrap(),
            "hi"
        );
    }
}

fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            disk_usage(&e.path())
        } else {
            m.len()
        };
    }
    total
}

#[test]
fn the_budget_counts_the_stream_not_the_headers() {
    // A 4 MiB file against a 1 MiB budget: refused, and no more than the budget
    // reached the disk.
    let root = tempfile::tempdir().unwrap();
    let big = vec![0u8; 4 << 20];
    let l = layer(|b| file(b, "big", &big, 0o644));
    let mut budget = UnpackBudget::new(1 << 20, 100);
    let r = apply_layer(root.path(), l.path(), false, &mut budget);
    assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
    assert!(disk_usage(root.path()) <= 1 << 20);

    // A header that lies about being sparse with a huge real size: skipped, and only
    // its bytes in the stream are charged.
    let root = tempfile::tempdir().unwrap();
    let l = layer(|b| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::GNUSparse);
        h.set_size(512);
        h.as_gnu_mut().unwrap().set_real_size(1 << 40);
        h.set_path("sparse").unwrap();
        h.set_cksum();
        *b = std::mem::take(b).entry(&h, &[7u8; 512]);
    });
    let mut budget = UnpackBudget::new(1 << 20, 100);
    let _ = apply_layer(root.path(), l.path(), false, &mut budget);
    assert!(budget.used_bytes < 1 << 20);
    assert!(disk_usage(root.path()) < 1 << 20);

    // Budgets span layers: two layers of 600 KiB each against 1 MiB.
    let root = tempfile::tempdir().unwrap();
    let part = vec![1u8; 600 << 10];
    let l1 = layer(|b| file(b, "a", &part, 0o644));
    let l2 = layer(|b| file(b, "b", &part, 0o644));
    let mut budget = UnpackBudget::new(1 << 20, 100);
    apply_layer(root.path(), l1.path(), false, &mut budget).unwrap();
    let r = apply_layer(root.path(), l2.path(), false, &mut budget);
    assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
}

#[test]
fn the_budget_caps_entries() {
    let root = tempfile::tempdir().unwrap();
    let l = layer(|b| {
        for i in 0..50 {
            file(b, &format!("f{i}"), b"", 0o644);
        }
    });
    let mut budget = UnpackBudget::new(u64::MAX, 20);
    let r = apply_layer(root.path(), l.path(), false, &mut budget);
    assert!(matches!(r, Err(ImageError::TooLarge(_))), "{r:?}");
    let mut budget = UnpackBudget::new(u64::MAX, 50);
    let root = tempfile::tempdir().unwrap();
    apply_layer(root.path(), l.path(), false, &mut budget).unwrap();
    assert_eq!(budget.entries_left, 0);
}
