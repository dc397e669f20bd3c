//! Body passthrough for plain HTTP on the kernel plane.
//!
//! hyper serves every HTTP connection of the userspace stack: it parses each head, and
//! carries each body through its buffers in frames, twice (its client reads the upstream's
//! body, its server writes it to the sandbox). On the kernel plane both ends are kernel
//! sockets, and once a head has passed every check its body needs nothing from the gateway
//! but its length. Here, for a transparent plain-HTTP connection on the kernel plane:
//!
//! * each request head is read and held until complete, taken only if it is one the hyper
//!   path would take the same way ([`head::request`]: the framing gate's strict parse,
//!   HTTP/1.1, no body or a Content-Length one, no `Expect`/upgrade/CONNECT), then checked
//!   by the same functions ([`crate::strict::validate`], [`crate::http::admit`]: Host,
//!   the judge, registries, placeholders);
//! * the checked form is written to the upstream (origin-form, Host from the decision);
//! * the response head is parsed strictly ([`head::response`]: ambiguous framing is a 502);
//! * bodies of a known length move socket to socket with `splice(2)` ([`splice`]), a
//!   chunked response body is followed chunk by chunk ([`chunked`]) and copied, a
//!   close-delimited one is spliced until the upstream closes (and the client connection
//!   closes after it).
//!
//! A request this path does not take — including every one a check would refuse at the
//! head's parse — hands the connection, from that request on, to hyper
//! ([`crate::http::serve`]), which serves or refuses it exactly as before. Terminated TLS
//! (secrets, redaction) and the proxy stay on hyper: their bodies are rewritten or scanned.

mod chunked;
mod head;
mod splice;
mod stream;

pub(crate) use stream::kernel_stream;
pub use stream::KernelStream;

use crate::body::Body;
use crate::ctx::{resp_for, Ctx};
use crate::event::EgressEvent;
use crate::http::{admit, request_failed, Mode, Target};
use bytes::{Buf, BytesMut};
use cleanroom_policy::DenyReason;
use head::{Framing, Response};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes read at once while a head is incomplete or a chunked body is followed.
const READ_SIZE: usize = 64 << 10;

/// How long the gateway's own answer (a refusal, a 502) may take to write.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Serve one transparent plain-HTTP connection to `host:port` on the kernel plane; its
/// opening (`prefix`) was already judged to be HTTP.
pub(crate) async fn serve(
    client: KernelStream,
    prefix: Vec<u8>,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
) {
    let mut c = Conn {
        client,
        cbuf: BytesMut::from(&prefix[..]),
        up: None,
        pipe: None,
        ctx,
        host,
        port,
        served: 0,
    };
    match c.run().await {
        End::Close => crate::closing::close_soon(&mut c.client).await,
        End::Hyper => {
            let Conn {
                client,
                cbuf,
                ctx,
                host,
                port,
                ..
            } = c;
            let io = crate::sniff::Prefixed::new(cbuf.to_vec(), client);
            crate::http::serve_boxed(io, ctx, Mode::Fixed { host, port }).await
        }
    }
}

/// How a served connection ends.
enum End {
    Close,
    /// The next request is hyper's (the unread bytes are in `cbuf`).
    Hyper,
}

/// The upstream connection kept across a client connection's requests.
struct Up {
    io: TcpStream,
    /// Read from the upstream, not yet forwarded.
    buf: BytesMut,
}

struct Conn {
    client: KernelStream,
    /// Read from the client, not yet forwarded.
    cbuf: BytesMut,
    up: Option<Up>,
    pipe: Option<splice::Pipe>,
    ctx: Arc<Ctx>,
    host: String,
    port: u16,
    served: u64,
}

