//! A gate on the raw bytes of a client's HTTP/1 connection, in front of hyper.
//!
//! hyper resolves some ambiguities itself before the gateway sees the parsed request: with
//! both Transfer-Encoding and Content-Length it drops Content-Length, and it merges equal
//! duplicate Content-Lengths. Its choice is the RFC's, but an ambiguous head is an attempt
//! at smuggling and is refused outright (`request_malformed`). This gate follows the
//! connection's message framing (heads, fixed-length and chunked bodies) and holds back
//! every head until it is complete and checked with `httparse`: hyper never reads a byte of
//! a head that fails, and so nothing of it reaches an upstream.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Largest request head accepted (hyper's own limit is of the same order).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most header fields in one head.
const MAX_FIELDS: usize = 128;

/// Where the gate is in the client's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Collecting a request head.
    Head,
    /// Passing `n` more body bytes.
    Body(u64),
    /// A chunk-size line of a chunked body.
    ChunkSize,
    /// Passing `n` more chunk bytes, then the chunk's CRLF.
    Chunk(u64),
    /// The CRLF after a chunk's data (`n` bytes of it left).
    ChunkEnd(u8),
    /// The trailer section after the last chunk.
    Trailers,
    /// After a CONNECT or Upgrade request: the stream is no longer HTTP/1 messages.
    Opaque,
}

/// Why the gate closed, for the deny event.
pub(crate) type Verdict = Arc<Mutex<Option<String>>>;

/// The client side of a served HTTP/1 connection, passed through the framing gate.
pub(crate) struct Gate<S> {
    inner: S,
    state: State,
    /// Bytes read but not yet judged (a partial head, a partial size line).
    held: Vec<u8>,
    /// Judged bytes not yet handed to hyper.
    ready: Vec<u8>,
    verdict: Verdict,
    /// Set while part of a request head is held back (a head started, not complete).
    partial: Arc<AtomicBool>,
}

impl<S> Gate<S> {
    pub(crate) fn new(inner: S, verdict: Verdict, partial: Arc<AtomicBool>) -> Self {
        Gate {
            inner,
            state: State::Head,
            held: Vec::new(),
            ready: Vec::new(),
            verdict,
            partial,
        }
    }

    /// Judge newly read bytes; `Err` refuses the connection.
    fn take(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            match self.state {
                State::Opaque => {
                    self.ready.extend_from_slice(data);
                    return Ok(());
                }
                State::Body(n) | State::Chunk(n) => {
                    let k = (n as usize).min(data.len());
                    self.ready.extend_from_slice(&data[..k]);
                    data = &data[k..];
                    let left = n - k as u64;
                    self.state = match (self.state, left) {
                        (State::Body(_), 0) => State::Head,
                        (State::Body(_), l) => State::Body(l),
                        (_, 0) => State::ChunkEnd(2),
                        (_, l) => State::Chunk(l),
                    };
                }
                State::ChunkEnd(n) => {
                    let want: &[u8] = if n == 2 { b"\r\n" } else { b"\n" };
                    if data[0] != want[0] {
                        return Err("a chunk not followed by CRLF".into());
                    }
                    self.ready.push(data[0]);
                    data = &data[1..];
                    self.state = if n == 2 {
                        State::ChunkEnd(1)
                    } else {
                        State::ChunkSize
                    };
                }
                State::Head | State::ChunkSize | State::Trailers => {
                    self.held.push(data[0]);
                    data = &data[1..];
                    self.step_line()?;
                }
            }
        }
        Ok(())
    }

    /// How many bytes may go to the reader unjudged now (at most `room`): the rest of a
    /// body or chunk, or anything in a tunnel; `None` when the next bytes must be judged.
    fn passthrough(&self, room: usize) -> Option<usize> {
        if !self.held.is_empty() || room == 0 {
            return None;
        }
        match self.state {
            State::Opaque => Some(room),
            State::Body(n) | State::Chunk(n) => Some(room.min(usize::try_from(n).unwrap_or(room))),
            _ => None,
        }
    }

    /// `n` bytes went to the reader through [`Gate::passthrough`].
    fn passed(&mut self, n: usize) {
        let n = n as u64;
        self.state = match self.state {
            State::Body(left) if left <= n => State::Head,
            State::Body(left) => State::Body(left - n),
            State::Chunk(left) if left <= n => State::ChunkEnd(2),
            State::Chunk(left) => State::Chunk(left - n),
            other => other,
        };
    }

    /// After one more held byte: act when a line or head is complete.
    fn step_line(&mut self) -> Result<(), String> {
        if self.held.len() > MAX_HEAD {
            return Err(format!(
                "a request head or chunk line over {MAX_HEAD} bytes"
            ));
        }
        if !self.held.ends_with(b"\n") {
            return Ok(());
        }
        match self.state {
            State::ChunkSize => {
                let line = std::mem::take(&mut self.held);
                let size = chunk_size(&line)?;
                self.ready.extend_from_slice(&line);
                self.state = if size == 0 {
                    State::Trailers
                } else {
                    State::Chunk(size)
                };
            }
            State::Trailers => {
                if self.held.ends_with(b"\r\n\r\n") || self.held == b"\r\n" {
                    self.ready.append(&mut self.held);
                    self.state = State::Head;
                }
            }
            _ => {
                // One empty line before a request is tolerated (RFC 9112 2.2).
                if self.held == b"\r\n" {
                    return Ok(());
                }
                let start = if self.held.starts_with(b"\r\n") { 2 } else { 0 };
                if self.held.ends_with(b"\r\n\r\n") {
                    let head = std::mem::take(&mut self.held);
                    self.state = judge_head(&head[start..])?;
                    self.ready.extend_from_slice(&head[start..]);
                }
            }
        }
        Ok(())
    }
}

