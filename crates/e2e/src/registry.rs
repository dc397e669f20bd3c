//! OCI images for tests: a real registry (Debian's `docker-registry`) on loopback, images
//! pushed to it over the distribution API, and a busybox layer to run. Layers come from
//! the shared builder (`cleanroom-layer-fixture`), so hostile names and link targets reach
//! the server as written. Also reachable as `cleanroom_e2e::oci`.

use crate::eventually;
pub use cleanroom_layer_fixture::{sha256, Layer};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
pub const BUSYBOX: &str = "/bin/busybox";
const OCI_ACCEPT: &str =
    "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";

/// A registry on 127.0.0.1:<free port> with filesystem storage (deletes enabled) in a
/// temp dir; killed, and its storage removed, on drop.
pub struct Registry {
    child: Child,
    pub port: u16,
    storage: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
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

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One plain HTTP/1.1 request; returns (status, headers+body as text).
    pub fn request(&self, method: &str, path: &str, ctype: &str, body: &[u8]) -> (u16, String) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.host(),
            body.len()
        );
        if !ctype.is_empty() {
            head += &format!("Content-Type: {ctype}\r\n");
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
    pub fn push_blob(&self, repo: &str, data: &[u8]) -> String {
        let digest = sha256(data);
        let (status, text) = self.request("POST", &format!("/v2/{repo}/blobs/uploads/"), "", &[]);
        assert_eq!(status, 202, "blob upload start: {text}");
        let location = text
            .lines()
            .find_map(|l| l.strip_prefix("Location: "))
            .expect("upload location")
            .trim();
        let path = &location[location.find("/v2/").expect("upload path")..];
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

    /// Push config + gzip layers + manifest (linux/amd64); returns the pinned reference.
    pub fn push_image(&self, repo: &str, layers: &[Vec<u8>]) -> String {
        self.push_image_with(repo, layers, "amd64", None).0
    }

    /// Push an image for `arch`; `declared` overrides the layer sizes the manifest states
    /// (a lying manifest). Returns (reference, manifest digest, manifest size).
    pub fn push_image_with(
        &self,
        repo: &str,
        layers: &[Vec<u8>],
        arch: &str,
        declared: Option<u64>,
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
                "digest": d, "size": declared.unwrap_or(l.len() as u64)
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

    /// Push an OCI index over `(manifest digest, size, arch)` entries; returns its reference.
    pub fn push_index(&self, repo: &str, entries: &[(String, usize, &str)]) -> String {
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

    /// Point tag `tag` of `repo` at the manifest (or index) `digest` already pushed: its
    /// exact bytes are fetched and PUT again under the tag, as `docker tag && push` does.
    /// Returns the digest the registry now reports for the tag (`Docker-Content-Digest`).
    pub fn tag(&self, repo: &str, digest: &str, tag: &str) -> String {
        let (ctype, body) = self.get_manifest(repo, digest);
        let (status, text) =
            self.request("PUT", &format!("/v2/{repo}/manifests/{tag}"), &ctype, &body);
        assert_eq!(status, 201, "tag push: {text}");
        let (status, text) =
            self.request_accept("HEAD", &format!("/v2/{repo}/manifests/{tag}"), OCI_ACCEPT);
        assert_eq!(status, 200, "tag head: {text}");
        text.lines()
            .find_map(|l| l.strip_prefix("Docker-Content-Digest: "))
            .expect("Docker-Content-Digest")
            .trim()
            .to_string()
    }

    /// A manifest's media type and exact bytes.
    fn get_manifest(&self, repo: &str, reference: &str) -> (String, Vec<u8>) {
        let (status, text) = self.request_accept(
            "GET",
            &format!("/v2/{repo}/manifests/{reference}"),
            OCI_ACCEPT,
        );
        assert_eq!(status, 200, "manifest get: {text}");
        let (head, body) = text.split_once("\r\n\r\n").expect("http response");
        let ctype = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Type: "))
            .expect("Content-Type")
            .trim()
            .to_string();
        (ctype, body.as_bytes().to_vec())
    }

    /// A body-less request with an `Accept` header.
    fn request_accept(&self, method: &str, path: &str, accept: &str) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("registry");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: {accept}\r\n\r\n",
            self.host()
        );
        s.write_all(head.as_bytes()).unwrap();
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

    /// Path of a blob's bytes in the registry's filesystem storage (to tamper with it).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
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

/// A layer with a static busybox at /bin/busybox and the applets tests use.
pub fn busybox_layer() -> Vec<u8> {
    let busybox = std::fs::read(BUSYBOX).expect("busybox-static (scripts/deps.sh)");
    let mut l = Layer::default()
        .dir("bin")
        .file("bin/busybox", &busybox, 0o755);
    for a in [
        "sh", "cat", "echo", "ls", "touch", "rm", "mkdir", "test", "grep", "ln", "readlink",
        "stat", "head", "mkfifo", "wc",
    ] {
        l = l.symlink(&format!("bin/{a}"), "busybox");
    }
    l.gz()
}
