//! OCI images end to end: a real registry (Debian's `docker-registry`) on loopback, images
//! the test builds itself (a static busybox plus files, as gzip tar layers) and pushes
//! over the distribution API, and the real server pulling, verifying and running them.
//! Every test that runs a sandbox on an image runs under both runtimes
//! ([`both_runtimes!`]); pulling, verifying and refusing an image happen before any
//! runtime is involved, so those tests run once.

use cleanroom_e2e::oci::{sha256, Layer, Registry, BUSYBOX};
use cleanroom_e2e::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const APPLETS: &[&str] = &[
    "sh", "cat", "echo", "ls", "touch", "rm", "mkdir", "test", "stat", "id", "wc", "grep",
];

/// Base layer: busybox and its applets, /etc/os-release, files for whiteout tests.
fn base_layer() -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX).expect("busybox-static (scripts/deps.sh installs it)");
    let mut l = Layer::new()
        .dir("bin")
        .dir("etc")
        .dir("opq")
        .file("bin/busybox", &busybox, 0o755);
    for a in APPLETS {
        l = l.special(&format!("bin/{a}"), tar::EntryType::Symlink, "busybox");
    }
    l.file("etc/os-release", b"ID=cleanroom-test-image\n", 0o644)
        .file("etc/gone", b"deleted by layer 2\n", 0o644)
        .file("opq/old", b"hidden by an opaque dir\n", 0o644)
        .file("data", b"from the image\n", 0o644)
        .gz()
}

/// Second layer: a whiteout, an opaque directory and a new file.
fn top_layer() -> Vec<u8> {
    Layer::new()
        .file("etc/.wh.gone", b"", 0o644)
        .dir("opq")
        .file("opq/.wh..wh..opq", b"", 0o644)
        .file("opq/new", b"layer 2\n", 0o644)
        .file("etc/added", b"layer 2\n", 0o644)
        .gz()
}

fn server_for(reg: &Registry) -> Server {
    Server::start_with(&["--insecure-registry", &reg.host()])
}

fn cache_root(s: &Server) -> PathBuf {
    s.state_dir().join("images")
}