/// The size of a chunk from its size line (extensions ignored).
pub(crate) fn chunk_size(line: &[u8]) -> Result<u64, String> {
    let line = line
        .strip_suffix(b"\r\n")
        .ok_or("a chunk-size line not ended by CRLF")?;
    let hex = line.split(|&b| b == b';').next().unwrap_or_default();
    let hex = std::str::from_utf8(hex).map_err(|_| "a chunk size that is not hex")?;
    if hex.is_empty() || hex.len() > 15 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("chunk size {hex:?}"));
    }
    u64::from_str_radix(hex, 16).map_err(|e| e.to_string())
}

/// Parse one complete head strictly; the framing of what follows it.
pub(crate) fn judge_head(head: &[u8]) -> Result<State, String> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let mut req = httparse::Request::new(&mut fields);
    // httparse accepts bare LF line ends (RFC 9112 2.2 allows it); a gate that split heads
    // on CRLF only must not let two LF-separated heads pass as one.
    if head
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || head[i - 1] != b'\r'))
    {
        return Err("a bare LF in a request head".into());
    }
    match req.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        Ok(httparse::Status::Complete(_)) => return Err("more than one head in a head".into()),
        Ok(httparse::Status::Partial) => return Err("an incomplete request head".into()),
        Err(e) => return Err(format!("request head: {e}")),
    }
    let count = |name: &str| {
        req.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name))
            .count()
    };
    let (hosts, cls, tes) = (
        count("host"),
        count("content-length"),
        count("transfer-encoding"),
    );
    if hosts > 1 {
        return Err(format!("{hosts} Host headers"));
    }
    if cls > 0 && tes > 0 {
        return Err("Transfer-Encoding together with Content-Length".into());
    }
    if cls > 1 || tes > 1 {
        return Err("a repeated Content-Length or Transfer-Encoding header".into());
    }
    let value = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    if req.method == Some("CONNECT") || value("upgrade").is_some() {
        // A tunnel or protocol switch: what follows is not HTTP/1 messages. (A refused
        // CONNECT or Upgrade closes the connection.)
        return Ok(State::Opaque);
    }
    if let Some(te) = value("transfer-encoding") {
        if !te.eq_ignore_ascii_case(b"chunked") {
            return Err("a Transfer-Encoding other than one plain \"chunked\"".into());
        }
        return Ok(State::ChunkSize);
    }
    if let Some(cl) = value("content-length") {
        let n = std::str::from_utf8(cl)
            .ok()
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or("a Content-Length that is not a single number")?;
        return Ok(if n == 0 { State::Head } else { State::Body(n) });
    }
    Ok(State::Head)
}

