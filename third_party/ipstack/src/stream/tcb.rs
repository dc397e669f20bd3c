use super::budget::{ByteBudget, Charge};
use super::seqnum::SeqNum;
use etherparse::TcpHeader;
use std::{collections::BTreeMap, time::Duration};

pub(super) const MAX_UNACK: u32 = 1024 * 16; // 16KB
pub(super) const READ_BUFFER_SIZE: usize = 1024 * 16; // 16KB
pub(super) const MAX_COUNT_FOR_DUP_ACK: usize = 3; // Maximum number of duplicate ACKs before retransmission

/// Retransmission timeout
pub(super) const RTO: std::time::Duration = std::time::Duration::from_secs(1);

/// Maximum count of retransmissions before dropping the packet
pub(super) const MAX_RETRANSMIT_COUNT: usize = 3;

#[derive(Debug, PartialEq, Clone, Copy)]
pub(crate) enum TcpState {
    // Init, /* Since we always act as a server, it starts from `Listen`, so we don't use states Init & SynSent. */
    // SynSent,
    Listen,
    SynReceived,
    Established,
    FinWait1, // act as a client, actively send a farewell packet to the other side, followed with FinWait2, TimeWait, Closed
    FinWait2,
    TimeWait,
    CloseWait, // act as a server, followed with LastAck, Closed
    LastAck,
    Closed,
}

#[derive(Debug, PartialEq, Clone, Copy)]
pub(super) enum PacketType {
    WindowUpdate,
    Invalid,
    RetransmissionRequest,
    NewPacket,
    Ack,
    KeepAlive,
}

/// TCP Control Block
/// - `inflight_packets` is prerepresented bytes stream from upstream application,
///   which have been sent to the lower device but not yet acknowledged.
/// - `unordered_packets` is the bytes stream received from the lower device,
///   which can be acknowledged and extracted by `consume_unordered_packets` method
///   then can be read by upstream application via `Tcp::poll_read` method.
#[derive(Debug, Clone)]
pub(crate) struct Tcb {
    seq: SeqNum,
    ack: SeqNum,
    mtu: u16,
    last_received_ack: SeqNum,
    send_window: u32,
    // PATCHED: window scaling (RFC 7323), negotiated in the handshake: the peer's windows are
    // shifted left by `snd_shift`, ours right by `rcv_shift`; both 0 when the peer's SYN had no
    // window scale option.
    snd_shift: u8,
    rcv_shift: u8,
    scaled: bool,
    state: TcpState,
    inflight_packets: BTreeMap<SeqNum, InflightPacket>,
    unordered_packets: BTreeMap<SeqNum, Vec<u8>>,
    duplicate_ack_count: usize,
    duplicate_ack_count_helper: SeqNum,
    max_unacked_bytes: u32,
    read_buffer_size: usize,
    max_count_for_dup_ack: usize,
    rto: std::time::Duration,
    max_retransmit_count: usize,
    // PATCHED (cleanroom, PATCHED.md): bytes handed to the stream's reader and not yet read.
    // They count against the receive window, so what a peer can make us hold is bounded.
    queued: usize,
    // PATCHED: what the out-of-order segments held cost (bytes plus overhead), kept current.
    held_cost: usize,
    // PATCHED: the connection was reset (by the peer, or because it stopped answering): the
    // reader gets an error, not a clean end of stream, once the data before it is read.
    reset: bool,
    // PATCHED: the application asked to close (poll_shutdown); the loop sends the FIN once
    // everything written is acknowledged.
    fin_requested: bool,
    // PATCHED: our FIN's retransmission timer, while it is unacknowledged.
    fin_timer: Option<Backoff>,
    // PATCHED: the persist timer (zero-window probes) while a writer waits on a closed window.
    probe_timer: Option<Backoff>,
    // PATCHED: bytes of unacknowledged data in `inflight_packets`, kept current (upstream
    // summed the map at every call, several times per packet).
    inflight_bytes: usize,
    // PATCHED: what this connection holds (`footprint`), charged to the stack's byte budget.
    charge: Charge,
}

/// PATCHED: an exponential retransmission timer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    pub(crate) sent: std::time::Instant,
    pub(crate) timeout: Duration,
    pub(crate) count: usize,
}

