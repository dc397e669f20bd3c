//! The kernel-socket data plane (`CLEANROOM_EGRESS_PLANE=kernel`, docs/network.md "Data
//! planes"): the sandbox's veth leads into a gateway namespace whose nftables table is the
//! enforcement. What the userspace stack refuses by construction must be refused there by
//! rule: a datagram that is not DNS to the gateway is dropped and reported, and a sandbox
//! that rewrites its own addresses and routes still reaches nothing but its gateway. The
//! egress suites at large run on this plane with the variable set in the test's
//! environment; these tests set it themselves.

use cleanroom_e2e::*;
use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

/// A fresh server whose sandboxes get the kernel plane.
fn kernel_server(args: &[&str]) -> Server {
    let mut s = Server::start_with(args);
    s.kill9();
    s.spawn_with(|c| {
        c.env("CLEANROOM_EGRESS_PLANE", "kernel");
    });
    s
}

fn create(s: &Server, rt: Runtime, yaml: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    let policy = write(&d, "cleanroom.yaml", yaml);
    let o = s.run(&rt.args(2, &["sandbox", "create", "--policy", &policy]));
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));
    let o = s.run(&["sandbox", "inspect", &sbx]);
    assert!(
        stdout(&o).contains("kernel sockets"),
        "not on the kernel plane: {}",
        stdout(&o)
    );
    sbx
}

/// Every `egress.deny` event of the sandbox as (host, port, protocol, reason).
fn denies(s: &Server, sbx: &str) -> Vec<(String, u64, String, String)> {
    let o = s.run(&["sandbox", "events", sbx]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "egress.deny")
        .map(|v| {
            let a = &v["attributes"];
            let s = |k: &str| a[k].as_str().unwrap_or("").to_string();
            (
                s("host"),
                a["port"].as_u64().unwrap_or(0),
                s("protocol"),
                s("reason"),
            )
        })
        .collect()
}

const POLICY: &str =
    "version: 1\nsandbox:\n  network:\n    allow:\n      - host: ok.test\n        ports: [80]\n";

/// UDP to a port that is not DNS, and DNS to a resolver that is not the gateway: both
/// dropped by the table's policy and each reported through its log group with the reason
/// the userspace stack gives the same packet.
fn refused_datagrams_are_dropped_and_reported(rt: Runtime) {
    let s = kernel_server(&[]);
    let sbx = create(&s, rt, POLICY);
    let o = s.sh_in(
        &sbx,
        "python3 -c 'import socket\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
         s.sendto(b\"x\",(\"9.9.9.9\",9999))\ns.sendto(b\"y\",(\"8.8.8.8\",53))'",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let want = [
        ("9.9.9.9", 9999, "udp", "protocol_not_allowed"),
        ("8.8.8.8", 53, "dns", "resolver_not_allowed"),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = denies(&s, &sbx);
        let all = want.iter().all(|(h, p, proto, r)| {
            got.iter()
                .any(|(gh, gp, gproto, gr)| gh == h && gp == p && gproto == proto && gr == r)
        });
        if all {
            break;
        }
        assert!(Instant::now() < deadline, "missing deny events: {got:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
both_runtimes!(
    refused_datagrams_are_dropped_and_reported,
    refused_datagrams_are_dropped_and_reported
);

/// The host's own (non-loopback) address, where a listener of this test waits.
fn host_address() -> String {
    let o = std::process::Command::new("hostname").arg("-I").output();
    o.ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "127.0.0.1".into())
}

/// A sandbox's root rewrites what it can of its own namespace — addresses, routes, the
/// link — and then tries the host's address over TCP and UDP: nothing arrives. Under
/// linux the namespace is the host's and refuses the changes; under gVisor the sentry's
/// netstack may take them. Either way its only link ends in the gateway namespace, which
/// has no route anywhere and whose table judges or drops every packet.
fn a_rerouted_sandbox_still_reaches_only_its_gateway(rt: Runtime) {
    let tcp = TcpListener::bind("0.0.0.0:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tp, up) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let host = host_address();
    let s = kernel_server(&[]);
    let sbx = create(&s, rt, POLICY);
    let script = format!(
        "ip route flush table main 2>&1; ip addr flush dev cr0 2>&1; \
         ip addr add 192.0.2.77/24 dev cr0 2>&1; ip link set cr0 up 2>&1; \
         ip route add default dev cr0 2>&1; ip route add {host}/32 dev cr0 2>&1; \
         python3 -c 'import socket\n\
try:\n  socket.create_connection((\"{host}\",{tp}),timeout=3).send(b\"x\")\n  print(\"tcp connected\")\n\
except Exception as e:\n  print(\"tcp\",e)\n\
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n\
try:\n  u.sendto(b\"x\",(\"{host}\",{up}))\n\
except Exception as e:\n  print(\"udp\",e)'"
    );
    let o = s.sh_in(&sbx, &script);
    let out = format!("{}{}", stdout(&o), stderr(&o));
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        tcp.accept().is_err(),
        "a TCP connection reached the host: {out}"
    );
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram reached the host: {out}"
    );
    // A TCP connection that left the sandbox went to the gateway and was judged there.
    if out.contains("tcp connected") {
        let got = denies(&s, &sbx);
        assert!(
            got.iter()
                .any(|(h, p, _, _)| *h == host && *p == u64::from(tp)),
            "connected, but not to the gateway's judge: {got:?}\n{out}"
        );
    }
}
both_runtimes!(
    a_rerouted_sandbox_still_reaches_only_its_gateway,
    a_rerouted_sandbox_still_reaches_only_its_gateway
);
