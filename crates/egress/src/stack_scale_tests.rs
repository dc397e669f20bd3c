//! Packet-level tests of window scaling (RFC 7323) in the vendored ipstack: the gateway's
//! stack offers it back to a sandbox kernel that offers it, so both directions can keep more
//! than 64 KiB in flight — the cap that held a download through the gateway to a fraction of
//! a direct one (docs/performance.md). A peer that does not offer it, or a configuration that
//! does not ask for it, gets the unscaled 64 KiB windows of before. Same channel device as
//! [`crate::stack_tests`].

use crate::stack_tests::{ChannelDevice, Peer, Seg, MTU, PEER, PEER_PORT, SERVER};
use ipstack::{IpStack, IpStackConfig, IpStackStream, IpStackTcpStream, TcpOptions};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::unbounded_channel;
use tokio::time::timeout;

const BUFFER: u32 = 1 << 20;
/// The smallest shift that expresses [`BUFFER`] in a 16-bit field.
const OUR_SHIFT: u8 = 5;
const PEER_SHIFT: u8 = 7;

fn config(offer: bool) -> ipstack::TcpConfig {
    let mut tcp = ipstack::TcpConfig::default();
    tcp.max_unacked_bytes = BUFFER;
    tcp.read_buffer_size = BUFFER as usize;
    tcp.rto = Duration::from_secs(5);
    let mut options = vec![TcpOptions::MaximumSegmentSize(MTU - 40)];
    if offer {
        options.push(TcpOptions::WindowScale(0));
    }
    tcp.options = Some(options);
    tcp
}

/// The peer opens a connection, its SYN carrying a window scale option when `peer_shift`
/// says so; returns the peer, the stream, the SYN-ACK and the stack's next sequence number.
/// The handshake's ACK is not sent yet.
async fn open(
    tcp: ipstack::TcpConfig,
    peer_shift: Option<u8>,
) -> (Peer, IpStackTcpStream, Seg, u32) {
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
    let mut b = etherparse::PacketBuilder::ipv4(PEER, SERVER, 64)
        .tcp(PEER_PORT, 80, peer.seq, u16::MAX)
        .syn();
    if let Some(s) = peer_shift {
        b = b
            .options(&[
                etherparse::TcpOptionElement::Noop,
                etherparse::TcpOptionElement::WindowScale(s),
            ])
            .unwrap();
    }
    let mut syn = Vec::new();
    b.write(&mut syn, &[]).unwrap();
    peer.to_stack.send(syn).unwrap();
    peer.seq += 1;
    let stream = match timeout(Duration::from_secs(5), stack.accept()).await {
        Ok(Ok(IpStackStream::Tcp(t))) => t,
        other => panic!("no TCP stream: {:?}", other.map(|r| r.map(|_| ()))),
    };
    let synack = peer.recv(Duration::from_secs(5)).await.expect("SYN-ACK");
    assert!(synack.syn && synack.ack == peer.seq, "{synack:?}");
    let next = synack.seq.wrapping_add(1);
    peer._stack = Some(stack);
    (peer, stream, synack, next)
}

/// Bytes the stack sends before it waits on the peer's window (segments until 300 ms of
/// silence), with `total` bytes written into the stream.
async fn burst(peer: &mut Peer, stream: IpStackTcpStream, next: u32, total: usize) -> u32 {
    let writer = tokio::spawn(async move {
        let mut stream = stream;
        let _ = stream.write_all(&vec![7u8; total]).await;
        stream
    });
    let mut end = next;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        end = end.max(seg.seq.wrapping_add(seg.payload.len() as u32));
    }
    writer.abort();
    end.wrapping_sub(next)
}

/// Offered both ways: the SYN-ACK carries our shift (its own window unscaled), the peer's
/// window fields are read scaled (2048 << 7 = 256 KiB in flight, not 2 KiB), ours are sent
/// scaled, and the peer can have more than 64 KiB unacknowledged and all of it is taken.
#[tokio::test]
async fn both_windows_scale_past_64k_when_the_peer_offers_it() {
    let (mut peer, mut stream, synack, next) = open(config(true), Some(PEER_SHIFT)).await;
    assert_eq!(synack.wscale, Some(OUR_SHIFT), "{synack:?}");
    // Sent in 1460-byte segments, 200 KB without waiting for an ACK: past any 64 KiB window.
    peer.send(peer.seq, next, 2048, "A", &[]);
    let sent = 200_000usize;
    for chunk in vec![1u8; sent].chunks(1460) {
        peer.send(peer.seq, next, 2048, "A", chunk);
        peer.seq = peer.seq.wrapping_add(chunk.len() as u32);
    }
    let mut got = vec![0u8; sent];
    timeout(Duration::from_secs(5), stream.read_exact(&mut got))
        .await
        .expect("the data past 64 KiB was not taken")
        .unwrap();
    // Every data segment is acknowledged; the last ACK covers everything and its window,
    // scaled, is far past what 16 bits express unscaled.
    let mut last = None;
    while let Some(seg) = peer.recv(Duration::from_millis(300)).await {
        last = Some(seg);
    }
    let last = last.expect("no ACK");
    assert_eq!(last.ack, peer.seq, "{last:?}");
    assert!(
        (u32::from(last.window) << OUR_SHIFT) > 512 * 1024,
        "window field {} at shift {OUR_SHIFT}",
        last.window
    );
    // The peer's window of 2048 << 7 bytes bounds what the stack sends.
    let n = burst(&mut peer, stream, next, 400_000).await;
    assert_eq!(n, 2048 << PEER_SHIFT);
}

/// A peer that offers no window scale option, or a stack not configured to offer it, gets
/// no option and unscaled windows: at most 64 KiB offered whatever the buffer, and the
/// peer's window field read as bytes.
#[tokio::test]
async fn nothing_scales_unless_both_sides_offer_it() {
    for (offer, peer_shift) in [(true, None), (false, Some(PEER_SHIFT))] {
        let (mut peer, stream, synack, next) = open(config(offer), peer_shift).await;
        assert_eq!(synack.wscale, None, "offer={offer} peer={peer_shift:?}");
        peer.send(peer.seq, next, 2048, "A", b"x");
        peer.seq += 1;
        let ack = peer.recv(Duration::from_secs(5)).await.expect("ACK");
        assert_eq!(
            (ack.ack, ack.window),
            (peer.seq, u16::MAX),
            "offer={offer} peer={peer_shift:?}"
        );
        let n = burst(&mut peer, stream, next, 100_000).await;
        assert_eq!(n, 2048, "offer={offer} peer={peer_shift:?}");
    }
}
