//! Packet-level tests of the userspace TCP stack the gateway runs on each sandbox's tun
//! device: the vendored ipstack (third_party/ipstack, PATCHED.md). They live here because
//! that crate is outside the workspace. The test plays the sandbox's kernel on a device
//! made of two channels — the one boundary a real kernel cannot be made to misbehave on
//! cue (drop a segment, ignore a window, go silent). The same behaviours against a real
//! kernel: crates/cli/tests/egress_tcp.rs.

use ipstack::{IpStack, IpStackConfig, IpStackStream, IpStackTcpStream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::timeout;

const PEER: [u8; 4] = [100, 96, 0, 2];
const SERVER: [u8; 4] = [10, 0, 0, 1];
const PEER_PORT: u16 = 40000;
const MTU: u16 = 1500;
const MSS: usize = 1460;

/// One packet per read and per write, like a tun fd.
struct ChannelDevice {
    inbound: UnboundedReceiver<Vec<u8>>,
    outbound: UnboundedSender<Vec<u8>>,
}

impl AsyncRead for ChannelDevice {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.inbound.poll_recv(cx) {
            Poll::Ready(Some(p)) => {
                buf.put_slice(&p);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(None) => Poll::Ready(Ok(())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for ChannelDevice {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let _ = self.outbound.send(b.to_vec());
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// A TCP segment as the peer sees it.
#[derive(Debug)]
struct Seg {
    seq: u32,
    ack: u32,
    window: u16,
    syn: bool,
    fin: bool,
    rst: bool,
    payload: Vec<u8>,
}

/// The sandbox's side of one connection: sends segments, reads what the stack sends.
struct Peer {
    to_stack: UnboundedSender<Vec<u8>>,
    from_stack: UnboundedReceiver<Vec<u8>>,
    /// Our next sequence number.
    seq: u32,
    /// Kept alive with the peer (dropping it stops the stack).
    _stack: Option<IpStack>,
}

impl Peer {
    fn send(&self, seq: u32, ack: u32, window: u16, flags: &str, payload: &[u8]) {
        let mut b =
            etherparse::PacketBuilder::ipv4(PEER, SERVER, 64).tcp(PEER_PORT, 80, seq, window);
        if flags.contains('S') {
            b = b.syn();
        }
        if flags.contains('F') {
            b = b.fin();
        }
        if flags.contains('A') {
            b = b.ack(ack);
        }
        let mut out = Vec::new();
        b.write(&mut out, payload).expect("build packet");
        self.to_stack.send(out).expect("stack gone");
    }

    /// The next segment from the stack, or None if none comes within `wait`.
    async fn recv(&mut self, wait: Duration) -> Option<Seg> {
        let p = timeout(wait, self.from_stack.recv()).await.ok()??;
        let sliced = etherparse::SlicedPacket::from_ip(&p).expect("stack sent a bad packet");
        let Some(etherparse::TransportSlice::Tcp(t)) = sliced.transport else {
            panic!("not TCP: {p:?}");
        };
        Some(Seg {
            seq: t.sequence_number(),
            ack: t.acknowledgment_number(),
            window: t.window_size(),
            syn: t.syn(),
            fin: t.fin(),
            rst: t.rst(),
            payload: t.payload().to_vec(),
        })
    }
}

/// A stack with `tcp` settings, a connection opened by the peer offering `window`, and the
/// stack's next sequence number.
async fn connect(tcp: ipstack::TcpConfig, window: u16) -> (Peer, IpStackTcpStream, u32) {
    let (to_stack, inbound) = unbounded_channel();
    let (outbound, from_stack) = unbounded_channel();
    let mut cfg = IpStackConfig::default();
    cfg.mtu_unchecked(MTU);
    cfg.packet_information(false);
    cfg.with_tcp_config(tcp);
    let mut stack = IpStack::new(cfg, ChannelDevice { inbound, outbound });
    let mut peer = Peer {
        to_stack,
        from_stack,
        seq: 1000,
        _stack: None,
    };
    peer.send(peer.seq, 0, window, "S", &[]);
    peer.seq += 1;
    let stream = match timeout(Duration::from_secs(5), stack.accept()).await {
        Ok(Ok(IpStackStream::Tcp(t))) => t,
        other => panic!("no TCP stream: {:?}", other.map(|r| r.map(|_| ()))),
    };
    let synack = peer.recv(Duration::from_secs(5)).await.expect("SYN-ACK");
    assert!(synack.syn && synack.ack == peer.seq, "{synack:?}");
    let next = synack.seq.wrapping_add(1);
    peer.send(peer.seq, next, window, "A", &[]);
    peer._stack = Some(stack);
    (peer, stream, next)
}

fn config(rto_ms: u64, retransmits: usize) -> ipstack::TcpConfig {
    let mut tcp = ipstack::TcpConfig::default();
    tcp.max_unacked_bytes = 65_535;
    tcp.read_buffer_size = 65_535;
    tcp.rto = Duration::from_millis(rto_ms);
    tcp.max_retransmit_count = retransmits;
    tcp
}

/// A lost segment with nothing sent after it (the tail of a response) is resent on the
/// stack's own timer; upstream resent only when the peer sent something, which it never
/// does when it got nothing.
#[tokio::test]
async fn a_lost_tail_segment_is_resent_without_any_packet_from_the_peer() {
    let (mut peer, mut stream, next) = connect(config(50, 8), 65_535).await;
    stream.write_all(b"the last bytes").await.unwrap();
    let lost = peer.recv(Duration::from_secs(5)).await.expect("data");
    assert_eq!(
        (lost.seq, lost.payload.as_slice()),
        (next, &b"the last bytes"[..])
    );
    // The peer "lost" it: it sends nothing. The stack must send it again by itself.
    let again = peer
        .recv(Duration::from_secs(5))
        .await
        .expect("no retransmission");
    assert_eq!((again.seq, again.payload), (lost.seq, lost.payload));
}

/// New data never goes past the window the peer offers: a partly used window takes a
/// partial segment. Upstream sent a full segment whenever any room was left, and a real
/// kernel drops what lies beyond its window.
#[tokio::test]
async fn data_never_goes_past_the_peers_window() {
    let window: u16 = 3000; // two full segments and part of a third
    let (mut peer, mut stream, next) = connect(config(5_000, 8), window).await;
    let writer = tokio::spawn(async move {
        stream.write_all(&[7u8; 10_000]).await.unwrap();
        stream
    });
    let mut end = next;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        assert!(seg.payload.len() <= MSS, "{} bytes", seg.payload.len());
        end = end.max(seg.seq.wrapping_add(seg.payload.len() as u32));
    }
    assert_eq!(
        end.wrapping_sub(next),
        window as u32,
        "bytes sent into a {window}-byte window"
    );
    // Acknowledging everything opens the window again and the rest follows.
    peer.send(peer.seq, end, window, "A", &[]);
    let seg = peer.recv(Duration::from_secs(5)).await.expect("more data");
    assert_eq!(seg.seq, end);
    writer.abort();
}

/// A peer that answers no retransmission gets a reset and the stream ends with an error;
/// upstream dropped the segment after its last resend and went on as if delivered.
#[tokio::test]
async fn a_peer_silent_through_every_resend_gets_a_reset() {
    let (mut peer, mut stream, _) = connect(config(20, 3), 65_535).await;
    stream.write_all(b"hello").await.unwrap();
    let mut resets = 0;
    let mut data = 0;
    while let Some(seg) = peer.recv(Duration::from_secs(3)).await {
        if seg.rst {
            resets += 1;
            break;
        }
        data += usize::from(!seg.payload.is_empty());
    }
    assert_eq!(
        (data, resets),
        (4, 1),
        "the segment and 3 resends, then a reset"
    );
    let mut buf = [0u8; 8];
    let read = timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
}

/// What the peer sends is acknowledged only as far as the stack can hold: the 64 KiB
/// window, counting what the application has not read. A peer that ignores the window
/// (a sandbox can craft its own segments) cannot make the gateway buffer more; upstream
/// acknowledged and queued everything.
#[tokio::test]
async fn a_peer_that_ignores_the_window_cannot_make_the_stack_hold_more() {
    let (mut peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    let chunk = vec![1u8; 1000];
    for _ in 0..300 {
        peer.send(peer.seq, next, 65_535, "A", &chunk);
        peer.seq += 1000;
    }
    let (mut acked, mut last_window) = (1001u32, u16::MAX);
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        acked = acked.max(seg.ack);
        last_window = seg.window;
    }
    let held = acked - 1001;
    assert!(held <= 65_535, "acknowledged {held} bytes nobody read");
    assert_eq!(last_window, 0, "the window closed");
    // Reading frees the window, and the stack says so by itself once a segment fits.
    let mut buf = vec![0u8; 40_000];
    stream.read_exact(&mut buf).await.unwrap();
    let update = peer
        .recv(Duration::from_secs(5))
        .await
        .expect("window update");
    assert!(update.window as usize >= MSS, "{update:?}");
}

/// A shutdown while data is in flight sends the FIN when the last ACK arrives; upstream
/// sent it only if nothing was in flight when shutdown was called, and never later.
#[tokio::test]
async fn shutdown_sends_the_fin_once_the_data_is_acknowledged() {
    let (mut peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    stream.write_all(b"response").await.unwrap();
    let closer = tokio::spawn(async move {
        let _ = stream.shutdown().await;
    });
    let data = peer.recv(Duration::from_secs(5)).await.expect("data");
    assert_eq!(data.payload, b"response");
    assert!(
        peer.recv(Duration::from_millis(200)).await.is_none(),
        "nothing before the ACK"
    );
    peer.send(peer.seq, next + 8, 65_535, "A", &[]);
    let fin = peer.recv(Duration::from_secs(5)).await.expect("no FIN");
    assert!(fin.fin && fin.seq == next + 8, "{fin:?}");
    closer.abort();
}

/// The peer's FIN is the end of the stream for the reader, after its data — and the stack
/// does not answer with its own FIN before the application is done writing (a client that
/// half-closes after its request still gets the response).
#[tokio::test]
async fn a_half_close_ends_the_read_side_only() {
    let (mut peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    peer.send(peer.seq, next, 65_535, "AF", b"request");
    let mut got = Vec::new();
    timeout(Duration::from_secs(5), stream.read_to_end(&mut got))
        .await
        .expect("no end of stream")
        .unwrap();
    assert_eq!(got, b"request");
    while let Some(seg) = peer.recv(Duration::from_millis(200)).await {
        assert!(!seg.fin, "a FIN before the response: {seg:?}");
    }
    stream.write_all(b"response").await.unwrap();
    let seg = peer.recv(Duration::from_secs(5)).await.expect("response");
    assert_eq!(seg.payload, b"response");
}
