//! Cleanroom hosts that are separate machines as far as the network goes (issue 34's test
//! hosts): each host's `cleanroom serve` runs in a network namespace of its own with an
//! address of its own, its own state directory, and its API listener, member link, console
//! endpoint and advertise URL on that address; a real 3-member etcd reachable from every
//! host; clients (the CLI, the typed client) reach each host at its address with a bearer
//! token, as they would across machines.
//!
//! Layout of lab `k` (1..=250, taken by creating the bridge `crlab<k>`, an atomic step, so
//! tests running in parallel never share one):
//!
//! - bridge `crlab<k>` in the root network namespace, `10.213.<k>.1/24`; etcd's three
//!   members on `10.213.<k>.2`, `.3`, `.4` (further addresses of the bridge);
//! - host `i`: network namespace `crlab<k>-<name>`, a veth pair `crl<k><name>` (on the
//!   bridge) ↔ `eth0` (in the namespace), `10.213.<k>.<11+i>/24`, loopback up.
//!
//! Why etcd on the bridge rather than on loopback: a host's namespace has a loopback of its
//! own, so the root namespace's `127.0.0.1` is out of its reach; the bridge's addresses are
//! the root namespace's own (nothing leaves the machine), every host and the test process
//! reach them, and each member has an address of its own as on three machines.
//!
//! A server is started with `nsenter --net=<namespace> -- cleanroom serve …`: nsenter
//! joins only the network namespace and execs the server (its pid is the child's, so
//! SIGKILL reaches the server itself). `ip netns exec` is not used: it also remounts
//! `/sys` in a new mount namespace, which hides `/sys/fs/cgroup` from the server.
//! Cgroups: `serve` has no flag choosing a cgroup; every server makes its subtree
//! `<its cgroup>/cleanroom/srv-<hash of its state directory>`, so each host (its own state
//! directory) has its own subtree.
//!
//! Teardown on drop, also when a test fails: servers stopped, etcd killed, namespaces and
//! links deleted. A lab whose test process was killed (the pid in its bridge's alias is
//! gone) is removed when its number is taken next.

use crate::bin::assert_fresh_bin;
use crate::etcd::Etcd;
use crate::server::{kill_slot, output_with_timeout, stderr, stdout, stop_slot};
use crate::{eventually, write_tokens, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Bearer tokens of the lab's principals (the same tokens file on every host: members
/// trust each other's authentication).
pub const ALICE: &str = "alice-token-3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e";
pub const MALLORY: &str = "mallory-token-8e6c4a2f0d9b7e5c3a1f2d4b6e8c0a9f";
pub const OPS: &str = "ops-token-1b3d5f7a9c2e4f6a8c0e3b5d7f9a1c2e";

/// The API, member link and console ports every host uses on its own address.
pub const API_PORT: u16 = 7443;
pub const LINK_PORT: u16 = 7444;
pub const CONSOLE_PORT: u16 = 7445;

/// A cluster CA and the node identities issued from it (`cleanroom cluster init|issue`).
pub struct Pki {
    pub dir: tempfile::TempDir,
}

fn run_bin(args: &[&str]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args);
    output_with_timeout(c, Duration::from_secs(60))
}

impl Pki {
    pub fn new() -> Pki {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = dir.path().join("ca").display().to_string();
        let o = run_bin(&["cluster", "init", &ca]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        Pki { dir }
    }

    /// `cluster issue` for `node` (once), with `sans` as further names.
    pub fn node_with(&self, node: &str, sans: &[&str]) -> PathBuf {
        let out = self.dir.path().join(node);
        if !out.exists() {
            let ca = self.dir.path().join("ca").display().to_string();
            let dest = out.display().to_string();
            let mut args = vec!["cluster", "issue", "--ca", &ca, "--node", node];
            for s in sans {
                args.extend(["--san", s]);
            }
            args.push(&dest);
            let o = run_bin(&args);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        }
        out
    }

    /// `cluster issue` for `node` (once).
    pub fn node(&self, node: &str) -> PathBuf {
        self.node_with(node, &[])
    }
}

impl Default for Pki {
    fn default() -> Self {
        Pki::new()
    }
}

/// `ip ARGS…`; its output (panics with it when the step fails and `must`).
fn ip(args: &[&str], must: bool) -> Output {
    let o = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ip (iproute2) runs");
    assert!(
        !must || o.status.success(),
        "ip {}: {}",
        args.join(" "),
        stderr(&o)
    );
    o
}

/// The lab's network: a bridge and one namespace per host (deleted on drop).
pub struct Net {
    pub k: u8,
    bridge: String,
    hosts: Vec<String>,
}

impl Net {
    /// Take a free lab number (removing a dead test's lab on the way).
    fn take() -> Net {
        for k in 1..=250u8 {
            let bridge = format!("crlab{k}");
            if ip(&["link", "add", &bridge, "type", "bridge"], false)
                .status
                .success()
            {
                let alias = format!("cleanroom-e2e pid {}", std::process::id());
                ip(&["link", "set", &bridge, "alias", &alias], true);
                // A fixed address: a bridge without one takes the lowest of its ports',
                // so a host joining later could change it under the earlier hosts' ARP
                // caches, cutting them off from etcd and the test until those expire.
                let mac = format!("02:00:0a:d5:{k:02x}:01");
                ip(&["link", "set", &bridge, "address", &mac], true);
                for last in 1..=4 {
                    let a = format!("10.213.{k}.{last}/24");
                    ip(&["addr", "add", &a, "dev", &bridge], true);
                }
                ip(&["link", "set", &bridge, "up"], true);
                return Net {
                    k,
                    bridge,
                    hosts: Vec::new(),
                };
            }
            let alias = std::fs::read_to_string(format!("/sys/class/net/{bridge}/ifalias"))
                .unwrap_or_default();
            let owner = alias
                .trim()
                .strip_prefix("cleanroom-e2e pid ")
                .and_then(|p| p.parse::<u32>().ok());
            if owner.is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists()) {
                remove_lab(k, &bridge);
                // Taken again on the next round, unless another test is quicker.
            }
        }
        panic!("no free lab number (bridges crlab1..crlab250 all exist)");
    }

