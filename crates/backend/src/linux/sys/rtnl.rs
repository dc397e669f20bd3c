//! The rtnetlink requests of the kernel-socket data plane: a veth pair whose ends start in
//! two network namespaces, and the "every address is local" route of a gateway namespace
//! (what lets `tproxy` hand the gateway connections to any destination).

use super::netlink::{self, Msg, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

const RTM_NEWLINK: u16 = 16;
const RTM_NEWROUTE: u16 = 24;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
const IFLA_NET_NS_FD: u16 = 28;
const RTA_OIF: u16 = 4;
const RTA_TABLE: u16 = 15;

/// A zeroed `struct ifinfomsg` (family, type, index, flags, change: all 0).
const IFINFOMSG: [u8; 16] = [0; 16];

/// Create a veth pair in the calling thread's namespace: `name` stays here, its peer
/// `peer` is created directly in the namespace `peer_ns`. Both get `mtu`.
pub fn veth_pair(name: &str, peer: &str, peer_ns: BorrowedFd<'_>, mtu: u16) -> io::Result<()> {
    let sock = netlink::socket(libc::NETLINK_ROUTE)?;
    let mut m = Msg::new(
        RTM_NEWLINK,
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        &IFINFOMSG,
    );
    m.str(IFLA_IFNAME, name).u32_ne(IFLA_MTU, u32::from(mtu));
    m.nest(IFLA_LINKINFO).str(IFLA_INFO_KIND, "veth");
    m.nest(IFLA_INFO_DATA).nest(VETH_INFO_PEER).raw(&IFINFOMSG);
    m.str(IFLA_IFNAME, peer)
        .u32_ne(IFLA_MTU, u32::from(mtu))
        .u32_ne(IFLA_NET_NS_FD, peer_ns.as_raw_fd() as u32);
    m.end().end().end();
    netlink::request(&sock, vec![m], "create the veth pair")
}

/// `ip route add local 0.0.0.0/0 dev lo table local` in the calling thread's namespace:
/// every IPv4 address is this namespace's own, so a packet to any destination is
/// delivered to a socket here (the one `tproxy` chose) and none is forwarded.
pub fn local_default_route() -> io::Result<()> {
    let sock = netlink::socket(libc::NETLINK_ROUTE)?;
    const RT_TABLE_LOCAL: u8 = 255;
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol (boot), scope (host),
    // type (local), flags.
    let mut rtmsg = [
        libc::AF_INET as u8,
        0,
        0,
        0,
        RT_TABLE_LOCAL,
        3,
        254,
        2,
        0,
        0,
        0,
        0,
    ];
    rtmsg[8..12].copy_from_slice(&0u32.to_ne_bytes());
    let mut m = Msg::new(
        RTM_NEWROUTE,
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        &rtmsg,
    );
    // `lo` is ifindex 1 in every network namespace.
    m.u32_ne(RTA_OIF, 1)
        .u32_ne(RTA_TABLE, u32::from(RT_TABLE_LOCAL));
    netlink::request(&sock, vec![m], "add the local route")
}
