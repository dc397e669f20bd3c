//! Packet-level tests of the userspace TCP stack the gateway runs on each sandbox's tun
//! device: the vendored ipstack (third_party/ipstack, PATCHED.md). They live here because
//! that crate is outside the workspace. The test plays the sandbox's kernel on a device
//! made of two channels — the one boundary a real kernel cannot be made to misbehave on
//! cue (drop a segment, ignore a window, go silent). The same behaviours against a real
//! kernel: crates/e2e/tests/suites/egress/tcp.rs.

use ipstack::{IpStack, IpStackConfig, IpStackStream, IpStackTcpStream};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::timeout;

pub(crate) const PEER: [u8; 4] = [100, 96, 0, 2];
pub(crate) const SERVER: [u8; 4] = [10, 0, 0, 1];
pub(crate) const PEER_PORT: u16 = 40000;
pub(crate) const MTU: u16 = 1500;
const MSS: usize = 1460;

/// One packet per read and per write, like a tun fd.
pub(crate) struct ChannelDevice {
    pub(crate) inbound: UnboundedReceiver<Vec<u8>>,
    pub(crate) outbound: UnboundedSender<Vec<u8>>,
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
pub(crate) struct Seg {
    pub(crate) seq: u32,
    pub(crate) ack: u32,
    pub(crate) window: u16,
    pub(crate) syn: bool,
    pub(crate) fin: bool,
    pub(crate) rst: bool,
    pub(crate) payload: Vec<u8>,
    /// The shift of a window scale option, if the segment has one.
    pub(crate) wscale: Option<u8>,
}

/// The sandbox's side of one connection: sends segments, reads what the stack sends.
pub(crate) struct Peer {
    pub(crate) to_stack: UnboundedSender<Vec<u8>>,
    pub(crate) from_stack: UnboundedReceiver<Vec<u8>>,
    /// Our next sequence number.
    pub(crate) seq: u32,
    /// Kept alive with the peer (dropping it stops the stack).
    pub(crate) _stack: Option<IpStack>,
}

impl Peer {
    /// Send a segment; `flags` names its flags: S(YN), A(CK), F(IN), R(ST).
    pub(crate) fn send(&self, seq: u32, ack: u32, window: u16, flags: &str, payload: &[u8]) {
        let mut b =
            etherparse::PacketBuilder::ipv4(PEER, SERVER, 64).tcp(PEER_PORT, 80, seq, window);
        if flags.contains('S') {
            b = b.syn();
        }
        if flags.contains('F') {
            b = b.fin();
        }
        if flags.contains('R') {
            b = b.rst();
        }
        if flags.contains('A') {
            b = b.ack(ack);
        }
        let mut out = Vec::new();
        b.write(&mut out, payload).expect("build packet");
        self.to_stack.send(out).expect("stack gone");
    }

