//! `GET /ui/api/live`: a server-sent event stream that says "something changed" — and
//! nothing else. It waits on the engine's event-log signal (the same one that wakes
//! every `StreamSandboxEvents` tail: a status change, an `egress.pending`, a decision);
//! the page then reads what changed through the API as its principal (ListSandboxes,
//! ListEgressRequests…). No data travels here — not even the event's sequence — so no
//! ownership rule can be missed here.
//!
//! Changes are coalesced (at most one message per [`COALESCE`]); a `tick` every
//! [`TICK`] keeps proxies from closing the stream and lets the server notice a session
//! that ended (logout, expiry): the stream then ends.

use super::session::Sessions;
use super::Web;
use crate::api::errors::ApiBody;
use crate::model::error::EngineError;
use crate::rest::error::RestError;
use bytes::Bytes;
use http::{header, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Least time between two change messages.
pub const COALESCE: Duration = Duration::from_millis(100);
/// A `tick` message at least this often: the page refreshes what changes without an event
/// (usage figures, pool counters), and the server notices a session that ended.
pub const TICK: Duration = Duration::from_secs(5);

struct State {
    rx: watch::Receiver<i64>,
    sessions: Arc<Sessions>,
    session: String,
    first: bool,
}

async fn next(mut st: State) -> Option<(Result<Frame<Bytes>, Infallible>, State)> {
    let msg = if st.first {
        st.first = false;
        st.rx.mark_unchanged();
        "retry: 2000\nevent: change\ndata: \n\n".to_string()
    } else {
        tokio::select! {
            r = st.rx.changed() => {
                // No more writer: the server is stopping.
                r.ok()?;
                tokio::time::sleep(COALESCE).await;
                st.rx.mark_unchanged();
                "event: change\ndata: \n\n".to_string()
            }
            _ = tokio::time::sleep(TICK) => "event: tick\ndata: 0\n\n".to_string(),
        }
    };
    // Logged out or expired: the stream ends with the session.
    st.sessions.get(&st.session)?;
    Some((Ok(Frame::data(Bytes::from(msg))), st))
}

/// `GET /ui/api/live` for the request's session.
pub fn live<B>(web: &Web, req: Request<B>) -> Result<Response<ApiBody>, RestError> {
    let Some((session, _)) = web.current(&req) else {
        return Err(EngineError::unauthenticated("not logged in").into());
    };
    let st = State {
        rx: web.api.engine.events.subscribe(),
        sessions: web.sessions.clone(),
        session,
        first: true,
    };
    let stream = futures::stream::unfold(st, next);
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-store")
        .body(StreamBody::new(stream).boxed_unsync())
        .unwrap_or_else(|_| Response::new(ApiBody::default())))
}
