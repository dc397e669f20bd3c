//! Snapshots of hostile trees (issue 30, classes 2 and 3), end to end: a real server, real
//! sandboxes. What a sandbox wrote is stored as data (no setuid/setgid/sticky bits, no
//! FIFOs, nothing group/other-writable in the store) and its modes come back only inside
//! the restored sandbox; sparse files stay sparse, hard links stay links, and a capture
//! beyond the sandbox's budget is `resource_exhausted` with nothing left behind.

use cleanroom_e2e::*;
use std::collections::HashSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

fn snapshot(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["snapshot", "create", sandbox_id]);
    let id = stdout(&o).trim().to_string();
    assert!(
        id.starts_with("snap_"),
        "snapshot create failed: {}{}",
        stderr(&o),
        s.log()
    );
    id
}

fn create(s: &Server, args: &[&str]) -> String {
    let mut all = vec!["sandbox", "create"];
    all.extend_from_slice(args);
    let o = s.run(&all);
    let id = stdout(&o).trim().to_string();
    assert!(
        id.starts_with("sbx_"),
        "sandbox create {args:?} failed: {}{}",
        stderr(&o),
        s.log()
    );
    id
}

/// Every entry under `dir` (not following links).
fn walk(dir: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.extend(walk(&p));
        }
        out.push((p, m));
    }
    out
}

/// What the store holds that a host user or process could use: set-id or sticky bits,
/// FIFOs, group/other-writable inodes (links excepted: their mode means nothing).
fn live_inodes(store: &Path) -> Vec<String> {
    walk(store)
        .into_iter()
        .filter_map(|(p, m)| {
            let ft = m.file_type();
            if ft.is_symlink() {
                return None;
            }
            let bad = ft.is_fifo() || ft.is_socket() || m.mode() & 0o7022 != 0;
            bad.then(|| format!("{} {:o}", p.display(), m.mode()))
        })
        .collect()
}

/// Bytes the store really uses on the host: st_blocks × 512, each inode once.
fn allocated(dir: &Path) -> u64 {
    let mut seen = HashSet::new();
    walk(dir)
        .into_iter()
        .filter(|(_, m)| seen.insert((m.dev(), m.ino())))
        .map(|(_, m)| m.blocks() * 512)
        .sum()
}

const HOSTILE: &str = "cd /workspace && echo u > suid && chmod 4755 suid && echo g > sgid \
    && chmod 2755 sgid && mkdir sticky && chmod 1777 sticky && echo s > sticky/in \
    && echo w > open && chmod 666 open && mkfifo fifo && chmod 640 fifo \
    && echo r > /root/both && chmod 6750 /root/both && mkfifo /tmp/pipe";

const CHECK: &str =
    "cd /workspace && stat -c '%n %a' suid sgid sticky open fifo /root/both /tmp/pipe \
    && test -p fifo && test -p /tmp/pipe && cat suid sgid sticky/in open /root/both";

const WANT: &str = "suid 4755\nsgid 2755\nsticky 1777\nopen 666\nfifo 640\n/root/both 6750\n\
    /tmp/pipe 644\nu\ng\ns\nw\nr\n";

