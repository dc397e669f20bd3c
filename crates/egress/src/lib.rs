//! The egress gateway: a sandbox's only way out.
//!
//! The backend gives each sandbox a network namespace whose single interface is a tun
//! device, with every route pointing into it. The server hands that device's fd to
//! [`Gateway::start`], which runs a userspace TCP/IP stack (`ipstack`) on it. Nothing the
//! sandbox sends reaches a real network stack of the host: each TCP connection and UDP
//! flow surfaces here, is judged against the sandbox's compiled [`NetworkPolicy`], and is
//! either proxied by the gateway or dropped with a deny event carrying a stable reason code.
//!
//! * DNS (UDP or TCP to the gateway address, port 53) is answered here ([`dns`]): allowed
//!   names get synthetic addresses ([`names`]), other names NXDOMAIN.
//! * TCP to a synthetic address is a connection to that name: port checked, TLS SNI / HTTP
//!   Host checked against the name ([`tcp`]), then proxied from the host.
//! * TCP to the gateway's proxy port is an HTTP proxy (`HTTP_PROXY`/`HTTPS_PROXY`) with
//!   CONNECT and absolute-form requests ([`http`]).
//! * Everything else — direct IPs, other UDP, other resolvers, ICMP, IPv6 — is denied.

pub mod addrs;
pub mod approval;
mod closing;
mod connect;
pub mod device;
pub mod dns;
pub mod event;
mod framing;
#[cfg(test)]
mod gateway_tests;
pub mod http;
pub mod intercept;
pub mod limits;
pub mod names;
pub mod redact;
pub mod registry;
mod relay;
pub mod secrets;
pub mod share;
pub mod sniff;
#[cfg(test)]
mod stack_tests;
mod strict;
pub mod tcp;
pub mod tls;
mod trial;
pub mod upstream;

pub use approval::Approvals;
pub use event::{EgressEvent, EventSink};
pub use secrets::{Secret, Secrets};
pub use tls::SandboxCa;
pub use upstream::UpstreamConfig;

use cleanroom_policy::{DenyReason, NetworkPolicy};
use ipstack::{IpStack, IpStackConfig, IpStackStream};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use upstream::UpstreamError;

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
/// First retransmission timeout of the userspace stack (ipstack's default is 1 s). The link
/// is in-host, so a segment is lost only when a queue overflowed: resend soon.
const TCP_RTO: std::time::Duration = std::time::Duration::from_millis(200);
/// Resends of one segment (or FIN) before the connection is reset; the timeout doubles each
/// time, so ~51 s of silence from the sandbox's side.
const TCP_MAX_RETRANSMITS: usize = 8;
/// How long the stack keeps a quiet UDP flow.
const UDP_IDLE: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a DNS client port is served after its last query.
const DNS_FLOW_IDLE: std::time::Duration = std::time::Duration::from_secs(1);
pub use limits::{MAX_FLOWS, MAX_UDP_FLOWS};

/// Everything one sandbox's gateway needs to decide.
pub struct Ctx {
    pub policy: NetworkPolicy,
    pub upstream: Arc<UpstreamConfig>,
    pub secrets: Secrets,
    /// The sandbox's CA, when it has secrets (TLS to bound hosts is terminated with it).
    pub ca: Option<SandboxCa>,
    /// Mediated package registries (`sandbox.registries`).
    pub registries: registry::Mediation,
    pub(crate) names: names::Names,
    pub(crate) events: event::Limited,
    limits: limits::SandboxLimits,
    /// Open approval requests, remembered answers, learned destinations.
    pub(crate) approvals: Arc<Approvals>,
}

impl Ctx {
    pub(crate) async fn upstream_connect(
        &self,
        host: &str,
        port: u16,
    ) -> Result<TcpStream, UpstreamError> {
        match host.parse::<IpAddr>() {
            Ok(ip) => self.upstream.connect_addr(SocketAddr::new(ip, port)).await,
            Err(_) => self.upstream.connect(host, port).await,
        }
    }

