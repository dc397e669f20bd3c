use super::seqnum::SeqNum;
use crate::{
    PacketSender, SessionReceiver, SessionSender, TTL,
    error::IpStackError,
    packet::{
        IpHeader, NetworkPacket, NetworkTuple, TransportHeader,
        tcp_flags::{ACK, FIN, PSH, RST, SYN},
        tcp_header_flags, tcp_header_fmt,
    },
    stream::tcb::{
        GaveUp, MAX_COUNT_FOR_DUP_ACK, MAX_RETRANSMIT_COUNT, MAX_UNACK, PacketType, READ_BUFFER_SIZE, RTO, SEGMENT_OVERHEAD, Tcb, TcpState,
    },
};
use etherparse::{IpNumber, Ipv4Header, Ipv6FlowLabel, TcpHeader, TcpOptionElement};
use std::{
    future::Future,
    io::ErrorKind::{BrokenPipe, ConnectionRefused, InvalidInput, UnexpectedEof},
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, Waker},
    time::Duration,
};
use tokio::io::{AsyncRead, AsyncWrite};

/// 2 * MSL (Maximum Segment Lifetime) is the maximum time a TCP connection can be in the TIME_WAIT state.
const TWO_MSL: Duration = Duration::from_secs(2);

const CLOSE_WAIT_TIMEOUT: Duration = Duration::from_secs(5);
const LAST_ACK_MAX_RETRIES: usize = 3;
const LAST_ACK_TIMEOUT: Duration = Duration::from_millis(500);
const TIMEOUT: Duration = Duration::from_secs(60);

#[non_exhaustive]
#[derive(Debug, Clone)]
/// TCP configuration
pub struct TcpConfig {
    /// Maximum number of retries for sending the last ACK in the LAST_ACK state. Default is 3.
    pub last_ack_max_retries: usize,
    /// Timeout for the last ACK in the LAST_ACK state. Default is 500ms.
    pub last_ack_timeout: Duration,
    /// Timeout for the CLOSE_WAIT state. Default is 5 seconds.
    pub close_wait_timeout: Duration,
    /// Timeout for TCP connections. Default is 60 seconds.
    pub timeout: Duration,
    /// Timeout for the TIME_WAIT state. Default is 2 seconds.
    pub two_msl: Duration,
    /// Maximum number of unacknowledged bytes allowed in the send buffer.
    pub max_unacked_bytes: u32,
    /// Size of the read buffer for incoming data.
    pub read_buffer_size: usize,
    /// Maximum number of duplicate ACKs before triggering fast retransmission.
    pub max_count_for_dup_ack: usize,
    /// Retransmission timeout duration.
    pub rto: std::time::Duration,
    /// Maximum number of retransmissions before giving up.
    pub max_retransmit_count: usize,
    /// TCP options
    pub options: Option<Vec<TcpOptions>>,
    /// PATCHED: bytes all connections of the stack may hold together (received and not
    /// read, out of order, sent and not acknowledged); `None`: only each connection's own
    /// bounds. Shared by every connection made with this configuration.
    pub budget: Option<Arc<super::budget::ByteBudget>>,
}

#[non_exhaustive]
#[derive(Debug, Clone)]
pub enum TcpOptions {
    /// Maximum segment size (MSS) for TCP connections.
    MaximumSegmentSize(u16),
    /// PATCHED: offer window scaling (RFC 7323) to a peer whose SYN offers it. The shift is
    /// derived from `read_buffer_size`; the value given here is ignored.
    WindowScale(u8),
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            last_ack_max_retries: LAST_ACK_MAX_RETRIES,
            last_ack_timeout: LAST_ACK_TIMEOUT,
            close_wait_timeout: CLOSE_WAIT_TIMEOUT,
            timeout: TIMEOUT,
            two_msl: TWO_MSL,
            max_unacked_bytes: MAX_UNACK,
            read_buffer_size: READ_BUFFER_SIZE,
            max_count_for_dup_ack: MAX_COUNT_FOR_DUP_ACK,
            rto: RTO,
            max_retransmit_count: MAX_RETRANSMIT_COUNT,
            options: Default::default(),
            budget: None,
        }
    }
}

#[derive(Debug)]
enum Shutdown {
    None,
    Pending(Waker),
    Ready,
}

impl Shutdown {
    fn pending(&mut self, w: Waker) {
        *self = Shutdown::Pending(w);
    }
    fn ready(&mut self) {
        if let Shutdown::Pending(w) = self {
            w.wake_by_ref();
        }
        *self = Shutdown::Ready;
    }
}

impl std::fmt::Display for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shutdown::None => write!(f, "None"),
            Shutdown::Pending(_) => write!(f, "Pending"),
            Shutdown::Ready => write!(f, "Ready"),
        }
    }
}

static SESSION_COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

type TcbPtr = std::sync::Arc<std::sync::Mutex<Tcb>>;

/// A TCP stream in the IP stack.
///
/// This type represents a TCP connection and implements `AsyncRead` and `AsyncWrite`
/// for bidirectional data transfer. It handles TCP state management, flow control,
/// and retransmission automatically.
///
/// # Examples
///
/// ```no_run
/// use ipstack::{IpStack, IpStackConfig, IpStackStream};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// # async fn example(mut ip_stack: IpStack) -> Result<(), Box<dyn std::error::Error>> {
/// if let IpStackStream::Tcp(mut tcp_stream) = ip_stack.accept().await? {
///     println!("New TCP connection from {}", tcp_stream.peer_addr());
///     
///     // Read data
///     let mut buffer = [0u8; 1024];
///     let n = tcp_stream.read(&mut buffer).await?;
///     
///     // Write data
///     tcp_stream.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await?;
///     
///     // Shutdown the stream
///     tcp_stream.shutdown().await?;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct IpStackTcpStream {
    src_addr: SocketAddr,
    dst_addr: SocketAddr,
    stream_sender: SessionSender,
    stream_receiver: Option<SessionReceiver>,
    up_packet_sender: PacketSender,
    tcb: TcbPtr,
    shutdown: std::sync::Arc<std::sync::Mutex<Shutdown>>,
    write_notify: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    destroy_messenger: Option<::tokio::sync::oneshot::Sender<()>>,
    timeout: Pin<Box<tokio::time::Sleep>>,
    data_tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    data_rx: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    read_notify: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    task_handle: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    exit_notifier: Option<tokio::sync::mpsc::Sender<()>>,
    temp_read_buffer: Vec<u8>,
    config: Arc<TcpConfig>,
    // PATCHED: wakes the connection's loop when a write or shutdown changes what its timers or
    // its FIN need.
    timer_notify: Arc<tokio::sync::Notify>,
}

