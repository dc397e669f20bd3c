//! Pause/resume, filesystem snapshots and fork, end to end: a real server, real sandboxes,
//! the real cgroup freezer (`runsc pause` under gvisor) and CPU accounting. The pause
//! tests run under both runtimes ([`both_runtimes!`]).

use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use cleanroom_client::Client;
use cleanroom_e2e::*;
use std::path::PathBuf;
use std::time::Duration;

/// The sandbox's CPU time in ns, read from its own cgroup (v1 `cpuacct.usage` or v2
/// `cpu.stat usage_usec`).
fn cpu_usage(sandbox_id: &str) -> u64 {
    for dir in cgroups_named(sandbox_id) {
        if let Ok(s) = std::fs::read_to_string(dir.join("cpuacct.usage")) {
            return s.trim().parse().unwrap();
        }
        if let Ok(s) = std::fs::read_to_string(dir.join("cpu.stat")) {
            if let Some(v) = s.lines().find_map(|l| l.strip_prefix("usage_usec ")) {
                return v.trim().parse::<u64>().unwrap() * 1000;
            }
        }
    }
    panic!(
        "no CPU accounting cgroup for {sandbox_id}: {:?}",
        cgroups_named(sandbox_id)
    );
}

async fn start(c: &Client, sandbox_id: &str, script: &str) -> String {
    let req = CreateExecutionRequest {
        sandbox_id: sandbox_id.into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
        ..Default::default()
    };
    c.executions
        .create_execution(req)
        .await
        .expect("create execution")
        .into_owned()
        .execution
        .as_option()
        .unwrap()
        .execution_id
        .clone()
}

/// All stdout of a finished execution and its exit status.
async fn output_of(c: &Client, exec_id: &str) -> (String, Option<ExecutionExit>) {
    let req = StreamExecutionRequest {
        execution_id: exec_id.into(),
        ..Default::default()
    };
    let mut s = c.executions.stream_execution(req).await.expect("stream");
    let (mut out, mut exit) = (Vec::new(), None);
    while let Some(m) = s.message().await.expect("stream message") {
        let ev: ExecutionStreamEvent = m.to_owned_message();
        match ev.payload {
            Some(Payload::Output(o)) if o.stream == OutputStream::OUTPUT_STREAM_STDOUT => {
                out.extend_from_slice(&o.data)
            }
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    (String::from_utf8(out).unwrap(), exit)
}

fn status_of(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["sandbox", "inspect", sandbox_id, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["status"].as_str().unwrap_or_default().to_string()
}

both_runtimes!(
    async a_paused_sandbox_uses_no_cpu_refuses_work_and_resumes_exactly,
    paused_uses_no_cpu
);
async fn paused_uses_no_cpu(rt: Runtime) {
    let s = Server::start();
    let c = s.client().await;
    let sbx = s.create_on(rt, &[]);
    // A busy counter: every number on stdout, until /tmp/stop exists.
    let exe = start(
        &c,
        &sbx,
        "i=0; while [ ! -e /tmp/stop ]; do i=$((i+1)); echo $i; done",
    )
    .await;
    let before = cpu_usage(&sbx);
    assert!(
        eventually(Duration::from_secs(30), || cpu_usage(&sbx)
            > before + 50_000_000),
        "the counter never ran"
    );

    let o = s.run(&["sandbox", "pause", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("PAUSED"), "{}", stdout(&o));
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");
    // Frozen: the CPU counter does not move at all. Under gvisor the cgroup also holds the
    // sentry, whose platform threads keep using a little CPU while every task is stopped
    // (measured here: ≈ 35 ms/s, paused or idle; the sentry's own task accounting moves
    // the same way): a bound far below the running counter's, not zero.
    let frozen = cpu_usage(&sbx);
    std::thread::sleep(Duration::from_millis(700));
    let used = cpu_usage(&sbx) - frozen;
    let allowed = match rt {
        Runtime::Linux => 0,
        Runtime::Gvisor => 150_000_000,
    };
    assert!(used <= allowed, "a paused sandbox used {used} ns of CPU");

    // Nothing new starts in it, and reading files is refused the same way.
    assert_code(&s.sh_in(&sbx, "touch /tmp/stop"), "sandbox_paused");
    let err = c
        .sandboxes
        .download_sandbox_file(DownloadSandboxFileRequest {
            sandbox_id: sbx.clone(),
            path: "/etc/hostname".into(),
            ..Default::default()
        })
        .await
        .expect_err("download from a paused sandbox");
    assert!(format!("{err:?}").contains("sandbox_paused"), "{err:?}");
    // Pausing again is a no-op.
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));

    // Another principal can neither pause nor resume it (nor learn that it exists).
    open_socket_to_all(&s);
    assert_code(
        &as_uid(&s, 65534, &["sandbox", "resume", &sbx]),
        "sandbox_not_found",
    );
    assert_code(
        &as_uid(&s, 65534, &["sandbox", "pause", &sbx]),
        "sandbox_not_found",
    );
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_PAUSED");

    let o = s.run(&["sandbox", "resume", &sbx, "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("SANDBOX_STATUS_READY"),
        "{}",
        stdout(&o)
    );
    assert!(
        eventually(Duration::from_secs(30), || cpu_usage(&sbx)
            > frozen + 50_000_000),
        "the counter did not continue after resume"
    );
    let o = s.sh_in(&sbx, "touch /tmp/stop");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, exit) = output_of(&c, &exe).await;
    assert_eq!(
        exit.expect("exit").status,
        ExecutionStatus::EXECUTION_STATUS_SUCCEEDED
    );
    // The same process continued its count: 1, 2, … with no gap and no restart.
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() > 1000, "{} lines", lines.len());
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(*l, (i + 1).to_string(), "line {i}");
    }

    // The events show both transitions.
    let o = s.run(&["sandbox", "events", &sbx]);
    let ev = stdout(&o);
    assert!(ev.contains("SANDBOX_STATUS_PAUSED"), "{ev}");
    assert!(ev.contains("\"resumed\""), "{ev}");
}

