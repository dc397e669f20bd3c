//! A sandbox's gateway network namespace (the kernel-socket data plane, docs/network.md):
//! `lo` and one veth end `gw0`, whose peer `cr0` is the sandbox's only interface. There is
//! no default route, and every IPv4 address is local (`local 0.0.0.0/0 dev lo`): nothing
//! here is forwarded, so nothing reaches the host or the network. One nftables table
//! ([`crate::linux::sys::nft`]) hands every TCP connection from the sandbox to the
//! gateway's transparent listener, DNS to the gateway's address to its UDP socket, and logs
//! and drops everything else.
//!
//! The namespace is made, and its sockets created, by a short-lived thread that unshares
//! into it (a thread that changed namespace never runs anything else); it lives as long as
//! one of its sockets (or the sandbox's end of the veth pair) does, and is never named in
//! the filesystem, so a killed server leaves nothing behind. The table is made before the
//! veth exists: if it cannot be, there is no veth and the create fails (fail closed).

use crate::linux::sys::{self, netlink, nft, rtnl};
use crate::{BackendError, GatewaySockets, TunConfig};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Name of the gateway's end of the veth pair (in the gateway namespace).
const GW_NAME: &str = "gw0";
/// Name of the sandbox's end (the same name its tun has on the other plane).
const SANDBOX_NAME: &str = "cr0";
/// Kernel socket buffers of each accepted connection (the kernel doubles them): what one
/// connection may hold in the server each way, the kernel plane's byte bound.
pub const SOCKET_BUFFER: usize = 1 << 20;
/// Connections waiting to be accepted.
const BACKLOG: i32 = 1024;

/// A gateway namespace and its sockets, before the veth pair is made.
pub struct GatewayNs {
    ns: OwnedFd,
    pub sockets: GatewaySockets,
}

/// Make the namespace, its route, its sockets and its nftables table.
pub fn create(cfg: TunConfig) -> Result<GatewayNs, BackendError> {
    create_with(cfg, nft::install)
}

fn create_with(
    cfg: TunConfig,
    table: fn(u16, std::net::Ipv4Addr) -> io::Result<()>,
) -> Result<GatewayNs, BackendError> {
    on_thread(move || {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)?;
        sys::interface_up(sys::inet_socket()?.as_fd(), b"lo")?;
        rtnl::local_default_route()?;
        let (listener, port) = transparent_listener()?;
        let dns = dns_socket(cfg.gateway)?;
        let log = log_socket()?;
        table(port, cfg.gateway)?;
        let ns: OwnedFd = std::fs::File::open("/proc/thread-self/ns/net")?.into();
        Ok(GatewayNs {
            ns,
            sockets: GatewaySockets { listener, dns, log },
        })
    })
    .map_err(|e| BackendError::LaunchFailed(format!("egress gateway namespace: {e}")))
}

/// Make the veth pair: `gw0` in the gateway namespace (the gateway's address), `cr0` in
/// `sandbox_ns` (the sandbox's address, the default route via the gateway).
pub fn attach(
    gw: &GatewayNs,
    sandbox_ns: BorrowedFd<'_>,
    cfg: TunConfig,
) -> Result<(), BackendError> {
    let ns = gw
        .ns
        .try_clone()
        .map_err(|e| BackendError::io("dup namespace", e))?;
    let sandbox = sandbox_ns
        .try_clone_to_owned()
        .map_err(|e| BackendError::io("dup namespace", e))?;
    on_thread(move || {
        nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)?;
        rtnl::veth_pair(GW_NAME, SANDBOX_NAME, sandbox.as_fd(), cfg.mtu)?;
        let sock = sys::inet_socket()?;
        let mask = std::net::Ipv4Addr::new(255, 255, 255, 0);
        sys::interface_address(sock.as_fd(), GW_NAME.as_bytes(), cfg.gateway, mask, cfg.mtu)?;
        sys::interface_up(sock.as_fd(), GW_NAME.as_bytes())?;
        drop(sock);
        // The sandbox's end: its address, up, the default route via the gateway (IPv6 was
        // turned off in that namespace before it had an interface: the shim, gvisor/netns.rs).
        nix::sched::setns(&sandbox, nix::sched::CloneFlags::CLONE_NEWNET)?;
        let sock = sys::inet_socket()?;
        let name = SANDBOX_NAME.as_bytes();
        sys::interface_address(sock.as_fd(), name, cfg.guest, mask, cfg.mtu)?;
        sys::interface_up(sock.as_fd(), name)?;
        sys::add_default_route(sock.as_fd(), name, cfg.gateway)
    })
    .map_err(|e| BackendError::LaunchFailed(format!("sandbox veth: {e}")))
}

/// Run `f` on a thread of its own (it may change namespace) and wait for it.
fn on_thread<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    std::thread::Builder::new()
        .name("gateway-netns".into())
        .spawn(f)?
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
}

fn check(r: libc::c_int, what: &str) -> io::Result<()> {
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
    }
    Ok(())
}