impl IpStackTcpStream {
    pub(crate) fn new(
        src_addr: SocketAddr,
        dst_addr: SocketAddr,
        tcp: TcpHeader,
        up_packet_sender: PacketSender,
        mtu: u16,
        destroy_messenger: Option<::tokio::sync::oneshot::Sender<()>>,
        config: Arc<TcpConfig>,
    ) -> Result<IpStackTcpStream, IpStackError> {
        let mut tcb = Tcb::new(
            SeqNum(tcp.sequence_number),
            mtu,
            config.max_unacked_bytes,
            config.read_buffer_size,
            config.max_count_for_dup_ack,
            config.rto,
            config.max_retransmit_count,
        );
        // PATCHED: the peer's window is known from its SYN (never scaled). Upstream assumed
        // 64 KiB until the handshake's ACK, so data written right after accept could
        // overrun a smaller window.
        tcb.update_send_window_from_syn(tcp.window_size);
        tcb.set_budget(config.budget.clone());
        // PATCHED: window scaling when both the peer and the configuration want it, so windows
        // past 64 KiB (`read_buffer_size`, `max_unacked_bytes`) can be used.
        let offered = config.options.iter().flatten().any(|o| matches!(o, TcpOptions::WindowScale(_)));
        let peer_shift = tcp.options_iterator().find_map(|o| match o {
            Ok(TcpOptionElement::WindowScale(s)) => Some(s),
            _ => None,
        });
        tcb.negotiate_window_scale(peer_shift.filter(|_| offered));
        let tuple = NetworkTuple::new(src_addr, dst_addr, true);
        if !tcp.syn {
            if !tcp.rst
                && let Err(err) = write_packet_to_device(&up_packet_sender, tuple, &tcb, None, ACK | RST, None, None)
            {
                log::warn!("Error sending RST/ACK packet: {err}");
            }
            let info = format!("Invalid TCP packet: {tuple} {}", tcp_header_fmt(&tcp));
            return Err(IpStackError::IoError(std::io::Error::new(ConnectionRefused, info)));
        }

        let (stream_sender, stream_receiver) =
            tokio::sync::mpsc::channel::<NetworkPacket>(crate::tcp_session_queue(mtu, config.read_buffer_size));
        let (data_tx, data_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let deadline = tokio::time::Instant::now() + config.timeout;

        let mut stream = IpStackTcpStream {
            src_addr,
            dst_addr,
            stream_sender,
            stream_receiver: Some(stream_receiver),
            up_packet_sender,
            tcb: std::sync::Arc::new(std::sync::Mutex::new(tcb.clone())),
            shutdown: std::sync::Arc::new(std::sync::Mutex::new(Shutdown::None)),
            write_notify: std::sync::Arc::new(std::sync::Mutex::new(None)),
            destroy_messenger,
            timeout: Box::pin(tokio::time::sleep_until(deadline)),
            data_tx,
            data_rx,
            read_notify: std::sync::Arc::new(std::sync::Mutex::new(None)),
            task_handle: None,
            exit_notifier: None,
            temp_read_buffer: Vec::new(),
            config,
            timer_notify: Arc::default(),
        };

        let sessions = SESSION_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst).saturating_add(1);
        let (seq, ack, state) = { (tcb.get_seq().0, tcb.get_ack().0, tcb.get_state()) };
        let l_info = Local(seq, ack);
        log::debug!("{tuple} {state:?}: {l_info} session begins, total TCP sessions: {sessions}");

        stream.spawn_tasks()?;
        Ok(stream)
    }

    fn reset_timeout(&mut self) {
        let deadline = tokio::time::Instant::now() + self.config.timeout;
        self.timeout.as_mut().reset(deadline);
    }

    pub(crate) fn network_tuple(&self) -> NetworkTuple {
        NetworkTuple::new(self.src_addr, self.dst_addr, true)
    }

    /// Returns the local socket address of the TCP connection.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use ipstack::IpStackTcpStream;
    /// # fn example(tcp_stream: &IpStackTcpStream) {
    /// let local_addr = tcp_stream.local_addr();
    /// println!("Local address: {}", local_addr);
    /// # }
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.src_addr
    }

    /// Returns the remote socket address of the TCP connection.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # use ipstack::IpStackTcpStream;
    /// # fn example(tcp_stream: &IpStackTcpStream) {
    /// let peer_addr = tcp_stream.peer_addr();
    /// println!("Peer address: {}", peer_addr);
    /// # }
    /// ```
    pub fn peer_addr(&self) -> SocketAddr {
        self.dst_addr
    }

    pub fn stream_sender(&self) -> SessionSender {
        self.stream_sender.clone()
    }
}

