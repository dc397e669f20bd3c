//! One attach: authenticate the hello against the [`Broker`], re-check that the
//! principal still sees the execution, then forward the execution's terminal output
//! (replayed tail, then live, then the exit) and, for a driver, its input, window size
//! and signals.

use super::{quic::PREHELLO_TIMEOUT, Broker};
use crate::budgets::admission::Gate;
use crate::engine::{Engine, StreamItem};
use cleanroom_console::{read_frame, write_frame, Frame, Mode, MAX_PAYLOAD};
use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// How long the last frames may take to reach the client before the connection closes.
const FLUSH: Duration = Duration::from_secs(2);

async fn refuse(mut send: quinn::SendStream, code: &str, message: &str) {
    let _ = write_frame(
        &mut send,
        &Frame::Error {
            code: code.into(),
            message: message.into(),
        },
    )
    .await;
    let _ = send.finish();
    let _ = tokio::time::timeout(FLUSH, send.stopped()).await;
}

/// Serve one attach on its stream pair until the execution ends or the client leaves.
pub async fn run(
    engine: Arc<Engine>,
    broker: Arc<Broker>,
    gate: &Gate,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
) {
    let hello = match tokio::time::timeout(PREHELLO_TIMEOUT, read_frame(&mut recv)).await {
        Ok(Ok(Some(Frame::Hello(h)))) => h,
        _ => return refuse(send, "invalid_argument", "expected a hello frame").await,
    };
    let grant = match broker.redeem(&hello.session_id, &hello.token, &hello.execution_id) {
        Ok(g) => g,
        Err(r) => {
            tracing::info!(session_id = %hello.session_id, reason = %r, "console attach refused");
            return refuse(send, "unauthenticated", &r.to_string()).await;
        }
    };
    // Out of the pending budget, into the principal's share of attached consoles.
    if let Err(r) = gate.authenticate(&grant.principal) {
        tracing::info!(principal = %grant.principal.name, reason = %r, "console attach refused");
        return refuse(send, "resource_exhausted", &r.to_string()).await;
    }
    // Ownership again, now: the ticket is only as good as its principal's rights.
    let exe = match engine.execution(&grant.principal, "", &grant.execution_id) {
        Ok(r) => r,
        Err(e) => return refuse(send, e.code.as_str(), &e.message).await,
    };
    let term = exe.terminal();
    let driver = hello.mode == Mode::Driver;
    if let (true, Some(t)) = (driver, &term) {
        if hello.cols > 0 && hello.rows > 0 {
            let _ = t.pty.resize(hello.cols, hello.rows);
        }
    }
    let output = match exe.console_stream().await {
        Ok(s) => s,
        Err(e) => return refuse(send, e.code.as_str(), &e.message).await,
    };
    if write_frame(&mut send, &Frame::Ready).await.is_err() {
        return;
    }
    let mut out = tokio::spawn(forward(output, send));
    let input = async {
        loop {
            let frame = match read_frame(&mut recv).await {
                Ok(Some(f)) => f,
                _ => break,
            };
            // A viewer's control frames are ignored; only a driver types.
            let Some(t) = term.as_ref().filter(|_| driver) else {
                continue;
            };
            match frame {
                Frame::Input(data) => {
                    if t.pty.write_all(&data).await.is_err() {
                        break;
                    }
                }
                Frame::Resize { cols, rows } => {
                    let _ = t.pty.resize(cols, rows);
                }
                Frame::Signal(sig) => {
                    if let Err(e) = exe.signal_terminal(t, sig.into()).await {
                        tracing::debug!(error = %e, "console signal refused");
                    }
                }
                // Anything else from a client is a protocol error.
                _ => break,
            }
        }
    };
    tokio::select! {
        _ = &mut out => {}
        _ = input => out.abort(),
    }
}

/// Terminal output into `Output` frames, then the exit.
async fn forward(
    mut output: futures::stream::BoxStream<
        'static,
        Result<StreamItem, crate::model::error::EngineError>,
    >,
    mut send: quinn::SendStream,
) {
    while let Some(item) = output.next().await {
        let frame = match item {
            Ok(StreamItem::Output { data, .. }) => {
                let mut ok = true;
                for chunk in data.chunks(MAX_PAYLOAD) {
                    if write_frame(&mut send, &Frame::Output(chunk.to_vec()))
                        .await
                        .is_err()
                    {
                        ok = false;
                        break;
                    }
                }
                if !ok {
                    return;
                }
                continue;
            }
            Ok(StreamItem::Warning { .. }) => continue,
            Ok(StreamItem::Exit { exit, .. }) => Frame::Exit {
                status: exit.status,
                exit_code: exit.exit_code,
                message: exit.message,
            },
            Err(e) => Frame::Error {
                code: e.code.as_str().into(),
                message: e.message,
            },
        };
        let _ = write_frame(&mut send, &frame).await;
        break;
    }
    let _ = send.finish();
    let _ = tokio::time::timeout(FLUSH, send.stopped()).await;
}
