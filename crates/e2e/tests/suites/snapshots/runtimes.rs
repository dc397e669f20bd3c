//! Filesystem snapshots and forks under both runtimes ([`both_runtimes!`]), from one body:
//! a snapshot is taken, restored and forked, and a second generation keeps the first's
//! deletions. Under gvisor the capture and the restore run inside the sandbox
//! (`crates/backend/src/gvisor/fsnap/`), so what differs is named: a PAUSED gvisor
//! sandbox is refused (`sandbox_paused`: the helper cannot run in a frozen sentry) rather
//! than thawed. A snapshot restores only on the runtime that took it; a server whose
//! default runtime changed refuses the other's snapshot precisely. Hostile archives (the
//! capture helper is a process of the sandbox, which can ptrace it) are refused with
//! `unsafe_archive_entry`, and a restore larger than its disk limit with
//! `resource_exhausted`.

use cleanroom_e2e::*;

/// Every snapshot the server stores (directories under `<state>/snapshots`).
fn stored_snapshots(s: &Server) -> Vec<String> {
    std::fs::read_dir(s.state_dir().join("snapshots"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("snap_"))
        .collect()
}

fn status_of(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sandbox_id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["status"].as_str().unwrap_or_default().to_string()
}

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

fn restore(s: &Server, snap: &str, extra: &[&str]) -> String {
    let mut args = vec!["sandbox", "create", "--from", snap];
    args.extend_from_slice(extra);
    let o = s.run(&args);
    let id = stdout(&o).trim().to_string();
    assert!(
        id.starts_with("sbx_"),
        "restore failed: {}{}",
        stderr(&o),
        s.log()
    );
    id
}

/// The sandbox ids a `sandbox ls` prints (`all`: also the ended ones), in order, once each.
fn listed(s: &Server, all: bool) -> Vec<String> {
    let mut args = vec!["sandbox", "ls", "--json"];
    if all {
        args.push("--all");
    }
    let text = stdout(&s.run(&args));
    let mut ids: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("sbx_") {
        let id: String = text[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

fn runtime_of(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sandbox_id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["backend"].as_str().unwrap_or_default().to_string()
}

/// What the source sandbox writes: files in every writable part, modes, a hard link, a
/// symlink pointing out of the sandbox, a name with control characters, a FIFO, a sparse
/// file of 1 GiB.
const WRITE: &str = "echo kept > /workspace/f && echo t > /tmp/t && echo r > /root/r \
    && mkdir -m 710 /workspace/d && echo x > /workspace/d/x && chmod 640 /workspace/d/x \
    && ln /workspace/f /workspace/hard && ln -s /etc/passwd /workspace/out \
    && echo esc > \"/workspace/$(printf 'a\\nb\\033c')\" && mkfifo -m 604 /tmp/fifo \
    && truncate -s 1G /workspace/sparse && echo end >> /workspace/sparse";

/// What a restore must show of [`WRITE`].
const CHECK: &str = "cat /workspace/f /tmp/t /root/r /workspace/d/x; stat -c %a /workspace/d \
    /workspace/d/x /tmp/fifo; test /workspace/f -ef /workspace/hard && echo linked; \
    readlink /workspace/out; cat \"/workspace/$(printf 'a\\nb\\033c')\"; test -p /tmp/fifo \
    && echo fifo; stat -c %s /workspace/sparse; tail -c 4 /workspace/sparse;";
const WANT: &str = "kept\nt\nr\nx\n710\n640\n604\nlinked\n/etc/passwd\nesc\nfifo\n\
    1073741828\nend\n";

both_runtimes!(
    a_snapshot_and_its_fork_or_a_precise_refusal,
    snapshot_and_fork
);
fn snapshot_and_fork(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.sh_in(&sbx, WRITE);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&s.sh_in(&sbx, CHECK)), WANT);
    let snap = snapshot(&s, &sbx);
    // Content addressed: the same state, the same snapshot.
    assert_eq!(snapshot(&s, &sbx), snap);

    // Paused: linux captures it frozen; gvisor cannot run its helper in a frozen sentry
    // and says so, leaving it paused.
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));
    let o = s.run(&["snapshot", "create", &sbx]);
    if rt == Runtime::Gvisor {
        assert_code(&o, "sandbox_paused");
        assert!(stderr(&o).contains("resume"), "{}", stderr(&o));
    } else {
        assert_eq!(stdout(&o).trim(), snap, "{}", stderr(&o));
    }
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");
    assert_eq!(s.run(&["sandbox", "resume", &sbx]).status.code(), Some(0));
    assert_eq!(stored_snapshots(&s), vec![snap.clone()]);

    // A fork of three: each sees the snapshot and only its own writes, on its runtime.
    let forks: Vec<String> = (0..3).map(|_| restore(&s, &snap, &[])).collect();
    for (i, f) in forks.iter().enumerate() {
        assert_eq!(runtime_of(&s, f), rt.name());
        let o = s.sh_in(f, CHECK);
        assert_eq!(stdout(&o), WANT, "{}", stderr(&o));
        let o = s.sh_in(f, &format!("echo {i} > /workspace/mine"));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    for (i, f) in forks.iter().enumerate() {
        assert_eq!(stdout(&s.sh_in(f, "cat /workspace/mine")), format!("{i}\n"));
    }

    // A second generation keeps its deletions and additions, in the root too.
    let o = s.sh_in(
        &forks[0],
        "rm /workspace/f /tmp/t && rm -r /workspace/d && echo g > /workspace/g",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap2 = snapshot(&s, &forks[0]);
    let r2 = restore(&s, &snap2, &[]);
    let o = s.sh_in(
        &r2,
        "test -e /workspace/f || echo f=gone; test -e /tmp/t || echo t=gone; \
         test -e /workspace/d || echo d=gone; cat /workspace/g /workspace/hard /workspace/mine",
    );
    assert_eq!(
        stdout(&o),
        "f=gone\nt=gone\nd=gone\ng\nkept\n0\n",
        "{}",
        stderr(&o)
    );

    let mut all = forks.clone();
    all.extend([sbx.clone(), r2.clone()]);
    for id in &all {
        let o = s.run(&["sandbox", "rm", id]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    for id in &all {
        assert_no_leftovers(&s.state_dir(), id);
    }
}

/// Under gvisor a restore writes the snapshot's files into the new sandbox's own overlay,
/// so they count against its disk limit: a smaller limit than the snapshot needs is
/// refused (`resource_exhausted`) and nothing is left running. (Under linux the snapshot
/// is a shared lower layer that no sandbox's limit is charged for.)
#[test]
fn a_gvisor_restore_larger_than_its_disk_limit_is_refused() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let sbx = s.create_on(Runtime::Gvisor, &["--disk-mb", "64"]);
    let o = s.sh_in(
        &sbx,
        "head -c 12582912 /dev/urandom > /workspace/big && echo ok",
    );
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    let o = s.run(&["sandbox", "create", "--from", &snap, "--disk-mb", "4"]);
    assert_code(&o, "resource_exhausted");
    assert_eq!(listed(&s, false), vec![sbx.clone()], "nothing else is live");
    for id in listed(&s, true).iter().filter(|i| **i != sbx) {
        assert_no_leftovers(&s.state_dir(), id);
    }
    let r = restore(&s, &snap, &["--disk-mb", "32"]);
    assert_eq!(
        stdout(&s.sh_in(&r, "stat -c %s /workspace/big")),
        "12582912\n"
    );
}

/// A record header of the gvisor archive format, as the capture helper writes it.
fn record(json: &str) -> Vec<u8> {
    let mut v = (json.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(json.as_bytes());
    v
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The capture helper is a process of the sandbox: a sandbox that ptraces it can make the
/// archive say anything. The restore helper refuses every escape, and nothing appears
/// outside the new sandbox.
#[test]
fn hostile_gvisor_archives_are_refused_and_write_nothing_outside() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let s = Server::start();
    let sbx = s.create_on(Runtime::Gvisor, &[]);
    let o = s.sh_in(&sbx, "echo x > /workspace/x");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    let archive = s
        .state_dir()
        .join("snapshots")
        .join(&snap)
        .join("layers/gvisor.snap");
    assert!(archive.is_file());
    let meta = r#""meta":{"mode":420,"uid":0,"gid":0,"mtime_s":0,"mtime_ns":0}"#;
    let marker = format!("cleanroom-escape-{}", std::process::id());
    let file = |path: &str| {
        record(&format!(
            r#"{{"kind":"file","path":"{}",{meta},"size":0,"extents":[]}}"#,
            hex(path)
        ))
    };
    let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("dot-dot", vec![file(&format!("workspace/../../{marker}"))]),
        ("absolute", vec![file(&format!("/tmp/{marker}"))]),
        (
            "through a symlink",
            vec![
                record(&format!(
                    r#"{{"kind":"symlink","path":"{}",{meta},"target":"{}"}}"#,
                    hex("workspace/l"),
                    hex("/proc/self/root/tmp")
                )),
                file(&format!("workspace/l/{marker}")),
            ],
        ),
        (
            "a device",
            vec![record(&format!(
                r#"{{"kind":"device","path":"{}","major":1,"minor":3}}"#,
                hex("workspace/null")
            ))],
        ),
        ("cut short (no end record)", vec![file("workspace/ok")]),
    ];
    for (what, records) in cases {
        let mut bytes = b"cleanroom-gvfs1\n".to_vec();
        let n = records.len();
        for r in records {
            bytes.extend(r);
        }
        if !what.starts_with("cut short") {
            bytes.extend(record(&format!(r#"{{"kind":"end","entries":{n}}}"#)));
        }
        std::fs::write(&archive, &bytes).unwrap();
        let o = s.run(&["sandbox", "create", "--from", &snap]);
        assert_eq!(o.status.code(), Some(125), "{what}: {}", stdout(&o));
        let code = if what == "a device" || what.starts_with("cut short") {
            "invalid_argument"
        } else {
            "unsafe_archive_entry"
        };
        assert!(
            stderr(&o).contains(&format!("[{code}]")),
            "{what}: want {code}: {}",
            stderr(&o)
        );
        assert!(!std::path::Path::new("/").join(&marker).exists(), "{what}");
        assert!(
            !std::path::Path::new("/tmp").join(&marker).exists(),
            "{what}"
        );
    }
    // Only the source sandbox is live; the failed restores left nothing.
    assert_eq!(listed(&s, false), vec![sbx.clone()]);
    for id in listed(&s, true).iter().filter(|i| **i != sbx) {
        assert_no_leftovers(&s.state_dir(), id);
    }
}

/// A snapshot restores only on the runtime that took it: a server whose default runtime
/// changed since refuses the other runtime's snapshot by name, both ways, making nothing.
#[test]
fn a_snapshot_restores_only_on_the_runtime_that_took_it() {
    if !Runtime::Gvisor.available() {
        return;
    }
    let mut s = Server::start_with(&["--default-runtime", "gvisor"]);
    // No runtime in the request or the policy: the server's default takes them.
    let g = stdout(&s.run(&["sandbox", "create"])).trim().to_string();
    assert_eq!(runtime_of(&s, &g), "gvisor");
    let o = s.sh_in(&g, "echo g > /workspace/g");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let gsnap = snapshot(&s, &g);
    s.stop();
    s.args = Vec::new();
    s.spawn();
    let l = stdout(&s.run(&["sandbox", "create"])).trim().to_string();
    assert_eq!(runtime_of(&s, &l), "linux");
    let o = s.sh_in(&l, "echo l > /workspace/l");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lsnap = snapshot(&s, &l);
    let o = s.run(&["sandbox", "create", "--from", &gsnap]);
    assert_code(&o, "backend_capability_mismatch");
    assert!(
        stderr(&o).contains("taken under runtime gvisor"),
        "{}",
        stderr(&o)
    );
    s.stop();
    s.args = vec!["--default-runtime".into(), "gvisor".into()];
    s.spawn();
    let o = s.run(&["sandbox", "create", "--from", &lsnap]);
    assert_code(&o, "backend_capability_mismatch");
    assert!(
        stderr(&o).contains("taken under runtime linux"),
        "{}",
        stderr(&o)
    );
    // Each restores on its own runtime.
    let r = restore(&s, &gsnap, &[]);
    assert_eq!(stdout(&s.sh_in(&r, "cat /workspace/g")), "g\n");
    assert_eq!(listed(&s, false), vec![r], "only the good restore is live");
}

mod image {
    use super::*;
    use cleanroom_e2e::oci::{Layer, Registry, BUSYBOX};

    fn layer() -> Vec<u8> {
        let busybox = std::fs::read(BUSYBOX).expect("busybox-static (scripts/deps.sh installs it)");
        let mut l =
            Layer::new()
                .dir("bin")
                .dir("etc")
                .dir("opq")
                .file("bin/busybox", &busybox, 0o755);
        for a in [
            "sh", "cat", "echo", "ls", "rm", "mkdir", "stat", "chmod", "test",
        ] {
            l = l.special(&format!("bin/{a}"), tar::EntryType::Symlink, "busybox");
        }
        l.file("etc/os-release", b"ID=snap-test\n", 0o644)
            .file("etc/data", b"from the image\n", 0o644)
            .dir("opq/sub")
            .file("opq/sub/old", b"old\n", 0o644)
            .gz()
    }

    both_runtimes!(
        image_roots_keep_changes_and_deletions_across_generations,
        image_generations
    );
    /// The image root's changes — a new file with its mode, a deleted image file, a
    /// directory replaced by another of the same name — survive a snapshot and a second
    /// generation, under both runtimes (under gvisor: the changed directories' lists of
    /// names carry the deletions).
    fn image_generations(rt: Runtime) {
        let reg = Registry::start();
        let reference = reg.push_image("test/snaprt", &[layer()]);
        let s = Server::start_with(&["--insecure-registry", &reg.host()]);
        let sbx = s.create_on(rt, &["--image", &reference]);
        let o = s.sh_in(
            &sbx,
            "echo added > /etc/added && chmod 750 /etc/added && rm /etc/data && rm -r /opq/sub \
             && mkdir /opq/sub && echo new > /opq/sub/new && echo w > /workspace/w",
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let check1 = "cat /etc/added; stat -c %a /etc/added; test -e /etc/data || echo data=gone; \
                      ls /opq/sub; cat /workspace/w /etc/os-release";
        let want1 = "added\n750\ndata=gone\nnew\nw\nID=snap-test\n";
        assert_eq!(stdout(&s.sh_in(&sbx, check1)), want1);
        let snap1 = snapshot(&s, &sbx);
        let r1 = restore(&s, &snap1, &[]);
        assert_eq!(runtime_of(&s, &r1), rt.name());
        let o = s.sh_in(&r1, check1);
        assert_eq!(stdout(&o), want1, "{}", stderr(&o));
        let o = s.sh_in(&r1, "echo second > /etc/second && rm /etc/os-release");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let snap2 = snapshot(&s, &r1);
        let r2 = restore(&s, &snap2, &[]);
        let o = s.sh_in(
            &r2,
            "cat /etc/added /etc/second; test -e /etc/os-release || echo os=gone; \
             test -e /etc/data || echo data=gone; ls /opq/sub",
        );
        assert_eq!(
            stdout(&o),
            "added\nsecond\nos=gone\ndata=gone\nnew\n",
            "{}",
            stderr(&o)
        );
    }
}
