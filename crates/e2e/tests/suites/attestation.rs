//! Attestation and agent identity end to end: a real server signs a statement at create;
//! `cleanroom attestation verify` checks it offline (the server is stopped first); every
//! tampering and a wrong key fail with stable codes; the agent identity is recorded, shown
//! in inspect and bound into the statement.

use base64::Engine as _;
use cleanroom_e2e::*;
use std::os::unix::fs::PermissionsExt;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

/// A well-formed ed25519 public key from a fresh server-independent key pair.
fn agent_key(seed: u8) -> String {
    // Any 32 bytes but the small-order encodings parse as a key; a real agent would use its own.
    format!("ed25519:{}", b64(&[seed; 32]))
}

/// `sandbox attest ID --out` and `attestation pubkey --out` into `dir`: (statement, key).
fn attest_to_files(
    s: &Server,
    id: &str,
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let att = dir.join("att.json");
    let key = dir.join("key.pem");
    let o = s.run(&["sandbox", "attest", id, "--out", att.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = s.run(&["attestation", "pubkey", "--out", key.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    (att, key)
}

fn verify(s: &Server, file: &std::path::Path, key: &std::path::Path) -> std::process::Output {
    // No CLEANROOM_HOST and a dead host: verify must not need a server.
    let mut c = std::process::Command::new(BIN);
    c.env_remove("CLEANROOM_HOST")
        .args(["--host", "unix:///nonexistent/cleanroom.sock"])
        .args(["attestation", "verify"])
        .arg(file)
        .arg("--key")
        .arg(key);
    let _ = s;
    output_with_timeout(c, std::time::Duration::from_secs(30))
}

#[test]
fn statement_verifies_offline_and_tampering_or_wrong_key_fails() {
    let mut s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_key(7);
    let (d1, d2) = (agent_key(8), agent_key(9));
    let o = s.run(&[
        "sandbox",
        "create",
        "--agent-key",
        &agent,
        "--delegation",
        &d1,
        "--delegation",
        &d2,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = stdout(&o).trim().to_string();

    // The identity is recorded and shown in inspect.
    let o = s.run(&["sandbox", "inspect", &id]);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("agent_public_key:    {agent}")),
        "{text}"
    );
    assert!(text.contains(&d1) && text.contains(&d2), "{text}");

    let (att, key) = attest_to_files(&s, &id, dir.path());
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .starts_with("-----BEGIN PUBLIC KEY-----"));

    // The key file is 0600 in the state dir and survives a restart unchanged.
    let key_file = s.state_dir().join("attestation.key");
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let pem_before = std::fs::read_to_string(&key).unwrap();
    s.stop();

    // Offline: the server is gone.
    let o = verify(&s, &att, &key);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains(&format!("sandbox_id:       {id}")), "{out}");
    assert!(out.contains(&agent["ed25519:".len()..]), "{out}");
    assert!(out.contains("init_sha256:      sha256:"), "{out}");
    assert!(out.contains("backend:          linux"), "{out}");
    // The init hash is the hash of the binary that runs as pid 1 (this very binary).
    let bin_hash = cleanroom_e2e::oci::sha256(&std::fs::read(BIN).unwrap());
    assert!(
        out.contains(&format!("init_sha256:      {bin_hash}")),
        "{out}"
    );

    // JSON mode gives the whole statement, agent chain in order.
    let mut c = std::process::Command::new(BIN);
    c.args(["attestation", "verify", "--json"])
        .arg(&att)
        .arg("--key")
        .arg(&key);
    let o = output_with_timeout(c, std::time::Duration::from_secs(30));
    let st: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(st["sandbox_id"], id);
    assert_eq!(
        st["delegation_chain"][0]["public_key"],
        &d1["ed25519:".len()..]
    );
    assert_eq!(
        st["delegation_chain"][1]["public_key"],
        &d2["ed25519:".len()..]
    );

    // Tamperings: each re-signed-looking edit of the payload or signature fails.
    let env: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&att).unwrap()).unwrap();
    let payload: serde_json::Value =
        serde_json::from_slice(&unb64(env["payload"].as_str().unwrap())).unwrap();
    let mut cases: Vec<(&str, serde_json::Value, &str)> = Vec::new();
    for (field, value) in [
        (
            "sandbox_id",
            serde_json::json!("sbx_00000000000000000000000000000000"),
        ),
        ("owner", serde_json::json!("uid:0")),
        ("policy_hash", serde_json::json!("sha256:00")),
        ("agent", serde_json::Value::Null),
        ("valid_until_unix_ms", serde_json::json!(u64::MAX)),
    ] {
        let mut p = payload.clone();
        p[field] = value;
        let mut e = env.clone();
        e["payload"] = serde_json::json!(b64(&serde_json::to_vec(&p).unwrap()));
        cases.push((field, e, "attestation_signature_invalid"));
    }
    let mut e = env.clone();
    let mut sig = unb64(e["signatures"][0]["sig"].as_str().unwrap());
    sig[0] ^= 0x80;
    e["signatures"][0]["sig"] = serde_json::json!(b64(&sig));
    cases.push(("signature bit", e, "attestation_signature_invalid"));
    let mut e = env.clone();
    e["payloadType"] = serde_json::json!("text/plain");
    cases.push(("payloadType", e, "attestation_invalid"));
    cases.push(("garbage", serde_json::json!("nope"), "attestation_invalid"));
    for (what, e, code) in cases {
        let f = dir.path().join("tampered.json");
        std::fs::write(&f, serde_json::to_vec(&e).unwrap()).unwrap();
        let o = verify(&s, &f, &key);
        assert_eq!(
            o.status.code(),
            Some(125),
            "{what} accepted: {}",
            stdout(&o)
        );
        assert!(
            stderr(&o).contains(&format!("[{code}]")),
            "{what}: {}",
            stderr(&o)
        );
    }

    // A different server's key does not verify this server's statement.
    let other = Server::start();
    let other_key = dir.path().join("other.pem");
    let o = other.run(&[
        "attestation",
        "pubkey",
        "--out",
        other_key.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = verify(&s, &att, &other_key);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[attestation_signature_invalid]"),
        "{}",
        stderr(&o)
    );

    // Restart: same key.
    s.spawn();
    let again = dir.path().join("again.pem");
    let o = s.run(&["attestation", "pubkey", "--out", again.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&again).unwrap(), pem_before);
}

/// Hostile identities are refused before anything is created; other principals cannot
/// read a sandbox's attestation; a key file others can read stops the server.
#[test]
fn hostile_identities_and_readable_key_file_are_refused() {
    let mut s = Server::start();
    for (agent, chain) in [
        ("ed25519:AAAA", vec![]),
        ("rsa:xyz", vec![]),
        (&*format!("ed25519:{}", b64(&[0u8; 32])), vec![]),
        (&*agent_key(1), vec!["ed25519:@@@".to_string()]),
    ] {
        let mut args = vec!["sandbox", "create", "--agent-key", agent];
        for c in &chain {
            args.extend(["--delegation", c]);
        }
        let o = s.run(&args);
        assert_eq!(o.status.code(), Some(125), "{agent} accepted");
        assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    }
    // A chain without an agent is refused too.
    let o = s.run(&["sandbox", "create", "--delegation", &agent_key(2)]);
    assert!(stderr(&o).contains("[invalid_argument]"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "ls"]);
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));

    // Unknown sandbox: not found.
    let o = s.run(&["sandbox", "attest", "sbx_0123456789abcdef0123456789abcdef"]);
    assert!(stderr(&o).contains("[sandbox_not_found]"), "{}", stderr(&o));

    // The key file widened to 0644: the server refuses to start with it.
    s.stop();
    let key_file = s.state_dir().join("attestation.key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut c = std::process::Command::new(BIN);
    c.args(["serve", "--listen"])
        .arg(format!("unix://{}", s.dir.join("again.sock").display()))
        .arg("--state-dir")
        .arg(s.state_dir());
    let o = output_with_timeout(c, std::time::Duration::from_secs(30));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("attestation key"), "{}", stderr(&o));
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// The attested `init_sha256` names the binary sandboxes really run, also after another
/// file was renamed over the server's path (a package upgrade) and the zygote was started
/// again (it is, every 128 forks and whenever it dies): it used to be started from the
/// path, running the new file while the statements named the old one.
#[test]
fn the_attested_init_hash_is_the_binary_sandboxes_run_after_an_upgrade() {
    let bin_dir = tempfile::tempdir().unwrap();
    let exe = bin_dir.path().join("cleanroom");
    let original = std::fs::read(BIN).unwrap();
    std::fs::write(&exe, &original).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Server::start_exe(&exe, &[]);
    s.create(); // the zygote runs
                // The upgrade: a different binary (here: the same with bytes appended) renamed over.
    let mut upgraded = original.clone();
    upgraded.extend_from_slice(b"\0an upgrade");
    let next = bin_dir.path().join("cleanroom.new");
    std::fs::write(&next, &upgraded).unwrap();
    std::fs::set_permissions(&next, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&next, &exe).unwrap();
    // The zygote dies; the next create starts another.
    let server = s.child.as_ref().expect("server").id() as i32;
    let zygotes: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .filter(|p: &i32| {
            ppid_of(*p) == Some(server)
                && std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"cleanroom-init\0"))
        })
        .collect();
    assert!(!zygotes.is_empty(), "no zygote found");
    for z in &zygotes {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*z),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(eventually(std::time::Duration::from_secs(10), || zygotes
        .iter()
        .all(|z| !std::path::Path::new(&format!("/proc/{z}")).exists()
            || ppid_of(*z) != Some(server))));
    let id = s.create();
    let pid1 = cleanroom_e2e::pools::sandbox_inits(&s)
        .into_iter()
        .find(|(sid, _)| *sid == id)
        .map(|(_, pid)| pid)
        .expect("the new sandbox's pid 1");
    let runs = cleanroom_e2e::oci::sha256(&std::fs::read(format!("/proc/{pid1}/exe")).unwrap());
    assert_eq!(
        runs,
        cleanroom_e2e::oci::sha256(&original),
        "pid 1 runs the server's own binary"
    );
    let dir = tempfile::tempdir().unwrap();
    let (att, key) = attest_to_files(&s, &id, dir.path());
    let o = verify(&s, &att, &key);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("init_sha256:      {runs}")),
        "attested another binary than pid 1 runs ({runs}): {}",
        stdout(&o)
    );
}
