//! A real 3-member etcd cluster on loopback (Debian's `etcd-server`, installed by
//! scripts/deps.sh), each member with a private data directory; killed on drop.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Etcd {
    pub members: Vec<Option<Child>>,
    pub client_urls: Vec<String>,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Etcd {
    pub fn start() -> Etcd {
        let etcd =
            which("etcd").expect("etcd is not installed (scripts/deps.sh installs etcd-server)");
        let dir = tempfile::tempdir().expect("tempdir");
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, p))| format!("m{i}=http://127.0.0.1:{p}"))
            .collect();
        let initial = initial.join(",");
        let mut members = Vec::new();
        let mut client_urls = Vec::new();
        for (i, (c, p)) in ports.iter().enumerate() {
            let curl = format!("http://127.0.0.1:{c}");
            let purl = format!("http://127.0.0.1:{p}");
            let log = std::fs::File::create(dir.path().join(format!("m{i}.log"))).expect("log");
            let child = Command::new(&etcd)
                .args(["--name", &format!("m{i}")])
                .arg("--data-dir")
                .arg(dir.path().join(format!("m{i}")))
                .args([
                    "--listen-client-urls",
                    &curl,
                    "--advertise-client-urls",
                    &curl,
                ])
                .args([
                    "--listen-peer-urls",
                    &purl,
                    "--initial-advertise-peer-urls",
                    &purl,
                ])
                .args([
                    "--initial-cluster",
                    &initial,
                    "--initial-cluster-state",
                    "new",
                ])
                .args(["--initial-cluster-token", "cleanroom-test"])
                .args(["--heartbeat-interval", "100", "--election-timeout", "1000"])
                .env("ETCD_UNSUPPORTED_ARCH", "")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("spawn etcd");
            members.push(Some(child));
            client_urls.push(curl);
        }
        let e = Etcd {
            members,
            client_urls,
            _dir: dir,
        };
        e.wait_healthy();
        e
    }

    /// Wait (bounded) until `etcdctl endpoint health` says every member is healthy.
    fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = Command::new("etcdctl")
                .env("ETCDCTL_API", "3")
                .args([
                    "--endpoints",
                    &self.client_urls.join(","),
                    "endpoint",
                    "health",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "etcd did not become healthy");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `etcd=URL,URL,URL` for `--cluster`.
    pub fn cluster_arg(&self) -> String {
        format!("etcd={}", self.client_urls.join(","))
    }

    /// SIGKILL member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}