fn cached_digests(s: &Server) -> Vec<String> {
    std::fs::read_dir(cache_root(s).join("sha256"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn assert_cache_clean(s: &Server) {
    assert!(cached_digests(s).is_empty(), "{:?}", cached_digests(s));
    let tmp: Vec<_> = std::fs::read_dir(cache_root(s).join("tmp"))
        .into_iter()
        .flatten()
        .flatten()
        .collect();
    assert!(tmp.is_empty(), "fill leftovers: {tmp:?}");
}

both_runtimes!(
    pull_run_copy_on_write_inspect_and_remove,
    pull_run_copy_on_write_inspect_and_remove_on
);
fn pull_run_copy_on_write_inspect_and_remove_on(rt: Runtime) {
    let reg = Registry::start();
    let reference = reg.push_image("test/busybox", &[base_layer(), top_layer()]);
    let digest = reference.rsplit_once('@').unwrap().1.to_string();
    let s = server_for(&reg);

    let o = s.run(&["image", "pull", &reference]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), digest);
    let ls = stdout(&s.run(&["image", "ls"]));
    assert!(ls.contains(&digest) && ls.contains("test/busybox"), "{ls}");

    // The sandbox root is the image: its os-release, busybox, layer 2's whiteouts.
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--image",
            &reference,
            "--",
            "/bin/sh",
            "-c",
            "cat /etc/os-release; cat /data; test -e /etc/gone || echo gone=deleted; \
         ls /opq | tr '\\n' ' '; echo; test -e /usr/bin/apt && echo host-visible; \
         id -u; touch /etc/new-file && echo etc=writable",
        ],
    ));
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}\n{}", stderr(&o), s.log());
    assert!(out.contains("ID=cleanroom-test-image\n"), "{out}");
    assert!(out.contains("from the image\n"), "{out}");
    assert!(out.contains("gone=deleted\n"), "{out}");
    assert!(
        out.contains("\nnew \n"),
        "opaque dir must hide lower files: {out}"
    );
    assert!(!out.contains("host-visible"), "{out}");
    assert!(out.contains("etc=writable"), "{out}");

    // Copy-on-write: sandbox A's writes stay in A's upper layer.
    let a = s.create_on(rt, &["--image", &reference]);
    let b = s.create_on(rt, &["--image", &reference]);
    let o = s.sh_in(&a, "echo mine > /etc/os-release && echo x > /etc/data2 && rm /etc/added && cat /etc/os-release");
    assert_eq!(stdout(&o), "mine\n", "{}", stderr(&o));
    let o = s.sh_in(
        &b,
        "cat /etc/os-release; test -e /etc/data2 || echo no-data2; cat /etc/added",
    );
    assert_eq!(
        stdout(&o),
        "ID=cleanroom-test-image\nno-data2\nlayer 2\n",
        "{}",
        stderr(&o)
    );
    let rootfs = cache_root(&s)
        .join("sha256")
        .join(digest.trim_start_matches("sha256:"))
        .join("rootfs");
    assert_eq!(
        std::fs::read_to_string(rootfs.join("etc/os-release")).unwrap(),
        "ID=cleanroom-test-image\n"
    );
    assert!(rootfs.join("etc/added").exists() && !rootfs.join("etc/data2").exists());

    // Recorded on the sandbox and on its executions.
    let i = stdout(&s.run(&["sandbox", "inspect", &a]));
    assert!(
        i.contains(&format!("image_ref:           {reference}"))
            && i.contains(&format!("image_digest:        {digest}")),
        "{i}"
    );
    let e = stdout(&s.run(&["execution", "inspect", "--sandbox-id", &a, "--last"]));
    assert!(e.contains(&format!("image_digest: {digest}")), "{e}");

    // In use: refused; once both sandboxes are gone, removed.
    let o = s.run(&["image", "rm", &digest]);
    assert_eq!(o.status.code(), Some(125));
    assert!(stderr(&o).contains("[image_in_use]"), "{}", stderr(&o));
    assert_eq!(s.run(&["sandbox", "rm", &a, &b]).status.code(), Some(0));
    assert_no_leftovers(&s.state_dir(), &a);
    assert_no_leftovers(&s.state_dir(), &b);
    let o = s.run(&["image", "rm", &digest]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&s.run(&["image", "ls"])).contains(&digest));
    assert_cache_clean(&s);
    let o = s.run(&["image", "rm", &digest]);
    assert!(stderr(&o).contains("[image_not_found]"), "{}", stderr(&o));
}

#[test]
fn tag_only_and_unpinned_refs_are_refused() {
    let s = Server::start();
    for r in [
        "127.0.0.1:5000/x:latest",
        "busybox",
        "127.0.0.1:5000/x@sha256:abc",
    ] {
        let o = s.run(&["exec", "-n", "--image", r, "--", "true"]);
        assert_eq!(o.status.code(), Some(125));
        assert!(
            stderr(&o).contains("[policy_invalid]"),
            "{r}: {}",
            stderr(&o)
        );
        // `image pull` resolves a tag (images::tags); a bare name or bad digest is refused.
        if !r.ends_with(":latest") {
            let o = s.run(&["image", "pull", r]);
            assert!(
                stderr(&o).contains("[policy_invalid]"),
                "{r}: {}",
                stderr(&o)
            );
        }
    }
    // The policy's sandbox.image.ref is checked by the same rules.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cleanroom.yaml");
    std::fs::write(
        &p,
        "version: 1\nsandbox:\n  image:\n    ref: 127.0.0.1:5000/x:v1\n",
    )
    .unwrap();
    let o = s.run(&["exec", "-n", "--policy", p.to_str().unwrap(), "--", "true"]);
    assert!(stderr(&o).contains("[policy_invalid]"), "{}", stderr(&o));
}

