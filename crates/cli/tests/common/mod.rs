//! Test harness: a real `cleanroom serve` on a temporary unix socket with its own state
//! directory, and helpers to run the real CLI against it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_cleanroom");

pub struct Server {
    pub child: Option<Child>,
    pub dir: PathBuf,
    /// Extra `serve` arguments (e.g. `--insecure-registry`).
    pub args: Vec<String>,
    _tmp: Option<tempfile::TempDir>,
}

impl Server {
    /// Start a fresh server in a new temp dir.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Start a fresh server with extra `serve` arguments.
    pub fn start_with(args: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("cleanroom-test-")
            .tempdir()
            .expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let mut s = Server {
            child: None,
            dir,
            args: args.iter().map(|a| a.to_string()).collect(),
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
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))
            .expect("server log");
        let child = Command::new(BIN)
            .args(["serve", "--listen", &self.host(), "--state-dir"])
            .arg(self.state_dir())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn server");
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

/// Host processes whose command line mentions `needle` (e.g. a sandbox id).
pub fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                found.push(pid);
            }
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
pub fn assert_no_leftovers(server_state: &Path, sandbox_id: &str) {
    assert!(
        eventually(Duration::from_secs(10), || processes_mentioning(sandbox_id)
            .is_empty()),
        "processes of {sandbox_id} still alive: {:?}",
        processes_mentioning(sandbox_id)
    );
    assert!(
        mounts_mentioning(sandbox_id).is_empty(),
        "mounts left: {:?}",
        mounts_mentioning(sandbox_id)
    );
    let dir = server_state.join("sandboxes").join(sandbox_id);
    assert!(!dir.exists(), "sandbox dir left behind: {}", dir.display());
    // A root server keeps mountpoints under /run/cleanroom/<instance>/<sandbox>.
    for inst in std::fs::read_dir("/run/cleanroom")
        .into_iter()
        .flatten()
        .flatten()
    {
        let d = inst.path().join(sandbox_id);
        assert!(
            !d.exists(),
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