impl AsyncRead for IpStackTcpStream {
    fn poll_read(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        // if there is data in the temp buffer, read it first
        if !self.temp_read_buffer.is_empty() {
            let len = std::cmp::min(buf.remaining(), self.temp_read_buffer.len());
            buf.put_slice(&self.temp_read_buffer[..len]);
            self.temp_read_buffer.drain(..len); // remove the read data from the temp buffer
            if self.temp_read_buffer.is_empty() {
                // PATCHED: a drained Vec keeps its allocation; give it back.
                self.temp_read_buffer = Vec::new();
            }
            self.data_taken(len)?;
            return Poll::Ready(Ok(()));
        }

        let network_tuple = self.network_tuple();

        let state = self.tcb.lock().unwrap().get_state();
        if state == TcpState::Closed {
            // PATCHED: data received (and acknowledged) before the close is still read first;
            // upstream reported the end at once and dropped it.
            if let Ok(data) = self.data_rx.try_recv() {
                let taken = self.deliver(buf, data);
                self.data_taken(taken + SEGMENT_OVERHEAD)?;
                return Poll::Ready(Ok(()));
            }
            self.shutdown.lock().unwrap().ready();
            self.write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            return Poll::Ready(self.end_of_stream());
        }

        // handle timeout
        if matches!(Pin::new(&mut self.timeout).poll(cx), Poll::Ready(_)) {
            {
                let mut tcb = self.tcb.lock().unwrap();
                let (seq, ack) = (tcb.get_seq().0, tcb.get_ack().0);
                let l_info = Local(seq, ack);
                log::warn!("{network_tuple} {state:?}: [poll_read] {l_info}, session timeout reached, closing forcefully...");
                let sender = &self.up_packet_sender;
                write_packet_to_device(sender, network_tuple, &tcb, None, ACK | RST, None, None)?;
                tcb.change_state(TcpState::Closed);
                let state = tcb.get_state();
                log::warn!("{network_tuple} {state:?}: [poll_read] {l_info}, session notified to close");
            }
            self.shutdown.lock().unwrap().ready();

            return Poll::Ready(Err(std::io::Error::from(std::io::ErrorKind::TimedOut)));
        }
        self.reset_timeout();

        // read data from channel
        match self.data_rx.poll_recv(cx) {
            Poll::Ready(Some(data)) => {
                let taken = self.deliver(buf, data);
                self.data_taken(taken + SEGMENT_OVERHEAD)?;
                Poll::Ready(Ok(()))
            }
            Poll::Ready(None) => Poll::Ready(Ok(())),
            Poll::Pending => {
                // PATCHED: after the peer's FIN, an empty channel is the end of the stream
                // (upstream never reported it until the whole connection had closed). The
                // loop queues data before it moves past ESTABLISHED, under the same lock, so
                // once the state says "peer finished", whatever is left is in the channel.
                let tcb = self.tcb.lock().unwrap();
                let peer_finished = matches!(
                    tcb.get_state(),
                    TcpState::CloseWait | TcpState::LastAck | TcpState::TimeWait | TcpState::Closed
                );
                if !peer_finished {
                    self.read_notify.lock().unwrap().replace(cx.waker().clone());
                    return Poll::Pending;
                }
                drop(tcb);
                match self.data_rx.try_recv() {
                    Ok(data) => {
                        let taken = self.deliver(buf, data);
                        self.data_taken(taken + SEGMENT_OVERHEAD)?;
                        Poll::Ready(Ok(()))
                    }
                    Err(_) => Poll::Ready(self.end_of_stream()),
                }
            }
        }
    }
}

impl IpStackTcpStream {
    /// PATCHED: the end of what the peer sent: clean after its FIN, an error after a reset
    /// (upstream reported both as a clean end, so a cut-off upload looked complete).
    fn end_of_stream(&self) -> std::io::Result<()> {
        if self.tcb.lock().unwrap().was_reset() {
            return Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        }
        Ok(())
    }

    /// Copy what fits into `buf`, keep the rest for the next read; returns the bytes copied.
    fn deliver(&mut self, buf: &mut tokio::io::ReadBuf<'_>, data: Vec<u8>) -> usize {
        let capacity = buf.remaining();
        if capacity >= data.len() {
            buf.put_slice(&data);
            data.len()
        } else {
            buf.put_slice(&data[..capacity]);
            self.temp_read_buffer.extend_from_slice(&data[capacity..]);
            capacity
        }
    }

    /// PATCHED: the reader took `n` bytes, which frees as much of our receive window. When the
    /// window grows from under a segment to at least one (or half the buffer), tell the peer:
    /// a sender stopped by our window waits for exactly this update.
    fn data_taken(&self, n: usize) -> std::io::Result<()> {
        let nt = self.network_tuple();
        let mut tcb = self.tcb.lock().unwrap();
        let (before, after) = tcb.data_read(n);
        let segment = (tcb.get_mtu() as usize).saturating_sub(40);
        let threshold = segment.min(self.config.read_buffer_size / 2).min(u32::MAX as usize) as u32;
        let open = matches!(tcb.get_state(), TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2);
        if open && before < threshold && after >= threshold {
            write_packet_to_device(&self.up_packet_sender, nt, &tcb, None, ACK, None, None)?;
        }
        Ok(())
    }
}

impl AsyncWrite for IpStackTcpStream {
    fn poll_write(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.poll_write_slices(cx, &[std::io::IoSlice::new(buf)])
    }