impl Backoff {
    fn new(rto: Duration) -> Self {
        Backoff {
            sent: std::time::Instant::now(),
            timeout: rto,
            count: 0,
        }
    }
    fn deadline(&self) -> std::time::Instant {
        self.sent + self.timeout
    }
    fn expired(&self, now: std::time::Instant) -> bool {
        now >= self.deadline()
    }
    /// Record a resend: the next one waits twice as long (at most a minute).
    fn resent(&mut self, now: std::time::Instant) {
        self.sent = now;
        self.count += 1;
        self.timeout = (self.timeout * 2).min(MAX_BACKOFF);
    }
}

/// PATCHED: what one held segment or queued chunk costs beyond its bytes (its allocation and
/// bookkeeping), counted against the receive buffer: a peer sending one-byte segments
/// cannot make us hold 64 K separate allocations.
pub(crate) const SEGMENT_OVERHEAD: usize = 64;

/// PATCHED: the longest wait between two retransmissions or probes.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// PATCHED: a segment, our FIN or a zero-window probe went unanswered through every
/// retransmission: the peer is gone and the connection must be reset, not left hanging.
#[derive(Debug)]
pub(crate) struct GaveUp;

impl Tcb {
    pub(super) fn new(
        ack: SeqNum,
        mtu: u16,
        max_unacked_bytes: u32,
        read_buffer_size: usize,
        max_count_for_dup_ack: usize,
        rto: std::time::Duration,
        max_retransmit_count: usize,
    ) -> Tcb {
        #[cfg(debug_assertions)]
        let seq = 100;
        #[cfg(not(debug_assertions))]
        let seq = rand::RngExt::random::<u32>(&mut rand::rng());
        Tcb {
            seq: seq.into(),
            ack,
            mtu,
            last_received_ack: seq.into(),
            send_window: u32::from(u16::MAX),
            snd_shift: 0,
            rcv_shift: 0,
            scaled: false,
            state: TcpState::Listen,
            inflight_packets: BTreeMap::new(),
            unordered_packets: BTreeMap::new(),
            duplicate_ack_count: 0,
            duplicate_ack_count_helper: seq.into(),
            max_unacked_bytes,
            read_buffer_size,
            max_count_for_dup_ack,
            rto,
            max_retransmit_count,
            queued: 0,
            held_cost: 0,
            reset: false,
            fin_requested: false,
            fin_timer: None,
            probe_timer: None,
            inflight_bytes: 0,
            charge: Charge::default(),
        }
    }

    /// PATCHED: charge what this connection holds to `budget`, shared with the stack's other
    /// connections (set before the first byte is held).
    pub(super) fn set_budget(&mut self, budget: Option<std::sync::Arc<ByteBudget>>) {
        self.charge = Charge::new(budget);
    }

    /// PATCHED: the bytes this connection holds: out-of-order segments and data not yet read
    /// (each with its overhead), and data sent and not yet acknowledged.
    fn footprint(&self) -> usize {
        self.held_cost + self.queued + self.inflight_bytes
    }

    /// PATCHED: bring the budget's charge to what is held now.
    fn settle(&mut self) {
        let f = self.footprint();
        self.charge.settle(f);
    }

    /// PATCHED: room in the stack's budget for up to `n` new bytes to send, taken now (the
    /// excess is given back when the segment is queued); 0: wait, see [`Tcb::wait_for_budget`].
    pub(super) fn reserve_send(&mut self, n: usize) -> usize {
        self.charge.take_up_to(n)
    }

    /// PATCHED: give back a reservation that was not used.
    pub(super) fn unreserve(&mut self) {
        self.settle();
    }

    /// PATCHED: wake `w` when the stack's budget has room again.
    pub(super) fn wait_for_budget(&self, w: &std::task::Waker) {
        self.charge.wait(w);
    }

    pub fn calculate_payload_max_len(&self, ip_header_size: usize, tcp_header_size: usize) -> usize {
        let send_window = self.get_send_window() as usize;
        let mtu = self.get_mtu() as usize;
        std::cmp::min(send_window, mtu.saturating_sub(ip_header_size + tcp_header_size))
    }

