//! Memory checkpoints under the gvisor runtime, for real (`runsc checkpoint`/`restore`,
//! docs/checkpoints.md): a process's memory survives a checkpoint and N restores (forks
//! that diverge), the stored image is the caller's, verified before use and free of secret
//! values, the linux runtime refuses precisely, and nothing is left behind. Every test
//! skips with a message when `runsc` is not installed.

use cleanroom_e2e::*;
use std::time::Duration;

fn have_runsc() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("runsc").is_file()));
    if !found {
        eprintln!("SKIPPED: runsc (gVisor) is not installed; scripts/deps.sh installs it");
    }
    found
}

/// A counter and a 200 MiB buffer in one Python process's memory, started by the
/// sandbox's init (`__gvisor-spawn`: processes of executions do not survive this runsc's
/// restore, docs/checkpoints.md). Each tick it writes its count to /tmp/count; `touch
/// /tmp/ask` makes it write the buffer's sha256 (from its own memory) to /tmp/answer;
/// `touch /tmp/jump` adds 1,000,000 to its count once.
const WORKLOAD: &str = r#"
import hashlib, os, time
buf = bytearray(os.urandom(1 << 20)) * 200
i = 0
while True:
    i += 1
    if os.path.exists("/tmp/jump"):
        os.remove("/tmp/jump"); i += 1000000
    if os.path.exists("/tmp/ask"):
        os.remove("/tmp/ask")
        open("/tmp/answer.new", "w").write(hashlib.sha256(buf).hexdigest())
        os.rename("/tmp/answer.new", "/tmp/answer")
    open("/tmp/count.new", "w").write(str(i))
    os.rename("/tmp/count.new", "/tmp/count")
    time.sleep(0.05)
"#;

fn create_gvisor(s: &Server, extra: &[&str]) -> String {
    let mut args = vec![
        "sandbox",
        "create",
        "--runtime",
        "gvisor",
        "--memory-mb",
        "1024",
    ];
    args.extend_from_slice(extra);
    let o = s.run(&args);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    id
}

/// Start [`WORKLOAD`] in the background and wait for its first count.
fn start_workload(s: &Server, id: &str) {
    let o = s.sh_in(
        id,
        &format!(
            "cat > /tmp/w.py <<'EOF'\n{WORKLOAD}\nEOF\n\
             /run/cleanroom-init __gvisor-spawn python3 /tmp/w.py\n\
             for _ in $(seq 600); do [ -s /tmp/count ] && exit 0; sleep 0.1; done; exit 1"
        ),
    );
    assert!(o.status.success(), "workload did not start: {}", stderr(&o));
}

fn count(s: &Server, id: &str) -> u64 {
    let o = s.sh_in(id, "cat /tmp/count");
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o).trim().parse().expect("a count")
}

/// The buffer's sha256 as the process computes it from its own memory.
fn buffer_sha(s: &Server, id: &str) -> String {
    let o = s.sh_in(
        id,
        "rm -f /tmp/answer; touch /tmp/ask; \
         for _ in $(seq 600); do [ -s /tmp/answer ] && cat /tmp/answer && exit 0; sleep 0.1; done; exit 1",
    );
    assert!(o.status.success(), "no answer: {}", stderr(&o));
    stdout(&o).trim().to_string()
}

fn checkpoint(s: &Server, id: &str, extra: &[&str]) -> String {
    let mut args = vec!["sandbox", "checkpoint", id];
    args.extend_from_slice(extra);
    let o = s.run(&args);
    let ck = stdout(&o).trim().to_string();
    assert!(ck.starts_with("ckpt_"), "{}", stderr(&o));
    ck
}