    /// PATCHED: several buffers go out in one segment (TLS records, an HTTP head and its
    /// body), up to a full one; upstream sent one segment per buffer.
    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        self.poll_write_slices(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: std::pin::Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// PATCHED: ask the loop for a FIN (it goes once everything written is acknowledged, in
    /// CLOSE_WAIT too) and finish when the connection has ended, as upstream did. Upstream
    /// sent the FIN only if nothing was in flight at the moment of this call, and nothing
    /// called it again when the last ACK came: the FIN was never sent.
    fn poll_shutdown(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.shutdown_now(cx)
    }
}

impl IpStackTcpStream {
    /// One segment of at most the window, the budget and the MSS allow, gathered from `bufs`.
    fn poll_write_slices(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let nt = self.network_tuple();
        self.reset_timeout();

        let mut tcb = self.tcb.lock().unwrap();
        let state = tcb.get_state();
        let send_window = tcb.get_send_window();
        let is_full = tcb.is_send_buffer_full();
        let idle = tcb.get_inflight_packets_total_len() == 0;

        if state == TcpState::Closed {
            self.shutdown.lock().unwrap().ready();
            self.read_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            return Poll::Ready(Err(std::io::Error::new(BrokenPipe, "TCP connection closed")));
        }

        if tcb.fin_requested() {
            // PATCHED: nothing may follow the FIN (upstream sent it past the FIN's sequence
            // number, where the peer dropped it until the resends gave up).
            return Poll::Ready(Err(std::io::Error::new(BrokenPipe, "TCP stream shut down")));
        }
        if send_window == 0 || is_full {
            self.write_notify.lock().unwrap().replace(cx.waker().clone());
            if idle {
                // PATCHED: nothing in flight will bring an ACK: probe the closed window.
                tcb.arm_probe();
                self.timer_notify.notify_one();
            }
            log::trace!(
                "{nt} {state:?}: [poll_write] current send window: {send_window}, send buffer full: {is_full}, waiting for the other side to send ACK..."
            );
            return Poll::Pending;
        }

        // PATCHED: never more than the window has room for (upstream sent a whole segment
        // whenever any room was left, and the peer dropped the part beyond its window), and
        // never more than one segment: upstream copied all of `buf` (a caller's whole
        // buffer, hundreds of KiB) for every segment it cut from it.
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Poll::Ready(Ok(0));
        }
        let want = total.min(tcb.usable_send_window()).min(segment_size(tcb.get_mtu(), nt));
        // PATCHED: room in the stack's byte budget, or wait until another connection gives
        // some back (checked again once registered, so a give in between is not missed).
        let mut room = tcb.reserve_send(want);
        if room == 0 {
            tcb.wait_for_budget(cx.waker());
            room = tcb.reserve_send(want);
            if room == 0 {
                return Poll::Pending;
            }
        }
        let mut buf = Vec::with_capacity(room);
        for b in bufs {
            let take = b.len().min(room - buf.len());
            buf.extend_from_slice(&b[..take]);
            if buf.len() == room {
                break;
            }
        }
        let sender = &self.up_packet_sender;
        let payload_len = match write_packet_to_device(sender, nt, &tcb, None, ACK | PSH, None, Some(buf.clone())) {
            Ok(n) => n,
            Err(e) => {
                tcb.unreserve();
                return Poll::Ready(Err(e));
            }
        };
        if payload_len == 0 {
            tcb.unreserve();
            return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::WriteZero, "no room in the segment")));
        }
        buf.truncate(payload_len);
        tcb.add_inflight_packet(buf)?;
        if idle {
            // PATCHED: the loop's retransmission timer now has a segment to time.
            self.timer_notify.notify_one();
        }

        let (state, seq, ack) = (tcb.get_state(), tcb.get_seq(), tcb.get_ack());
        let l_info = Local(seq, ack);
        log::trace!("{nt} {state:?}: [poll_write] {l_info} upstream data written to device, len = {payload_len}");

        Poll::Ready(Ok(payload_len))
    }

    /// See `poll_shutdown`.
    fn shutdown_now(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut tcb = self.tcb.lock().unwrap();
        if tcb.was_reset() {
            // The peer may not have everything we sent: not a clean close.
            return Poll::Ready(Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset)));
        }
        // Done once our FIN is acknowledged: after that the peer has everything we sent, and
        // dropping the stream cannot lose it. (Upstream waited for the whole connection to
        // end, TIME_WAIT included, which outlasted callers' close deadlines; dropped then,
        // an unacknowledged FIN was never resent.)
        let state = tcb.get_state();
        if state == TcpState::Closed || (matches!(state, TcpState::FinWait2 | TcpState::TimeWait) && !tcb.fin_pending()) {
            return Poll::Ready(Ok(()));
        }
        let mut shutdown = self.shutdown.lock().unwrap();
        if matches!(*shutdown, Shutdown::Ready) {
            return Poll::Ready(Ok(()));
        }
        shutdown.pending(cx.waker().clone());
        if !tcb.fin_requested() {
            tcb.request_fin();
            self.timer_notify.notify_one();
        }
        Poll::Pending
    }
}

/// PATCHED: our sequence and acknowledgment numbers for the logs, formatted only when a log
/// line is written (upstream formatted a string for every packet, logged or not).
struct Local<T>(T, T);

impl<T: std::fmt::Display> std::fmt::Display for Local<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "local {{ seq: {}, ack: {} }}", self.0, self.1)
    }
}

/// PATCHED: the most payload one segment to the peer carries (the MTU less the IP and TCP
/// headers without options).
fn segment_size(mtu: u16, nt: NetworkTuple) -> usize {
    let headers = if nt.src.is_ipv4() { 40 } else { 60 };
    usize::from(mtu).saturating_sub(headers).max(1)
}

/// PATCHED: send the FIN the application asked for once nothing written is unacknowledged.
fn send_fin_when_due(tcb: &mut Tcb, nt: NetworkTuple, sender: &PacketSender) -> std::io::Result<()> {
    if !tcb.fin_requested() || tcb.get_inflight_packets_total_len() != 0 {
        return Ok(());
    }
    let next = match tcb.get_state() {
        TcpState::Established => TcpState::FinWait1,
        TcpState::CloseWait => TcpState::LastAck,
        _ => return Ok(()),
    };
    log::debug!("{nt}: sending FIN, now {next:?}");
    write_packet_to_device(sender, nt, tcb, None, ACK | FIN, None, None)?;
    tcb.increase_seq();
    tcb.fin_sent();
    tcb.change_state(next);
    Ok(())
}

