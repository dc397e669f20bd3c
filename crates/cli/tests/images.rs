//! OCI images end to end: a real registry (Debian's `docker-registry`) on loopback, images
//! the test builds itself (a static busybox plus files, as gzip tar layers) and pushes
//! over the distribution API, and the real server pulling, verifying and running them.

mod common;
use common::*;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
const BUSYBOX: &str = "/bin/busybox";
const APPLETS: &[&str] = &[
    "sh", "cat", "echo", "ls", "touch", "rm", "mkdir", "test", "stat", "id", "wc", "grep",
];

fn sha256(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// A registry process on 127.0.0.1:<free port> with filesystem storage in a temp dir;
/// killed (and its storage removed) on drop.
struct Registry {
    child: Child,
    port: u16,
    storage: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let tmp = tempfile::Builder::new()
            .prefix("cleanroom-registry-")
            .tempdir()
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let storage = tmp.path().join("storage");
        let config = tmp.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
                storage.display()
            ),
        )
        .unwrap();
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docker-registry (scripts/deps.sh installs it)");
        let r = Registry {
            child,
            port,
            storage,
            _tmp: tmp,
        };
        assert!(
            eventually(Duration::from_secs(20), || r
                .request("GET", "/v2/", "", &[])
                .0
                == 200),
            "registry did not start"
        );
        r
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One plain HTTP/1.1 request; returns (status, headers+body as text).
    fn request(&self, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.host(),
            body.len()
        );
        if !content_type.is_empty() {
            head += &format!("Content-Type: {content_type}\r\n");
        }
        head += "\r\n";
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut resp = Vec::new();
        let _ = s.read_to_end(&mut resp);
        let text = String::from_utf8_lossy(&resp).into_owned();
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, text)
    }

    /// Blob upload: POST opens a session, one PUT with ?digest= completes it.
    fn push_blob(&self, repo: &str, data: &[u8]) -> String {
        let digest = sha256(data);
        let (status, text) = self.request("POST", &format!("/v2/{repo}/blobs/uploads/"), "", &[]);
        assert_eq!(status, 202, "blob upload start: {text}");
        let location = text
            .lines()
            .find_map(|l| l.strip_prefix("Location: "))
            .expect("upload location")
            .trim();
        let path = location
            .find("/v2/")
            .map(|i| &location[i..])
            .expect("upload path");
        let sep = if path.contains('?') { '&' } else { '?' };
        let (status, text) = self.request(
            "PUT",
            &format!("{path}{sep}digest={digest}"),
            "application/octet-stream",
            data,
        );
        assert_eq!(status, 201, "blob upload: {text}");
        digest
    }

    /// Push config + layers + manifest; returns the pinned reference.
    fn push_image(&self, repo: &str, layers: &[Vec<u8>]) -> String {
        self.push_image_sized(repo, layers, "amd64").0
    }

    /// Push an OCI index over `(manifest digest, size, arch)` entries; returns its reference.
    fn push_index(&self, repo: &str, entries: &[(String, usize, &str)]) -> String {
        let manifests: Vec<_> = entries
            .iter()
            .map(|(d, size, arch)| {
                serde_json::json!({
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": d, "size": size,
                    "platform": {"architecture": arch, "os": "linux"}
                })
            })
            .collect();
        let index = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": manifests
        }))
        .unwrap();
        let d = sha256(&index);
        let (status, text) = self.request(
            "PUT",
            &format!("/v2/{repo}/manifests/{d}"),
            "application/vnd.oci.image.index.v1+json",
            &index,
        );
        assert_eq!(status, 201, "index push: {text}");
        format!("{}/{repo}@{d}", self.host())
    }

    /// Push an image for `arch`; returns (reference, manifest digest, manifest size).
    fn push_image_sized(
        &self,
        repo: &str,
        layers: &[Vec<u8>],
        arch: &str,
    ) -> (String, String, usize) {
        let mut descs = Vec::new();
        let mut diff_ids = Vec::new();
        for l in layers {
            let d = self.push_blob(repo, l);
            let mut raw = Vec::new();
            flate2::read::GzDecoder::new(&l[..])
                .read_to_end(&mut raw)
                .unwrap();
            diff_ids.push(sha256(&raw));
            descs.push(serde_json::json!({
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": d, "size": l.len()
            }));
        }
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": arch, "os": "linux",
            "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": diff_ids}
        }))
        .unwrap();
        let cd = self.push_blob(repo, &config);
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": config.len()},
            "layers": descs
        }))
        .unwrap();
        let md = sha256(&manifest);
        let (status, text) = self.request(
            "PUT",
            &format!("/v2/{repo}/manifests/{md}"),
            "application/vnd.oci.image.manifest.v1+json",
            &manifest,
        );
        assert_eq!(status, 201, "manifest push: {text}");
        (format!("{}/{repo}@{md}", self.host()), md, manifest.len())
    }

    /// Path of a blob's bytes in the registry's filesystem storage.
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Layer builder: gzip tar written by the test itself.
struct Layer(tar::Builder<Vec<u8>>);

