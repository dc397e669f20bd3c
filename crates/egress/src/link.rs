//! The sandbox's side of the link: the addresses and sizes its tun interface is configured
//! with (by the backend, from these constants) and the gateway's stack uses.

use std::net::Ipv4Addr;

/// The gateway's own address as the sandbox sees it (DNS server and proxy).
pub const GATEWAY_ADDR: Ipv4Addr = Ipv4Addr::new(100, 96, 0, 1);
/// The sandbox's address on its tun interface.
pub const GUEST_ADDR: Ipv4Addr = Ipv4Addr::new(100, 96, 0, 2);
/// Port of the HTTP proxy on [`GATEWAY_ADDR`].
pub const PROXY_PORT: u16 = 3128;
/// MTU of the tun link. The link never leaves the host, so it can be far larger than
/// Ethernet's: fewer, larger packets through the userspace stack.
pub const MTU: u16 = 16384;
/// TCP window of the userspace stack in each direction (ipstack's default, 16 KiB, caps a
/// connection at a few MB/s); the stack does no window scaling, so 64 KiB is the most it can
/// advertise. It also bounds what the stack buffers per connection.
pub const TCP_WINDOW: u32 = 65_535;