    pub fn update_duplicate_ack_count(&mut self, rcvd_ack: SeqNum) {
        // If the received rcvd_ack is the same as duplicate_ack_count_helper and not all data has been acknowledged (rcvd_ack < self.seq), increment the count.
        if rcvd_ack == self.duplicate_ack_count_helper && rcvd_ack < self.seq {
            self.duplicate_ack_count = self.duplicate_ack_count.saturating_add(1);
        } else {
            self.duplicate_ack_count_helper = rcvd_ack;
            self.duplicate_ack_count = 0; // reset duplicate ACK count
        }
    }

    /// PATCHED: true at the duplicate ACK that triggers a fast retransmit, not at every one
    /// after it: upstream resent a full segment for each further 40-byte duplicate ACK, an
    /// amplifier for a hostile peer.
    pub fn is_duplicate_ack_count_exceeded(&self) -> bool {
        self.duplicate_ack_count == self.max_count_for_dup_ack
    }

    /// PATCHED: accept only the part of a segment that lies inside the window we offer:
    /// bytes already received are cut off the front, bytes past the window off the back. A
    /// segment beyond a hole is kept only while what is held (out-of-order segments plus
    /// what the reader has not read yet, each also costing [`SEGMENT_OVERHEAD`]) stays within
    /// `read_buffer_size`; the segment that fills the hole is always taken, since it goes to
    /// the reader at once and makes what it overlaps stale (a kernel resending a lost
    /// segment may merge it with the ones after it). A peer that ignores our window — a
    /// hostile sandbox can craft its own segments — therefore cannot make us hold more than
    /// about twice the buffer.
    pub(super) fn add_unordered_packet(&mut self, seq: SeqNum, mut buf: Vec<u8>) {
        let mut seq = seq;
        if seq < self.ack {
            let stale = self.ack.distance(seq) as usize;
            if stale >= buf.len() {
                return;
            }
            buf.drain(..stale);
            seq = self.ack;
        }
        let window = self.read_buffer_size.saturating_sub(self.queued);
        let offset = seq.distance(self.ack) as usize;
        if offset >= window {
            return;
        }
        buf.truncate(window - offset);
        let existing = self.unordered_packets.get(&seq).map_or(0, |p| p.len());
        if buf.len() <= existing {
            return;
        }
        if offset > 0 {
            let replaced = if existing > 0 { existing + SEGMENT_OVERHEAD } else { 0 };
            if self.held_cost - replaced + buf.len() + SEGMENT_OVERHEAD > window {
                return;
            }
        }
        // PATCHED: the stack's byte budget has the last word: what it has no room for is
        // dropped like a segment past the window (the peer resends it).
        let replaced = if existing > 0 { existing + SEGMENT_OVERHEAD } else { 0 };
        let want = (buf.len() + SEGMENT_OVERHEAD).saturating_sub(replaced);
        let got = self.charge.take_up_to(want);
        if got < want {
            let keep = buf.len().saturating_sub(want - got);
            if keep <= existing {
                self.settle();
                return;
            }
            buf.truncate(keep);
        }
        // A trimmed Vec keeps its allocation: hold only what is counted.
        buf.shrink_to_fit();
        self.hold(seq, buf);
        self.settle();
    }

    /// PATCHED: keep a segment, counting its cost (a running total: upstream summed the
    /// whole map for every packet, which a peer holding thousands of segments made costly).
    fn hold(&mut self, seq: SeqNum, buf: Vec<u8>) {
        self.held_cost += buf.len() + SEGMENT_OVERHEAD;
        if let Some(old) = self.unordered_packets.insert(seq, buf) {
            self.held_cost -= old.len() + SEGMENT_OVERHEAD;
        }
    }

    fn release(&mut self, seq: SeqNum) -> Option<Vec<u8>> {
        let p = self.unordered_packets.remove(&seq)?;
        self.held_cost -= p.len() + SEGMENT_OVERHEAD;
        Some(p)
    }

    pub(super) fn get_available_read_buffer_size(&self) -> usize {
        self.read_buffer_size.saturating_sub(self.held_cost + self.queued)
    }

