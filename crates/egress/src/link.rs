//! The sandbox's side of the link: the addresses and sizes its tun interface is configured
//! with (by the backend, from these constants) and the gateway's stack uses.

use std::net::Ipv4Addr;

/// The gateway's own address as the sandbox sees it (DNS server and proxy).
pub const GATEWAY_ADDR: Ipv4Addr = Ipv4Addr::new(100, 96, 0, 1);
/// The sandbox's address on its tun interface.
pub const GUEST_ADDR: Ipv4Addr = Ipv4Addr::new(100, 96, 0, 2);
/// Port of the HTTP proxy on [`GATEWAY_ADDR`].
pub const PROXY_PORT: u16 = 3128;
/// MTU of the tun link: the largest an IPv4 packet can be. The link never leaves the host,
/// so it can be far larger than Ethernet's: every cost the userspace stack pays per packet
/// (a `read`/`write` on the tun, a task wake-up, an ACK) is paid four times less often than
/// at 16 KiB, and the sandbox's kernel needs no segmentation offload to send 64 KiB segments
/// (docs/performance.md).
pub const MTU: u16 = 65535;
/// Payload of one full-sized TCP segment on the link (the MTU less the IPv4 and TCP headers).
pub const MSS: usize = MTU as usize - 40;
/// Bytes the userspace stack sends to the sandbox before it waits for an acknowledgment (it
/// keeps them for resending): what one download has in flight. With window scaling (the
/// sandbox's kernel offers it in every SYN) this can pass 64 KiB, which held a download at
/// 64 KiB per round trip through the stack (docs/performance.md). Per connection.
pub const TCP_SEND_WINDOW: u32 = 1 << 20;
/// Receive window the stack offers the sandbox: what one upload has in flight, and what the
/// stack holds per connection for a reader that has not read it yet (bounded as
/// third_party/ipstack/PATCHED.md says: at most about twice this with out-of-order segments).
pub const TCP_RECV_BUFFER: usize = 512 << 10;
/// Bytes the stack holds for all of one sandbox's connections together: data received and
/// not yet taken by the gateway, out-of-order segments, data sent and not yet acknowledged.
/// Each connection is bounded by the two windows above, but a sandbox may open
/// [`crate::MAX_FLOWS`] of them (about 1.5 GiB of windows); past this budget the stack offers
/// smaller windows, drops what does not fit (the sandbox's kernel resends it) and makes
/// writers wait (docs/network.md). Room for a few dozen connections at full speed.
pub const STACK_BUDGET: usize = 32 << 20;