impl<S: AsyncRead + Unpin> AsyncRead for Gate<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            if !self.ready.is_empty() {
                let n = self.ready.len().min(buf.remaining());
                buf.put_slice(&self.ready[..n]);
                self.ready.drain(..n);
                return Poll::Ready(Ok(()));
            }
            // Body bytes (and a tunnel's) need no judging byte by byte: they are read
            // straight into hyper's buffer, as many as the framing says belong to the body.
            if let Some(limit) = self.passthrough(buf.remaining()) {
                let mut sub = buf.take(limit);
                ready!(Pin::new(&mut self.inner).poll_read(cx, &mut sub))?;
                let n = sub.filled().len();
                // SAFETY: `sub` is a view of `buf`'s unfilled part, and the inner reader
                // initialized (filled) its first `n` bytes.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                self.passed(n);
                return Poll::Ready(Ok(()));
            }
            let mut chunk = [0u8; 16384];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut self.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                    // EOF: whatever is held back was never complete; hyper sees a clean end.
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Ok(())) => {
                    let n = rb.filled().len();
                    let judged = self.take(&chunk[..n]);
                    let partial = self.state == State::Head && !self.held.is_empty();
                    self.partial.store(partial, Ordering::Relaxed);
                    if let Err(msg) = judged {
                        if let Ok(mut v) = self.verdict.lock() {
                            *v = Some(msg.clone());
                        }
                        self.ready.clear();
                        return Poll::Ready(Err(std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            msg,
                        )));
                    }
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Gate<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8]) -> Result<Vec<u8>, String> {
        let mut g = Gate::new((), Arc::default(), Arc::default());
        // Byte by byte and all at once must agree.
        let mut one = Gate::new((), Arc::default(), Arc::default());
        for b in input {
            one.take(std::slice::from_ref(b))?;
        }
        g.take(input)?;
        assert_eq!(g.ready, one.ready);
        Ok(g.ready)
    }

    #[test]
    fn honest_streams_pass_unchanged() {
        let s: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n\
            POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
            POST /y HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;ext=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n\
            GET /z HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(run(s).unwrap(), s);
        // A body that looks like a bad head is just a body.
        let s: &[u8] =
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 23\r\n\r\nHost: b\r\nHost: c\r\n\r\n\r\n";
        assert_eq!(run(s).unwrap(), s);
        // One leading empty line is tolerated and dropped.
        assert_eq!(
            run(b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap(),
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
        );
    }

    /// Gives at most `step` bytes per read, so bodies arrive in pieces.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = self.data.len().min(self.step).min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Poll::Ready(Ok(()))
        }
    }

    async fn read_through(data: &[u8], step: usize) -> std::io::Result<Vec<u8>> {
        use tokio::io::AsyncReadExt;
        let mut out = Vec::new();
        let mut g = Gate::new(Trickle { data, step }, Arc::default(), Arc::default());
        g.read_to_end(&mut out).await?;
        Ok(out)
    }

    /// Read through the gate (bodies passed straight to the reader, in pieces or whole),
    /// honest streams come out unchanged and a bad head after a body is still refused.
    #[tokio::test]
    async fn bodies_pass_through_and_the_next_head_is_still_judged() {
        let honest: &[u8] = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
            POST /y HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
            5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
        let smuggled: &[u8] = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello\
            GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
        let chunk_overrun: &[u8] =
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n\
            2\r\nhello\r\n0\r\n\r\n";
        for step in [1, 3, 7, 4096] {
            assert_eq!(read_through(honest, step).await.unwrap(), honest, "{step}");
            assert!(read_through(smuggled, step).await.is_err(), "{step}");
            assert!(read_through(chunk_overrun, step).await.is_err(), "{step}");
        }
    }

    #[test]
    fn smuggling_heads_are_refused_before_hyper_sees_them() {
        for s in [
            &b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4, 4\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
            b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
            b"GET / HTTP/1.1\r\nHost: a\n\nGET / HTTP/1.1\r\nHost: b\r\n\r\n",
            // The second request of a pipeline is judged too.
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        ] {
            let mut g = Gate::new((), Arc::default(), Arc::default());
            assert!(g.take(s).is_err(), "{}", String::from_utf8_lossy(s));
        }
    }
}