both_runtimes!(
    terminating_a_paused_sandbox_leaves_nothing_behind,
    terminating_paused
);
fn terminating_paused(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &[]);
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "sleep 1000 & echo ok",
    ]);
    assert_eq!(stdout(&o), "ok\n", "{}", stderr(&o));
    assert_eq!(s.run(&["sandbox", "pause", &sbx]).status.code(), Some(0));
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_STOPPED");
    assert_no_leftovers(&s.state_dir(), &sbx);
}

#[test]
fn resume_of_a_sandbox_that_is_not_paused_is_refused_or_a_no_op() {
    let s = Server::start();
    let sbx = s.create();
    // READY: resume is a no-op.
    assert_eq!(s.run(&["sandbox", "resume", &sbx]).status.code(), Some(0));
    assert_eq!(s.run(&["sandbox", "rm", &sbx]).status.code(), Some(0));
    // STOPPED: neither can apply.
    assert_code(&s.run(&["sandbox", "pause", &sbx]), "sandbox_not_ready");
    assert_code(&s.run(&["sandbox", "resume", &sbx]), "sandbox_not_ready");
    // Garbage ids are not found.
    assert_code(
        &s.run(&["sandbox", "pause", "sbx_nope"]),
        "sandbox_not_found",
    );
    let _ = PathBuf::new();
}

/// `snapshot create SANDBOX`, returning the new id.
fn snapshot(s: &Server, sandbox_id: &str) -> String {
    let o = s.run(&["snapshot", "create", sandbox_id]);
    let id = stdout(&o).trim().to_string();
    assert!(
        id.starts_with("snap_"),
        "snapshot create failed: {}",
        stderr(&o)
    );
    id
}

/// `sandbox create --from SNAPSHOT`, returning the new id.
fn restore(s: &Server, snap: &str) -> String {
    let o = s.run(&["sandbox", "create", "--from", snap]);
    let id = stdout(&o).trim().to_string();
    assert!(
        id.starts_with("sbx_"),
        "create --from failed: {}",
        stderr(&o)
    );
    id
}

/// What a sandbox sees of the files the tests write: names, modes, owners, contents.
const LISTING: &str = "cd / && for p in workspace/a workspace/d workspace/d/f workspace/link tmp/t root/r; do stat -c '%n %a %u:%g %F' $p; done; cat workspace/d/f tmp/t root/r; readlink workspace/link";

