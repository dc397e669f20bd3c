//! Test harness: a real `cleanroom serve` on a temporary unix socket with its own state
//! directory, and helpers to run the real CLI against it.
#![allow(dead_code)]

pub mod pools;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_cleanroom");

pub struct Server {
    pub child: Option<Child>,
    pub dir: PathBuf,
    /// Extra `serve` arguments (e.g. `--insecure-registry`).
    pub args: Vec<String>,
    /// The binary the server runs ([`BIN`] unless a test starts another copy).
    pub exe: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Server {
    /// Start a fresh server in a new temp dir.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Start a fresh server with extra `serve` arguments.
    pub fn start_with(args: &[&str]) -> Server {
        Server::start_exe(Path::new(BIN), args)
    }

    /// A fresh server running `exe` (a copy of [`BIN`], say) instead of [`BIN`].
    pub fn start_exe(exe: &Path, args: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("cleanroom-test-")
            .tempdir()
            .expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let mut s = Server {
            child: None,
            dir,
            args: args.iter().map(|a| a.to_string()).collect(),
            exe: exe.to_path_buf(),
            _tmp: Some(tmp),
        };
        s.spawn();
        s
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("s.sock")
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    pub fn host(&self) -> String {
        format!("unix://{}", self.socket().display())
    }

    /// (Re)start the server process on the same socket and state dir.
    pub fn spawn(&mut self) {
        self.spawn_with(|_| {})
    }

    /// [`Server::spawn`] with a last say over the command (e.g. an fd to inherit).
    pub fn spawn_with(&mut self, adjust: impl FnOnce(&mut Command)) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("server log");
        let mut cmd = Command::new(&self.exe);
        cmd.args(["serve", "--listen", &self.host(), "--state-dir"])
            .arg(self.state_dir())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log);
        adjust(&mut cmd);
        let child = cmd.spawn().expect("spawn server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::os::unix::net::UnixStream::connect(self.socket()).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server did not start: {}", self.log());
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// SIGKILL the server (crash simulation).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait (graceful stop).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c);
        }
    }

    /// A CLI command already pointed at this server.
    pub fn cli(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("CLEANROOM_HOST", self.host()).stdin(Stdio::null());
        c
    }

    /// Run the CLI to completion (bounded) and return its output.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut c = self.cli();
        c.args(args);
        output_with_timeout(c, Duration::from_secs(120))
    }

    /// Run `cleanroom exec -n -- sh -c SCRIPT`.
    pub fn sh(&self, script: &str) -> Output {
        self.run(&["exec", "-n", "--", "sh", "-c", script])
    }

    /// Run `cleanroom exec -n --in SANDBOX -- sh -c SCRIPT`.
    pub fn sh_in(&self, sandbox_id: &str, script: &str) -> Output {
        self.run(&["exec", "-n", "--in", sandbox_id, "--", "sh", "-c", script])
    }

    /// `cleanroom sandbox create`, returning the new id.
    pub fn create(&self) -> String {
        let o = self.run(&["sandbox", "create"]);
        let id = stdout(&o).trim().to_string();
        assert!(
            id.starts_with("sbx_"),
            "sandbox create failed: {}",
            stderr(&o)
        );
        id
    }

    /// A typed API client (tokio context required).
    pub async fn client(&self) -> cleanroom_client::Client {
        let ep = cleanroom_client::endpoint::Endpoint::Unix(self.socket());
        cleanroom_client::Client::connect(&ep)
            .await
            .expect("connect")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run a command, killing it if it exceeds `limit` (tests never hang forever).
pub fn output_with_timeout(mut c: Command, limit: Duration) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().expect("spawn");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // SAFETY: kill(2) takes integers only; the pid is our own child, not yet reaped
            // (the waiting thread has not returned).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("command timed out after {limit:?}");
        }
    }
}