/// PATCHED: the loop's timers: resend timed-out segments and an unacknowledged FIN, probe a
/// closed window. `Ok(Err(GaveUp))`: the peer answered none of the resends.
fn on_timer(tcb: &mut Tcb, nt: NetworkTuple, sender: &PacketSender) -> std::io::Result<Result<(), GaveUp>> {
    let now = std::time::Instant::now();
    let mut probe = false;
    let resend = if tcb.get_send_window() == 0 {
        probe = tcb.defer_timed_out_inflight_packets();
        Vec::new()
    } else {
        match tcb.collect_timed_out_inflight_packets() {
            Ok(list) => list,
            Err(gave_up) => return Ok(Err(gave_up)),
        }
    };
    for packet in resend {
        log::debug!(
            "{nt}: retransmission timeout, resending seq {} ({} bytes)",
            packet.seq,
            packet.payload.len()
        );
        write_packet_to_device(sender, nt, tcb, None, ACK | PSH, Some(packet.seq), Some(packet.payload))?;
    }
    match tcb.fin_due(now) {
        Err(gave_up) => return Ok(Err(gave_up)),
        Ok(true) => {
            write_packet_to_device(sender, nt, tcb, None, ACK | FIN, Some(tcb.get_seq() - 1), None)?;
        }
        Ok(false) => {}
    }
    if tcb.probe_due(now) || probe {
        // A segment just below the oldest unacknowledged byte: the peer must answer it with
        // an ACK that carries its current window.
        write_packet_to_device(sender, nt, tcb, None, ACK, Some(tcb.get_last_received_ack() - 1), None)?;
    }
    Ok(Ok(()))
}

/// PATCHED: the connection ended: every waiter (reader, writer, shutdown) must look again.
fn wake_all(
    write_notify: &std::sync::Mutex<Option<Waker>>,
    read_notify: &std::sync::Mutex<Option<Waker>>,
    shutdown: &std::sync::Mutex<Shutdown>,
) {
    write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
    read_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
    if let Shutdown::Pending(w) = &*shutdown.lock().unwrap() {
        w.wake_by_ref();
    }
}

impl Drop for IpStackTcpStream {
    fn drop(&mut self) {
        let (nt, state) = (self.network_tuple(), self.tcb.lock().unwrap().get_state());
        log::trace!("{nt} {state:?}: [drop] session dropping, ========================= ");
        // PATCHED (cleanroom, see PATCHED.md): upstream blocked here — block_in_place +
        // block_on(notify) + block_on(task) — once per dropped stream. Many streams dropped at
        // once (a sandbox torn down with a thousand connections) exhausted the runtime's
        // blocking threads while every one of them waited for a task that needed a worker to
        // run: the whole runtime wedged. Dropping must never block: ask the task to exit
        // without waiting, and abort it if it cannot be asked (its exit channel is full or
        // gone). Aborting drops the task's destroy messenger, which still removes the session.
        if let Some(task_handle) = self.task_handle.take() {
            if !task_handle.is_finished() {
                let asked = self.exit_notifier.take().is_some_and(|notifier| notifier.try_send(()).is_ok());
                if !asked {
                    task_handle.abort();
                }
            } else {
                log::trace!("{nt} {state:?}: [drop] task already finished, no need to wait exiting");
            }
        }
        let sessions = SESSION_COUNTER.fetch_sub(1, std::sync::atomic::Ordering::SeqCst).saturating_sub(1);
        log::debug!("{nt} {state:?}: [drop] session dropped, total TCP sessions: {sessions}");
    }
}

