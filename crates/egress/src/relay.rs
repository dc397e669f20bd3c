//! Passing a response body on to the sandbox without losing its last bytes to an error.
//!
//! hyper's server buffers the frames of a response body and flushes them between polls of
//! the body; when a poll ends in an error it drops the connection, and with it whatever it
//! had buffered but not yet written. An upstream body that delivers its last bytes and
//! then fails (a TLS upstream closing without close_notify under a close-delimited body,
//! a body cut short) would reach the sandbox without those bytes — for a short body,
//! empty. [`FlushFirst`] holds an error back for one poll, so everything before it is
//! written first; the connection is still cut, so the sandbox sees the response end early.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A body whose error is delivered one poll late (see the module docs).
pub(crate) struct FlushFirst<B: Body> {
    inner: B,
    /// An error from `inner`, delivered at the next poll.
    held: Option<B::Error>,
}

impl<B: Body> FlushFirst<B> {
    pub(crate) fn new(inner: B) -> Self {
        FlushFirst { inner, held: None }
    }
}

impl<B> Body for FlushFirst<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        if let Some(e) = self.held.take() {
            return Poll::Ready(Some(Err(e)));
        }
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Err(e))) => {
                // Let the server write what it buffered before it sees the error.
                self.held = Some(e);
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A body that yields `frames`, each ready.
    struct Scripted(VecDeque<Result<Frame<Bytes>, String>>);

    impl Body for Scripted {
        type Data = Bytes;
        type Error = String;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, String>>> {
            Poll::Ready(self.0.pop_front())
        }
    }

    #[test]
    fn data_then_error_comes_out_in_order_with_a_pause_before_the_error() {
        let frames = VecDeque::from([
            Ok(Frame::data(Bytes::from_static(b"hello"))),
            Err("cut".to_string()),
        ]);
        let mut body = FlushFirst::new(Scripted(frames));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut poll = || Pin::new(&mut body).poll_frame(&mut cx);
        assert!(
            matches!(poll(), Poll::Ready(Some(Ok(f))) if f.data_ref().map(|d| &d[..]) == Some(&b"hello"[..]))
        );
        // The error is held for one poll (Pending, the task woken), then delivered.
        assert!(poll().is_pending());
        assert!(matches!(poll(), Poll::Ready(Some(Err(e))) if e == "cut"));
        assert!(matches!(poll(), Poll::Ready(None)));
    }
}