fn set_int(fd: &OwnedFd, level: i32, opt: i32, v: i32, what: &str) -> io::Result<()> {
    // SAFETY: setsockopt reads one int from the pointer for the given length.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    check(r, what)
}

fn new_socket(domain: i32, kind: i32, proto: i32) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes three integers and returns a new fd or -1.
    let fd = unsafe {
        libc::socket(
            domain,
            kind | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            proto,
        )
    };
    check(fd, "socket")?;
    // SAFETY: the kernel just returned this fd; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind_v4(fd: &OwnedFd, ip: std::net::Ipv4Addr, port: u16, what: &str) -> io::Result<()> {
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `sa` is a valid sockaddr_in of the length given.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    check(r, what)
}

/// The transparent listener on an ephemeral port of every address; returns it and its port.
fn transparent_listener() -> io::Result<(OwnedFd, u16)> {
    let fd = new_socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
    set_int(&fd, libc::SOL_IP, libc::IP_TRANSPARENT, 1, "IP_TRANSPARENT")?;
    // Inherited by every accepted socket: the per-connection byte bound.
    set_int(
        &fd,
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        SOCKET_BUFFER as i32,
        "SO_RCVBUF",
    )?;
    set_int(
        &fd,
        libc::SOL_SOCKET,
        libc::SO_SNDBUF,
        SOCKET_BUFFER as i32,
        "SO_SNDBUF",
    )?;
    bind_v4(&fd, std::net::Ipv4Addr::UNSPECIFIED, 0, "bind the listener")?;
    // SAFETY: listen(2) on a bound socket fd.
    check(unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) }, "listen")?;
    // SAFETY: sockaddr_in is plain old data; getsockname fills at most `len` bytes.
    let mut sa: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: `sa` and `len` are valid for writing.
    let r = unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            (&mut sa as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    };
    check(r, "getsockname")?;
    Ok((fd, u16::from_be(sa.sin_port)))
}

/// The DNS socket on `gateway`:53 (the address is local through the local route even
/// before `gw0` has it).
fn dns_socket(gateway: std::net::Ipv4Addr) -> io::Result<OwnedFd> {
    let fd = new_socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
    set_int(&fd, libc::SOL_IP, libc::IP_FREEBIND, 1, "IP_FREEBIND")?;
    bind_v4(&fd, gateway, 53, "bind the DNS socket")?;
    Ok(fd)
}

/// An NFLOG socket bound to the table's group, each packet sent at once.
fn log_socket() -> io::Result<OwnedFd> {
    let sock = netlink::socket(libc::NETLINK_NETFILTER)?;
    const NFNL_SUBSYS_ULOG: u16 = 4;
    const NFULNL_MSG_CONFIG: u16 = 1;
    let group = nft::LOG_GROUP.to_be_bytes();
    let hdr = [libc::AF_UNSPEC as u8, 0, group[0], group[1]];
    let kind = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
    let flags = netlink::NLM_F_REQUEST | netlink::NLM_F_ACK;
    // NFULA_CFG_CMD: bind; NFULA_CFG_QTHRESH: one packet per message.
    let mut bind = netlink::Msg::new(kind, flags, &hdr);
    bind.attr(1, &[1, 0, 0, 0]);
    let mut thresh = netlink::Msg::new(kind, flags, &hdr);
    thresh.u32_be(4, 1);
    netlink::request(&sock, vec![bind], "bind the NFLOG group")?;
    netlink::request(&sock, vec![thresh], "configure the NFLOG group")?;
    set_int(
        &sock,
        libc::SOL_SOCKET,
        libc::SO_RCVBUF,
        256 << 10,
        "SO_RCVBUF",
    )?;
    let flags = nix::fcntl::fcntl(&sock, nix::fcntl::FcntlArg::F_GETFL)?;
    nix::fcntl::fcntl(
        &sock,
        nix::fcntl::FcntlArg::F_SETFL(
            nix::fcntl::OFlag::from_bits_retain(flags) | nix::fcntl::OFlag::O_NONBLOCK,
        ),
    )?;
    Ok(sock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TunConfig {
        TunConfig {
            guest: std::net::Ipv4Addr::new(100, 96, 0, 2),
            gateway: std::net::Ipv4Addr::new(100, 96, 0, 1),
            mtu: 65535,
            plane: crate::Plane::Kernel,
        }
    }

    /// A table the kernel refuses fails the namespace's creation: no sockets, no veth to
    /// attach (the create path never gets a veth without its rules).
    #[test]
    fn a_refused_table_fails_the_namespace() {
        if !nix::unistd::geteuid().is_root() {
            return; // needs CAP_NET_ADMIN; CI runs the suite as root
        }
        let err = create_with(cfg(), nft::install_refused)
            .err()
            .expect("must fail");
        assert!(
            matches!(err, BackendError::LaunchFailed(ref m) if m.contains("nftables")),
            "{err}"
        );
        // The same namespace with the real table is made.
        create(cfg()).expect("the real table is accepted");
    }
}
