//! The server under test: a real `cleanroom serve` on a temporary unix socket (or on TCP)
//! with its own state directory, and helpers to run the real CLI against it — as root, as
//! another local user, or through the typed client. Everything is bounded: a command that
//! hangs is killed and fails its test, a server is stopped when its handle drops.

use crate::bin::assert_fresh_bin;
use crate::{eventually, BIN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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
        assert_fresh_bin();
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
        kill_slot(&mut self.child);
    }

    /// SIGTERM and wait (graceful stop).
    pub fn stop(&mut self) {
        stop_slot(&mut self.child);
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

impl Server {
    /// Start a fresh server whose host resolver sees `hosts` (lines of `IP NAME…`) as
    /// `/etc/hosts`: the server runs in a private mount namespace with that file
    /// bind-mounted over `/etc/hosts`, so its ordinary resolver returns real answers the
    /// test chose, without the internet and without any seam in the server. The process
    /// is the server itself (`unshare` and `sh` exec into it), so signals reach it.
    pub fn start_with_hosts(hosts: &str, args: &[&str]) -> Server {
        assert_fresh_bin();
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
        assert_fresh_bin();
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
        stop_slot(&mut self.child);
    }
}

/// SIGKILL and reap the server in `slot`, if one runs (a host that dies).
pub fn kill_slot(slot: &mut Option<Child>) {
    if let Some(mut c) = slot.take() {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// [`stop_child`] the server in `slot`, if one runs (a clean stop).
pub fn stop_slot(slot: &mut Option<Child>) {
    if let Some(mut c) = slot.take() {
        stop_child(&mut c);
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
        traceparent: None,
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