impl IpStackTcpStream {
    fn spawn_tasks(&mut self) -> std::io::Result<()> {
        let network_tuple = self.network_tuple();

        // task: data receiving and processing
        let tcb = self.tcb.clone();
        let stream_receiver = self.stream_receiver.take().unwrap();
        let up_packet_sender = self.up_packet_sender.clone();
        let shutdown = self.shutdown.clone();
        let write_notify = self.write_notify.clone();
        let read_notify = self.read_notify.clone();
        let data_tx = self.data_tx.clone();
        let destroy_messenger = self.destroy_messenger.take();
        let timer_notify = self.timer_notify.clone();

        let (exit_task_notifier, exit_monitor) = tokio::sync::mpsc::channel::<()>(10);
        let exit_notifier = exit_task_notifier.clone();
        let config = self.config.clone();
        self.exit_notifier = Some(exit_task_notifier);

        let task_handle = tokio::spawn(async move {
            let v = tcp_main_logic_loop(
                tcb,
                config,
                stream_receiver,
                up_packet_sender,
                exit_notifier,
                network_tuple,
                write_notify,
                read_notify,
                data_tx,
                exit_monitor,
                shutdown.clone(),
                timer_notify,
            )
            .await;
            if let Err(e) = &v {
                log::warn!("{network_tuple} task error: {e}");
            }
            _ = destroy_messenger.map(|m| m.send(())).unwrap_or(Ok(()));
            log::trace!("{network_tuple} task completed, destroy messenger sent successfully");
            shutdown.lock().unwrap().ready();
            log::trace!("{network_tuple} shutdown.lock().unwrap().ready() ==========");
            v
        });
        self.task_handle = Some(task_handle);
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
async fn tcp_main_logic_loop(
    tcb: TcbPtr,
    config: Arc<TcpConfig>,
    mut stream_receiver: SessionReceiver,
    up_packet_sender: PacketSender,
    exit_notifier: tokio::sync::mpsc::Sender<()>,
    network_tuple: NetworkTuple,
    write_notify: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    read_notify: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    data_tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    mut exit_monitor: tokio::sync::mpsc::Receiver<()>,
    shutdown: std::sync::Arc<std::sync::Mutex<Shutdown>>,
    timer_notify: Arc<tokio::sync::Notify>,
) -> std::io::Result<()> {
    {
        let mut tcb = tcb.lock().unwrap();

        let state = tcb.get_state();
        if state != TcpState::Listen {
            log::warn!("{network_tuple} {state:?}: Invalid TCP state, not in Listen state");
            return Ok::<(), std::io::Error>(());
        }

        tcb.increase_ack();
        let (seq, ack) = (tcb.get_seq().0, tcb.get_ack().0);
        let l_info = Local(seq, ack);
        log::trace!("{network_tuple} {state:?}: {l_info} session begins");
        write_packet_to_device(
            &up_packet_sender,
            network_tuple,
            &tcb,
            Some(&syn_ack_options(&tcb, config.options.as_ref())),
            ACK | SYN,
            None,
            None,
        )?;
        tcb.increase_seq();
        tcb.change_state(TcpState::SynReceived);
        let state = tcb.get_state();
        log::trace!("{network_tuple} {state:?}: session now in {state:?} state");
    }

    let tcb_clone = tcb.clone();

    async fn task_wait_to_close(tcb: TcbPtr, exit_notifier: tokio::sync::mpsc::Sender<()>, nt: NetworkTuple, two_msl: Duration) {
        tokio::time::sleep(two_msl).await;
        {
            let mut tcb = tcb.lock().unwrap();
            tcb.change_state(TcpState::Closed);
            let state = tcb.get_state();
            log::debug!("{nt} {state:?}: [task_wait_to_close] session closed after {two_msl:?}");
        }
        exit_notifier.send(()).await.unwrap_or(());
    }

    loop {
        let exit_notifier = exit_notifier.clone();

        // PATCHED (cleanroom, PATCHED.md): the loop also wakes for its timers (retransmission,
        // FIN, zero-window probe) and when the stream asks (a write into an idle connection, a
        // shutdown). Upstream ran retransmission only when a packet arrived, so a lost tail
        // segment, FIN or window update left the connection stalled for good.
        let deadline = { tcb.lock().unwrap().next_deadline() };
        let timer = async move {
            match deadline {
                Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                None => std::future::pending::<()>().await,
            }
        };
        let network_packet = tokio::select! {
            _ = exit_monitor.recv() => {
                log::debug!("{network_tuple} task exited due to exit signal");
                break;
            }
            _ = timer_notify.notified() => {
                let mut tcb = tcb.lock().unwrap();
                send_fin_when_due(&mut tcb, network_tuple, &up_packet_sender)?;
                continue;
            }
            _ = timer => {
                let mut tcb = tcb.lock().unwrap();
                if on_timer(&mut tcb, network_tuple, &up_packet_sender)?.is_err() {
                    log::debug!("{network_tuple}: peer unresponsive through every retransmission, resetting");
                    _ = write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK | RST, None, None);
                    tcb.set_reset();
                    tcb.change_state(TcpState::Closed);
                    drop(tcb);
                    wake_all(&write_notify, &read_notify, &shutdown);
                    break;
                }
                continue;
            }
            network_packet = stream_receiver.recv() => network_packet,
        };

        let Some(mut network_packet) = network_packet else {
            let state = { tcb.lock().unwrap().get_state() };
            log::debug!("{network_tuple} {state:?}: session closed unexpectedly by pipe broken, exiting task");
            tcb.lock().unwrap().change_state(TcpState::Closed);
            write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            read_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            break;
        };

        let payload = network_packet.payload.take().unwrap_or_default();
        let TransportHeader::Tcp(tcp_header) = network_packet.transport_header() else {
            log::warn!("{network_tuple} Invalid TCP packet");
            continue;
        };
        let flags = tcp_header_flags(tcp_header);
        let incoming_ack: SeqNum = tcp_header.acknowledgment_number.into();
        let incoming_seq: SeqNum = tcp_header.sequence_number.into();
        let incoming_win = tcp_header.window_size;

        let mut tcb = tcb.lock().unwrap();

        let state = tcb.get_state();
        if state == TcpState::Closed {
            log::debug!("{network_tuple} {state:?}: session finished, exiting task...");
            break;
        }

        if flags & RST == RST {
            tcb.set_reset();
            tcb.change_state(TcpState::Closed);
            drop(tcb);
            // PATCHED: a reset ends the stream now; upstream waited for the next packet.
            wake_all(&write_notify, &read_notify, &shutdown);
            break;
        }

        tcb.update_duplicate_ack_count(incoming_ack);

        tcb.update_inflight_packet_queue(incoming_ack);

        let pkt_type = tcb.check_pkt_type(tcp_header, &payload);

        let (state, seq, ack) = { (tcb.get_state(), tcb.get_seq(), tcb.get_ack()) };
        let len = payload.len();
        let l_info = Local(seq, ack);
        log::trace!(
            "{network_tuple} {state:?}: {l_info} {}, {pkt_type:?}, len = {len}",
            tcp_header_fmt(tcp_header)
        );
        if pkt_type == PacketType::Invalid {
            continue;
        }
        tcb.peer_alive();
        // What this packet says about the peer's window holds from here on (upstream applied
        // it only after the packet was handled, after waking the writer).
        tcb.update_last_received_ack(incoming_ack);
        tcb.update_send_window(incoming_win);
        if incoming_win > 0 {
            tcb.disarm_probe();
        }
        // The peer's FIN is the byte after its data: processed only once everything before
        // it has arrived (a FIN after a hole waits for the peer's retransmission).
        let fin_in_order = |tcb: &Tcb| flags & FIN == FIN && incoming_seq + len as u32 == tcb.get_ack();

        match state {
            TcpState::SynReceived if flags & ACK == ACK => {
                tcb.change_state(TcpState::Established);
                if len > 0 {
                    tcb.add_unordered_packet(incoming_seq, payload);
                    extract_data_n_write_upstream(&up_packet_sender, &mut tcb, network_tuple, &data_tx, &read_notify)?;
                }
                // PATCHED: a writer that filled the window before the handshake completed
                // waits for this ACK (it acknowledges our SYN, which took a byte of it).
                write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            }
            TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2 => {
                // PATCHED: data is taken from any segment that carries it (upstream ignored a
                // segment with data and FIN, and data whose flags were not exactly ACK or
                // ACK|PSH), and every data segment is answered with an ACK, in order or not.
                if len > 0 && pkt_type != PacketType::KeepAlive {
                    tcb.add_unordered_packet(incoming_seq, payload);
                    extract_data_n_write_upstream(&up_packet_sender, &mut tcb, network_tuple, &data_tx, &read_notify)?;
                } else if pkt_type == PacketType::KeepAlive {
                    write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK, None, None)?;
                } else if pkt_type == PacketType::RetransmissionRequest {
                    if let Some(packet) = tcb.find_inflight_packet(incoming_ack) {
                        let (s, p) = (packet.seq, packet.payload.clone());
                        log::debug!(
                            "{network_tuple} {state:?}: {l_info}, retransmission request, seq = {s}, len = {}",
                            p.len()
                        );
                        write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK | PSH, Some(s), Some(p))?;
                    }
                }
                let our_fin_acked = state != TcpState::Established && incoming_ack == tcb.get_seq();
                if our_fin_acked {
                    tcb.fin_acked();
                }
                if fin_in_order(&tcb) {
                    tcb.increase_ack();
                    write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK, None, None)?;
                    if state == TcpState::Established {
                        // PATCHED: the peer is done sending; we are not. Upstream answered
                        // with its own FIN at once when nothing was in flight, cutting off a
                        // response not yet written (a client that half-closes after its
                        // request). Our FIN now waits for the application's shutdown.
                        tcb.change_state(TcpState::CloseWait);
                        send_fin_when_due(&mut tcb, network_tuple, &up_packet_sender)?;
                    } else {
                        // Our FIN stays timed until acknowledged (a simultaneous close may
                        // cross it); TIME_WAIT ends the resending.
                        tcb.change_state(TcpState::TimeWait);
                        tokio::spawn(task_wait_to_close(tcb_clone.clone(), exit_notifier, network_tuple, config.two_msl));
                    }
                    read_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
                } else if state == TcpState::FinWait1 && our_fin_acked {
                    tcb.change_state(TcpState::FinWait2);
                }
                write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            }
            TcpState::CloseWait => {
                if flags & FIN == FIN || pkt_type == PacketType::KeepAlive {
                    // PATCHED: the peer resent its FIN (our ACK was lost) or probes: answer.
                    write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK, None, None)?;
                }
                send_fin_when_due(&mut tcb, network_tuple, &up_packet_sender)?;
                write_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
            }
            TcpState::LastAck if flags & ACK == ACK && incoming_ack == tcb.get_seq() => {
                tcb.fin_acked();
                tcb.change_state(TcpState::Closed);
                tokio::spawn(async move {
                    if let Err(e) = exit_notifier.send(()).await {
                        log::debug!("exit_notifier send failed: {e}");
                    }
                });
                let new_state = tcb.get_state();
                log::trace!("{network_tuple} {state:?}: Received final ACK, transitioned to {new_state:?}");
            }
            TcpState::TimeWait => {
                if incoming_ack == tcb.get_seq() {
                    tcb.fin_acked();
                }
                if flags & FIN == FIN {
                    write_packet_to_device(&up_packet_sender, network_tuple, &tcb, None, ACK, None, None)?;
                }
            }
            _ => {}
        } // end of match state

        // PATCHED: once everything written is acknowledged, a requested FIN goes out and the
        // shutdown waiting for it learns so.
        if tcb.get_inflight_packets_total_len() == 0 {
            send_fin_when_due(&mut tcb, network_tuple, &up_packet_sender)?;
            if let Shutdown::Pending(w) = &*shutdown.lock().unwrap() {
                w.wake_by_ref();
            }
        }
    } // end of loop
    Ok::<(), std::io::Error>(())
}