/// Write a file (e.g. a policy) into `dir` and return its path.
pub fn write(dir: &tempfile::TempDir, name: &str, content: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    p.display().to_string()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Host processes whose command line or cgroup mentions `needle` (e.g. a sandbox id: every
/// process of a sandbox, its shim included, is charged to cgroups named after it).
/// The parent pid of `pid` (field 4 of `/proc/PID/stat`, after the command name), or
/// `None` once it is gone.
pub fn ppid_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let mentions = ["cmdline", "cgroup"].iter().any(|f| {
            std::fs::read(format!("/proc/{pid}/{f}"))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        });
        if mentions {
            found.push(pid);
        }
    }
    found
}

/// Lines of the host mount table mentioning `needle`.
pub fn mounts_mentioning(needle: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// What a server's named volumes may leave on the host (docs/volumes.md): mounts under
/// its state dir's `volumes/` and loop devices backed by a file there. Empty once the
/// server removed or unmounted them.
pub fn volume_leftovers(server_state: &Path) -> Vec<String> {
    let dir = server_state.join("volumes").display().to_string();
    let mut out = mounts_mentioning(&dir);
    for dev in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let backing = dev.path().join("loop/backing_file");
        if let Ok(f) = std::fs::read_to_string(&backing) {
            if f.trim().starts_with(&dir) {
                out.push(format!(
                    "{}: {}",
                    dev.file_name().to_string_lossy(),
                    f.trim()
                ));
            }
        }
    }
    out
}

/// `sandbox inspect --json ID` (which must succeed).
pub fn inspect(s: &Server, id: &str) -> serde_json::Value {
    let o = s.run(&["sandbox", "inspect", "--json", id]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("inspect json")
}

/// Wait (bounded) until the sandbox stopped; its inspect JSON.
pub fn stopped(s: &Server, id: &str) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    let ok = eventually(Duration::from_secs(60), || {
        last = inspect(s, id);
        last["status"] == "SANDBOX_STATUS_STOPPED"
    });
    assert!(ok, "sandbox did not stop: {last}");
    last
}

/// Wait until `f` is true or the limit passes.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// cgroup directories named after `needle` anywhere under /sys/fs/cgroup (bounded depth).
pub fn cgroups_named(needle: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, needle: &str, depth: u32, out: &mut Vec<PathBuf>) {
        if depth == 0 {
            return;
        }
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                if e.file_name().to_string_lossy() == needle {
                    out.push(p.clone());
                }
                walk(&p, needle, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), needle, 6, &mut out);
    out
}

/// Assert a sandbox left nothing on the host: no process, mount, cgroup or directory.
/// `cleanroom exec` returns while its sandbox's teardown finishes in the server
/// (`TerminateSandbox{background}`), so each check allows that teardown some time.
pub fn assert_no_leftovers(server_state: &Path, sandbox_id: &str) {
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(sandbox_id)
            .is_empty()),
        "processes of {sandbox_id} still alive: {:?}",
        processes_mentioning(sandbox_id)
    );
    assert!(
        eventually(Duration::from_secs(10), || mounts_mentioning(sandbox_id)
            .is_empty()),
        "mounts left: {:?}",
        mounts_mentioning(sandbox_id)
    );
    let dir = server_state.join("sandboxes").join(sandbox_id);
    assert!(
        eventually(Duration::from_secs(10), || !dir.exists()),
        "sandbox dir left behind: {}",
        dir.display()
    );
    // A root server keeps mountpoints under /run/cleanroom/<instance>/<sandbox>.
    for inst in std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
    {
        let d = inst.path().join(sandbox_id);
        assert!(
            eventually(Duration::from_secs(10), || !d.exists()),
            "sandbox runtime dir left behind: {}",
            d.display()
        );
    }
    // After a crash, zombies wait for the host's init to reap them, and a cgroup cannot be
    // removed before that; the server keeps retrying, so allow it some time.
    assert!(
        eventually(Duration::from_secs(30), || cgroups_named(sandbox_id)
            .is_empty()),
        "cgroups left: {:?}",
        cgroups_named(sandbox_id)
    );
}