impl Layer {
    fn new() -> Layer {
        Layer(tar::Builder::new(Vec::new()))
    }
    fn header(path: &str, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(mode);
        h.set_size(size);
        h.set_uid(0);
        h.set_gid(0);
        // Raw name bytes: hostile paths ('..', absolute) must reach the server unchanged.
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h
    }
    fn dir(mut self, path: &str) -> Layer {
        let mut h = Self::header(path, tar::EntryType::Directory, 0o755, 0);
        h.set_cksum();
        self.0.append(&h, &[][..]).unwrap();
        self
    }
    fn file(mut self, path: &str, body: &[u8], mode: u32) -> Layer {
        let mut h = Self::header(path, tar::EntryType::Regular, mode, body.len() as u64);
        h.set_cksum();
        self.0.append(&h, body).unwrap();
        self
    }
    fn special(mut self, path: &str, kind: tar::EntryType, link: &str) -> Layer {
        let mut h = Self::header(path, kind, 0o777, 0);
        h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
        h.set_cksum();
        self.0.append(&h, &[][..]).unwrap();
        self
    }
    fn gz(self) -> Vec<u8> {
        let data = self.0.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        gz.finish().unwrap()
    }
}

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

#[test]
fn pull_run_copy_on_write_inspect_and_remove() {
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
    let o = s.run(&[
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
    ]);
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
    let a = stdout(&s.run(&["sandbox", "create", "--image", &reference]))
        .trim()
        .to_string();
    assert!(a.starts_with("sbx_"), "{}", s.log());
    let b = stdout(&s.run(&["sandbox", "create", "--image", &reference]))
        .trim()
        .to_string();
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
        let o = s.run(&["image", "pull", r]);
        assert!(
            stderr(&o).contains("[policy_invalid]"),
            "{r}: {}",
            stderr(&o)
        );
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

#[test]
fn malicious_layers_are_rejected_or_neutralised() {
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
    let o = s.run(&[
        "exec", "-n", "--image", &reference, "--", "/bin/cat", "/link",
    ]);
    assert_eq!(
        stdout(&o),
        "replaced the link, not the target",
        "{}",
        stderr(&o)
    );
}

#[test]
fn index_policy_ref_and_concurrent_pulls() {
    let reg = Registry::start();
    let (_, amd, amd_size) = reg.push_image_sized("test/multi", &[base_layer()], "amd64");
    let arm_layer = Layer::new()
        .file("etc/os-release", b"ID=wrong-arch\n", 0o644)
        .gz();
    let (_, arm, arm_size) = reg.push_image_sized("test/multi", &[arm_layer], "arm64");
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
    let o = s.run(&[
        "exec",
        "-n",
        "--print-sandbox-id",
        "--policy",
        p.to_str().unwrap(),
        "--",
        "/bin/cat",
        "/etc/os-release",
    ]);
    assert_eq!(stdout(&o), "ID=cleanroom-test-image\n", "{}", stderr(&o));
    let id = stderr(&o).lines().next().unwrap_or_default().to_string();
    assert_no_leftovers(&s.state_dir(), &id);
    let i = stdout(&s.run(&["sandbox", "inspect", &id]));
    assert!(i.contains(&index), "{i}");
}

/// An image-rooted sandbox with a secret trusts its sandbox CA too: appended to the image's
/// own CA bundle (bound over it in the sandbox's copy-on-write view, the cached image
/// untouched) and named by SSL_CERT_FILE; the secret is a placeholder.
#[test]
fn image_rooted_sandboxes_trust_their_sandbox_ca() {
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
    let o = s.run(&[
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
    ]);
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

#[test]
fn image_cache_is_shared_by_digest_but_each_principal_sees_its_own() {
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
    let o = as_uid(&s, 65534, &["sandbox", "create", "--image", &reference]);
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
