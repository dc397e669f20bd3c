//! Named volumes end to end (docs/volumes.md): a real server, real sandboxes, real loop
//! mounts. What one sandbox writes another reads; read-only mounts refuse writes (also
//! through the files API); read-write into one live sandbox at a time; the size is a
//! quota; another principal can neither see, use nor remove a volume; a volume in use
//! cannot be removed, and a removed one leaves no mount or loop device; the policy's
//! `sandbox.volumes` mounts too; bad mounts are refused with stable codes; a killed
//! server finds its volumes again.

use cleanroom_e2e::*;
use std::time::Duration;

fn ok(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    stdout(o).trim().to_string()
}

fn volume(s: &Server, name: &str, size: &str) {
    assert_eq!(
        ok(&s.run(&["volume", "create", name, "--size", size])),
        name
    );
}

fn sandbox_with(s: &Server, mounts: &[&str]) -> std::process::Output {
    let mut args = vec!["sandbox", "create"];
    for m in mounts {
        args.extend(["--volume", m]);
    }
    s.run(&args)
}

#[test]
fn data_written_read_write_is_read_by_read_only_sandboxes_after_the_writer_is_gone() {
    let s = Server::start();
    volume(&s, "data", "64MiB");
    // A one-shot writer (exec): its sandbox is gone when the next sandboxes start.
    ok(&s.run(&[
        "exec",
        "--volume",
        "data:/workspace/data",
        "--",
        "sh",
        "-c",
        "echo from-a > /workspace/data/note && mkdir -p /workspace/data/d && id -u > /workspace/data/d/uid",
    ]));
    // Read-only into many at once.
    let b = ok(&sandbox_with(&s, &["data:/mnt/data:ro"]));
    let c = ok(&sandbox_with(&s, &["data:/srv/shared:ro"]));
    assert_eq!(ok(&s.sh_in(&b, "cat /mnt/data/note")), "from-a");
    assert_eq!(ok(&s.sh_in(&c, "cat /srv/shared/note")), "from-a");
    // The writer's files belong to the same sandbox user in the reader (idmapped mounts).
    assert_eq!(ok(&s.sh_in(&b, "stat -c %u /mnt/data/note")), "0");
    // Read-only: the kernel refuses writes.
    let w = s.sh_in(&b, "echo x > /mnt/data/other");
    assert_ne!(w.status.code(), Some(0));
    assert!(
        stderr(&w).contains("Read-only file system"),
        "{}",
        stderr(&w)
    );
    let w = s.sh_in(&b, "rm /mnt/data/note");
    assert!(
        stderr(&w).contains("Read-only file system"),
        "{}",
        stderr(&w)
    );
    // The files API works on the mount path with the sandbox's own identity: reads, and
    // refuses writes on the read-only mount.
    let tmp = tempfile::tempdir().unwrap();
    let local = tmp.path().join("note");
    ok(&s.run(&[
        "cp",
        &format!("{b}:/mnt/data/note"),
        local.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read_to_string(&local).unwrap().trim(), "from-a");
    let up = s.run(&["cp", local.to_str().unwrap(), &format!("{b}:/mnt/data/up")]);
    assert_ne!(
        up.status.code(),
        Some(0),
        "an upload into a read-only mount succeeded"
    );
    // `inspect` shows the mounts; `volume inspect` the live users.
    let j = inspect(&s, &b);
    assert_eq!(j["volumes"][0]["name"], "data", "{j}");
    assert_eq!(j["volumes"][0]["readOnly"], true, "{j}");
    let v: serde_json::Value =
        serde_json::from_str(&ok(&s.run(&["volume", "inspect", "data", "-o", "json"]))).unwrap();
    let users: Vec<&str> = v["mountedBy"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    assert!(
        users.contains(&b.as_str()) && users.contains(&c.as_str()),
        "{v}"
    );
    assert_eq!(v["sizeBytes"], (64u64 << 20).to_string(), "{v}");
}

#[test]
fn a_volume_is_read_write_in_one_live_sandbox_at_a_time() {
    let s = Server::start();
    volume(&s, "work", "32MiB");
    let a = ok(&sandbox_with(&s, &["work:/workspace/w"]));
    assert_code(&sandbox_with(&s, &["work:/workspace/w"]), "volume_busy");
    // Nor read-only beside a writer, nor through exec.
    assert_code(&sandbox_with(&s, &["work:/mnt/w:ro"]), "volume_busy");
    assert_code(
        &s.run(&["exec", "--volume", "work:/mnt/w", "--", "true"]),
        "volume_busy",
    );
    // A reader blocks a later writer too.
    ok(&s.run(&["sandbox", "rm", &a]));
    let r = ok(&sandbox_with(&s, &["work:/mnt/w:ro"]));
    assert_code(&sandbox_with(&s, &["work:/workspace/w"]), "volume_busy");
    ok(&s.run(&["sandbox", "rm", &r]));
    ok(&sandbox_with(&s, &["work:/workspace/w"]));
}

#[test]
fn the_size_is_a_quota_enforced_inside_the_sandbox() {
    let s = Server::start();
    volume(&s, "small", "16MiB");
    let o = s.run(&[
        "exec",
        "--volume",
        "small:/workspace/small",
        "--",
        "sh",
        "-c",
        "dd if=/dev/zero of=/workspace/small/fill bs=1M count=40",
    ]);
    assert_ne!(o.status.code(), Some(0), "40 MiB fit into a 16 MiB volume");
    assert!(
        stderr(&o).contains("No space left on device"),
        "{}",
        stderr(&o)
    );
    // Sizes outside the bounds and malformed ones are refused.
    assert_code(
        &s.run(&["volume", "create", "tiny", "--size", "1MiB"]),
        "invalid_argument",
    );
    assert_code(
        &s.run(&["volume", "create", "odd", "--size", "1.5GiB"]),
        "invalid_argument",
    );
}

/// Sparse images are never overcommitted: volumes are created until their sizes (what
/// they may still grow by) would exceed the disk's free space, and the next is refused
/// with `resource_exhausted`, naming the disk.
#[test]
fn volumes_never_promise_more_than_the_disk_has_free() {
    let s = Server::start();
    let st = nix::sys::statvfs::statvfs(&s.state_dir()).expect("statvfs");
    let free = st.blocks_available() as u64 * st.fragment_size() as u64;
    // Each volume takes 40% of the free space (at most the 1 TiB bound): two fit, a third
    // does not.
    let size = (free / 5 * 2).min(1 << 40) >> 20 << 20;
    let fits = free / size;
    assert!(
        fits < 64,
        "the disk is too large for this test ({free} bytes free)"
    );
    let size = format!("{}MiB", size >> 20);
    for i in 0..fits {
        let o = s.run(&["volume", "create", &format!("v{i}"), "--size", &size]);
        if o.status.code() != Some(0) {
            // Something else wrote to the disk meanwhile: the refusal is the one we want.
            assert_code(&o, "resource_exhausted");
            return;
        }
    }
    let o = s.run(&["volume", "create", "one-too-many", "--size", &size]);
    assert_code(&o, "resource_exhausted");
    assert!(stderr(&o).contains("disk"), "{}", stderr(&o));
    // Removing one makes room again.
    ok(&s.run(&["volume", "rm", "v0"]));
    ok(&s.run(&["volume", "create", "one-too-many", "--size", &size]));
}

#[test]
fn another_principal_can_neither_see_use_nor_remove_a_volume() {
    let s = Server::start();
    open_socket_to_all(&s);
    volume(&s, "secret", "16MiB");
    let id = {
        let v: serde_json::Value =
            serde_json::from_str(&ok(&s.run(&["volume", "inspect", "secret", "--json"]))).unwrap();
        v["volumeId"].as_str().unwrap().to_string()
    };
    let ls = as_uid(&s, 65534, &["volume", "ls", "-o", "json"]);
    assert_eq!(ok(&ls), "[]");
    // By name or by id: exactly like a volume that does not exist.
    for key in ["secret", id.as_str(), "nope"] {
        assert_code(
            &as_uid(&s, 65534, &["volume", "inspect", key]),
            "volume_not_found",
        );
        assert_code(
            &as_uid(&s, 65534, &["volume", "rm", key]),
            "volume_not_found",
        );
    }
    assert_code(
        &as_uid(
            &s,
            65534,
            &["sandbox", "create", "--volume", "secret:/mnt/s:ro"],
        ),
        "volume_not_found",
    );
    // Names are per owner: the other principal's own `secret` is another volume.
    assert_eq!(
        ok(&as_uid(
            &s,
            65534,
            &["volume", "create", "secret", "--size", "16MiB"]
        )),
        "secret"
    );
    // The other principal sees its own only; root (an admin here) sees both.
    let theirs: serde_json::Value =
        serde_json::from_str(&ok(&as_uid(&s, 65534, &["volume", "ls", "--json"]))).unwrap();
    assert_eq!(theirs.as_array().unwrap().len(), 1, "{theirs}");
    assert_eq!(theirs[0]["owner"], "uid:65534", "{theirs}");
    let all = ok(&s.run(&["volume", "ls"]));
    assert_eq!(all.lines().count(), 3, "{all}");
    assert!(ok(&s.run(&["volume", "inspect", &id])).contains("uid:0"));
    // A duplicate of one's own name is refused.
    assert_code(&s.run(&["volume", "create", "secret"]), "volume_exists");
}

#[test]
fn a_volume_in_use_is_not_removed_and_a_removed_one_leaves_nothing_behind() {
    let s = Server::start();
    volume(&s, "scratch", "16MiB");
    assert!(
        !volume_leftovers(&s.state_dir()).is_empty(),
        "the volume is not mounted on the server"
    );
    let a = ok(&sandbox_with(&s, &["scratch:/workspace/scratch"]));
    ok(&s.sh_in(&a, "echo x > /workspace/scratch/x"));
    assert_code(&s.run(&["volume", "rm", "scratch"]), "volume_in_use");
    ok(&s.run(&["sandbox", "rm", &a]));
    ok(&s.run(&["volume", "rm", "scratch"]));
    assert!(
        eventually(Duration::from_secs(10), || volume_leftovers(&s.state_dir())
            .is_empty()),
        "left behind: {:?}",
        volume_leftovers(&s.state_dir())
    );
    assert_code(
        &s.run(&["volume", "inspect", "scratch"]),
        "volume_not_found",
    );
    let left: Vec<_> = std::fs::read_dir(s.state_dir().join("volumes"))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A new volume of the same name is empty.
    volume(&s, "scratch", "16MiB");
    let o = s.run(&[
        "exec",
        "--volume",
        "scratch:/workspace/scratch",
        "--",
        "sh",
        "-c",
        "ls /workspace/scratch/x",
    ]);
    assert_ne!(o.status.code(), Some(0), "a removed volume's file survived");
}

#[test]
fn the_policy_mounts_its_sandbox_volumes_and_its_hash_covers_them() {
    let s = Server::start();
    volume(&s, "cache", "16MiB");
    ok(&s.run(&[
        "exec",
        "--volume",
        "cache:/workspace/cache",
        "--",
        "sh",
        "-c",
        "echo cached > /workspace/cache/c",
    ]));
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        &dir,
        "cleanroom.yaml",
        "version: 1\nsandbox:\n  volumes:\n    - {name: cache, path: /opt2/cache, read_only: true}\n",
    );
    let plain = write(&dir, "plain.yaml", "version: 1\n");
    let a = ok(&s.run(&["sandbox", "create", "--policy", &policy]));
    assert_eq!(ok(&s.sh_in(&a, "cat /opt2/cache/c")), "cached");
    let w = s.sh_in(&a, "touch /opt2/cache/n");
    assert!(
        stderr(&w).contains("Read-only file system"),
        "{}",
        stderr(&w)
    );
    let b = ok(&s.run(&["sandbox", "create", "--policy", &plain]));
    let (ha, hb) = (inspect(&s, &a), inspect(&s, &b));
    assert_ne!(ha["policyHash"], hb["policyHash"]);
    // A policy volume that does not exist, and one on a system path.
    let missing = write(
        &dir,
        "missing.yaml",
        "version: 1\nsandbox:\n  volumes:\n    - {name: nope, path: /mnt/n}\n",
    );
    assert_code(
        &s.run(&["sandbox", "create", "--policy", &missing]),
        "volume_not_found",
    );
    let system = write(
        &dir,
        "system.yaml",
        "version: 1\nsandbox:\n  volumes:\n    - {name: cache, path: /etc/cache}\n",
    );
    assert_code(
        &s.run(&["sandbox", "create", "--policy", &system]),
        "policy_invalid",
    );
    // A warm pool cannot hold sandboxes that mount volumes: refused at once.
    assert_code(
        &s.run(&["pool", "create", "--policy", &policy, "--min-ready", "1"]),
        "volume_mount_invalid",
    );
}

#[test]
fn bad_mounts_are_refused_with_stable_codes() {
    let s = Server::start();
    volume(&s, "v", "16MiB");
    for bad in [
        "v:/proc/x",
        "v:/dev/v",
        "v:/sys/v",
        "v:relative",
        "v:/mnt/../etc",
        "v:/",
        "v:/workspace",
        "v:/mnt/v:rx",
        "V:/mnt/v",
        "v",
    ] {
        assert_code(&sandbox_with(&s, &[bad]), "volume_mount_invalid");
    }
    // Two mounts on one path, or one volume twice.
    assert_code(
        &sandbox_with(&s, &["v:/mnt/a", "v:/mnt/b:ro"]),
        "volume_mount_invalid",
    );
    // The server checks too (a client that skips the CLI's check).
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client().await;
        let e = api(c
            .sandboxes
            .create_sandbox(cleanroom_client::api::CreateSandboxRequest {
                volumes: vec![cleanroom_client::api::VolumeMount {
                    name: "v".into(),
                    path: "/proc/self".into(),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .await)
        .unwrap_err();
        assert_eq!(e.code, "volume_mount_invalid", "{e:?}");
    });
    assert_code(
        &s.run(&["volume", "create", "Bad/Name"]),
        "invalid_argument",
    );
}

#[test]
fn snapshots_say_volumes_are_not_captured() {
    let s = Server::start();
    volume(&s, "keep", "16MiB");
    let a = ok(&sandbox_with(&s, &["keep:/workspace/keep"]));
    ok(&s.sh_in(&a, "echo v1 > /workspace/keep/f && echo w > /workspace/own"));
    let snap = ok(&s.run(&["snapshot", "create", &a]));
    let j: serde_json::Value =
        serde_json::from_str(&ok(&s.run(&["snapshot", "inspect", &snap, "--json"]))).unwrap();
    assert_eq!(j["volumesNotCaptured"][0]["name"], "keep", "{j}");
    assert!(ok(&s.run(&["snapshot", "inspect", &snap])).contains("volumes:"));
    ok(&s.sh_in(&a, "echo v2 > /workspace/keep/f"));
    ok(&s.run(&["sandbox", "rm", &a]));
    // A restore mounts the volume again, by name, with what it holds now.
    let b = ok(&s.run(&["sandbox", "create", "--from", &snap]));
    assert_eq!(ok(&s.sh_in(&b, "cat /workspace/keep/f")), "v2");
    assert_eq!(ok(&s.sh_in(&b, "cat /workspace/own")), "w");
}

#[test]
fn a_killed_server_finds_its_volumes_again_and_a_stopped_one_unmounts_them() {
    let mut s = Server::start();
    volume(&s, "durable", "16MiB");
    ok(&s.run(&[
        "exec",
        "--volume",
        "durable:/workspace/d",
        "--",
        "sh",
        "-c",
        "echo kept > /workspace/d/f",
    ]));
    let a = ok(&sandbox_with(&s, &["durable:/workspace/d"]));
    s.kill9();
    s.spawn();
    // The killed server's sandbox is reclaimed; the volume is free and still holds its file.
    assert_no_leftovers(&s.state_dir(), &a);
    let o = s.run(&[
        "exec",
        "--volume",
        "durable:/workspace/d",
        "--",
        "cat",
        "/workspace/d/f",
    ]);
    assert_eq!(ok(&o), "kept");
    // One mount and one loop device for the volume, not two (re-attached, not re-mounted).
    let left = volume_leftovers(&s.state_dir());
    assert_eq!(left.len(), 2, "{left:?}");
    s.stop();
    assert!(
        eventually(Duration::from_secs(10), || volume_leftovers(&s.state_dir())
            .is_empty()),
        "a stopped server left {:?}",
        volume_leftovers(&s.state_dir())
    );
    s.spawn();
    assert_eq!(
        ok(&s.run(&[
            "exec",
            "--volume",
            "durable:/mnt/d:ro",
            "--",
            "cat",
            "/mnt/d/f"
        ])),
        "kept"
    );
    ok(&s.run(&["volume", "rm", "durable"]));
    assert!(
        eventually(Duration::from_secs(10), || volume_leftovers(&s.state_dir())
            .is_empty()),
        "{:?}",
        volume_leftovers(&s.state_dir())
    );
}