#[test]
fn files_and_permissions_survive_a_snapshot_and_restore() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.sh_in(
        &sbx,
        "cd /workspace && echo a > a && chmod 640 a && mkdir d && chmod 710 d && echo deep > d/f \
         && chmod 604 d/f && ln -s /etc/../etc/passwd link \
         && echo tmp > /tmp/t && echo rootfile > /root/r && chmod 600 /root/r",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = s.sh_in(&sbx, LISTING);
    assert_eq!(before.status.code(), Some(0), "{}", stderr(&before));
    let snap = snapshot(&s, &sbx);
    // The source keeps running, unchanged and not paused.
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_READY");
    assert_eq!(stdout(&s.sh_in(&sbx, LISTING)), stdout(&before));

    let o = s.run(&["snapshot", "inspect", &snap, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sourceSandboxId"].as_str(), Some(sbx.as_str()), "{v}");
    assert!(
        v["sizeBytes"]
            .as_str()
            .unwrap_or("0")
            .parse::<u64>()
            .unwrap()
            >= 18,
        "{v}"
    );
    assert!(
        v["contentDigest"].as_str().unwrap().starts_with("sha256:"),
        "{v}"
    );
    assert!(v["createdAt"].is_string(), "{v}");

    let restored = restore(&s, &snap);
    assert_eq!(stdout(&s.sh_in(&restored, LISTING)), stdout(&before));
    // The restore is a sandbox of its own: writable, parent recorded on its snapshots.
    let o = s.sh_in(&restored, "echo more >> /workspace/a && cat /workspace/a");
    assert_eq!(stdout(&o), "a\nmore\n", "{}", stderr(&o));
    let child = snapshot(&s, &restored);
    let o = s.run(&["snapshot", "inspect", &child, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["parentSnapshotId"].as_str(), Some(snap.as_str()), "{v}");
    // exec --from: a one-shot sandbox from the snapshot, torn down afterwards.
    let o = s.run(&["exec", "-n", "--from", &child, "--", "cat", "/workspace/a"]);
    assert_eq!(stdout(&o), "a\nmore\n", "{}", stderr(&o));
    // The same state by the same owner is the same snapshot (content addressed).
    assert_eq!(snapshot(&s, &restored), child);
    // In use as a lower layer: not removable; once its sandboxes are gone, removable.
    assert_code(&s.run(&["snapshot", "rm", &snap]), "snapshot_in_use");
    assert_eq!(s.run(&["sandbox", "rm", &restored]).status.code(), Some(0));
    assert_eq!(s.run(&["snapshot", "rm", &snap]).status.code(), Some(0));
    assert_code(
        &s.run(&["snapshot", "inspect", &snap]),
        "snapshot_not_found",
    );
    assert!(!s.state_dir().join("snapshots").join(&snap).exists());
    assert_no_leftovers(&s.state_dir(), &restored);
}

#[test]
fn forks_share_the_snapshot_and_diverge() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.sh_in(&sbx, "echo base > /workspace/base && echo t > /tmp/shared");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    let layers = s.state_dir().join("snapshots").join(&snap).join("layers");
    let inode =
        |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(layers.join(p)).unwrap());
    let base_inode = inode("workspace/base");
    let forks: Vec<String> = (0..3).map(|_| restore(&s, &snap)).collect();
    for (i, f) in forks.iter().enumerate() {
        let o = s.sh_in(
            f,
            &format!("echo fork{i} > /workspace/mine && echo changed{i} > /workspace/base && rm /tmp/shared"),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    for (i, f) in forks.iter().enumerate() {
        let o = s.sh_in(f, "cat /workspace/mine /workspace/base; ls /tmp");
        assert_eq!(
            stdout(&o),
            format!("fork{i}\nchanged{i}\n"),
            "{}",
            stderr(&o)
        );
        // The shared layer is an overlay's lower: read-only, the same one for every fork.
        let o = s.sh_in(f, "grep ' /workspace ' /proc/mounts");
        assert!(stdout(&o).starts_with("overlay "), "{}", stdout(&o));
    }
    // The snapshot itself is untouched, and not copied per fork.
    assert_eq!(
        std::fs::read_to_string(layers.join("workspace/base")).unwrap(),
        "base\n"
    );
    assert_eq!(inode("workspace/base"), base_inode);
    assert!(!layers.join("workspace/mine").exists());
    let dirs = std::fs::read_dir(s.state_dir().join("snapshots"))
        .unwrap()
        .count();
    assert_eq!(dirs, 1, "one snapshot directory for all forks");
    // The source never saw the forks' writes either.
    assert_eq!(
        stdout(&s.sh_in(&sbx, "cat /workspace/base; ls /tmp")),
        "base\nshared\n"
    );
}

#[test]
fn snapshots_survive_a_server_restart() {
    let mut s = Server::start();
    let sbx = s.create();
    let o = s.sh_in(
        &sbx,
        "echo durable > /workspace/x && chmod 751 /workspace/x",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    s.stop();
    s.spawn();
    let o = s.run(&["snapshot", "ls"]);
    assert!(stdout(&o).contains(&snap), "{}", stdout(&o));
    let restored = restore(&s, &snap);
    let o = s.sh_in(&restored, "cat /workspace/x; stat -c %a /workspace/x");
    assert_eq!(stdout(&o), "durable\n751\n", "{}", stderr(&o));
}

#[test]
fn another_principal_can_neither_see_nor_restore_nor_remove_a_snapshot() {
    let s = Server::start();
    let sbx = s.create();
    let snap = snapshot(&s, &sbx);
    open_socket_to_all(&s);
    for args in [
        vec!["snapshot", "inspect", snap.as_str()],
        vec!["snapshot", "rm", snap.as_str()],
        vec!["sandbox", "create", "--from", snap.as_str()],
        vec!["exec", "-n", "--from", snap.as_str(), "--", "true"],
    ] {
        assert_code(&as_uid(&s, 65534, &args), "snapshot_not_found");
    }
    // Nor snapshot someone else's sandbox, nor list others' snapshots.
    assert_code(
        &as_uid(&s, 65534, &["snapshot", "create", &sbx]),
        "sandbox_not_found",
    );
    let o = as_uid(&s, 65534, &["snapshot", "ls", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains(&snap), "{}", stdout(&o));
    // Hostile ids are not found either.
    for id in [
        "snap_../../etc",
        "snap_",
        "sbx_00000000000000000000000000000000",
        "",
    ] {
        let o = s.run(&["snapshot", "inspect", id]);
        assert_ne!(o.status.code(), Some(0), "{id}");
    }
    // Still the owner's.
    assert_eq!(
        s.run(&["snapshot", "inspect", &snap]).status.code(),
        Some(0)
    );
}

#[test]
fn from_cannot_be_combined_with_a_policy_or_an_image() {
    let s = Server::start();
    let sbx = s.create();
    let snap = snapshot(&s, &sbx);
    let d = tempfile::tempdir().unwrap();
    let policy = write(&d, "p.yaml", "version: 1\n");
    for args in [
        vec![
            "sandbox",
            "create",
            "--from",
            snap.as_str(),
            "--image",
            "r/x@sha256:00",
        ],
        vec![
            "sandbox",
            "create",
            "--from",
            snap.as_str(),
            "--policy",
            policy.as_str(),
        ],
        vec![
            "exec",
            "--from",
            snap.as_str(),
            "--in",
            sbx.as_str(),
            "--",
            "true",
        ],
    ] {
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_refuses_from_snapshot_with_a_policy_or_image() {
    let s = Server::start();
    let sbx = s.create();
    let snap = snapshot(&s, &sbx);
    let c = s.client().await;
    for (policy, image) in [("version: 1\n", ""), ("", "r/x@sha256:00")] {
        let err = c
            .sandboxes
            .create_sandbox(CreateSandboxRequest {
                policy_yaml: policy.into(),
                image_ref: image.into(),
                from_snapshot: snap.clone(),
                ..Default::default()
            })
            .await
            .expect_err("refused");
        assert!(format!("{err:?}").contains("invalid_argument"), "{err:?}");
    }
}

#[test]
fn checkpoint_is_refused_precisely_without_the_capability() {
    let s = Server::start();
    let sbx = s.create();
    let o = s.run(&["snapshot", "checkpoint", &sbx]);
    assert_code(&o, "backend_capability_mismatch");
    assert!(stderr(&o).contains("checkpoint_restore"), "{}", stderr(&o));
    // Nothing changed: the sandbox still runs.
    assert_eq!(status_of(&s, &sbx), "SANDBOX_STATUS_READY");
}

/// Every file under `dir` (the snapshot store) whose content contains `needle`.
fn files_containing(dir: &std::path::Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let m = std::fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.extend(files_containing(&p, needle));
        } else if m.is_file() {
            let data = std::fs::read(&p).unwrap_or_default();
            if needle.is_empty() || data.windows(needle.len()).any(|w| w == needle) {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn secrets_and_the_sandbox_ca_are_never_captured_and_restores_get_fresh_ones() {
    let value = format!("snapsecret-{}-{}", std::process::id(), 0x5eed);
    let d = tempfile::tempdir().unwrap();
    let secrets = write(&d, "secrets", &format!("TOKEN={value}\n"));
    std::fs::set_permissions(
        &secrets,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let s = Server::start_with(&[
        "--secrets-file",
        &secrets,
        "--egress-resolve",
        "api.test=127.0.0.1",
    ]);
    let policy = write(
        &d,
        "cleanroom.yaml",
        "version: 1
sandbox:
  network:
    allow:
      - host: api.test
        ports: [443]
  secrets:
    TOKEN:
      hosts: [api.test]
      header: Authorization
      format: 'Bearer {value}'
",
    );
    let o = s.run(&["sandbox", "create", "--policy", &policy]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let probe = "echo \"$TOKEN\"; cat /run/cleanroom/sandbox-ca.crt | sha256sum";
    let o = s.sh_in(&sbx, &format!("echo data > /workspace/f; {probe}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = stdout(&o);
    let placeholder = before.lines().next().unwrap().to_string();
    assert!(
        placeholder.starts_with("cleanroom-secret-TOKEN-"),
        "{before}"
    );
    let ca_pem = std::fs::read(
        // The sandbox's CA certificate as the sandbox sees it.
        format!(
            "/proc/{}/root/run/cleanroom/sandbox-ca.crt",
            init_pid(&s, &sbx)
        ),
    )
    .unwrap();

    let snap = snapshot(&s, &sbx);
    let store = s.state_dir().join("snapshots");
    assert!(
        files_containing(&store, b"data\n").len() == 1,
        "the workspace was captured"
    );
    for needle in [
        value.as_bytes(),
        placeholder.as_bytes(),
        b"PRIVATE KEY".as_slice(),
        b"BEGIN CERTIFICATE".as_slice(),
        &ca_pem[..64],
    ] {
        let hits = files_containing(&store, needle);
        assert!(
            hits.is_empty(),
            "{:?} found in {hits:?}",
            String::from_utf8_lossy(needle)
        );
    }

    // The restore runs the snapshot's policy with fresh per-sandbox material.
    let restored = restore(&s, &snap);
    let o = s.sh_in(&restored, &format!("cat /workspace/f; {probe}"));
    let after = stdout(&o);
    assert!(
        after.starts_with("data\ncleanroom-secret-TOKEN-"),
        "{after}{}",
        stderr(&o)
    );
    let (p1, p2): (Vec<&str>, Vec<&str>) =
        (before.lines().collect(), after.lines().skip(1).collect());
    assert_ne!(p1[0], p2[0], "placeholder regenerated");
    assert_ne!(p1[1], p2[1], "sandbox CA regenerated");
    assert!(!after.contains(&value));
}

/// Host pid of a sandbox's pid 1 (from `sandbox inspect`'s provision facts).
fn init_pid(s: &Server, sandbox_id: &str) -> i32 {
    // The sandbox's processes are charged to its cgroups; pid 1 is the lowest.
    let dir = cgroups_named(sandbox_id)
        .into_iter()
        .next()
        .expect("cgroup");
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
    let _ = s;
    let mut pids: Vec<i32> = procs
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    pids.sort();
    // The shim joined first and forked pid 1: the second-lowest is the sandbox's pid 1
    // unless the shim already exited.
    pids.into_iter()
        .find(|p| {
            std::fs::read_to_string(format!("/proc/{p}/status"))
                .map(|s| {
                    s.lines()
                        .any(|l| l.starts_with("NSpid:") && l.ends_with("\t1"))
                })
                .unwrap_or(false)
        })
        .expect("pid 1 of the sandbox")
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
            "sh", "cat", "echo", "ls", "rm", "mkdir", "stat", "chmod", "test", "grep",
        ] {
            l = l.special(&format!("bin/{a}"), tar::EntryType::Symlink, "busybox");
        }
        l.file("etc/os-release", b"ID=snap-test\n", 0o644)
            .file("etc/data", b"from the image\n", 0o644)
            .dir("opq/sub")
            .file("opq/sub/old", b"old\n", 0o644)
            .gz()
    }

    #[test]
    fn image_roots_keep_changes_deletions_and_opaque_dirs_across_generations() {
        let reg = Registry::start();
        let reference = reg.push_image("test/snap", &[layer()]);
        let s = Server::start_with(&["--insecure-registry", &reg.host()]);
        let o = s.run(&["sandbox", "create", "--image", &reference]);
        let sbx = stdout(&o).trim().to_string();
        assert!(sbx.starts_with("sbx_"), "{}{}", stderr(&o), s.log());
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
        let layers = s.state_dir().join("snapshots").join(&snap1).join("layers");
        assert!(layers.join("rootfs/etc/added").is_file());
        assert!(
            !layers.join("rootfs/bin").exists(),
            "only the upper layer is captured"
        );

        let r1 = restore(&s, &snap1);
        let o = s.sh_in(&r1, check1);
        assert_eq!(stdout(&o), want1, "{}", stderr(&o));
        let o = s.run(&["sandbox", "inspect", &r1, "--json"]);
        assert!(
            stdout(&o).contains(&reference),
            "the image comes with the snapshot"
        );

        // A second generation: its own changes above the first's.
        let o = s.sh_in(&r1, "echo second > /etc/second && rm /etc/os-release");
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let snap2 = snapshot(&s, &r1);
        let r2 = restore(&s, &snap2);
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

#[test]
fn hostile_trees_are_captured_as_data_never_followed() {
    let s = Server::start();
    let sbx = s.create();
    // Links to host paths and to the sandbox's own pseudo files, a fifo, a socket, a
    // deep but legal tree: none may make the server read anything but these entries.
    let o = s.sh_in(
        &sbx,
        "cd /workspace && ln -s / hostroot && ln -s /etc/shadow shadow && ln -s /proc/1/root p1 \
         && ln -s ../../../../../../etc up && mkfifo fifo \
         && python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.bind(\"/workspace/sock\")' 2>/dev/null; \
         p=/workspace; for i in $(seq 1 100); do p=$p/d; done; mkdir -p $p && echo bottom > $p/f",
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let snap = snapshot(&s, &sbx);
    let ws = s
        .state_dir()
        .join("snapshots")
        .join(&snap)
        .join("layers/workspace");
    for l in ["hostroot", "shadow", "p1", "up"] {
        let m = std::fs::symlink_metadata(ws.join(l)).unwrap();
        assert!(m.file_type().is_symlink(), "{l} kept as a link");
    }
    assert_eq!(
        std::fs::read_link(ws.join("hostroot")).unwrap(),
        PathBuf::from("/")
    );
    // A FIFO is never made on the host: the restore makes it inside the sandbox.
    assert!(std::fs::symlink_metadata(ws.join("fifo")).is_err());
    assert!(!ws.join("sock").exists(), "sockets are not state");
    // The only regular file in the whole snapshot is the one the sandbox wrote.
    let layers = s.state_dir().join("snapshots").join(&snap).join("layers");
    // (Besides the server's own manifest of the FIFO, next to the parts.)
    let files: Vec<_> = files_containing(&layers, b"")
        .into_iter()
        .filter(|f| *f != layers.join("special"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with("d/f"));
    // Restored, the links are the sandbox's own again (resolved inside the new sandbox).
    let r = restore(&s, &snap);
    let o = s.sh_in(&r, "test -p /workspace/fifo && readlink /workspace/hostroot; cat /workspace/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/f");
    assert_eq!(stdout(&o), "/\nbottom\n", "{}", stderr(&o));
}

#[test]
fn a_capture_interrupted_by_a_crash_leaves_nothing_after_restart() {
    let mut s = Server::start();
    let sbx = s.create();
    let snap = snapshot(&s, &sbx);
    // What a crash in the middle of a capture leaves: a temp dir next to the snapshots.
    let tmp = s
        .state_dir()
        .join("snapshots/.tmp-crashed/layers/workspace");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("partial"), "x").unwrap();
    s.kill9();
    s.spawn();
    assert!(!s.state_dir().join("snapshots/.tmp-crashed").exists());
    // Finished snapshots stay.
    assert_eq!(
        s.run(&["snapshot", "inspect", &snap]).status.code(),
        Some(0)
    );
}

/// `snapshot rm` right after `exec --from` succeeds: the one-shot sandbox's background
/// teardown is waited for instead of answering `snapshot_in_use`. A READY user still
/// blocks the removal.
#[test]
fn snapshot_rm_right_after_exec_from_waits_for_the_teardown() {
    let s = Server::start();
    let sbx = s.create();
    let snap = snapshot(&s, &sbx);
    for _ in 0..3 {
        let o = s.run(&["exec", "-n", "--from", &snap, "--", "true"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let user = restore(&s, &snap);
    assert_code(&s.run(&["snapshot", "rm", &snap]), "snapshot_in_use");
    assert_eq!(s.run(&["sandbox", "rm", &user]).status.code(), Some(0));
    let o = s.run(&["exec", "-n", "--from", &snap, "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["snapshot", "rm", &snap]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