    /// Take the in-order data at the head of the buffer (at most `max_bytes`), advancing our
    /// ACK. PATCHED: overlapping segments are handled (a segment starting below the ACK gives
    /// only its new tail) instead of stopping the stream, and what is taken is counted as
    /// queued for the reader until [`Tcb::data_read`].
    pub(super) fn consume_unordered_packets(&mut self, max_bytes: usize) -> Option<Vec<u8>> {
        let mut data = Vec::new();
        while data.len() < max_bytes {
            let Some((&seq, _)) = self.unordered_packets.first_key_value() else {
                break;
            };
            if seq > self.ack {
                break; // a hole: wait for the missing bytes
            }
            let mut payload = self.release(seq).unwrap_or_default();
            let stale = self.ack.distance(seq) as usize;
            if stale >= payload.len() {
                continue; // wholly received already
            }
            payload.drain(..stale);
            let room = max_bytes - data.len();
            if payload.len() > room {
                let rest = payload.split_off(room);
                self.hold(self.ack + room as u32, rest);
            }
            self.ack += payload.len() as u32;
            if data.is_empty() {
                data = payload; // the usual single segment: no copy, no spare capacity
            } else {
                data.extend(payload);
            }
        }
        if data.is_empty() {
            return None;
        }
        // One chunk for the reader: its bytes and its overhead, given back by `data_read`.
        self.queued += data.len() + SEGMENT_OVERHEAD;
        self.settle();
        Some(data)
    }

    /// PATCHED: the reader took `n` queued bytes (plus [`SEGMENT_OVERHEAD`] for each chunk it
    /// took whole from the queue); returns the receive window before and after.
    pub(super) fn data_read(&mut self, n: usize) -> (u32, u32) {
        let before = self.get_recv_window();
        self.queued = self.queued.saturating_sub(n);
        self.settle();
        (before, self.get_recv_window())
    }

    /// PATCHED: how much new data may be sent now: the peer's window (and our cap on unacked
    /// bytes) minus what is in flight. Upstream sent a whole segment whenever any window was
    /// left, and the peer dropped what lay beyond it.
    pub(super) fn usable_send_window(&self) -> usize {
        let limit = self.max_unacked_bytes.min(self.get_send_window());
        limit.saturating_sub(self.seq.distance(self.get_last_received_ack())) as usize
    }

    pub(super) fn set_reset(&mut self) {
        self.reset = true;
    }
    pub(super) fn was_reset(&self) -> bool {
        self.reset
    }

    /// PATCHED: with the peer's window closed, a timed-out segment cannot be resent (it would
    /// be cut to nothing, which the peer does not answer) and its silence says nothing: its
    /// timer is pushed back without counting a resend, and `true` asks for a window probe.
    pub(super) fn defer_timed_out_inflight_packets(&mut self) -> bool {
        let now = std::time::Instant::now();
        let mut due = false;
        for packet in self.inflight_packets.values_mut() {
            if packet.is_timed_out() {
                packet.retransmit_timeout = (packet.retransmit_timeout * 2).min(MAX_BACKOFF);
                packet.send_time = now;
                due = true;
            }
        }
        due
    }

    pub(super) fn request_fin(&mut self) {
        self.fin_requested = true;
    }
    pub(super) fn fin_requested(&self) -> bool {
        self.fin_requested
    }
    /// Our FIN went out (seq already advanced past it): time its retransmission.
    pub(super) fn fin_sent(&mut self) {
        self.fin_timer = Some(Backoff::new(self.rto));
    }
    /// Our FIN was sent and is not acknowledged yet.
    pub(super) fn fin_pending(&self) -> bool {
        self.fin_timer.is_some()
    }
    /// The peer acknowledged our FIN (or the connection ended).
    pub(super) fn fin_acked(&mut self) {
        self.fin_timer = None;
    }
    /// A writer waits on a zero window with nothing in flight: start probing, unless already.
    pub(super) fn arm_probe(&mut self) {
        if self.probe_timer.is_none() {
            self.probe_timer = Some(Backoff::new(self.rto));
        }
    }
    pub(super) fn disarm_probe(&mut self) {
        self.probe_timer = None;
    }
    /// The peer showed it is alive (a valid ACK): an unanswered-FIN count starts over.
    pub(super) fn peer_alive(&mut self) {
        if let Some(t) = self.fin_timer.as_mut() {
            t.count = 0;
        }
    }

    /// The earliest moment a timer (retransmission, FIN, probe) needs the loop.
    pub(super) fn next_deadline(&self) -> Option<std::time::Instant> {
        let inflight = self.inflight_packets.values().map(|p| p.send_time + p.retransmit_timeout);
        let timers = [self.fin_timer, self.probe_timer].into_iter().flatten().map(|t| t.deadline());
        inflight.chain(timers).min()
    }