/// OCI images for tests: a real registry (Debian's `docker-registry`) on loopback and gzip
/// tar layers built byte by byte (hostile names and link targets reach the server as
/// written). Same shape as the helpers in `images.rs`, shared by newer suites.
pub mod oci {
    use super::eventually;
    use sha2::{Digest, Sha256};
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    pub const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
    pub const BUSYBOX: &str = "/bin/busybox";
    const OCI_ACCEPT: &str =
        "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json";

    pub fn sha256(data: &[u8]) -> String {
        let d = Sha256::digest(data);
        format!(
            "sha256:{}",
            d.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    }

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
            let (status, text) =
                self.request("POST", &format!("/v2/{repo}/blobs/uploads/"), "", &[]);
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

    /// Layer builder: a gzip tar written entry by entry.
    pub struct Layer(tar::Builder<Vec<u8>>);

    impl Default for Layer {
        fn default() -> Self {
            Layer(tar::Builder::new(Vec::new()))
        }
    }

    impl Layer {
        pub fn new() -> Layer {
            Layer::default()
        }
        fn header(path: &str, kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(kind);
            h.set_mode(mode);
            h.set_size(size);
            h.set_uid(0);
            h.set_gid(0);
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            h
        }
        pub fn dir(mut self, path: &str) -> Layer {
            let mut h = Self::header(path, tar::EntryType::Directory, 0o755, 0);
            h.set_cksum();
            self.0.append(&h, &[][..]).unwrap();
            self
        }
        pub fn file(mut self, path: &str, body: &[u8], mode: u32) -> Layer {
            let mut h = Self::header(path, tar::EntryType::Regular, mode, body.len() as u64);
            h.set_cksum();
            self.0.append(&h, body).unwrap();
            self
        }
        /// A regular file owned by `uid:uid` (ids as the sandbox sees them).
        pub fn owned_file(mut self, path: &str, body: &[u8], mode: u32, uid: u64) -> Layer {
            let mut h = Self::header(path, tar::EntryType::Regular, mode, body.len() as u64);
            h.set_uid(uid);
            h.set_gid(uid);
            h.set_cksum();
            self.0.append(&h, body).unwrap();
            self
        }
        pub fn symlink(self, path: &str, target: &str) -> Layer {
            self.special(path, tar::EntryType::Symlink, target)
        }
        /// An entry of any `kind` (links, devices, FIFOs) with raw name and link bytes.
        pub fn special(mut self, path: &str, kind: tar::EntryType, link: &str) -> Layer {
            let mut h = Self::header(path, kind, 0o777, 0);
            h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            h.set_cksum();
            self.0.append(&h, &[][..]).unwrap();
            self
        }
        pub fn gz(self) -> Vec<u8> {
            let data = self.0.into_inner().unwrap();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&data).unwrap();
            gz.finish().unwrap()
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
}

impl Server {
    /// Start a fresh server whose host resolver sees `hosts` (lines of `IP NAME…`) as
    /// `/etc/hosts`: the server runs in a private mount namespace with that file
    /// bind-mounted over `/etc/hosts`, so its ordinary resolver returns real answers the
    /// test chose, without the internet and without any seam in the server. The process
    /// is the server itself (`unshare` and `sh` exec into it), so signals reach it.
    pub fn start_with_hosts(hosts: &str, args: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("cleanroom-test-")
            .tempdir()
            .expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let hosts_file = dir.join("hosts");
        std::fs::write(
            &hosts_file,
            format!("127.0.0.1 localhost\n::1 localhost\n{hosts}\n"),
        )
        .expect("hosts file");
        let mut s = Server {
            child: None,
            dir,
            args: args.iter().map(|a| a.to_string()).collect(),
            exe: PathBuf::from(BIN),
            _tmp: Some(tmp),
        };
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(s.dir.join("server.log"))
            .expect("server log");
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg(r#"mount --bind "$0" /etc/hosts && exec "$@""#)
            .arg(&hosts_file)
            .arg(BIN)
            .args(["serve", "--listen", &s.host(), "--state-dir"])
            .arg(s.state_dir())
            .args(&s.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn server");
        s.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::os::unix::net::UnixStream::connect(s.socket()).is_ok() {
                return s;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server did not start: {}", s.log());
    }
}

/// A `cleanroom serve` on TCP (`http://` or `https://`, port chosen by the kernel) with
/// its own state dir; the address is parsed from the server's "listening on" line.
pub struct TcpServer {
    pub child: Option<Child>,
    /// `host:port` actually bound.
    pub addr: String,
    pub scheme: &'static str,
    pub dir: tempfile::TempDir,
}

impl TcpServer {
    /// Start on `scheme://127.0.0.1:0` with extra `serve` arguments; panics (with the
    /// server's log) if it does not come up.
    pub fn start(scheme: &'static str, args: &[&str]) -> TcpServer {
        let dir = tempfile::Builder::new()
            .prefix("cleanroom-tcp-")
            .tempdir()
            .expect("tempdir");
        let log_path = dir.path().join("server.log");
        let log = std::fs::File::create(&log_path).expect("log");
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--listen")
            .arg(format!("{scheme}://127.0.0.1:0"))
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn server");
        let prefix = format!("cleanroom: listening on {scheme}://");
        let mut addr = String::new();
        let up = eventually(Duration::from_secs(30), || {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            match text.lines().find_map(|l| l.strip_prefix(prefix.as_str())) {
                Some(a) => {
                    addr = a.trim().to_string();
                    true
                }
                None => false,
            }
        });
        let s = TcpServer {
            child: Some(child),
            addr,
            scheme,
            dir,
        };
        assert!(up, "server did not start: {}", s.log());
        // Listening is printed before recovery ends; wait until requests are served.
        assert!(
            eventually(Duration::from_secs(30), || std::net::TcpStream::connect(
                &s.addr
            )
            .is_ok()),
            "server not reachable: {}",
            s.log()
        );
        s
    }

    pub fn host(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// A CLI command pointed at this server, with `token` when given (and no ambient one).
    pub fn cli(&self, token: Option<&str>) -> Command {
        let mut c = Command::new(BIN);
        c.env("CLEANROOM_HOST", self.host())
            .env_remove("CLEANROOM_TOKEN")
            .env("XDG_CONFIG_HOME", self.dir.path().join("no-config"))
            .stdin(Stdio::null());
        if let Some(t) = token {
            c.env("CLEANROOM_TOKEN", t);
        }
        c
    }

    /// Run the CLI with `token` to completion (bounded).
    pub fn run(&self, token: Option<&str>, args: &[&str]) -> Output {
        let mut c = self.cli(token);
        c.args(args);
        output_with_timeout(c, Duration::from_secs(120))
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            stop_child(&mut c);
        }
    }
}

/// SIGTERM, up to 20 s for a clean exit, then SIGKILL; always reaped.
pub fn stop_child(c: &mut Child) {
    // SAFETY: kill(2) takes integers only; the pid is our own unreaped child.
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// A child process (a server a test started by hand) stopped by [`stop_child`] when the
/// guard drops, so a failing assertion never leaves it running.
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        stop_child(&mut self.0);
    }
}

/// Hex sha256 of a token, as the tokens file stores it.
pub fn token_hash(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Write a tokens file (mode 600) of `(token, principal, role)` into `dir`.
pub fn write_tokens(dir: &Path, entries: &[(&str, &str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let text: String = entries
        .iter()
        .map(|(t, p, r)| format!("sha256:{} {p} {r}\n", token_hash(t)))
        .collect();
    let path = dir.join("tokens");
    std::fs::write(&path, text).expect("tokens file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// A CA plus a server certificate for 127.0.0.1/localhost and a client certificate for
/// `client_cn`, as PEM files in `dir`: (ca.pem, server.pem, server.key, client.pem,
/// client.key).
pub fn write_test_pki(dir: &Path, client_cn: &str) -> [PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "cleanroom test CA");
    let ca_cert = ca.self_signed(&ca_key).expect("ca");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let srv_key = KeyPair::generate().expect("key");
    let mut srv = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    srv.subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let srv_cert = srv.signed_by(&srv_key, &issuer).expect("server cert");
    let cli_key = KeyPair::generate().expect("key");
    let mut cli = CertificateParams::new(Vec::<String>::new()).expect("params");
    cli.distinguished_name.push(DnType::CommonName, client_cn);
    let cli_cert = cli.signed_by(&cli_key, &issuer).expect("client cert");
    let files = [
        ("ca.pem", ca_cert.pem()),
        ("server.pem", srv_cert.pem()),
        ("server.key", srv_key.serialize_pem()),
        ("client.pem", cli_cert.pem()),
        ("client.key", cli_key.serialize_pem()),
    ];
    files.map(|(name, pem)| {
        let p = dir.join(name);
        std::fs::write(&p, pem).expect("pem");
        p
    })
}

/// Run the CLI as another local user against a unix-socket server.
pub fn as_uid(s: &Server, uid: u32, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .arg("--clear-groups")
        .arg(BIN)
        .args(args)
        .env("CLEANROOM_HOST", s.host())
        .env("HOME", "/nonexistent")
        .env_remove("XDG_CONFIG_HOME")
        .current_dir("/");
    output_with_timeout(c, Duration::from_secs(120))
}

/// Let every local user reach the socket (the test widens what the server made private).
pub fn open_socket_to_all(s: &Server) {
    std::fs::set_permissions(
        &s.dir,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    std::fs::set_permissions(
        s.socket(),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666),
    )
    .unwrap();
}

/// TLS upstreams for egress tests: rustls with ring and a throwaway CA (its PEM goes to
/// `serve --upstream-ca`).
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}

/// A test CA and a server certificate for `names`, signed by it.
pub fn test_pki(names: &[&str]) -> (String, rustls::ServerConfig) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "cleanroom test upstream CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    (ca.pem(), config)
}

/// A plain HTTP/1.1 server on loopback (one thread per connection, `Connection: close`)
/// whose response body to each request is `respond(path)`; returns its port. Sandboxes
/// reach it through `--egress-resolve`.
pub fn http_upstream(respond: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let respond = std::sync::Arc::new(respond);
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let body = respond(line.split(' ').nth(1).unwrap_or(""));
                let mut s = s;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(&body);
            });
        }
    });
    port
}

/// [`http_upstream`] answering `hello:<path>`, for egress tests that only need an upstream
/// to reach.
pub fn hello_upstream() -> u16 {
    http_upstream(|path| format!("hello:{path}").into_bytes())
}

/// [`http_upstream`] answering `len` bytes of `x` to every request.
pub fn body_upstream(len: usize) -> u16 {
    http_upstream(move |_| vec![b'x'; len])
}

/// The CLI failed with Cleanroom's own exit code (125) and the stable `code`.
pub fn assert_code(o: &Output, code: &str) {
    assert_eq!(o.status.code(), Some(125), "{}{}", stdout(o), stderr(o));
    assert!(
        stderr(o).contains(&format!("[{code}]")),
        "want {code}: {}",
        stderr(o)
    );
}

/// A typed client of a TCP (`http://`) server, authenticated with a bearer `token`.
pub async fn client_as(addr: &str, token: &str) -> cleanroom_client::Client {
    use cleanroom_client::endpoint::{Endpoint, Target};
    cleanroom_client::Client::connect_target(&Target {
        endpoint: Endpoint::Http(addr.to_string()),
        token: Some(token.to_string()),
        ca_cert: None,
        server_cert_sha256: None,
    })
    .await
    .expect("connect")
}

/// A Connect call's result with the client's typed error.
pub fn api<T, E: Into<cleanroom_client::ApiError>>(
    r: Result<T, E>,
) -> Result<T, cleanroom_client::ApiError> {
    r.map_err(Into::into)
}