    /// The next segment from the stack, or None if none comes within `wait`.
    pub(crate) async fn recv(&mut self, wait: Duration) -> Option<Seg> {
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
            wscale: t.options_iterator().find_map(|o| match o {
                Ok(etherparse::TcpOptionElement::WindowScale(s)) => Some(s),
                _ => None,
            }),
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

/// Everything the stream delivers up to its end (which must come within 5 s).
async fn read_all(stream: &mut IpStackTcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    timeout(Duration::from_secs(5), stream.read_to_end(&mut got))
        .await
        .expect("no end of stream")
        .unwrap();
    got
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
    assert!(
        last_window < 1000,
        "{last_window}: no room for another segment is offered"
    );
    // Reading frees the window, and the stack says so by itself once a segment fits.
    let mut buf = vec![0u8; 40_000];
    stream.read_exact(&mut buf).await.unwrap();
    let update = peer
        .recv(Duration::from_secs(5))
        .await
        .expect("window update");
    assert!(update.window as usize >= MSS, "{update:?}");
}

/// Each held segment also costs its bookkeeping: a peer sending one-byte segments fills
/// the buffer after about a thousand of them instead of 65,535 (each a separate allocation
/// the gateway would keep).
#[tokio::test]
async fn tiny_segments_cannot_multiply_what_the_stack_holds() {
    let (mut peer, _stream, next) = connect(config(5_000, 8), 65_535).await;
    for _ in 0..4000 {
        peer.send(peer.seq, next, 65_535, "A", b"x");
        peer.seq += 1;
    }
    let mut acked = 1001u32;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        acked = acked.max(seg.ack);
    }
    let held = (acked - 1001) as usize;
    // Each costs 65; the last one may take the last bytes of the window, one overhead over.
    assert!(
        held > 0 && held <= 65_535_usize.div_ceil(65),
        "{held} one-byte segments held"
    );
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
    assert_eq!(read_all(&mut stream).await, b"request");
    while let Some(seg) = peer.recv(Duration::from_millis(200)).await {
        assert!(!seg.fin, "a FIN before the response: {seg:?}");
    }
    stream.write_all(b"response").await.unwrap();
    let seg = peer.recv(Duration::from_secs(5)).await.expect("response");
    assert_eq!(seg.payload, b"response");
}

/// A resend that merges a lost segment with the ones after it (Linux collapses
/// retransmissions) overlaps what is already held, and is taken: it fills the hole.
/// Counting the overlap twice refused it on every resend, stalling an upload for good.
#[tokio::test]
async fn a_merged_resend_that_fills_the_hole_is_taken() {
    let mut tcp = config(5_000, 8);
    tcp.read_buffer_size = 20_000;
    let (mut peer, _stream, next) = connect(tcp, 65_535).await;
    let first = peer.seq;
    // Segments 1..48 of 400 bytes arrive, as many as the buffer takes; segment 0 was "lost".
    for i in 1..49u32 {
        peer.send(first + i * 400, next, 65_535, "A", &[2u8; 400]);
    }
    // The resend covers segments 0..2 in one.
    peer.send(first, next, 65_535, "A", &[2u8; 1200]);
    let mut acked = first;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        acked = acked.max(seg.ack);
    }
    // The hole is filled and what was held behind it follows.
    assert!(acked - first > 1200, "{} bytes acknowledged", acked - first);
}

/// Duplicate ACKs trigger one fast retransmit, not one full segment per further
/// duplicate (a 40-byte packet buying a 16 KiB one is an amplifier).
#[tokio::test]
async fn duplicate_acks_trigger_one_fast_retransmit() {
    let (mut peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    stream.write_all(&[3u8; 2000]).await.unwrap();
    let mut sent = 0;
    while let Some(seg) = peer.recv(Duration::from_millis(200)).await {
        sent += seg.payload.len();
    }
    assert_eq!(sent, 2000);
    for _ in 0..12 {
        peer.send(peer.seq, next, 65_535, "A", &[]);
    }
    let mut resent = 0;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        resent += usize::from(!seg.payload.is_empty());
    }
    assert_eq!(resent, 1, "segments resent for 12 duplicate ACKs");
}

/// Data the peer sent before the connection closed is still read, then the end; upstream
/// reported the end as soon as the state was CLOSED and dropped what was queued.
#[tokio::test]
async fn data_received_before_the_close_is_still_read() {
    let mut tcp = config(5_000, 8);
    tcp.two_msl = Duration::from_millis(50);
    let (mut peer, mut stream, next) = connect(tcp, 65_535).await;
    // The peer sends its data and FIN; the application does not read yet, but closes.
    peer.send(peer.seq, next, 65_535, "AF", b"upload");
    peer.seq += 7;
    let closer = tokio::spawn(async move {
        let _ = timeout(Duration::from_secs(5), stream.shutdown()).await;
        stream
    });
    let mut fin = None;
    while let Some(seg) = peer.recv(Duration::from_secs(2)).await {
        if seg.fin {
            fin = Some(seg.seq);
            break;
        }
    }
    let fin = fin.expect("no FIN");
    peer.send(peer.seq, fin + 1, 65_535, "A", &[]);
    let mut stream = closer.await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // TIME_WAIT is over: CLOSED
    assert_eq!(read_all(&mut stream).await, b"upload");
}

/// A reset is an error for the reader, not a clean end of stream (a cut-off upload must
/// not look complete to the upstream).
#[tokio::test]
async fn a_reset_is_an_error_for_the_reader() {
    let (peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    peer.send(peer.seq, next, 0, "AR", &[]);
    let mut buf = [0u8; 8];
    let read = timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("no end");
    assert_eq!(
        read.map_err(|e| e.kind()),
        Err(io::ErrorKind::ConnectionReset)
    );
}

/// A peer whose window closed with our data in flight, and which answers every probe, is
/// alive: the stack probes instead of counting resends it cannot make, and does not reset.
#[tokio::test]
async fn a_closed_window_with_data_in_flight_is_probed_not_reset() {
    let (mut peer, mut stream, next) = connect(config(10, 3), 65_535).await;
    stream.write_all(&[4u8; 1000]).await.unwrap();
    let data = peer.recv(Duration::from_secs(5)).await.expect("data");
    assert_eq!(data.payload.len(), 1000);
    // Nothing acknowledged, and the window is now closed.
    peer.send(peer.seq, next, 0, "A", &[]);
    let (mut probes, mut resets) = (0, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(800);
    while let Ok(Some(seg)) =
        tokio::time::timeout_at(deadline, peer.recv(Duration::from_secs(1))).await
    {
        if seg.rst {
            resets += 1;
        } else if seg.payload.is_empty() {
            probes += 1;
            peer.send(peer.seq, next, 0, "A", &[]);
        }
    }
    assert_eq!(resets, 0, "reset a live peer with a closed window");
    assert!(probes >= 2, "{probes} probes");
}

/// Nothing may be written after a shutdown: it would follow the FIN, where the peer
/// drops it until the resends give up.
#[tokio::test]
async fn a_write_after_shutdown_is_refused() {
    let (_peer, mut stream, _) = connect(config(5_000, 8), 65_535).await;
    let _ = timeout(Duration::from_millis(100), stream.shutdown()).await;
    let w = stream.write(b"late").await;
    assert_eq!(w.map_err(|e| e.kind()), Err(io::ErrorKind::BrokenPipe));
}

/// A shutdown after a reset is not a clean close: the peer may not have what we sent.
#[tokio::test]
async fn a_shutdown_after_a_reset_reports_it() {
    let (peer, mut stream, next) = connect(config(5_000, 8), 65_535).await;
    peer.send(peer.seq, next, 0, "AR", &[]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let s = timeout(Duration::from_secs(5), stream.shutdown()).await;
    assert!(
        matches!(&s, Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionReset),
        "{s:?}"
    );
}

/// When both sides close at once and our FIN was lost, the shutdown is not done at the
/// peer's FIN: our FIN is resent until acknowledged, and only then is the shutdown done.
#[tokio::test]
async fn a_crossed_close_waits_for_our_fin_to_be_acknowledged() {
    let (mut peer, mut stream, next) = connect(config(30, 8), 65_535).await;
    let (done_tx, mut done) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let r = stream.shutdown().await;
        let _ = done_tx.send(r.map_err(|e| e.kind()));
        stream
    });
    let fin = peer.recv(Duration::from_secs(5)).await.expect("FIN");
    assert!(fin.fin && fin.seq == next, "{fin:?}");
    // That FIN is "lost"; the peer closes too, acknowledging only what came before it.
    peer.send(peer.seq, next, 65_535, "AF", &[]);
    peer.seq += 1;
    let mut resent = false;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        resent |= seg.fin && seg.seq == next;
        if resent {
            break;
        }
    }
    assert!(resent, "our FIN was not resent");
    assert!(
        done.try_recv().is_err(),
        "shutdown done before our FIN was acknowledged"
    );
    peer.send(peer.seq, next + 1, 65_535, "A", &[]);
    let r = timeout(Duration::from_secs(5), &mut done).await;
    assert!(matches!(r, Ok(Ok(Ok(())))), "{r:?}");
}
