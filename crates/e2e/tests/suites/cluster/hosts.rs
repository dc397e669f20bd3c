//! Cluster members for the suites on loopback (`serve`, `identity`): servers started with
//! `--cluster`, `--cluster-tls` (identities from `cluster_hosts::Pki`, made with the CLI)
//! and a member link on its own loopback port, each with its own state directory; and an
//! observer's view of etcd's bindings (every suite). The hosts in network namespaces of
//! their own are `cleanroom_e2e::cluster_hosts`.

use cleanroom_e2e::*;

pub use cleanroom_e2e::cluster_hosts::Pki;

pub fn run_cli(args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(BIN);
    c.args(args);
    output_with_timeout(c, std::time::Duration::from_secs(60))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A server joined to `e` as `name`, with its identity from `pki` and its member link on a
/// loopback port of its own (kept across restarts: `spawn` reuses the arguments).
pub fn member(e: &etcd::Etcd, pki: &Pki, name: &str) -> Server {
    let tls = pki.node(name).display().to_string();
    let link = format!("127.0.0.1:{}", free_port());
    Server::start_with(&[
        "--cluster",
        &e.cluster_arg(),
        "--node-name",
        name,
        "--advertise",
        &format!("https://{name}.test:7443"),
        "--cluster-tls",
        &tls,
        "--cluster-listen",
        &link,
    ])
}

/// The host etcd binds sandbox `id` to, read by an observer member (it offers nothing, so
/// nothing is placed on it).
pub async fn host_of(e: &etcd::Etcd, id: &str) -> Option<String> {
    use cleanroom_cluster::{ClusterConfig, MemberInfo, Membership};
    let cfg = ClusterConfig::parse(&e.cluster_arg(), "observer", "https://observer.test:1")
        .expect("config");
    let info = MemberInfo {
        name: "observer".into(),
        ..Default::default()
    };
    let m = Membership::join(cfg, info).await.expect("observer joins");
    let b = m.bindings().lookup(id).await.expect("lookup");
    m.leave().await;
    b.map(|b| b.host)
}

/// `host_of` from a test thread.
pub fn host_of_blocking(e: &etcd::Etcd, id: &str) -> Option<String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(host_of(e, id))
}