#[test]
fn tampered_blobs_are_refused_and_nothing_is_cached() {
    let reg = Registry::start();
    let layer = base_layer();
    let layer_digest = sha256(&layer);
    let reference = reg.push_image("test/tampered", &[layer]);
    let s = server_for(&reg);
    // The registry now serves different bytes for the layer's digest.
    let blob = reg.blob_file(&layer_digest);
    let mut bytes = std::fs::read(&blob).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    let o = s.run(&["image", "pull", &reference]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        stderr(&o).contains("[image_digest_mismatch]"),
        "{}",
        stderr(&o)
    );
    assert_cache_clean(&s);
    let o = s.run(&["exec", "-n", "--image", &reference, "--", "true"]);
    assert!(
        stderr(&o).contains("[image_digest_mismatch]"),
        "{}",
        stderr(&o)
    );
    assert_cache_clean(&s);

    // A manifest whose bytes do not hash to the pinned digest.
    let reference = reg.push_image("test/tampered2", &[top_layer()]);
    let md = reference.rsplit_once('@').unwrap().1;
    let mblob = reg.blob_file(md);
    let mut m = std::fs::read(&mblob).unwrap();
    m.push(b' ');
    std::fs::write(&mblob, m).unwrap();
    let o = s.run(&["image", "pull", &reference]);
    assert!(
        stderr(&o).contains("[image_digest_mismatch]"),
        "{}",
        stderr(&o)
    );
    assert_cache_clean(&s);
    // Unknown digest: not found.
    let missing = format!("{}/test/tampered@sha256:{}", reg.host(), "0".repeat(64));
    let o = s.run(&["image", "pull", &missing]);
    assert!(stderr(&o).contains("[image_not_found]"), "{}", stderr(&o));
}