    pub(crate) fn report_upstream_error(
        &self,
        host: &str,
        port: u16,
        proto: &'static str,
        e: UpstreamError,
    ) {
        self.events.emit(match e {
            UpstreamError::Denied(r, msg) => EgressEvent::deny(host, port, proto, r, msg),
            UpstreamError::Unreachable(msg) => EgressEvent::error(host, port, proto, msg),
        });
    }
}

/// A running gateway. Dropping it stops every task and closes every proxied connection,
/// without blocking: the stack's streams are dropped by aborted tasks, and the vendored
/// ipstack's stream `Drop` never waits (third_party/ipstack/PATCHED.md). What it holds is
/// bounded by [`limits`].
pub struct Gateway {
    task: tokio::task::JoinHandle<()>,
    traffic: Arc<device::Traffic>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a gateway consults beyond its policy: the sandbox's mediated package registries and
/// its pending egress approvals.
pub struct Mediators {
    /// Registry mediation bound at create (lockfile pins, shared cache); `Mediation::none()`
    /// when the policy declares no registries.
    pub registries: registry::Mediation,
    /// The sandbox's approval requests (`network.unknown: ask`, learn mode).
    pub approvals: Arc<Approvals>,
    /// The sandbox owner's share of the server-wide flow budget (the server's
    /// [`share::Shares::owner`] for the owner's key).
    pub share: share::Share,
}

impl Gateway {
    /// Serve one sandbox's tun device. Must be called inside a multi-threaded tokio runtime.
    /// `mediators` carries the sandbox's registry mediation (its hosts must be among the names
    /// `ca` may vouch for) and its approvals (shared with whoever answers its requests).
    pub fn start(
        device: OwnedFd,
        policy: NetworkPolicy,
        upstream: Arc<UpstreamConfig>,
        secrets: Secrets,
        ca: Option<SandboxCa>,
        sink: EventSink,
        mediators: Mediators,
    ) -> std::io::Result<Gateway> {
        let Mediators {
            registries,
            approvals,
            share,
        } = mediators;
        let dev = device::TunDevice::new(device)?;
        let traffic = dev.traffic();
        let mut cfg = IpStackConfig::default();
        cfg.mtu_unchecked(MTU);
        cfg.packet_information(false);
        cfg.udp_timeout(UDP_IDLE);
        let mut tcp = ipstack::TcpConfig::default();
        tcp.max_unacked_bytes = TCP_WINDOW;
        tcp.read_buffer_size = TCP_WINDOW as usize;
        tcp.rto = TCP_RTO;
        tcp.max_retransmit_count = TCP_MAX_RETRANSMITS;
        // Without an MSS option the sandbox's kernel assumes 536 bytes and sends its data
        // to the gateway in segments 30 times smaller than the link allows.
        tcp.options = Some(vec![ipstack::TcpOptions::MaximumSegmentSize(MTU - 40)]);
        cfg.with_tcp_config(tcp);
        let ctx = Arc::new(Ctx {
            policy,
            upstream,
            secrets,
            ca,
            registries,
            names: names::Names::default(),
            events: event::Limited::new(sink),
            limits: limits::SandboxLimits::new(share),
            approvals,
        });
        let stack = IpStack::new(cfg, dev);
        let task = tokio::spawn(accept_loop(stack, ctx));
        Ok(Gateway { task, traffic })
    }

    /// Bytes the sandbox sent (`.0`) and received (`.1`) through its device so far: every
    /// packet, allowed or denied, DNS included.
    pub fn traffic(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.traffic.tx.load(Relaxed), self.traffic.rx.load(Relaxed))
    }
}

