//! Network interface setup inside the sandbox's network namespace (the ioctls themselves
//! live in [`super::sys`]).

use super::sys;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

/// Bring `lo` up. A fresh network namespace has only a down loopback and no route out,
/// which is exactly the isolation the first-cut backend promises.
pub fn loopback_up() -> io::Result<()> {
    let sock = sys::inet_socket()?;
    sys::interface_up(sock.as_fd(), b"lo")
}

/// Name of the tun interface inside every sandbox.
pub const TUN_NAME: &[u8] = b"cr0";

/// Create the sandbox's tun device (must run inside its network namespace, before the root
/// is switched: `/dev/net/tun` is not in the sandbox's /dev), address it, make it the
/// default route, and turn IPv6 off. Returns the device fd for the gateway.
pub fn create_tun(cfg: &crate::TunConfig) -> io::Result<OwnedFd> {
    // IPv4 only: no link-local IPv6 address, nothing to leak over v6 (best effort — the
    // gateway denies IPv6 anyway).
    for f in ["all", "default"] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{f}/disable_ipv6"), "1");
    }
    let tun = sys::create_tun_device(TUN_NAME)?;
    let sock = sys::inet_socket()?;
    let mask = std::net::Ipv4Addr::new(255, 255, 255, 0);
    sys::interface_address(sock.as_fd(), TUN_NAME, cfg.guest, mask, cfg.mtu)?;
    sys::interface_up(sock.as_fd(), TUN_NAME)
        .map_err(|e| io::Error::new(e.kind(), format!("bring tun up: {e}")))?;
    sys::add_default_route(sock.as_fd(), TUN_NAME, cfg.gateway)?;
    Ok(tun)
}