fn ckpt_json(s: &Server, ck: &str) -> serde_json::Value {
    let o = s.run(&["checkpoint", "inspect", ck, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn image_files(s: &Server, ck: &str) -> Vec<std::path::PathBuf> {
    let dir = s.state_dir().join("checkpoints").join(ck).join("image");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no image files in {}", dir.display());
    files
}

fn runsc_containers(s: &Server) -> Vec<String> {
    let root = s.state_dir().join("gvisor").join("runsc");
    std::fs::read_dir(&root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn live_sandboxes(s: &Server) -> usize {
    let o = s.run(&["sandbox", "ls", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap_or_default();
    v.as_array().map_or(0, |a| {
        a.iter()
            .filter(|x| {
                let st = x["status"].as_str().unwrap_or_default();
                !st.contains("STOPPED") && !st.contains("FAILED")
            })
            .count()
    })
}

#[test]
fn a_checkpointed_process_restored_twice_continues_with_its_memory_and_the_forks_diverge() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let src = create_gvisor(&s, &[]);
    start_workload(&s, &src);
    let sha = buffer_sha(&s, &src);
    let before = count(&s, &src);
    assert!(before > 0);
    let ck = checkpoint(&s, &src, &[]);
    // Without --leave-running the sandbox is stopped once checkpointed; rm it anyway.
    let o = s.run(&["sandbox", "rm", &src]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_no_leftovers(&s.state_dir(), &src);

    let v = ckpt_json(&s, &ck);
    assert_eq!(v["sourceSandboxId"], src, "{v}");
    assert_eq!(v["runtime"], "gvisor", "{v}");
    assert!(
        v["runtimeVersion"]
            .as_str()
            .unwrap_or_default()
            .starts_with("runsc version"),
        "{v}"
    );
    assert!(v["contentDigest"].as_str().unwrap().starts_with("sha256:"));
    // The image holds the 200 MiB buffer.
    let size: u64 = v["sizeBytes"].as_str().unwrap_or("0").parse().unwrap();
    assert!(size > 200 << 20, "{v}");
    assert!(v["dropped"].to_string().contains("egress gateway"), "{v}");

    let a = stdout(&s.run(&["sandbox", "create", "--from", &ck]))
        .trim()
        .to_string();
    let b = stdout(&s.run(&["sandbox", "create", "--from", &ck]))
        .trim()
        .to_string();
    assert!(a.starts_with("sbx_") && b.starts_with("sbx_") && a != b && a != src);
    // Both continue counting from the saved value (a fresh process would start at 1).
    let (ca, cb) = (count(&s, &a), count(&s, &b));
    assert!(ca >= before && cb >= before, "{before} -> {ca}, {cb}");
    assert!(
        eventually(Duration::from_secs(20), || count(&s, &a) > ca
            && count(&s, &b) > cb),
        "the restored processes keep counting"
    );
    // The buffer is intact in both, as each process reads it from its own memory.
    assert_eq!(buffer_sha(&s, &a), sha);
    assert_eq!(buffer_sha(&s, &b), sha);
    // They diverge: a jump in one copy is not seen by the other.
    let o = s.sh_in(&a, "touch /tmp/jump");
    assert!(o.status.success());
    assert!(eventually(Duration::from_secs(20), || count(&s, &a) >= 1_000_000));
    assert!(count(&s, &b) < 1_000_000);
    // Each copy is a new identity: its attestation names the checkpoint's digest.
    let d = tempfile::tempdir().unwrap();
    let att = d.path().join("a.json");
    let o = s.run(&["sandbox", "attest", &a, "--out", att.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let key = d.path().join("server.pub");
    let o = s.run(&["attestation", "pubkey", "--out", key.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&[
        "attestation",
        "verify",
        att.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).expect("statement json");
    let st = if st["statement"].is_object() {
        st["statement"].clone()
    } else {
        st
    };
    assert_eq!(st["sandbox_id"], a, "{st}");
    assert_eq!(
        st["restored_from_checkpoint"], v["contentDigest"],
        "the attestation names the checkpoint digest: {st}"
    );

    // Everything goes: sandboxes, checkpoint, runsc state.
    for id in [&a, &b] {
        let o = s.run(&["sandbox", "rm", id]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_no_leftovers(&s.state_dir(), id);
    }
    let o = s.run(&["checkpoint", "rm", &ck]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!s.state_dir().join("checkpoints").join(&ck).exists());
    assert_code(
        &s.run(&["checkpoint", "inspect", &ck]),
        "checkpoint_not_found",
    );
    assert!(
        eventually(Duration::from_secs(15), || runsc_containers(&s).is_empty()),
        "runsc state left: {:?}",
        runsc_containers(&s)
    );
    let left: Vec<_> = std::fs::read_dir(s.state_dir().join("gvisor/sandboxes"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "bundles left: {left:?}");
}

#[test]
fn leave_running_keeps_the_sandbox_and_ls_inspect_rm_speak_json() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let id = create_gvisor(&s, &[]);
    let o = s.sh_in(&id, "echo kept > /workspace/f");
    assert!(o.status.success(), "{}", stderr(&o));
    let ck = checkpoint(&s, &id, &["--leave-running"]);
    let o = s.sh_in(&id, "cat /workspace/f");
    assert_eq!(stdout(&o), "kept\n", "{}", stderr(&o));
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["checkpointId"], ck);
    // The restored copy has the files its source had when checkpointed.
    let o = s.run(&["exec", "--from", &ck, "--", "cat", "/workspace/f"]);
    assert_eq!(stdout(&o), "kept\n", "{}", stderr(&o));
    let o = s.run(&["checkpoint", "rm", &ck]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    assert_eq!(stdout(&o).trim(), "[]");
}

#[test]
fn another_principal_a_tampered_image_or_another_runsc_is_refused_and_nothing_is_left() {
    if !have_runsc() {
        return;
    }
    let mut s = Server::start();
    open_socket_to_all(&s);
    let id = create_gvisor(&s, &[]);
    let o = s.sh_in(&id, "echo one > /tmp/f");
    assert!(o.status.success());
    let ck = checkpoint(&s, &id, &["--leave-running"]);
    let o = s.sh_in(&id, "echo two > /tmp/f");
    assert!(o.status.success());
    let ck2 = checkpoint(&s, &id, &[]);
    assert_ne!(ck, ck2);
    let baseline = live_sandboxes(&s);

    // Another principal: exactly like a checkpoint that does not exist.
    let o = as_uid(&s, 4242, &["sandbox", "create", "--from", &ck]);
    assert_code(&o, "checkpoint_not_found");
    let o = as_uid(&s, 4242, &["checkpoint", "inspect", &ck]);
    assert_code(&o, "checkpoint_not_found");
    let o = as_uid(&s, 4242, &["checkpoint", "rm", &ck]);
    assert_code(&o, "checkpoint_not_found");
    let o = as_uid(&s, 4242, &["checkpoint", "ls", "-o", "json"]);
    assert_eq!(stdout(&o).trim(), "[]", "{}", stderr(&o));
    let missing = format!("ckpt_{}", "0".repeat(32));
    assert_code(
        &s.run(&["sandbox", "create", "--from", &missing]),
        "checkpoint_not_found",
    );

    // A flipped bit in the image: refused before runsc reads it.
    let file = image_files(&s, &ck)[0].clone();
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    assert_code(
        &s.run(&["sandbox", "create", "--from", &ck]),
        "checkpoint_corrupt",
    );
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    // A file swapped with the other checkpoint's.
    let other = image_files(&s, &ck2)[0].clone();
    std::fs::copy(&other, &file).unwrap();
    assert_code(
        &s.run(&["sandbox", "create", "--from", &ck]),
        "checkpoint_corrupt",
    );
    std::fs::write(&file, &bytes).unwrap();
    // Nothing was half-restored.
    assert_eq!(live_sandboxes(&s), baseline);
    // Restored again, it works (the refusals above were the tampering's).
    let o = s.run(&["exec", "--from", &ck, "--", "cat", "/tmp/f"]);
    assert_eq!(stdout(&o), "one\n", "{}", stderr(&o));

    // A server whose runsc reports another version refuses the image.
    let d = tempfile::tempdir().unwrap();
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|p| p.join("runsc"))
        .find(|p| p.is_file())
        .unwrap();
    let wrapper = write(
        &d,
        "runsc",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'runsc version 0.0~20240101.0'; exit 0; fi\nexec {} \"$@\"\n",
            real.display()
        ),
    );
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    s.stop();
    s.spawn_with(|c| {
        c.arg("--runsc").arg(&wrapper);
    });
    let o = s.run(&["sandbox", "create", "--from", &ck]);
    assert_code(&o, "checkpoint_incompatible");
    assert!(stderr(&o).contains("20240101"), "{}", stderr(&o));
    assert_eq!(live_sandboxes(&s), 0);
    assert!(
        runsc_containers(&s).is_empty(),
        "{:?}",
        runsc_containers(&s)
    );
}

/// Flip one byte of `file` in place (same inode, same size) and put its modification
/// time back: only its change time tells that it was written.
fn flip_in_place(file: &std::path::Path) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mtime = f.metadata().unwrap().modified().unwrap();
    let at = f.metadata().unwrap().len() / 2;
    let mut byte = [0u8; 1];
    f.read_exact_at(&mut byte, at).unwrap();
    byte[0] ^= 0x01;
    f.write_all_at(&byte, at).unwrap();
    f.set_modified(mtime).unwrap();
}

#[test]
fn a_restore_reuses_a_verification_only_while_the_image_is_unchanged() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let id = create_gvisor(&s, &[]);
    let o = s.sh_in(&id, "echo one > /tmp/f");
    assert!(o.status.success(), "{}", stderr(&o));
    let ck = checkpoint(&s, &id, &[]);
    // Restored right after it was stored (the store's hashes stand), and again.
    for _ in 0..2 {
        let o = s.run(&["exec", "--from", &ck, "--", "cat", "/tmp/f"]);
        assert_eq!(stdout(&o), "one\n", "{}", stderr(&o));
    }
    // The one-shot restores are torn down after `exec` returns: wait for them (the
    // baseline counted one still stopping, seen flaky); the source stopped at its
    // checkpoint.
    assert!(
        eventually(Duration::from_secs(30), || live_sandboxes(&s) == 0),
        "live sandboxes: {}",
        live_sandboxes(&s)
    );
    let baseline = live_sandboxes(&s);
    // A byte flipped in place in the largest file, its size and modification time as
    // they were: refused before runsc reads it, nothing half-restored.
    let pages = image_files(&s, &ck)
        .into_iter()
        .max_by_key(|f| std::fs::metadata(f).unwrap().len())
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    flip_in_place(&pages);
    for _ in 0..2 {
        let o = s.run(&["sandbox", "create", "--from", &ck]);
        assert_code(&o, "checkpoint_corrupt");
    }
    assert_eq!(live_sandboxes(&s), baseline);
    // Flipped back, it is the recorded content again: hashed in full and accepted.
    flip_in_place(&pages);
    let o = s.run(&["exec", "--from", &ck, "--", "cat", "/tmp/f"]);
    assert_eq!(stdout(&o), "one\n", "{}", stderr(&o));
}

#[test]
fn secret_values_are_never_in_a_checkpoint_image() {
    if !have_runsc() {
        return;
    }
    let value = format!("ckptsecret-{}-{}", std::process::id(), 0x5eed);
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
  runtime: gvisor
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
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    // A process keeps the placeholder (its environment) in memory.
    let o = s.sh_in(
        &id,
        "echo \"$TOKEN\"; /run/cleanroom-init __gvisor-spawn sh -c 'while :; do sleep 1; done'",
    );
    let placeholder = stdout(&o).trim().to_string();
    assert!(
        placeholder.starts_with("cleanroom-secret-TOKEN-"),
        "{placeholder}"
    );
    let ck = checkpoint(&s, &id, &[]);
    let mut found_placeholder = false;
    for f in image_files(&s, &ck) {
        let bytes = std::fs::read(&f).unwrap();
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(
            !has(value.as_bytes()),
            "{} holds the secret value",
            f.display()
        );
        found_placeholder |= has(placeholder.as_bytes());
    }
    // The grep can see what the sandbox held: its placeholder is there.
    assert!(found_placeholder, "the image is not plainly readable");
    let v = ckpt_json(&s, &ck);
    assert!(
        v["dropped"].to_string().contains("secret placeholders"),
        "{v}"
    );
}

#[test]
fn the_linux_runtime_refuses_checkpoints_naming_the_capability() {
    if !have_runsc() {
        return;
    }
    let s = Server::start();
    let o = s.run(&["sandbox", "create", "--runtime", "linux"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "checkpoint", &id]);
    assert_code(&o, "backend_capability_mismatch");
    assert!(stderr(&o).contains("checkpoint_restore"), "{}", stderr(&o));
    // Still READY and usable; no checkpoint was stored.
    let o = s.sh_in(&id, "echo ok");
    assert_eq!(stdout(&o), "ok\n");
    let o = s.run(&["checkpoint", "ls", "-o", "json"]);
    assert_eq!(stdout(&o).trim(), "[]");
}
