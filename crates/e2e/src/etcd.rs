//! A real 3-member etcd cluster (Debian's `etcd-server`, installed by scripts/deps.sh),
//! each member with a private data directory, on loopback ports ([`Etcd::start`]) or on
//! addresses of its own ([`Etcd::start_on`], the network-namespace hosts of
//! [`crate::cluster_hosts`]); a killed member can be restarted on its data; killed on drop.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Etcd {
    pub members: Vec<Option<Child>>,
    pub client_urls: Vec<String>,
    /// Each member's command line (kept so that a killed member can be restarted).
    commands: Vec<Vec<String>>,
    dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Etcd {
    /// Three members on loopback, each on ports of its own.
    pub fn start() -> Etcd {
        let urls = (0..3)
            .map(|_| {
                (
                    format!("http://127.0.0.1:{}", free_port()),
                    format!("http://127.0.0.1:{}", free_port()),
                )
            })
            .collect();
        Etcd::start_at(urls)
    }

    /// One member on each of `ips` (addresses this machine holds), on etcd's usual ports.
    pub fn start_on(ips: &[&str]) -> Etcd {
        let urls = ips
            .iter()
            .map(|ip| (format!("http://{ip}:2379"), format!("http://{ip}:2380")))
            .collect();
        Etcd::start_at(urls)
    }

    /// Members at `(client URL, peer URL)` each.
    fn start_at(urls: Vec<(String, String)>) -> Etcd {
        let etcd =
            which("etcd").expect("etcd is not installed (scripts/deps.sh installs etcd-server)");
        // On tmpfs where there is one: etcd fsyncs every write, and on a disk shared with
        // builds a commit can take longer than the members' 3 s deadline.
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            tempfile::Builder::new().prefix("etcd-").tempdir_in(shm)
        } else {
            tempfile::tempdir()
        }
        .expect("tempdir");
        let initial: Vec<String> = urls
            .iter()
            .enumerate()
            .map(|(i, (_, p))| format!("m{i}={p}"))
            .collect();
        let initial = initial.join(",");
        let mut commands = Vec::new();
        let mut client_urls = Vec::new();
        for (i, (curl, purl)) in urls.iter().enumerate() {
            let data = dir.path().join(format!("m{i}")).display().to_string();
            let name = format!("m{i}");
            let argv: Vec<&str> = vec![
                etcd.to_str().expect("etcd path"),
                "--name",
                &name,
                "--data-dir",
                &data,
                "--listen-client-urls",
                curl,
                "--advertise-client-urls",
                curl,
                "--listen-peer-urls",
                purl,
                "--initial-advertise-peer-urls",
                purl,
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "cleanroom-test",
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
            ];
            commands.push(argv.into_iter().map(String::from).collect());
            client_urls.push(curl.clone());
        }
        let mut e = Etcd {
            members: (0..urls.len()).map(|_| None).collect(),
            client_urls,
            commands,
            dir,
        };
        for i in 0..urls.len() {
            e.spawn(i);
        }
        e.wait_healthy();
        e
    }

    fn spawn(&mut self, i: usize) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("m{i}.log")))
            .expect("log");
        let argv = &self.commands[i];
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .env("ETCD_UNSUPPORTED_ARCH", "")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn etcd");
        self.members[i] = Some(child);
    }

    /// Start member `i` again on its data (after [`Etcd::kill`]); it rejoins the others.
    pub fn restart(&mut self, i: usize) {
        assert!(self.members[i].is_none(), "member {i} is running");
        self.spawn(i);
    }

    /// Wait (bounded) until every member is healthy.
    pub fn wait_all_healthy(&self) {
        self.wait_healthy()
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

    /// The index of the member that leads now (`etcdctl endpoint status`), if one does.
    pub fn leader(&self) -> Option<usize> {
        let o = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .args([
                "--endpoints",
                &self.client_urls.join(","),
                "endpoint",
                "status",
            ])
            .args(["-w", "json"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
        v.as_array()?.iter().find_map(|e| {
            let s = &e["Status"];
            let me = s["header"]["member_id"].as_u64()?;
            let url = e["Endpoint"].as_str()?;
            (s["leader"].as_u64()? == me)
                .then(|| self.client_urls.iter().position(|u| u == url))
                .flatten()
        })
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