    /// Our FIN is due for a resend (`Ok(true)`), or has been resent too often (`Err`).
    pub(super) fn fin_due(&mut self, now: std::time::Instant) -> Result<bool, GaveUp> {
        let max = self.max_retransmit_count;
        match self.fin_timer.as_mut() {
            Some(t) if t.expired(now) => {
                if t.count >= max {
                    return Err(GaveUp);
                }
                t.resent(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// A zero-window probe is due. Probes never give up by count: a peer that answers them
    /// with a closed window is alive (a paused reader), and the stream's idle timeout bounds it.
    pub(super) fn probe_due(&mut self, now: std::time::Instant) -> bool {
        match self.probe_timer.as_mut() {
            Some(t) if t.expired(now) => {
                t.resent(now);
                true
            }
            _ => false,
        }
    }

    pub(super) fn increase_seq(&mut self) {
        self.seq += 1;
    }
    pub(super) fn get_seq(&self) -> SeqNum {
        self.seq
    }
    pub(super) fn increase_ack(&mut self) {
        self.ack += 1;
    }
    pub(super) fn get_ack(&self) -> SeqNum {
        self.ack
    }
    pub(super) fn get_mtu(&self) -> u16 {
        self.mtu
    }
    pub(super) fn get_last_received_ack(&self) -> SeqNum {
        self.last_received_ack
    }
    pub(super) fn change_state(&mut self, state: TcpState) {
        self.state = state;
    }
    pub(super) fn get_state(&self) -> TcpState {
        self.state
    }
    /// The window field of a segment from the peer (scaled, once negotiated).
    pub(super) fn update_send_window(&mut self, window: u16) {
        self.send_window = u32::from(window) << self.snd_shift;
    }
    /// PATCHED: the window of the peer's SYN, which is never scaled (RFC 7323 section 2.2).
    pub(super) fn update_send_window_from_syn(&mut self, window: u16) {
        self.send_window = u32::from(window);
    }
    /// The peer's window in bytes.
    pub(super) fn get_send_window(&self) -> u32 {
        self.send_window
    }
    /// PATCHED: window scaling. `peer` is the shift of the peer's SYN option (`None`: it sent
    /// none, and neither side scales). Returns the shift to announce in our SYN-ACK: the
    /// smallest that lets the window field express the whole read buffer.
    pub(super) fn negotiate_window_scale(&mut self, peer: Option<u8>) -> Option<u8> {
        let peer = peer?;
        self.snd_shift = peer.min(14);
        let mut shift = 0u8;
        while shift < 14 && (self.read_buffer_size >> shift) > usize::from(u16::MAX) {
            shift += 1;
        }
        self.rcv_shift = shift;
        self.scaled = true;
        Some(shift)
    }
    /// Our shift, when window scaling was negotiated.
    pub(super) fn window_scale(&self) -> Option<u8> {
        self.scaled.then_some(self.rcv_shift)
    }
    /// PATCHED: the window field of a segment we send: our window in units of our scale, or
    /// unscaled (at most 64 KiB) in a SYN.
    pub(super) fn recv_window_field(&self, syn: bool) -> u16 {
        let window = self.get_recv_window();
        let shift = if syn { 0 } else { self.rcv_shift };
        (window >> shift).min(u32::from(u16::MAX)) as u16
    }
    /// PATCHED: the window offered leaves room for the overhead of the segments that would
    /// fill it, so a peer that sends exactly what we offer, in full-sized segments, has all
    /// of it accepted.
    /// In bytes, at most what the window field can express at our scale.
    pub(super) fn get_recv_window(&self) -> u32 {
        // PATCHED: no more than the stack's byte budget has room for.
        let available = self.get_available_read_buffer_size().min(self.charge.room());
        let mss = (self.mtu as usize).saturating_sub(40).max(1);
        let reserve = SEGMENT_OVERHEAD * (available / mss + 1);
        let max = u32::from(u16::MAX) << self.rcv_shift;
        available.saturating_sub(reserve).try_into().unwrap_or(max).min(max)
    }
    // #[inline(always)]
    // pub(super) fn buffer_size(&self, payload_len: u16) -> u16 {
    //     match MAX_UNACK - self.inflight_packets.len() as u32 {
    //         // b if b.saturating_sub(payload_len as u32 + 64) != 0 => payload_len,
    //         // b if b < 128 && b >= 4 => (b / 2) as u16,
    //         // b if b < 4 => b as u16,
    //         // b => (b - 64) as u16,
    //         b if b >= payload_len as u32 * 2 && b > 0 => payload_len,
    //         b if b < 4 => b as u16,
    //         b => (b / 2) as u16,
    //     }
    // }

    pub(super) fn check_pkt_type(&self, tcp_header: &TcpHeader, payload: &[u8]) -> PacketType {
        let rcvd_ack = SeqNum(tcp_header.acknowledgment_number);
        let rcvd_seq = SeqNum(tcp_header.sequence_number);
        let rcvd_window = u32::from(tcp_header.window_size) << self.snd_shift;
        let len = payload.len();
        let res = if rcvd_ack > self.seq {
            PacketType::Invalid
        } else {
            match rcvd_ack.cmp(&self.get_last_received_ack()) {
                std::cmp::Ordering::Less => PacketType::Invalid,
                std::cmp::Ordering::Equal => {
                    if self.ack - 1 == rcvd_seq && payload.len() <= 1 {
                        PacketType::KeepAlive
                    } else if !payload.is_empty() {
                        PacketType::NewPacket
                    } else if self.get_send_window() == rcvd_window && self.seq != rcvd_ack && self.is_duplicate_ack_count_exceeded() {
                        PacketType::RetransmissionRequest
                    } else {
                        PacketType::WindowUpdate
                    }
                }
                std::cmp::Ordering::Greater => {
                    if payload.is_empty() {
                        PacketType::Ack
                    } else {
                        PacketType::NewPacket
                    }
                }
            }
        };
        #[rustfmt::skip]
        log::trace!("received {{ ack = {:08X?}, seq = {:08X?}, window = {rcvd_window} }}, self {{ ack = {:08X?}, seq = {:08X?}, send_window = {} }}, len = {len}, {res:?}", rcvd_ack.0, rcvd_seq.0, self.ack.0, self.seq.0, self.get_send_window());
        res
    }

    pub(super) fn add_inflight_packet(&mut self, buf: Vec<u8>) -> std::io::Result<()> {
        if buf.is_empty() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "Empty payload"));
        }
        let buf_len = buf.len() as u32;
        self.inflight_bytes += buf.len();
        self.inflight_packets.insert(self.seq, InflightPacket::new(self.seq, buf, self.rto));
        self.seq += buf_len;
        self.settle();
        Ok(())
    }

    pub(super) fn update_last_received_ack(&mut self, ack: SeqNum) {
        self.last_received_ack = ack;
    }

    pub(crate) fn update_inflight_packet_queue(&mut self, ack: SeqNum) {
        match self.inflight_packets.first_key_value() {
            None => return,
            Some((&seq, _)) if ack < seq => return,
            _ => {}
        }
        if let Some(seq) = self
            .inflight_packets
            .iter()
            .find(|(_, p)| p.contains_seq_num(ack - 1))
            .map(|(&s, _)| s)
        {
            let mut inflight_packet = self.inflight_packets.remove(&seq).unwrap();
            let distance = ack.distance(inflight_packet.seq) as usize;
            if distance < inflight_packet.payload.len() {
                inflight_packet.payload.drain(0..distance);
                inflight_packet.seq = ack;
                self.inflight_packets.insert(ack, inflight_packet);
            }
        }
        self.inflight_packets.retain(|_, p| ack < p.seq + p.payload.len() as u32);
        self.inflight_bytes = self.inflight_packets.values().map(|p| p.payload.len()).sum();
        self.settle();
    }

    pub(crate) fn find_inflight_packet(&self, seq: SeqNum) -> Option<&InflightPacket> {
        self.inflight_packets.get(&seq)
    }

    /// Segments whose retransmission timer ran out, to be sent again. PATCHED: upstream
    /// silently dropped a segment after `max_retransmit_count` resends — the peer then never
    /// got those bytes and the stream stalled — and ran only when a packet arrived, so a lost
    /// tail was never resent at all. Now the loop's timer calls this, and a segment that
    /// timed out after its last resend gives up the connection.
    pub(crate) fn collect_timed_out_inflight_packets(&mut self) -> Result<Vec<InflightPacket>, GaveUp> {
        let now = std::time::Instant::now();
        let mut retransmit_list = Vec::new();
        for packet in self.inflight_packets.values_mut() {
            if packet.is_timed_out() {
                if packet.retransmit_count >= self.max_retransmit_count {
                    return Err(GaveUp);
                }
                packet.retransmit_count += 1;
                packet.retransmit_timeout = (packet.retransmit_timeout * 2).min(MAX_BACKOFF);
                packet.send_time = now;
                retransmit_list.push(packet.clone());
            }
        }
        Ok(retransmit_list)
    }

    pub(crate) fn get_inflight_packets_total_len(&self) -> usize {
        self.inflight_bytes
    }

    #[allow(dead_code)]
    pub(crate) fn get_all_inflight_packets(&self) -> Vec<&InflightPacket> {
        self.inflight_packets.values().collect::<Vec<_>>()
    }

    pub fn is_send_buffer_full(&self) -> bool {
        // To respect the receiver's window (remote_window) size and avoid sending too many unacknowledged packets, which may cause packet loss
        // Simplified version: min(cwnd, rwnd)
        self.usable_send_window() == 0
    }
}

#[derive(Debug, Clone)]
pub struct InflightPacket {
    pub seq: SeqNum,
    pub payload: Vec<u8>,
    pub send_time: std::time::Instant,
    pub retransmit_count: usize,
    pub retransmit_timeout: std::time::Duration, // current retransmission timeout
}

impl InflightPacket {
    fn new(seq: SeqNum, payload: Vec<u8>, rto: Duration) -> Self {
        Self {
            seq,
            payload,
            send_time: std::time::Instant::now(),
            retransmit_count: 0,
            retransmit_timeout: rto,
        }
    }
    pub(crate) fn contains_seq_num(&self, seq: SeqNum) -> bool {
        self.seq <= seq && seq < self.seq + self.payload.len() as u32
    }
    pub(crate) fn is_timed_out(&self) -> bool {
        self.send_time.elapsed() >= self.retransmit_timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_in_flight_packet() {
        let p = InflightPacket::new((u32::MAX - 1).into(), vec![10, 20, 30, 40, 50], RTO);

        assert!(p.contains_seq_num((u32::MAX - 1).into()));
        assert!(p.contains_seq_num(u32::MAX.into()));
        assert!(p.contains_seq_num(0.into()));
        assert!(p.contains_seq_num(1.into()));
        assert!(p.contains_seq_num(2.into()));

        assert!(!p.contains_seq_num(3.into()));
    }

    #[test]
    fn test_get_unordered_packets_with_max_bytes() {
        let mut tcb = Tcb::new(
            SeqNum(1000),
            1500,
            MAX_UNACK,
            READ_BUFFER_SIZE,
            MAX_COUNT_FOR_DUP_ACK,
            RTO,
            MAX_RETRANSMIT_COUNT,
        );

        // insert 3 consecutive packets
        tcb.add_unordered_packet(SeqNum(1000), vec![1; 500]); // seq=1000, len=500
        tcb.add_unordered_packet(SeqNum(1500), vec![2; 500]); // seq=1500, len=500
        tcb.add_unordered_packet(SeqNum(2000), vec![3; 500]); // seq=2000, len=500

        // test 1: extract up to 700 bytes
        let data = tcb.consume_unordered_packets(700).unwrap();
        assert_eq!(data.len(), 700); // extract 500 + 200
        assert_eq!(data[..500], vec![1; 500]); // the first packet
        assert_eq!(data[500..700], vec![2; 200]); // the first 200 bytes of the second packet
        assert_eq!(tcb.ack, SeqNum(1700)); // ack increased by 700
        assert_eq!(tcb.unordered_packets.len(), 2); // remaining two packets
        assert_eq!(tcb.unordered_packets.get(&SeqNum(1700)).unwrap().len(), 300); // the second packet remaining 300 bytes
        assert_eq!(tcb.unordered_packets.get(&SeqNum(2000)).unwrap().len(), 500); // the third packet unchanged

        // test 2: extract up to 800 bytes
        let data = tcb.consume_unordered_packets(800).unwrap();
        assert_eq!(data.len(), 800); // extract 300 bytes of the second packet and the third packet
        assert_eq!(data[..300], vec![2; 300]); // the remaining 300 bytes of the second packet
        assert_eq!(data[300..800], vec![3; 500]); // the third packet
        assert_eq!(tcb.ack, SeqNum(2500)); // ack increased by 800
        assert_eq!(tcb.unordered_packets.len(), 0); // no remaining packets

        // test 3: no data to extract
        let data = tcb.consume_unordered_packets(1000);
        assert!(data.is_none());
    }

    #[test]
    fn test_update_inflight_packet_queue() {
        let mut tcb = Tcb::new(
            SeqNum(1000),
            1500,
            MAX_UNACK,
            READ_BUFFER_SIZE,
            MAX_COUNT_FOR_DUP_ACK,
            RTO,
            MAX_RETRANSMIT_COUNT,
        );
        tcb.seq = SeqNum(100); // setting the initial seq

        // insert 3 consecutive packets
        tcb.add_inflight_packet(vec![1; 500]).unwrap(); // seq=100, len=500
        tcb.add_inflight_packet(vec![2; 500]).unwrap(); // seq=600, len=500
        tcb.add_inflight_packet(vec![3; 500]).unwrap(); // seq=1100, len=500

        // test 1: confirm partial packets (ack=800)
        tcb.update_inflight_packet_queue(SeqNum(800));
        assert_eq!(tcb.inflight_packets.len(), 2); // remaining two packets
        let first_packet = tcb.inflight_packets.first_key_value().unwrap().1;
        assert_eq!(first_packet.seq, SeqNum(800)); // the remaining part of the first packet
        assert_eq!(first_packet.payload.len(), 300); // remaining 300 bytes in the first packet
        let second_packet = tcb.inflight_packets.last_key_value().unwrap().1;
        assert_eq!(second_packet.seq, SeqNum(1100)); // no change in the second packet

        // test 2: confirm all packets (ack=2000)
        tcb.update_inflight_packet_queue(SeqNum(2000));
        assert_eq!(tcb.inflight_packets.len(), 0); // all packets are acknowledged
    }

    #[test]
    fn test_update_inflight_packet_queue_cumulative_ack() {
        let mut tcb = Tcb::new(
            SeqNum(1000),
            1500,
            MAX_UNACK,
            READ_BUFFER_SIZE,
            MAX_COUNT_FOR_DUP_ACK,
            RTO,
            MAX_RETRANSMIT_COUNT,
        );
        tcb.seq = SeqNum(1000);

        // Insert 3 consecutive packets
        tcb.add_inflight_packet(vec![1; 500]).unwrap(); // seq=1000, len=500
        tcb.add_inflight_packet(vec![2; 500]).unwrap(); // seq=1500, len=500
        tcb.add_inflight_packet(vec![3; 500]).unwrap(); // seq=2000, len=500

        // Emulate cumulative ACK: ack=2500
        tcb.update_inflight_packet_queue(SeqNum(2500));
        assert_eq!(tcb.inflight_packets.len(), 0); // all packets should be removed
    }

    #[test]
    fn test_retransmit_with_exponential_backoff() {
        let mut tcb = Tcb::new(
            SeqNum(1000),
            1500,
            MAX_UNACK,
            READ_BUFFER_SIZE,
            MAX_COUNT_FOR_DUP_ACK,
            RTO,
            MAX_RETRANSMIT_COUNT,
        );

        tcb.add_inflight_packet(vec![1; 500]).unwrap();

        // Simulate retransmission timeouts
        for i in 0..MAX_RETRANSMIT_COUNT {
            // Simulate a timeout for the first packet
            let timeout = tcb.inflight_packets.values().next().unwrap().retransmit_timeout + std::time::Duration::from_millis(100);
            println!("timeout: {timeout:?}");
            std::thread::sleep(timeout);

            let packets = tcb.collect_timed_out_inflight_packets().unwrap();
            assert_eq!(packets.len(), 1);
            let packet = &packets[0];
            assert_eq!(packet.retransmit_count, i + 1);
            assert!(packet.retransmit_timeout > RTO);
        }

        // PATCHED: the last resend timing out gives the connection up (upstream dropped the
        // segment and went on as if it had been delivered).
        let timeout = tcb.inflight_packets.values().next().unwrap().retransmit_timeout + std::time::Duration::from_millis(100);
        std::thread::sleep(timeout);
        assert!(tcb.collect_timed_out_inflight_packets().is_err());
    }
}
