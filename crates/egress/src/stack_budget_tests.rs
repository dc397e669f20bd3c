//! Packet-level tests of the stack's byte budget (third_party/ipstack, PATCHED.md): however
//! many connections a sandbox opens, what their buffers hold together — data received and
//! not read, out-of-order segments, data sent and not acknowledged — stays under one bound
//! ([`crate::link::STACK_BUDGET`] in the gateway). The peer plays a hostile sandbox kernel:
//! it ignores the windows offered and never acknowledges, on many connections at once.

use crate::stack_tests::{ChannelDevice, MTU, PEER, SERVER};
use ipstack::{ByteBudget, IpStack, IpStackConfig, IpStackStream, IpStackTcpStream};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::timeout;

const CONNS: u16 = 8;
const FIRST_PORT: u16 = 41000;

/// One stack, its budget, and `CONNS` connections opened by the peer (handshake done).
struct Many {
    to_stack: UnboundedSender<Vec<u8>>,
    from_stack: UnboundedReceiver<Vec<u8>>,
    budget: Arc<ByteBudget>,
    streams: Vec<IpStackTcpStream>,
    /// Per connection: the peer's next sequence number and the stack's first data one.
    seqs: Vec<(u32, u32)>,
    _stack: IpStack,
}

/// A segment from the stack: (peer port, seq, ack, payload length).
type Out = (u16, u32, u32, usize);

fn packet(port: u16, seq: u32, ack: Option<u32>, syn: bool, payload: &[u8]) -> Vec<u8> {
    let mut b = etherparse::PacketBuilder::ipv4(PEER, SERVER, 64).tcp(port, 80, seq, u16::MAX);
    if syn {
        b = b.syn();
    }
    if let Some(a) = ack {
        b = b.ack(a);
    }
    let mut out = Vec::new();
    b.write(&mut out, payload).expect("build packet");
    out
}

fn parse(p: &[u8]) -> Out {
    let sliced = etherparse::SlicedPacket::from_ip(p).expect("stack sent a bad packet");
    let Some(etherparse::TransportSlice::Tcp(t)) = sliced.transport else {
        panic!("not TCP");
    };
    (
        t.destination_port(),
        t.sequence_number(),
        t.acknowledgment_number(),
        t.payload().len(),
    )
}

impl Many {
    async fn open(limit: usize) -> Many {
        let (to_stack, inbound) = unbounded_channel();
        let (outbound, mut from_stack) = unbounded_channel();
        let budget = Arc::new(ByteBudget::new(limit));
        let mut tcp = ipstack::TcpConfig::default();
        tcp.max_unacked_bytes = 1 << 20;
        tcp.read_buffer_size = 1 << 20;
        tcp.rto = Duration::from_secs(30);
        tcp.budget = Some(budget.clone());
        let mut cfg = IpStackConfig::default();
        cfg.mtu_unchecked(MTU);
        cfg.packet_information(false);
        cfg.with_tcp_config(tcp);
        let mut stack = IpStack::new(cfg, ChannelDevice { inbound, outbound });
        let (mut streams, mut seqs) = (Vec::new(), Vec::new());
        for i in 0..CONNS {
            let port = FIRST_PORT + i;
            to_stack.send(packet(port, 1000, None, true, &[])).unwrap();
            match timeout(Duration::from_secs(5), stack.accept()).await {
                Ok(Ok(IpStackStream::Tcp(t))) => streams.push(t),
                _ => panic!("no TCP stream for port {port}"),
            }
            let synack = timeout(Duration::from_secs(5), from_stack.recv())
                .await
                .unwrap()
                .unwrap();
            let (p, seq, ack, _) = parse(&synack);
            assert_eq!((p, ack), (port, 1001));
            let next = seq.wrapping_add(1);
            to_stack
                .send(packet(port, 1001, Some(next), false, &[]))
                .unwrap();
            seqs.push((1001, next));
        }
        Many {
            to_stack,
            from_stack,
            budget,
            streams,
            seqs,
            _stack: stack,
        }
    }

    /// Every segment the stack sends until it has been quiet for `quiet`.
    async fn drain(&mut self, quiet: Duration) -> Vec<Out> {
        let mut out = Vec::new();
        while let Ok(Some(p)) = timeout(quiet, self.from_stack.recv()).await {
            out.push(parse(&p));
        }
        out
    }
}