both_runtimes!(
    malicious_layers_are_rejected_or_neutralised,
    malicious_layers_are_rejected_or_neutralised_on
);
fn malicious_layers_are_rejected_or_neutralised_on(rt: Runtime) {
    let reg = Registry::start();
    let s = server_for(&reg);
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "untouched").unwrap();

    // Path traversal, an absolute path, a write through a symlinked parent: refused.
    let abs = format!("{}/abs", outside.path().display());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "dotdot",
            Layer::new()
                .file("../../../../../../tmp/cleanroom-escape-marker", b"x", 0o644)
                .gz(),
        ),
        ("absolute", Layer::new().file(&abs, b"x", 0o644).gz()),
        (
            "symlink-parent",
            Layer::new()
                .special(
                    "evil",
                    tar::EntryType::Symlink,
                    &outside.path().display().to_string(),
                )
                .file("evil/victim", b"pwned", 0o644)
                .gz(),
        ),
    ];
    for (name, layer) in cases {
        let reference = reg.push_image(&format!("test/{name}"), &[layer]);
        let o = s.run(&["image", "pull", &reference]);
        assert_eq!(o.status.code(), Some(125), "{name}");
        assert!(
            stderr(&o).contains("[image_layer_unsafe]"),
            "{name}: {}",
            stderr(&o)
        );
        assert_cache_clean(&s);
    }
    assert!(!Path::new("/tmp/cleanroom-escape-marker").exists());
    assert!(!outside.path().join("abs").exists());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");

    // Devices, FIFOs and setuid bits are neutralised; links over links never followed.
    let layer = Layer::new()
        .dir("dev")
        .special("dev/sda", tar::EntryType::Block, "")
        .special("fifo", tar::EntryType::Fifo, "")
        .file("bin/suid", b"#!/bin/sh\n", 0o4755)
        .special(
            "link",
            tar::EntryType::Symlink,
            &victim.display().to_string(),
        )
        .file("link", b"replaced the link, not the target", 0o644)
        .gz();
    let reference = reg.push_image("test/neutral", &[base_layer(), layer]);
    let o = s.run(&["image", "pull", &reference]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let digest = reference.rsplit_once('@').unwrap().1;
    let rootfs = cache_root(&s)
        .join("sha256")
        .join(digest.trim_start_matches("sha256:"))
        .join("rootfs");
    assert!(!rootfs.join("dev/sda").exists() && !rootfs.join("fifo").exists());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(rootfs.join("bin/suid"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    let o = s.run(&rt.args(
        1,
        &[
            "exec", "-n", "--image", &reference, "--", "/bin/cat", "/link",
        ],
    ));
    assert_eq!(
        stdout(&o),
        "replaced the link, not the target",
        "{}",
        stderr(&o)
    );
}

both_runtimes!(
    index_policy_ref_and_concurrent_pulls,
    index_policy_ref_and_concurrent_pulls_on
);
fn index_policy_ref_and_concurrent_pulls_on(rt: Runtime) {
    let reg = Registry::start();
    let (_, amd, amd_size) = reg.push_image_with("test/multi", &[base_layer()], "amd64", None);
    let arm_layer = Layer::new()
        .file("etc/os-release", b"ID=wrong-arch\n", 0o644)
        .gz();
    let (_, arm, arm_size) = reg.push_image_with("test/multi", &[arm_layer], "arm64", None);
    let index = reg.push_index(
        "test/multi",
        &[(arm, arm_size, "arm64"), (amd.clone(), amd_size, "amd64")],
    );
    let s = server_for(&reg);

    // Two pulls of the same digest at once: both succeed, one cache entry.
    let spawn = || {
        let mut c = s.cli();
        c.args(["image", "pull", &index]);
        std::thread::spawn(move || output_with_timeout(c, Duration::from_secs(120)))
    };
    let (p1, p2) = (spawn(), spawn());
    for o in [p1.join().unwrap(), p2.join().unwrap()] {
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert_eq!(cached_digests(&s).len(), 1);
    let ls = stdout(&s.run(&["image", "ls", "--json"]));
    assert!(
        ls.contains(&amd),
        "the index resolved to the amd64 manifest: {ls}"
    );

    // The policy's sandbox.image.ref roots the sandbox when no --image is given.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("cleanroom.yaml");
    std::fs::write(
        &p,
        format!("version: 1\nsandbox:\n  image:\n    ref: {index}\n"),
    )
    .unwrap();
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--print-sandbox-id",
            "--policy",
            p.to_str().unwrap(),
            "--",
            "/bin/cat",
            "/etc/os-release",
        ],
    ));
    assert_eq!(stdout(&o), "ID=cleanroom-test-image\n", "{}", stderr(&o));
    let id = stderr(&o).lines().next().unwrap_or_default().to_string();
    assert_no_leftovers(&s.state_dir(), &id);
    let i = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(i.contains(&index), "{i}");
}

both_runtimes!(
    image_rooted_sandboxes_trust_their_sandbox_ca,
    image_rooted_sandboxes_trust_their_sandbox_ca_on
);
/// An image-rooted sandbox with a secret trusts its sandbox CA too: appended to the image's
/// own CA bundle (bound over it in the sandbox's copy-on-write view, the cached image
/// untouched) and named by SSL_CERT_FILE; the secret is a placeholder.
fn image_rooted_sandboxes_trust_their_sandbox_ca_on(rt: Runtime) {
    let reg = Registry::start();
    let bundle_layer = Layer::new()
        .dir("etc/ssl")
        .dir("etc/ssl/certs")
        .file(
            "etc/ssl/certs/ca-certificates.crt",
            b"# IMAGE-BUNDLE\n",
            0o644,
        )
        .gz();
    let reference = reg.push_image("test/with-ca", &[base_layer(), bundle_layer]);
    let d = tempfile::tempdir().unwrap();
    let secrets = write(&d, "secrets", "TOKEN=image-test-secret-value\n");
    std::fs::set_permissions(
        &secrets,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let s = Server::start_with(&[
        "--insecure-registry",
        &reg.host(),
        "--secrets-file",
        &secrets,
    ]);
    let policy = write(
        &d,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  image:\n    ref: {reference}\n  network:\n    allow:\n      - host: api.test\n  secrets:\n    TOKEN:\n      hosts: [api.test]\n"
        ),
    );
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--policy",
            &policy,
            "--",
            "/bin/sh",
            "-c",
            "cat /etc/ssl/certs/ca-certificates.crt | grep -c -e IMAGE-BUNDLE -e 'BEGIN CERTIFICATE'; \
             echo \"$SSL_CERT_FILE\"; grep -c 'BEGIN CERTIFICATE' /run/cleanroom/sandbox-ca.crt; \
             echo \"$TOKEN\" | grep -c '^cleanroom-secret-TOKEN-'",
        ],
    ));
    assert_eq!(
        stdout(&o),
        "2\n/run/cleanroom/ca-bundle.crt\n1\n1\n",
        "{}",
        stderr(&o)
    );
    // The cached image's bundle is as pushed.
    let cached = files_named(&cache_root(&s), "ca-certificates.crt");
    assert!(!cached.is_empty());
    for f in cached {
        assert_eq!(
            std::fs::read_to_string(&f).unwrap(),
            "# IMAGE-BUNDLE\n",
            "{f:?}"
        );
    }
}

