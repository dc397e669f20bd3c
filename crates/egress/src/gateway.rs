//! One sandbox's gateway: the userspace TCP/IP stack on its tun device, and where each flow
//! goes — the proxy, the resolver, a name our DNS handed out (judged by [`crate::judge`]),
//! or a refusal with its reason code.

use crate::approval::Approvals;
use crate::ctx::Ctx;
use crate::event::{EgressEvent, EventSink};
use crate::judge::{judge, settle, Query, Ruling};
use crate::link::{GATEWAY_ADDR, MTU, PROXY_PORT, STACK_BUDGET, TCP_RECV_BUFFER, TCP_SEND_WINDOW};
use crate::rules::Rules;
use crate::secrets::Secrets;
use crate::tls::SandboxCa;
use crate::upstream::UpstreamConfig;
use crate::{closing, cut, device, dns, event, limits, names, registry, share, tcp};
use cleanroom_policy::{DenyReason, NetworkPolicy};
use ipstack::{IpStack, IpStackConfig, IpStackStream};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinSet;

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

/// A running gateway. Dropping it stops every task and closes every proxied connection,
/// without blocking: the stack's streams are dropped by aborted tasks, and the vendored
/// ipstack's stream `Drop` never waits (third_party/ipstack/PATCHED.md). What it holds is
/// bounded by [`limits`].
pub struct Gateway {
    pub(crate) task: tokio::task::JoinHandle<()>,
    pub(crate) traffic: Arc<device::Traffic>,
    pub(crate) rules: Arc<Rules>,
    /// The userspace stack's byte budget (`None` on the kernel plane: the kernel's socket
    /// buffers bound a connection there).
    pub(crate) budget: Option<Arc<ipstack::ByteBudget>>,
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
        tcp.max_unacked_bytes = TCP_SEND_WINDOW;
        tcp.read_buffer_size = TCP_RECV_BUFFER;
        tcp.rto = TCP_RTO;
        tcp.max_retransmit_count = TCP_MAX_RETRANSMITS;
        // Without an MSS option the sandbox's kernel assumes 536 bytes and sends its data
        // to the gateway in segments 30 times smaller than the link allows. Without window
        // scaling neither side can have more than 64 KiB in flight (docs/performance.md).
        tcp.options = Some(vec![
            ipstack::TcpOptions::MaximumSegmentSize(crate::link::MSS as u16),
            ipstack::TcpOptions::WindowScale(0),
        ]);
        let budget = Arc::new(ipstack::ByteBudget::new(STACK_BUDGET));
        tcp.budget = Some(budget.clone());
        cfg.with_tcp_config(tcp);
        let rules = Arc::new(Rules::new(policy));
        let ctx = Arc::new(Ctx {
            rules: rules.clone(),
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
        Ok(Gateway {
            task,
            traffic,
            rules,
            budget: Some(budget),
        })
    }

    /// Judge every new connection, DNS answer and request by `policy` from now on (live
    /// egress rules); with `cut`, also end the established flows whose destination `policy`
    /// denies (each with a deny event).
    pub fn replace_policy(&self, policy: NetworkPolicy, cut: bool) {
        self.rules.replace(policy, cut);
    }

    /// Bytes the stack holds now for all of this sandbox's connections, and the bound on
    /// them ([`STACK_BUDGET`]).
    pub fn stack_bytes(&self) -> (usize, usize) {
        self.budget
            .as_ref()
            .map_or((0, 0), |b| (b.used(), b.limit()))
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
pub(crate) enum TcpRoute {
    /// The gateway's HTTP proxy.
    Proxy,
    /// The gateway's resolver, over TCP.
    Dns,
    /// A name our DNS handed out, allowed on this port.
    Named(String),
    /// A name our DNS handed out that the policy asks about or learns: settled in the
    /// connection's task ([`settle`]).
    Held(Ruling),
    /// An address the sandbox named itself (only under `dangerously_allow_all`).
    Direct,
    Deny(EgressEvent),
}

pub(crate) fn tcp_route(ctx: &Ctx, dst: SocketAddr) -> TcpRoute {
    let port = dst.port();
    if dst.ip() == IpAddr::V4(GATEWAY_ADDR) {
        match port {
            PROXY_PORT => return TcpRoute::Proxy,
            53 => return TcpRoute::Dns,
            _ => {}
        }
    }
    let name = match dst.ip() {
        IpAddr::V4(ip) => ctx.names.name_of(ip),
        IpAddr::V6(_) => None,
    };
    let policy = ctx.policy();
    let ruling = match &name {
        Some(host) => judge(&policy, Query::Reach { host, port }),
        None => judge(&policy, Query::Addr(dst)),
    };
    match ruling {
        Ruling::Allow(host) if name.is_some() => TcpRoute::Named(host),
        Ruling::Allow(_) => TcpRoute::Direct,
        Ruling::Deny(d) => {
            TcpRoute::Deny(EgressEvent::deny(d.host, port, "tcp", d.reason, d.message))
        }
        held => TcpRoute::Held(held),
    }
}

/// One TCP connection the sandbox opened to `dst`, on either plane.
pub(crate) async fn on_tcp<S>(mut tcp: S, dst: SocketAddr, ctx: Arc<Ctx>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    match tcp_route(&ctx, dst) {
        TcpRoute::Proxy => {
            let flow = crate::connect::serve_proxy(tcp, ctx.clone());
            cut::guarded_proxy(&ctx, flow).await
        }
        TcpRoute::Dns => dns::serve_tcp(tcp, &ctx).await,
        TcpRoute::Named(host) => named(tcp, ctx, host, dst.port()).await,
        TcpRoute::Held(ruling) => match settle(&ctx, ruling, "tcp").await {
            Ok(host) => named(tcp, ctx, host, dst.port()).await,
            Err(d) => {
                ctx.events.emit(EgressEvent::deny(
                    d.host,
                    dst.port(),
                    "tcp",
                    d.reason,
                    d.message,
                ));
                closing::close_soon(&mut tcp).await;
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
                closing::close_soon(&mut tcp).await;
            }
        },
        TcpRoute::Deny(event) => {
            ctx.events.emit(event);
            // Close at once so the client sees the refusal instead of waiting it out.
            closing::close_soon(&mut tcp).await;
        }
    }
}

/// A transparent connection admitted to `host:port`, ended by a cut that denies it.
async fn named<S>(tcp: S, ctx: Arc<Ctx>, host: String, port: u16)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let flow = tcp::handle_named(tcp, ctx.clone(), host.clone(), port);
    cut::guarded(&ctx, &host, port, "tcp", flow).await
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
            let (resp, events) = dns::answer(&buf[..n], &ctx.policy(), &ctx.names);
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
    ctx.events.emit(udp_denied(dst));
}

/// The deny event of a UDP datagram to `dst` that is not DNS to the gateway (both planes).
pub(crate) fn udp_denied(dst: SocketAddr) -> EgressEvent {
    let (reason, proto) = if !dst.is_ipv4() {
        (DenyReason::Ipv6NotAllowed, "udp")
    } else if dst.port() == 53 {
        (DenyReason::ResolverNotAllowed, "dns")
    } else {
        (DenyReason::ProtocolNotAllowed, "udp")
    };
    EgressEvent::deny(
        dst.ip().to_string(),
        dst.port(),
        proto,
        reason,
        format!("UDP to {dst} dropped: only DNS to the gateway is answered"),
    )
}