    /// A namespace `crlab<k>-<name>` with `10.213.<k>.<last>` on its end of a veth pair.
    fn add_host(&mut self, name: &str, last: u8) -> (String, String) {
        let k = self.k;
        let ns = format!("crlab{k}-{name}");
        let veth = format!("crl{k}{name}");
        assert!(
            veth.len() <= 15,
            "host name {name} too long for a link name"
        );
        ip(&["netns", "add", &ns], true);
        self.hosts.push(name.to_string());
        ip(
            &[
                "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
            ],
            true,
        );
        ip(&["link", "set", &veth, "master", &self.bridge, "up"], true);
        let addr = format!("10.213.{k}.{last}");
        let cidr = format!("{addr}/24");
        ip(&["-n", &ns, "addr", "add", &cidr, "dev", "eth0"], true);
        ip(&["-n", &ns, "link", "set", "eth0", "up"], true);
        ip(&["-n", &ns, "link", "set", "lo", "up"], true);
        (ns, addr)
    }

    /// Cut host `name` off the network (its link goes down) or put it back.
    pub fn set_link(&self, name: &str, up: bool) {
        let veth = format!("crl{}{name}", self.k);
        ip(
            &["link", "set", &veth, if up { "up" } else { "down" }],
            true,
        );
    }

    /// etcd's member addresses.
    pub fn etcd_ips(&self) -> Vec<String> {
        (2..=4).map(|i| format!("10.213.{}.{i}", self.k)).collect()
    }
}

/// Delete lab `k`'s namespaces, their links and its bridge (whatever is there).
fn remove_lab(k: u8, bridge: &str) {
    let list = ip(&["netns", "list"], false);
    let prefix = format!("crlab{k}-");
    for line in stdout(&list).lines() {
        if let Some(ns) = line
            .split_whitespace()
            .next()
            .filter(|n| n.starts_with(&prefix))
        {
            let name = &ns[prefix.len()..];
            ip(&["link", "del", &format!("crl{k}{name}")], false);
            ip(&["netns", "del", ns], false);
        }
    }
    ip(&["link", "del", bridge], false);
}

impl Drop for Net {
    fn drop(&mut self) {
        for h in &self.hosts {
            ip(&["link", "del", &format!("crl{}{h}", self.k)], false);
            ip(&["netns", "del", &format!("crlab{}-{h}", self.k)], false);
        }
        ip(&["link", "del", &self.bridge], false);
    }
}

/// One Cleanroom host: a server in its own network namespace, at its own address.
pub struct Host {
    pub name: String,
    /// Its address (on the lab's bridge).
    pub ip: String,
    pub netns: String,
    pub dir: tempfile::TempDir,
    args: Vec<String>,
    child: Option<Child>,
}

impl Host {
    /// `http://IP:7443`, the host's API (and its advertise URL).
    pub fn url(&self) -> String {
        format!("http://{}:{API_PORT}", self.ip)
    }

