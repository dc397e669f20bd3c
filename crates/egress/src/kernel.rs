//! The kernel-socket data plane: the sandbox's veth ends in a gateway network namespace
//! whose nftables table hands every TCP connection to one transparent listener (the
//! accepted socket's local address is the destination the sandbox asked for), DNS to the
//! gateway's address to one UDP socket, and logs (NFLOG) and drops everything else. The
//! backend makes the namespace, the table and these sockets; this module serves them with
//! the same judge and the same per-connection code as the userspace stack
//! ([`crate::gateway::on_tcp`]): only where the bytes come from differs.

use crate::ctx::Ctx;
use crate::device::Traffic;
use crate::event::EgressEvent;
use crate::gateway::{on_tcp, udp_denied};
use cleanroom_policy::DenyReason;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::io::unix::AsyncFd;
use tokio::task::JoinSet;

/// The sockets of one sandbox's gateway namespace (made by the backend, all non-blocking).
pub struct KernelSockets {
    /// TCP, `IP_TRANSPARENT`, listening: every connection the sandbox opens.
    pub listener: OwnedFd,
    /// UDP on the gateway's address, port 53.
    pub dns: OwnedFd,
    /// NFLOG (netlink) bound to the table's log group: one message per refused packet.
    pub log: OwnedFd,
}

impl crate::gateway::Gateway {
    /// Serve one sandbox's gateway namespace (the kernel plane): the same judge, the same
    /// checks, on connections the host kernel's TCP terminated. Must be called inside a
    /// multi-threaded tokio runtime.
    pub fn start_kernel(
        sockets: KernelSockets,
        policy: cleanroom_policy::NetworkPolicy,
        upstream: Arc<crate::upstream::UpstreamConfig>,
        secrets: crate::secrets::Secrets,
        ca: Option<crate::tls::SandboxCa>,
        sink: crate::event::EventSink,
        mediators: crate::gateway::Mediators,
    ) -> io::Result<crate::gateway::Gateway> {
        let crate::gateway::Mediators {
            registries,
            approvals,
            share,
        } = mediators;
        let rules = Arc::new(crate::rules::Rules::new(policy));
        let ctx = Arc::new(Ctx {
            rules: rules.clone(),
            upstream,
            secrets,
            ca,
            registries,
            names: crate::names::Names::default(),
            events: crate::event::Limited::new(sink),
            limits: crate::limits::SandboxLimits::new(share),
            approvals,
        });
        let traffic = Arc::new(Traffic::default());
        let task = serve(sockets, ctx, traffic.clone())?;
        Ok(crate::gateway::Gateway {
            task,
            traffic,
            rules,
            budget: None,
        })
    }
}

/// Start serving; the task ends (and every connection with it) when aborted.
fn serve(
    s: KernelSockets,
    ctx: Arc<Ctx>,
    traffic: Arc<Traffic>,
) -> io::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::from_std(std::net::TcpListener::from(s.listener))?;
    let dns = tokio::net::UdpSocket::from_std(std::net::UdpSocket::from(s.dns))?;
    // SAFETY: an OwnedFd is a valid open fd and returns the same fd for its whole life.
    let log = unsafe { AsyncFd::register(LogFd(s.log)) }.map_err(io::Error::from)?;
    Ok(tokio::spawn(run(listener, dns, log, ctx, traffic)))
}

struct LogFd(OwnedFd);

impl AsRawFd for LogFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