fn extract_data_n_write_upstream(
    up_packet_sender: &PacketSender,
    tcb: &mut Tcb,
    network_tuple: NetworkTuple,
    data_tx: &tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    read_notify: &std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
) -> std::io::Result<()> {
    let (state, seq, ack) = (tcb.get_state(), tcb.get_seq(), tcb.get_ack());
    let l_info = Local(seq, ack);
    if state == TcpState::Closed {
        log::debug!("{network_tuple} {state:?}: {l_info} session closed, exiting \"data extraction task\"...");
        return Ok(());
    }

    // PATCHED: all in-order data is handed over (it is bounded by the window, and what stays
    // behind narrows it), and every data segment is answered — a duplicate ACK for one out of
    // order or already received, which is how the peer learns what to resend. Upstream took
    // 8 KiB per arriving segment and answered only when it took something.
    if let Some(data) = tcb.consume_unordered_packets(usize::MAX) {
        let hint = if state == TcpState::Established { "normally" } else { "still" };
        log::trace!("{network_tuple} {state:?}: {l_info} {hint} receiving data, len = {}", data.len());
        data_tx.send(data).map_err(|e| std::io::Error::new(BrokenPipe, e))?;
        read_notify.lock().unwrap().take().map(|w| w.wake_by_ref()).unwrap_or(());
    }
    write_packet_to_device(up_packet_sender, network_tuple, tcb, None, ACK, None, None)?;
    Ok(())
}

