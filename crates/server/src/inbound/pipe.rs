//! The sandbox side of one inbound connection, metered: [`Metered`] counts the bytes
//! each way, refuses more than [`InboundLimits::max_bytes`] in either direction, and
//! reports traffic as the sandbox's activity (at most once a second; bytes toward a
//! sandbox that was suspended meanwhile resume it — they wait in its socket buffer until
//! it runs). [`Meter::idle`] resolves once no byte moved for the idle timeout, which ends
//! the connection.

use super::InboundLimits;
use crate::engine::Engine;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Counters and activity of one connection.
pub struct Meter {
    engine: Arc<Engine>,
    sandbox_id: String,
    limits: InboundLimits,
    start: Instant,
    /// Bytes written to the sandbox / read from it.
    pub to_sandbox: AtomicU64,
    pub from_sandbox: AtomicU64,
    /// Milliseconds after `start` of the last byte either way, and of the last activity
    /// report.
    last: AtomicU64,
    reported: AtomicU64,
}

impl Meter {
    pub fn new(engine: Arc<Engine>, sandbox_id: &str, limits: InboundLimits) -> Arc<Meter> {
        Arc::new(Meter {
            engine,
            sandbox_id: sandbox_id.into(),
            limits,
            start: Instant::now(),
            to_sandbox: AtomicU64::new(0),
            from_sandbox: AtomicU64::new(0),
            last: AtomicU64::new(0),
            reported: AtomicU64::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// `n` bytes moved (`toward`: into the sandbox). `Err` past the byte cap.
    fn moved(&self, n: usize, toward: bool) -> std::io::Result<()> {
        let counter = if toward {
            &self.to_sandbox
        } else {
            &self.from_sandbox
        };
        let total = counter.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        let now = self.now_ms();
        self.last.store(now, Ordering::Relaxed);
        let reported = self.reported.load(Ordering::Relaxed);
        if now.saturating_sub(reported) >= 1000
            && self
                .reported
                .compare_exchange(reported, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let (engine, id) = (self.engine.clone(), self.sandbox_id.clone());
            tokio::spawn(async move {
                if let Err(e) = engine.inbound_activity(&id, "inbound traffic").await {
                    tracing::debug!(sandbox_id = %id, error = %e, "inbound activity");
                }
            });
        }
        if total > self.limits.max_bytes {
            return Err(std::io::Error::other(format!(
                "more than {} bytes in one direction",
                self.limits.max_bytes
            )));
        }
        Ok(())
    }

    /// Did the byte cap end the connection?
    pub fn over_cap(&self) -> bool {
        let max = self.limits.max_bytes;
        self.to_sandbox.load(Ordering::Relaxed) > max
            || self.from_sandbox.load(Ordering::Relaxed) > max
    }

    /// Resolves once no byte moved either way for the idle timeout.
    pub async fn idle(&self) {
        let limit = self.limits.idle_timeout.max(Duration::from_millis(100));
        loop {
            let since = self
                .now_ms()
                .saturating_sub(self.last.load(Ordering::Relaxed));
            let since = Duration::from_millis(since);
            if since >= limit {
                return;
            }
            tokio::time::sleep(limit - since).await;
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

/// A stream to the sandbox whose traffic goes through a [`Meter`].
pub struct Metered<S> {
    inner: S,
    meter: Arc<Meter>,
}

impl<S> Metered<S> {
    pub fn new(inner: S, meter: Arc<Meter>) -> Self {
        Metered { inner, meter }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let n = buf.filled().len() - before;
            if n > 0 {
                self.meter.moved(n, false)?;
            }
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            if n > 0 {
                self.meter.moved(n, true)?;
            }
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