async fn run(
    listener: tokio::net::TcpListener,
    dns: tokio::net::UdpSocket,
    log: AsyncFd<LogFd>,
    ctx: Arc<Ctx>,
    traffic: Arc<Traffic>,
) {
    // Connection tasks live in the set: aborting this task drops it, aborting them all.
    let mut tasks = JoinSet::new();
    let mut query = vec![0u8; 4096];
    let mut logged = vec![0u8; 64 << 10];
    let mut clients = DnsClients::default();
    loop {
        tokio::select! {
            a = listener.accept() => match a {
                Ok((stream, _)) => accept(stream, &ctx, &traffic, &mut tasks),
                // Out of descriptors or memory: wait a moment rather than spin.
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            },
            r = dns.recv_from(&mut query) => if let Ok((n, peer)) = r {
                traffic.tx.fetch_add(n as u64, Relaxed);
                if let Err(msg) = clients.admit(peer, &ctx) {
                    ctx.events.emit(EgressEvent::deny(
                        peer.ip().to_string(),
                        53,
                        "udp",
                        DenyReason::TooManyConnections,
                        msg,
                    ));
                    continue;
                }
                let (resp, events) = crate::dns::answer(&query[..n], &ctx.policy(), &ctx.names);
                for e in events {
                    ctx.events.emit(e);
                }
                if let Some(resp) = resp {
                    // Never wait on a full socket buffer here: a lost answer is retried.
                    if dns.try_send_to(&resp, peer).is_ok() {
                        traffic.rx.fetch_add(resp.len() as u64, Relaxed);
                    }
                }
            },
            r = log.readable() => if let Ok(mut guard) = r {
                // An error is ENOBUFS: the sandbox sent faster than we read, and those
                // packets went unlogged (and were dropped all the same).
                if let Ok(Ok(n)) = guard.try_io(|fd| recv(fd.get_ref().as_raw_fd(), &mut logged)) {
                    traffic.tx.fetch_add(n as u64, Relaxed);
                    for_each_packet(&logged[..n], |p| {
                        if let Some(e) = refused(p) {
                            ctx.events.emit(e);
                        }
                    });
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// The sandbox's DNS clients (source ports) served in the last [`DNS_CLIENT_IDLE`]: each
/// holds one of the sandbox's UDP permits, as a DNS flow of the userspace stack does, so
/// the same cap ([`crate::MAX_UDP_FLOWS`]) bounds this table.
#[derive(Default)]
struct DnsClients {
    seen: std::collections::HashMap<
        SocketAddr,
        (tokio::time::Instant, tokio::sync::OwnedSemaphorePermit),
    >,
}

/// How long a DNS client port counts as active after its last query (as a DNS flow of the
/// userspace stack is kept).
const DNS_CLIENT_IDLE: std::time::Duration = std::time::Duration::from_secs(1);

impl DnsClients {
    fn admit(&mut self, peer: SocketAddr, ctx: &Ctx) -> Result<(), String> {
        let now = tokio::time::Instant::now();
        if let Some(entry) = self.seen.get_mut(&peer) {
            entry.0 = now;
            return Ok(());
        }
        let permit = match ctx.limits.udp() {
            Ok(p) => p,
            Err(_) => {
                self.seen
                    .retain(|_, (at, _)| now.duration_since(*at) < DNS_CLIENT_IDLE);
                ctx.limits.udp()?
            }
        };
        self.seen.insert(peer, (now, permit));
        Ok(())
    }
}

fn accept(
    stream: tokio::net::TcpStream,
    ctx: &Arc<Ctx>,
    traffic: &Arc<Traffic>,
    tasks: &mut JoinSet<()>,
) {
    // The table hands the listener connections to any address: the socket's local address
    // is where the sandbox meant to go.
    let Ok(dst) = stream.local_addr() else { return };
    let permit = match ctx.limits.tcp() {
        Ok(p) => p,
        Err(msg) => {
            ctx.events.emit(EgressEvent::deny(
                dst.ip().to_string(),
                dst.port(),
                "tcp",
                DenyReason::TooManyConnections,
                msg,
            ));
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let stream = crate::pass::KernelStream::new(stream, traffic.clone());
    let ctx = ctx.clone();
    tasks.spawn(async move {
        on_tcp(stream, dst, ctx).await;
        drop(permit);
    });
}

fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid, writable buffer of `buf.len()` bytes.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Call `f` with the logged packet (from its network header) of each NFLOG message in
/// `datagram`.
fn for_each_packet(datagram: &[u8], mut f: impl FnMut(&[u8])) {
    const NFULNL_MSG_PACKET: u16 = 4 << 8;
    const NFULA_PAYLOAD: u16 = 9;
    let mut rest = datagram;
    while rest.len() >= 16 {
        let len = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let kind = u16::from_ne_bytes([rest[4], rest[5]]);
        if len < 16 || len > rest.len() {
            return;
        }
        if kind == NFULNL_MSG_PACKET && len >= 20 {
            let mut attrs = &rest[20..len];
            while attrs.len() >= 4 {
                let alen = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
                let akind = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
                if alen < 4 || alen > attrs.len() {
                    break;
                }
                if akind == NFULA_PAYLOAD {
                    f(&attrs[4..alen]);
                }
                attrs = &attrs[((alen + 3) & !3).min(attrs.len())..];
            }
        }
        rest = &rest[((len + 3) & !3).min(rest.len())..];
    }
}

/// The deny event of one refused packet, as the userspace stack reports the same packet
/// (`None`: nothing the sandbox did — ICMPv6 chatter of its kernel, or not parseable).
pub(crate) fn refused(p: &[u8]) -> Option<EgressEvent> {
    let (proto, dst, l4): (u8, IpAddr, &[u8]) = match p.first()? >> 4 {
        4 if p.len() >= 20 => {
            let ihl = usize::from(p[0] & 0xf) * 4;
            let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
            (p[9], dst.into(), p.get(ihl..).unwrap_or_default())
        }
        6 if p.len() >= 40 => {
            let octets: [u8; 16] = p[24..40].try_into().ok()?;
            (p[6], Ipv6Addr::from(octets).into(), &p[40..])
        }
        _ => return None,
    };
    let port = || l4.get(2..4).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    match (proto, dst) {
        (17, _) => Some(udp_denied(SocketAddr::new(dst, port()))),
        (58, IpAddr::V6(_)) => None,
        (6, IpAddr::V6(_)) => Some(EgressEvent::deny(
            dst.to_string(),
            port(),
            "tcp",
            DenyReason::Ipv6NotAllowed,
            format!("TCP to [{dst}]:{} dropped: IPv6 is not served", port()),
        )),
        (_, IpAddr::V6(_)) => None,
        (1, _) => Some(EgressEvent::deny(
            dst.to_string(),
            0,
            "icmp",
            DenyReason::ProtocolNotAllowed,
            format!("ICMP packet to {dst} dropped"),
        )),
        // IPv4 TCP is the listener's; what reaches the log is some other protocol.
        (6, _) => None,
        (n, _) => Some(EgressEvent::deny(
            dst.to_string(),
            0,
            "ip",
            DenyReason::ProtocolNotAllowed,
            format!("IP protocol {n} packet to {dst} dropped"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::refused;

    fn v4(proto: u8, dst: [u8; 4], port: u16) -> Vec<u8> {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = proto;
        p[16..20].copy_from_slice(&dst);
        p[22..24].copy_from_slice(&port.to_be_bytes());
        p
    }

    /// Each refused packet gets the event the userspace stack gives the same packet.
    #[test]
    fn refused_packets_are_reported_like_the_stack_reports_them() {
        let e = refused(&v4(17, [8, 8, 8, 8], 53)).unwrap();
        assert_eq!(
            (e.protocol, e.reason, e.port),
            ("dns", "resolver_not_allowed", 53)
        );
        let e = refused(&v4(17, [1, 2, 3, 4], 9999)).unwrap();
        assert_eq!((e.protocol, e.reason), ("udp", "protocol_not_allowed"));
        let e = refused(&v4(1, [1, 2, 3, 4], 0)).unwrap();
        assert_eq!((e.protocol, e.reason), ("icmp", "protocol_not_allowed"));
        assert!(refused(&v4(6, [1, 2, 3, 4], 80)).is_none());
        let mut v6 = vec![0u8; 48];
        v6[0] = 0x60;
        v6[6] = 17;
        v6[42..44].copy_from_slice(&53u16.to_be_bytes());
        let e = refused(&v6).unwrap();
        assert_eq!((e.protocol, e.reason), ("udp", "ipv6_not_allowed"));
        v6[6] = 58;
        assert!(refused(&v6).is_none());
        assert!(refused(&[]).is_none());
        assert!(refused(&[0x45, 0, 0]).is_none());
    }
}