    pub fn addr(&self) -> String {
        format!("{}:{API_PORT}", self.ip)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The server's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// (Re)start the server in its namespace; wait until its API answers.
    pub fn spawn(&mut self) {
        assert_fresh_bin();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .expect("server log");
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(BIN)
            .arg("serve")
            .arg("--state-dir")
            .arg(self.state_dir())
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn server");
        self.child = Some(child);
        // A restarted host waits for its old lease to expire before it registers
        // (docs/cluster.md): up to twice the TTL.
        let up = eventually(Duration::from_secs(30), || {
            std::net::TcpStream::connect(self.addr()).is_ok()
        });
        assert!(up, "host {} did not start: {}", self.name, self.log());
    }

    /// SIGKILL the server (a host that dies).
    pub fn kill9(&mut self) {
        kill_slot(&mut self.child);
    }

    /// SIGTERM and wait (a clean stop).
    pub fn stop(&mut self) {
        stop_slot(&mut self.child);
    }

    /// The CLI pointed at this host with `token`.
    pub fn cli(&self, token: &str) -> Command {
        let mut c = Command::new(BIN);
        c.env("CLEANROOM_HOST", self.url())
            .env("CLEANROOM_TOKEN", token)
            .env("XDG_CONFIG_HOME", self.dir.path().join("no-config"))
            .stdin(Stdio::null());
        c
    }

    /// Run the CLI against this host as `token`'s principal (bounded).
    pub fn run(&self, token: &str, args: &[&str]) -> Output {
        let mut c = self.cli(token);
        c.args(args);
        output_with_timeout(c, Duration::from_secs(120))
    }

    /// `sandbox create` as alice through this host: the new id.
    pub fn create(&self) -> String {
        let o = self.run(ALICE, &["sandbox", "create"]);
        let id = stdout(&o).trim().to_string();
        assert!(id.starts_with("sbx_"), "create failed: {}", stderr(&o));
        id
    }

    /// A typed client of this host as `token`'s principal.
    pub async fn client(&self, token: &str) -> cleanroom_client::Client {
        crate::client_as(&self.addr(), token).await
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        // A failing test shows what each host said (its directory goes with it).
        if std::thread::panicking() {
            let alive = self
                .child
                .as_mut()
                .map(|c| matches!(c.try_wait(), Ok(None)));
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            eprintln!(
                "--- host {} ({}, running: {alive:?}) ---\n{}",
                self.name,
                self.ip,
                tail.join("\n")
            );
        }
        self.stop();
    }
}

/// A cluster of hosts, each in its own network namespace, on a real 3-member etcd.
/// Fields drop in order: hosts first, then etcd, then the network.
pub struct Lab {
    pub hosts: BTreeMap<String, Host>,
    pub etcd: Etcd,
    pub pki: Pki,
    pub net: Net,
    tokens: PathBuf,
    extra: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Lab {
    /// Hosts `names` (short names: they go into link names), joined and seeing each other.
    pub fn start(names: &[&str]) -> Lab {
        Lab::start_with(names, &[])
    }

    /// [`Lab::start`] with `extra` arguments for every host's `serve`.
    pub fn start_with(names: &[&str], extra: &[&str]) -> Lab {
        let net = Net::take();
        let ips = net.etcd_ips();
        let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
        let etcd = Etcd::start_on(&ips);
        let dir = tempfile::tempdir().expect("tempdir");
        let tokens = write_tokens(
            dir.path(),
            &[
                (ALICE, "alice", "user"),
                (MALLORY, "mallory", "user"),
                (OPS, "ops", "admin"),
            ],
        );
        let mut lab = Lab {
            hosts: BTreeMap::new(),
            etcd,
            pki: Pki::new(),
            net,
            tokens,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            _dir: dir,
        };
        for (i, name) in names.iter().enumerate() {
            lab.add(name, 11 + i as u8);
        }
        lab.wait_members(names);
        lab
    }

    fn add(&mut self, name: &str, last: u8) {
        let (netns, ip) = self.net.add_host(name, last);
        let tls = self.pki.node_with(name, &[&ip]).display().to_string();
        let dir = tempfile::Builder::new()
            .prefix("cleanroom-host-")
            .tempdir()
            .expect("tempdir");
        let args: Vec<String> = [
            "--listen",
            &format!("http://{ip}:{API_PORT}"),
            "--tokens-file",
            &self.tokens.display().to_string(),
            "--cluster",
            &self.etcd.cluster_arg(),
            "--node-name",
            name,
            "--advertise",
            &format!("http://{ip}:{API_PORT}"),
            "--cluster-tls",
            &tls,
            "--cluster-listen",
            &format!("{ip}:{LINK_PORT}"),
            // All of the namespace's addresses: a ticket then names an unspecified
            // address, which the routing seam must turn into this host's.
            "--console-listen",
            &format!("0.0.0.0:{CONSOLE_PORT}"),
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(self.extra.iter().cloned())
        .collect();
        let mut h = Host {
            name: name.to_string(),
            ip,
            netns,
            dir,
            args,
            child: None,
        };
        h.spawn();
        self.hosts.insert(name.to_string(), h);
    }

    /// Wait (bounded) until the first host lists every one of `names` as a member.
    pub fn wait_members(&self, names: &[&str]) {
        let first = self.hosts.values().next().expect("a host");
        let all = eventually(Duration::from_secs(30), || {
            let o = first.run(OPS, &["cluster", "status", "-o", "json"]);
            let text = stdout(&o);
            names.iter().all(|n| {
                text.contains(&format!("\"name\": \"{n}\""))
                    || text.contains(&format!("\"name\":\"{n}\""))
            })
        });
        if !all {
            let logs: Vec<String> = self
                .hosts
                .values()
                .map(|h| format!("--- host {} ---\n{}", h.name, h.log()))
                .collect();
            panic!("not every host joined:\n{}", logs.join("\n"));
        }
    }

    pub fn host(&self, name: &str) -> &Host {
        &self.hosts[name]
    }

    pub fn host_mut(&mut self, name: &str) -> &mut Host {
        self.hosts.get_mut(name).expect("a host of the lab")
    }
}
