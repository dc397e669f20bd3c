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
/// Bytes the userspace stack sends to the sandbox before it waits for an acknowledgment (it
/// keeps them for resending): what one download has in flight. With window scaling (the
/// sandbox's kernel offers it in every SYN) this can pass 64 KiB, which held a download at
/// 64 KiB per round trip through the stack (docs/performance.md). Per connection.
pub const TCP_SEND_WINDOW: u32 = 1 << 20;
/// Receive window the stack offers the sandbox: what one upload has in flight, and what the
/// stack holds per connection for a reader that has not read it yet (bounded as
/// third_party/ipstack/PATCHED.md says: at most about twice this with out-of-order segments).
pub const TCP_RECV_BUFFER: usize = 512 << 10;