async fn accept_loop(mut stack: IpStack, ctx: Arc<Ctx>) {
    // Connection tasks live in the set: aborting this loop (Gateway dropped) drops the set,
    // which aborts every one of them.
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            s = stack.accept() => match s {
                Ok(stream) => dispatch(stream, &ctx, &mut tasks),
                Err(_) => break,
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

fn dispatch(stream: IpStackStream, ctx: &Arc<Ctx>, tasks: &mut JoinSet<()>) {
    // TCP and DNS-over-UDP flows hold resources for a while (a task, stack buffers, an
    // upstream socket): each takes a permit of the sandbox's (and for TCP the server's)
    // budget or is refused at once. Other UDP is answered with a deny and dropped.
    let permit = match &stream {
        IpStackStream::Tcp(t) => ctx
            .limits
            .tcp()
            .map(|p| Permit::Tcp { _held: p })
            .map_err(|m| (t.peer_addr(), "tcp", m)),
        IpStackStream::Udp(u) => ctx
            .limits
            .udp()
            .map(|p| Permit::Udp { _held: p })
            .map_err(|m| (u.peer_addr(), "udp", m)),
        _ => Ok(Permit::None),
    };
    let permit = match permit {
        Ok(p) => p,
        Err((dst, proto, msg)) => {
            ctx.events.emit(EgressEvent::deny(
                dst.ip().to_string(),
                dst.port(),
                proto,
                DenyReason::TooManyConnections,
                msg,
            ));
            return;
        }
    };
    match stream {
        IpStackStream::Tcp(tcp) => {
            let dst = tcp.peer_addr();
            let ctx = ctx.clone();
            tasks.spawn(async move {
                on_tcp(tcp, dst, ctx).await;
                drop(permit);
            });
        }
        IpStackStream::Udp(udp) => {
            let dst = udp.peer_addr();
            let ctx = ctx.clone();
            tasks.spawn(async move {
                on_udp(udp, dst, ctx).await;
                drop(permit);
            });
        }
        IpStackStream::UnknownTransport(t) => {
            let (dst, proto) = (t.dst_addr(), t.ip_protocol());
            // ICMPv6 neighbour/router chatter is the kernel's, not the sandbox's doing.
            if dst.is_ipv6() {
                return;
            }
            let name = if proto == ipstack::IpNumber::ICMP {
                "icmp"
            } else {
                "ip"
            };
            ctx.events.emit(EgressEvent::deny(
                dst.to_string(),
                0,
                name,
                DenyReason::ProtocolNotAllowed,
                format!("{proto:?} packet to {dst} dropped"),
            ));
        }
        IpStackStream::UnknownNetwork(_) => {}
    }
}

/// A flow's hold on its sandbox's budget, released when the flow's task ends.
enum Permit {
    Tcp {
        _held: limits::TcpPermit,
    },
    Udp {
        _held: tokio::sync::OwnedSemaphorePermit,
    },
    None,
}

/// Where a sandbox TCP connection goes, decided from its destination alone.
enum TcpRoute {
    /// The gateway's HTTP proxy.
    Proxy,
    /// The gateway's resolver, over TCP.
    Dns,
    /// A name our DNS handed out, allowed on this port.
    Named(String),
    /// A name our DNS handed out that the policy asks about or learns ([`approval`]).
    Held(String),
    /// An address the sandbox named itself (only under `dangerously_allow_all`).
    Direct,
    Deny(EgressEvent),
}

fn tcp_route(ctx: &Ctx, dst: SocketAddr) -> TcpRoute {
    let port = dst.port();
    let IpAddr::V4(ip) = dst.ip() else {
        return TcpRoute::Deny(EgressEvent::deny(
            dst.ip().to_string(),
            port,
            "tcp",
            DenyReason::Ipv6NotAllowed,
            "the sandbox network is IPv4-only",
        ));
    };
    if ip == GATEWAY_ADDR && port == PROXY_PORT {
        return TcpRoute::Proxy;
    }
    if ip == GATEWAY_ADDR && port == 53 {
        return TcpRoute::Dns;
    }
    if let Some(host) = ctx.names.name_of(ip) {
        if approval::needs_admit(ctx, &host, port) {
            return TcpRoute::Held(host);
        }
        return match ctx.policy.decide(&host, port) {
            Ok(()) => TcpRoute::Named(host),
            Err(r) => TcpRoute::Deny(EgressEvent::deny(
                &host,
                port,
                "tcp",
                r,
                format!("{host}:{port} is not allowed by the policy"),
            )),
        };
    }
    if ip != GATEWAY_ADDR && ctx.policy.allows_ip_literals() {
        return TcpRoute::Direct;
    }
    let reason = if matches!(port, 53 | 853) && ip != GATEWAY_ADDR {
        DenyReason::ResolverNotAllowed
    } else {
        DenyReason::IpLiteralNotAllowed
    };
    TcpRoute::Deny(EgressEvent::deny(
        ip.to_string(),
        port,
        "tcp",
        reason,
        format!("direct connection to {dst}: only names resolved by the gateway are reachable"),
    ))
}

async fn on_tcp(mut tcp: ipstack::IpStackTcpStream, dst: SocketAddr, ctx: Arc<Ctx>) {
    match tcp_route(&ctx, dst) {
        TcpRoute::Proxy => http::serve(tcp, ctx, http::Mode::Proxy).await,
        TcpRoute::Dns => dns::serve_tcp(tcp, &ctx).await,
        TcpRoute::Named(host) => tcp::handle_named(tcp, ctx, host, dst.port()).await,
        TcpRoute::Held(host) => match approval::admit(&ctx, &host, dst.port(), "tcp").await {
            Ok(()) => tcp::handle_named(tcp, ctx, host, dst.port()).await,
            Err((reason, msg)) => {
                ctx.events
                    .emit(EgressEvent::deny(&host, dst.port(), "tcp", reason, msg));
                tcp::close_soon(&mut tcp).await;
            }
        },
        TcpRoute::Direct => match ctx.upstream.connect_addr(dst).await {
            Ok(up) => {
                ctx.events
                    .emit(EgressEvent::allow(dst.ip().to_string(), dst.port(), "tcp"));
                tcp::splice(tcp, up).await
            }
            Err(e) => {
                ctx.report_upstream_error(&dst.ip().to_string(), dst.port(), "tcp", e);
                tcp::close_soon(&mut tcp).await;
            }
        },
        TcpRoute::Deny(event) => {
            ctx.events.emit(event);
            // Close at once so the client sees the refusal instead of waiting it out.
            tcp::close_soon(&mut tcp).await;
        }
    }
}

async fn on_udp(mut udp: ipstack::IpStackUdpStream, dst: SocketAddr, ctx: Arc<Ctx>) {
    if dst == SocketAddr::new(IpAddr::V4(GATEWAY_ADDR), 53) {
        let mut buf = vec![0u8; 4096];
        // One flow per client port, which resolvers use for one lookup (A and AAAA) and
        // close: answer until it has been quiet for a moment, then free the flow's slot.
        while let Ok(Ok(n)) = tokio::time::timeout(DNS_FLOW_IDLE, udp.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            let (resp, events) = dns::answer(&buf[..n], &ctx.policy, &ctx.names);
            for e in events {
                ctx.events.emit(e);
            }
            if let Some(resp) = resp {
                if udp.write_all(&resp).await.is_err() {
                    break;
                }
            }
        }
        return;
    }
    let (reason, proto) = if !dst.is_ipv4() {
        (DenyReason::Ipv6NotAllowed, "udp")
    } else if dst.port() == 53 {
        (DenyReason::ResolverNotAllowed, "dns")
    } else {
        (DenyReason::ProtocolNotAllowed, "udp")
    };
    ctx.events.emit(EgressEvent::deny(
        dst.ip().to_string(),
        dst.port(),
        proto,
        reason,
        format!("UDP to {dst} dropped: only DNS to the gateway is answered"),
    ));
}