/// PATCHED: the options of our SYN-ACK: the configured ones, with the window scale option only
/// when it was negotiated, carrying our shift.
fn syn_ack_options(tcb: &Tcb, configured: Option<&Vec<TcpOptions>>) -> Vec<TcpOptions> {
    let mut opts: Vec<TcpOptions> = configured
        .into_iter()
        .flatten()
        .filter(|o| !matches!(o, TcpOptions::WindowScale(_)))
        .cloned()
        .collect();
    if let Some(shift) = tcb.window_scale() {
        opts.push(TcpOptions::WindowScale(shift));
    }
    opts
}

/// Send a TCP packet to the downstream device, with the specified flags, sequence number, and payload.
/// The returned value is the length of the `payload` sent, it may be shorter than the length of the incoming parameter `payload`.
pub(crate) fn write_packet_to_device(
    up_packet_sender: &PacketSender,
    tuple: NetworkTuple,
    tcb: &Tcb,
    options: Option<&Vec<TcpOptions>>,
    flags: u8,
    seq: Option<SeqNum>,
    payload: Option<Vec<u8>>,
) -> std::io::Result<usize> {
    use std::io::Error;
    let seq = seq.unwrap_or(tcb.get_seq()).0;
    // PATCHED: the window we really have (upstream never offered less than one MTU, so a full
    // buffer still invited more data).
    let (ack, window_size) = (tcb.get_ack().0, tcb.recv_window_field(flags & SYN != 0));
    let (src, dst) = (tuple.dst, tuple.src); // Note: The address is reversed here
    let calc = |ip_header_len: usize, tcp_header_len: usize| tcb.calculate_payload_max_len(ip_header_len, tcp_header_len);
    let packet = create_raw_packet(
        src,
        dst,
        calc,
        flags,
        TTL,
        seq,
        ack,
        window_size,
        payload.unwrap_or_default(),
        options,
    )?;
    let len = packet.payload.as_ref().map(|p| p.len()).unwrap_or(0);
    up_packet_sender.send(packet).map_err(|e| Error::new(UnexpectedEof, e))?;
    Ok(len)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn create_raw_packet(
    src_addr: SocketAddr,
    dst_addr: SocketAddr,
    calculate_payload_max_len: impl Fn(usize, usize) -> usize,
    flags: u8,
    ttl: u8,
    seq: u32,
    ack: u32,
    win: u16,
    mut payload: Vec<u8>,
    options: Option<&Vec<TcpOptions>>,
) -> std::io::Result<NetworkPacket> {
    let mut tcp_header = etherparse::TcpHeader::new(src_addr.port(), dst_addr.port(), seq, win);
    tcp_header.acknowledgment_number = ack;
    tcp_header.syn = flags & SYN != 0;
    tcp_header.ack = flags & ACK != 0;
    tcp_header.rst = flags & RST != 0;
    tcp_header.fin = flags & FIN != 0;
    tcp_header.psh = flags & PSH != 0;

    if let Some(opts) = options {
        let mut tcp_options = Vec::new();
        for opt in opts {
            match opt {
                TcpOptions::MaximumSegmentSize(mss) => tcp_options.push(TcpOptionElement::MaximumSegmentSize(*mss)),
                TcpOptions::WindowScale(shift) => {
                    // Aligned as Linux sends it: NOP, then the 3-byte option.
                    tcp_options.push(TcpOptionElement::Noop);
                    tcp_options.push(TcpOptionElement::WindowScale(*shift));
                }
            }
        }
        tcp_header
            .set_options(&tcp_options)
            .map_err(|e| std::io::Error::new(InvalidInput, e))?;
    }
    let ip_header = match (src_addr.ip(), dst_addr.ip()) {
        (std::net::IpAddr::V4(src), std::net::IpAddr::V4(dst)) => {
            let mut ip_h =
                Ipv4Header::new(0, ttl, IpNumber::TCP, src.octets(), dst.octets()).map_err(|e| std::io::Error::new(InvalidInput, e))?;
            let payload_len = calculate_payload_max_len(ip_h.header_len(), tcp_header.header_len());
            payload.truncate(payload_len);
            ip_h.set_payload_len(payload.len() + tcp_header.header_len())
                .map_err(|e| std::io::Error::new(InvalidInput, e))?;
            ip_h.dont_fragment = true;
            IpHeader::Ipv4(ip_h)
        }
        (std::net::IpAddr::V6(src), std::net::IpAddr::V6(dst)) => {
            let mut ip_h = etherparse::Ipv6Header {
                traffic_class: 0,
                flow_label: Ipv6FlowLabel::ZERO,
                payload_length: 0,
                next_header: IpNumber::TCP,
                hop_limit: ttl,
                source: src.octets(),
                destination: dst.octets(),
            };
            let payload_len = calculate_payload_max_len(ip_h.header_len(), tcp_header.header_len());
            payload.truncate(payload_len);
            let len = payload.len() + tcp_header.header_len();
            ip_h.set_payload_length(len).map_err(|e| std::io::Error::new(InvalidInput, e))?;

            IpHeader::Ipv6(ip_h)
        }
        _ => return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "IP version mismatch")),
    };

    match ip_header {
        IpHeader::Ipv4(ref ip_header) => {
            tcp_header.checksum = tcp_header
                .calc_checksum_ipv4(ip_header, &payload)
                .map_err(|e| std::io::Error::new(InvalidInput, e))?;
        }
        IpHeader::Ipv6(ref ip_header) => {
            tcp_header.checksum = tcp_header
                .calc_checksum_ipv6(ip_header, &payload)
                .map_err(|e| std::io::Error::new(InvalidInput, e))?;
        }
    }
    Ok(NetworkPacket {
        ip: ip_header,
        transport: TransportHeader::Tcp(tcp_header),
        payload: Some(payload),
    })
}