/// The peer pushes 60 KB on each of 8 connections (480 KB) at a stack whose budget is
/// 200 KB and whose reader never reads: the stack holds at most the budget, acknowledges
/// no more than it holds, and takes data again once a reader frees some.
#[tokio::test]
async fn received_data_of_all_connections_stays_within_the_budget() {
    const LIMIT: usize = 200_000;
    let mut m = Many::open(LIMIT).await;
    let chunk = vec![5u8; 1460];
    for i in 0..usize::from(CONNS) {
        let port = FIRST_PORT + i as u16;
        let (mut seq, ack) = m.seqs[i];
        for _ in 0..41 {
            m.to_stack
                .send(packet(port, seq, Some(ack), false, &chunk))
                .unwrap();
            seq = seq.wrapping_add(chunk.len() as u32);
        }
    }
    let segs = m.drain(Duration::from_millis(500)).await;
    // What the stack acknowledged on each connection is what it took.
    let mut acked = vec![0usize; usize::from(CONNS)];
    for (port, _, ack, _) in &segs {
        let i = usize::from(port - FIRST_PORT);
        acked[i] = acked[i].max(ack.wrapping_sub(m.seqs[i].0) as usize);
    }
    let total: usize = acked.iter().sum();
    assert!(
        m.budget.used() <= LIMIT,
        "held {} of {LIMIT}",
        m.budget.used()
    );
    assert!(total <= LIMIT, "acknowledged {total} bytes: {acked:?}");
    assert!(total >= LIMIT / 2, "the budget was barely used: {acked:?}");
    // A reader drains one connection: its bytes are given back.
    let before = m.budget.used();
    let first = acked.iter().position(|&a| a > 0).expect("some data taken");
    let mut got = vec![0u8; acked[first]];
    timeout(
        Duration::from_secs(5),
        m.streams[first].read_exact(&mut got),
    )
    .await
    .expect("read")
    .unwrap();
    assert!(
        m.budget.used() + acked[first] <= before,
        "{} then {}",
        before,
        m.budget.used()
    );
    // Dropping the streams gives back everything.
    m.streams.clear();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(m.budget.used(), 0);
}

/// The application writes 64 KB into each of 8 connections whose peer never acknowledges:
/// no more than the budget goes out unacknowledged; when the peer acknowledges one
/// connection's data, a writer waiting on the budget goes on at once.
#[tokio::test]
async fn unacknowledged_data_of_all_connections_stays_within_the_budget() {
    const LIMIT: usize = 100_000;
    let mut m = Many::open(LIMIT).await;
    let mut writers = Vec::new();
    for mut s in std::mem::take(&mut m.streams) {
        writers.push(tokio::spawn(async move {
            let _ = s.write_all(&vec![9u8; 64_000]).await;
            s
        }));
    }
    let segs = m.drain(Duration::from_millis(500)).await;
    let mut sent = vec![0usize; usize::from(CONNS)];
    for (port, seq, _, len) in &segs {
        let i = usize::from(port - FIRST_PORT);
        let end = seq.wrapping_sub(m.seqs[i].1) as usize + len;
        sent[i] = sent[i].max(end);
    }
    let total: usize = sent.iter().sum();
    assert!(total <= LIMIT, "sent {total} unacknowledged: {sent:?}");
    assert!(total >= LIMIT - 1460, "the budget was not used: {sent:?}");
    assert!(m.budget.used() <= LIMIT);
    // The peer acknowledges everything of one connection: others' writers go on.
    let i = sent.iter().position(|&s| s > 0).expect("something sent");
    let (peer_seq, first) = m.seqs[i];
    m.to_stack
        .send(packet(
            FIRST_PORT + i as u16,
            peer_seq,
            Some(first.wrapping_add(sent[i] as u32)),
            false,
            &[],
        ))
        .unwrap();
    let more = m.drain(Duration::from_millis(500)).await;
    let more_bytes: usize = more.iter().map(|s| s.3).sum();
    assert!(
        more_bytes >= sent[i] - 1460,
        "only {more_bytes} bytes after {} were acknowledged",
        sent[i]
    );
    assert!(m.budget.used() <= LIMIT);
    for w in writers {
        w.abort();
    }
}