#[test]
fn hostile_modes_and_fifos_are_stored_as_data_and_come_back_inside_the_restore() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.sh_in(&sbx, HOSTILE);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&s.sh_in(&sbx, CHECK)), WANT);
    let snap = snapshot(&s, &sbx);
    let store = s.state_dir().join("snapshots");
    let live = live_inodes(&store);
    assert!(live.is_empty(), "live inodes in the store: {live:?}");
    // The store holds the files themselves as data.
    let ws = store.join(&snap).join("layers/workspace");
    assert_eq!(std::fs::read_to_string(ws.join("suid")).unwrap(), "u\n");
    assert!(!ws.join("fifo").exists(), "no FIFO is created on the host");

    // Restored: the sandbox's own modes and FIFOs again, applied inside it.
    let r = create(&s, &["--from", &snap]);
    let o = s.sh_in(&r, CHECK);
    assert_eq!(stdout(&o), WANT, "{}", stderr(&o));
    // The FIFO works, and the restore's changes are its own.
    let o = s.sh_in(
        &r,
        "(echo through > /workspace/fifo &) ; cat /workspace/fifo; echo more > /workspace/open",
    );
    assert_eq!(stdout(&o), "through\n", "{}", stderr(&o));
    // Its own snapshot keeps the modes too (a second generation), still as data.
    let snap2 = snapshot(&s, &r);
    let live = live_inodes(&store);
    assert!(live.is_empty(), "live inodes in the store: {live:?}");
    let r2 = create(&s, &["--from", &snap2]);
    let o = s.sh_in(&r2, CHECK);
    assert_eq!(
        stdout(&o),
        WANT.replace("\nw\nr\n", "\nmore\nr\n"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn snapshots_stored_before_are_made_data_at_start_and_keep_their_modes() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = Server::start();
    let sbx = s.create();
    let o = s.sh_in(&sbx, "echo u > /workspace/suid");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    let layers = s.state_dir().join("snapshots").join(&snap).join("layers");
    // What a capture stored before content was stored as data: the sandbox's mode as it
    // was, a FIFO, no manifest.
    std::fs::remove_file(layers.join("special")).unwrap();
    let suid = layers.join("workspace/suid");
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let o = std::process::Command::new("mkfifo")
        .args(["-m", "640"])
        .arg(layers.join("workspace/fifo"))
        .output()
        .unwrap();
    assert!(o.status.success());
    s.kill9();
    s.spawn();
    let live = live_inodes(&s.state_dir().join("snapshots"));
    assert!(live.is_empty(), "live inodes in the store: {live:?}");
    let r = create(&s, &["--from", &snap]);
    let o = s.sh_in(
        &r,
        "stat -c '%n %a' /workspace/suid /workspace/fifo && test -p /workspace/fifo && cat /workspace/suid",
    );
    assert_eq!(
        stdout(&o),
        "/workspace/suid 4755\n/workspace/fifo 640\nu\n",
        "{}",
        stderr(&o)
    );
}

#[test]
fn sparse_files_and_hard_links_stay_small_in_the_store() {
    let s = Server::start();
    let sbx = create(&s, &["--disk-mb", "64"]);
    let o = s.sh_in(
        &sbx,
        "cd /workspace && truncate -s 1G sparse && printf end >> sparse \
         && head -c 1048576 /dev/urandom > h && for i in $(seq 1 20); do ln h h$i; done \
         && sha256sum h | cut -c1-64",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sum = stdout(&o);
    let snap = snapshot(&s, &sbx);
    let layers = s.state_dir().join("snapshots").join(&snap).join("layers");
    let used = allocated(&layers);
    let apparent: u64 = walk(&layers)
        .iter()
        .filter(|(_, m)| m.is_file())
        .map(|(_, m)| m.len())
        .sum();
    eprintln!("snapshot layer: {used} bytes allocated, {apparent} bytes apparent");
    assert!(
        used < 4 << 20,
        "a 1 GiB sparse file and 21 names of one 1 MiB file use {used} bytes in the store"
    );
    let o = s.run(&["snapshot", "inspect", &snap, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let size: u64 = v["sizeBytes"].as_str().unwrap_or("0").parse().unwrap();
    assert!(size < 4 << 20, "the snapshot reports {size} bytes: {v}");
    // Retained output was not asked for: it defaults to the disk quota (64 MiB), not 1 GiB.
    assert_eq!(v["limits"]["outputBytes"].as_str(), Some("67108864"), "{v}");

    let r = create(&s, &["--from", &snap]);
    let o = s.sh_in(
        &r,
        "cd /workspace && stat -c '%s %h' sparse h h20 && tail -c 3 sparse && echo \
         && sha256sum h13 | cut -c1-64 && test h -ef h7 && echo linked",
    );
    assert_eq!(
        stdout(&o),
        format!("1073741827 1\n1048576 21\n1048576 21\nend\n{sum}linked\n"),
        "{}",
        stderr(&o)
    );
    // A smaller disk asked for at restore brings the defaulted output quota down with it.
    let small = create(&s, &["--from", &snap, "--disk-mb", "32"]);
    let o = s.run(&["snapshot", "inspect", &snapshot(&s, &small), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["limits"]["outputBytes"].as_str(), Some("33554432"), "{v}");
}

mod image {
    use super::*;
    use cleanroom_e2e::oci::{Layer, Registry, BUSYBOX};

    fn layer() -> Vec<u8> {
        let busybox = std::fs::read(BUSYBOX).expect("busybox-static (scripts/deps.sh)");
        let mut l = Layer::default()
            .dir("bin")
            .dir("etc")
            .file("bin/busybox", &busybox, 0o755);
        for a in [
            "sh", "cat", "echo", "rm", "mkdir", "test", "stat", "chmod", "mkfifo", "cp", "head",
        ] {
            l = l.symlink(&format!("bin/{a}"), "busybox");
        }
        l.file("etc/data", b"from the image\n", 0o644).gz()
    }

    fn image_server() -> (Registry, Server, String) {
        let reg = Registry::start();
        let reference = reg.push_image("test/hostile", &[layer()]);
        let s = Server::start_with(&["--insecure-registry", &reg.host()]);
        (reg, s, reference)
    }

    #[test]
    fn an_image_roots_setuid_files_and_fifos_are_data_in_the_store() {
        let (_reg, s, reference) = image_server();
        let sbx = create(&s, &["--image", &reference]);
        let script = "cp /bin/busybox /bin/su2 && chmod 4755 /bin/su2 && chmod 2711 /etc \
                      && rm /etc/data && mkfifo /etc/data && chmod 600 /etc/data \
                      && mkfifo /etc/new";
        let o = s.sh_in(&sbx, script);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let check = "stat -c '%n %a' /bin/su2 /etc /etc/data /etc/new && test -p /etc/data \
                     && test -p /etc/new && echo fifos";
        let want = "/bin/su2 4755\n/etc 2711\n/etc/data 600\n/etc/new 644\nfifos\n";
        assert_eq!(stdout(&s.sh_in(&sbx, check)), want);
        let snap = snapshot(&s, &sbx);
        let live = live_inodes(&s.state_dir().join("snapshots"));
        assert!(live.is_empty(), "live inodes in the store: {live:?}");
        let r = create(&s, &["--from", &snap]);
        let o = s.sh_in(&r, check);
        assert_eq!(stdout(&o), want, "{}", stderr(&o));
    }

    #[test]
    fn a_capture_beyond_the_sandboxs_disk_budget_is_resource_exhausted() {
        let (_reg, s, reference) = image_server();
        // The image root's upper and the scratch tmpfs are capped at 16 MiB each: 24 MiB
        // in all is more than one snapshot of this sandbox may keep.
        let sbx = create(&s, &["--image", &reference, "--disk-mb", "16"]);
        let o = s.sh_in(
            &sbx,
            "head -c 12582912 /dev/urandom > /etc/big && head -c 12582912 /dev/urandom > /workspace/big",
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let store = s.state_dir().join("snapshots");
        let before = allocated(&store);
        let o = s.run(&["snapshot", "create", &sbx]);
        assert_code(&o, "resource_exhausted");
        // Nothing left behind, and the sandbox runs on.
        let after = allocated(&store);
        assert!(after <= before + (64 << 10), "{before} -> {after}");
        let left: Vec<_> = std::fs::read_dir(&store)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
        let o = s.sh_in(&sbx, "rm /etc/big && echo ok");
        assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
        // Within the budget again: captured.
        snapshot(&s, &sbx);
    }
}