fn files_named(dir: &std::path::Path, name: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => out.extend(files_named(&p, name)),
            Ok(t) if t.is_file() && e.file_name() == name => out.push(p),
            _ => {}
        }
    }
    out
}

both_runtimes!(
    image_cache_is_shared_by_digest_but_each_principal_sees_its_own,
    image_cache_is_shared_on
);
fn image_cache_is_shared_on(rt: Runtime) {
    let reg = Registry::start();
    let reference = reg.push_image("test/owned", &[base_layer()]);
    let digest = reference.rsplit_once('@').unwrap().1.to_string();
    let s = server_for(&reg);
    open_socket_to_all(&s);
    let ok = |o: &std::process::Output| assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let refused = |o: &std::process::Output, code: &str| {
        assert_eq!(o.status.code(), Some(125), "{}", stderr(o));
        assert!(stderr(o).contains(&format!("[{code}]")), "{}", stderr(o));
    };
    ok(&as_uid(&s, 65534, &["image", "pull", &reference]));
    // Another user neither sees nor removes it; the admin (root) sees it.
    assert!(!stdout(&as_uid(&s, 65533, &["image", "ls"])).contains(&digest));
    refused(
        &as_uid(&s, 65533, &["image", "rm", &digest]),
        "image_not_found",
    );
    assert!(stdout(&s.run(&["image", "ls"])).contains(&digest));
    assert_eq!(cached_digests(&s).len(), 1);
    // Pulling the same digest shares the cached copy.
    ok(&as_uid(&s, 65533, &["image", "pull", &reference]));
    assert!(stdout(&as_uid(&s, 65533, &["image", "ls"])).contains(&digest));
    // Removing drops only the caller's claim while someone else holds the image.
    ok(&as_uid(&s, 65534, &["image", "rm", &digest]));
    assert!(!stdout(&as_uid(&s, 65534, &["image", "ls"])).contains(&digest));
    assert!(stdout(&as_uid(&s, 65533, &["image", "ls"])).contains(&digest));
    assert_eq!(cached_digests(&s).len(), 1);
    // Rooting a sandbox on the image claims it too: the other holder's rm leaves it cached
    // and does not name that sandbox.
    let o = as_uid(
        &s,
        65534,
        &rt.args(2, &["sandbox", "create", "--image", &reference]),
    );
    let other = stdout(&o).trim().to_string();
    assert!(other.starts_with("sbx_"), "{}", stderr(&o));
    let o = as_uid(&s, 65533, &["image", "rm", &digest]);
    ok(&o);
    assert!(!stderr(&o).contains(&other) && !stdout(&o).contains(&other));
    assert_eq!(
        cached_digests(&s).len(),
        1,
        "still held by another principal"
    );
    // The last holder's rm removes the cached files once nothing uses them.
    ok(&as_uid(&s, 65534, &["sandbox", "rm", &other]));
    ok(&as_uid(&s, 65534, &["image", "rm", &digest]));
    assert_cache_clean(&s);
}