impl Conn {
    async fn run(&mut self) -> End {
        loop {
            let (start, end) = match self.read_head().await {
                Ok(at) => at,
                Err(end) => return end,
            };
            let Some(mut h) = head::request(&self.cbuf[start..end]) else {
                return End::Hyper;
            };
            if crate::strict::validate(&h.req).is_err() {
                return End::Hyper;
            }
            let mode = Mode::Fixed {
                host: self.host.clone(),
                port: self.port,
            };
            let target = match admit(&mut h.req, &self.ctx, &mode).await {
                Ok((target, _)) => target,
                Err(resp) => {
                    self.answer(resp).await;
                    return End::Close;
                }
            };
            self.cbuf.advance(end);
            self.served += 1;
            match self.exchange(h, &target).await {
                Ok(true) => {}
                Ok(false) | Err(()) => return End::Close,
            }
        }
    }

    /// Read until `cbuf` holds a complete request head (its start and end), within
    /// [`crate::sniff::HEAD_WAIT`] as hyper's `header_read_timeout` does.
    async fn read_head(&mut self) -> Result<(usize, usize), End> {
        let deadline = tokio::time::Instant::now() + crate::sniff::HEAD_WAIT;
        loop {
            if let Some(at) = head::request_end(&self.cbuf) {
                return Ok(at);
            }
            if self.cbuf.len() > crate::framing::MAX_HEAD {
                // The framing gate refuses it, with its event and its 400.
                return Err(End::Hyper);
            }
            self.cbuf.reserve(READ_SIZE);
            match tokio::time::timeout_at(deadline, self.client.read_buf(&mut self.cbuf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Err(End::Close),
                Ok(Ok(_)) => {}
                Err(_) => {
                    // An idle keep-alive connection is closed quietly; a head begun and
                    // not finished is a decision.
                    if !self.cbuf.is_empty() || self.served == 0 {
                        self.ctx.events.emit(EgressEvent::deny(
                            &self.host,
                            self.port,
                            "http",
                            DenyReason::DecisionTimeout,
                            format!(
                                "request head refused: not complete within {} s",
                                crate::sniff::HEAD_WAIT.as_secs()
                            ),
                        ));
                    }
                    return Err(End::Close);
                }
            }
        }
    }

    /// One admitted request, its body and its response. `Ok(true)`: the connection goes on.
    async fn exchange(&mut self, h: head::RequestHead, t: &Target) -> Result<bool, ()> {
        let mut up = match self.upstream(t).await {
            Ok(up) => up,
            Err(resp) => return self.fail(resp).await,
        };
        let mut out = head::upstream_request(&h.req, &t.host_header());
        let early = usize::try_from(h.body)
            .unwrap_or(usize::MAX)
            .min(self.cbuf.len());
        out.extend_from_slice(&self.cbuf[..early]);
        self.cbuf.advance(early);
        if let Err(e) = up.io.write_all(&out).await {
            let resp = request_failed(&self.ctx, t, e.to_string());
            return self.fail(resp).await;
        }
        let rest = h.body - early as u64;
        if rest > 0 {
            let client = &self.client;
            let pipe = pipe(&mut self.pipe)?;
            splice::relay(client.socket(), &up.io, pipe, Some(rest), &mut |n| {
                client.received(n)
            })
            .await
            .map_err(|e| tracing::debug!(%e, "request body relay cut"))?;
        }
        let is_head = h.req.method() == hyper::Method::HEAD;
        let (bytes, framing, close) = match read_response(&mut up, is_head).await {
            Ok(r) => r,
            Err(msg) => {
                let resp = request_failed(&self.ctx, t, msg);
                return self.fail(resp).await;
            }
        };
        self.ctx
            .events
            .emit(EgressEvent::allow(&t.host, t.port, t.proto));
        self.respond(&mut up, bytes, framing).await?;
        let keep = !(h.close || close);
        if keep {
            self.up = Some(up);
        }
        Ok(keep)
    }

    /// The response head, then its body, to the client.
    async fn respond(&mut self, up: &mut Up, head: Vec<u8>, framing: Framing) -> Result<(), ()> {
        let mut out = head;
        let (early, rest) = match framing {
            Framing::Empty | Framing::Chunked => (0, None),
            Framing::Length(n) => {
                let k = usize::try_from(n).unwrap_or(usize::MAX).min(up.buf.len());
                (k, Some(Some(n - k as u64)))
            }
            Framing::Close => (up.buf.len(), Some(None)),
        };
        out.extend_from_slice(&up.buf[..early]);
        up.buf.advance(early);
        self.client.write_all(&out).await.map_err(|_| ())?;
        match (framing, rest) {
            (Framing::Chunked, _) => self.relay_chunked(up).await,
            (_, Some(len)) if len != Some(0) => {
                let client = &self.client;
                let pipe = pipe(&mut self.pipe)?;
                splice::relay(&up.io, client.socket(), pipe, len, &mut |n| client.sent(n))
                    .await
                    .map_err(|e| tracing::debug!(%e, "response body relay cut"))
            }
            _ => Ok(()),
        }
    }

    /// A chunked response body, followed strictly and copied as it came.
    async fn relay_chunked(&mut self, up: &mut Up) -> Result<(), ()> {
        let mut body = chunked::Chunked::new();
        loop {
            if !up.buf.is_empty() {
                let k = body.feed(&up.buf).map_err(|msg| {
                    tracing::debug!(%msg, "chunked response body refused");
                })?;
                self.client.write_all(&up.buf[..k]).await.map_err(|_| ())?;
                up.buf.advance(k);
                if body.done() {
                    return Ok(());
                }
            }
            up.buf.reserve(READ_SIZE);
            if up.io.read_buf(&mut up.buf).await.map_err(|_| ())? == 0 {
                return Err(());
            }
        }
    }

    /// The kept upstream connection if it is still open and idle, else a new one.
    async fn upstream(&mut self, t: &Target) -> Result<Up, hyper::Response<Body>> {
        if let Some(up) = self.up.take() {
            if up.buf.is_empty() && idle_open(&up.io) {
                return Ok(up);
            }
        }
        let io = self
            .ctx
            .upstream_connect(&t.host, t.port)
            .await
            .map_err(|e| resp_for(&self.ctx, &t.host, t.port, t.proto, e))?;
        let _ = io.set_nodelay(true);
        Ok(Up {
            io,
            buf: BytesMut::new(),
        })
    }

    /// Answer with `resp` and end the exchange (the connection closes after it).
    async fn fail(&mut self, resp: hyper::Response<Body>) -> Result<bool, ()> {
        self.answer(resp).await;
        Err(())
    }

    /// Write the gateway's own answer (the connection closes after it).
    async fn answer(&mut self, resp: hyper::Response<Body>) {
        let bytes = head::gateway_response(resp).await;
        let _ = tokio::time::timeout(ANSWER_WAIT, self.client.write_all(&bytes)).await;
    }
}

/// The connection's pipe, made on first use; failing to make one (no descriptors left)
/// ends the connection.
fn pipe(slot: &mut Option<splice::Pipe>) -> Result<&mut splice::Pipe, ()> {
    if slot.is_none() {
        *slot = Some(splice::Pipe::new().map_err(|_| ())?);
    }
    slot.as_mut().ok_or(())
}

/// Read the final response head (1xx skipped): its bytes for the client, its framing and
/// whether the connection ends after it. `Err` is why no usable response came.
async fn read_response(up: &mut Up, is_head: bool) -> Result<(Vec<u8>, Framing, bool), String> {
    let mut informational = 0;
    loop {
        match head::response(&up.buf, is_head)? {
            Some((Response::Informational, n)) => {
                up.buf.advance(n);
                informational += 1;
                if informational > head::MAX_INFORMATIONAL {
                    return Err("too many informational responses".into());
                }
                continue;
            }
            Some((
                Response::Final {
                    bytes,
                    framing,
                    close,
                },
                n,
            )) => {
                up.buf.advance(n);
                return Ok((bytes, framing, close));
            }
            None => {}
        }
        up.buf.reserve(READ_SIZE);
        match up.io.read_buf(&mut up.buf).await {
            Ok(0) => return Err("the upstream closed the connection before a response".into()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Is a kept upstream connection still open with nothing unread? A peek, not tokio's
/// readiness: a close the reactor has not seen yet must count too.
fn idle_open(io: &TcpStream) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: `b` is a valid one-byte buffer; the descriptor is borrowed for the call.
    let n = unsafe {
        libc::recv(
            io.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock
}
