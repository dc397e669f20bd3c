//! The client half of an interactive console: `AttachExecution` for a ticket, then a
//! QUIC connection to the endpoint it names, verified by the certificate pin it carries
//! (no other trust: the ticket came over the authenticated API), and the hello frame.
//! What flows next is `cleanroom_console::Frame`s on one bidirectional stream.

use crate::api::{AttachExecutionRequest, AttachExecutionResponse};
use crate::{ApiError, Client, ErrorCode};
use cleanroom_console::{read_frame, write_frame, Frame, Hello, Mode};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How often the client proves it is alive (the server closes idle connections).
const KEEP_ALIVE: Duration = Duration::from_secs(2);
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An attached console: the stream pair plus what keeps the connection open.
pub struct Console {
    pub send: quinn::SendStream,
    pub recv: quinn::RecvStream,
    conn: quinn::Connection,
    endpoint: quinn::Endpoint,
}

impl Console {
    /// Close the connection (a detach: the execution keeps running).
    pub async fn close(self) {
        let (send, _recv, closer) = self.split();
        closer.close(send).await;
    }

    /// The streams apart (to read and write from different tasks) and what closes them.
    pub fn split(self) -> (quinn::SendStream, quinn::RecvStream, Closer) {
        (
            self.send,
            self.recv,
            Closer {
                conn: self.conn,
                endpoint: self.endpoint,
            },
        )
    }
}

/// Closes a split [`Console`]'s connection.
pub struct Closer {
    conn: quinn::Connection,
    endpoint: quinn::Endpoint,
}

impl Closer {
    pub async fn close(self, mut send: quinn::SendStream) {
        let _ = send.finish();
        self.conn.close(quinn::VarInt::from_u32(0), b"detach");
        let _ = tokio::time::timeout(Duration::from_secs(1), self.endpoint.wait_idle()).await;
    }
}

fn err(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError {
        code: code.to_string(),
        message: message.into(),
        connect_code: String::new(),
        details: Vec::new(),
    }
}

/// Ask the server for a console ticket.
pub async fn ticket(
    client: &Client,
    sandbox_id: &str,
    execution_id: &str,
    cols: u16,
    rows: u16,
) -> Result<AttachExecutionResponse, ApiError> {
    let req = AttachExecutionRequest {
        sandbox_id: sandbox_id.to_string(),
        execution_id: execution_id.to_string(),
        initial_cols: cols.into(),
        initial_rows: rows.into(),
        ..Default::default()
    };
    Ok(client.executions.attach_execution(req).await?.into_owned())
}

/// Where to reach the console: the ticket's endpoint, with an unspecified address
/// (a server bound to all interfaces) replaced by the API server's host.
pub fn console_addr(
    ticket: &AttachExecutionResponse,
    api_host: Option<IpAddr>,
) -> Result<SocketAddr, ApiError> {
    let mut addr: SocketAddr = ticket.quic_endpoint.parse().map_err(|_| {
        err(
            ErrorCode::InvalidArgument,
            format!("bad console endpoint {:?}", ticket.quic_endpoint),
        )
    })?;
    if addr.ip().is_unspecified() {
        addr.set_ip(api_host.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }
    Ok(addr)
}

/// Connect with a ticket and say hello. `Err` carries the server's refusal code
/// (`unauthenticated` for a bad, used or expired token).
pub async fn connect(
    ticket: &AttachExecutionResponse,
    execution_id: &str,
    addr: SocketAddr,
    mode: Mode,
    cols: u16,
    rows: u16,
) -> Result<Console, ApiError> {
    let unreachable = |m: String| err(ErrorCode::ServerUnreachable, m);
    let mut tls = crate::tls::pinned_config(&ticket.server_cert_pin_sha256)
        .map_err(|e| err(ErrorCode::InvalidArgument, e))?;
    tls.alpn_protocols = vec![ticket.alpn.as_bytes().to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| err(ErrorCode::Internal, e.to_string()))?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(KEEP_ALIVE));
    // A server that died is noticed after this long without an answer.
    transport.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(IDLE_TIMEOUT)
            .map_err(|e| err(ErrorCode::Internal, e.to_string()))?,
    ));
    cfg.transport_config(Arc::new(transport));
    let bind: SocketAddr = match addr {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let endpoint =
        quinn::Endpoint::client(bind).map_err(|e| unreachable(format!("console socket: {e}")))?;
    let connecting = endpoint
        .connect_with(cfg, addr, "cleanroom-console")
        .map_err(|e| unreachable(format!("console {addr}: {e}")))?;
    let conn = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
        .await
        .map_err(|_| unreachable(format!("console {addr}: timed out")))?
        .map_err(|e| unreachable(format!("console {addr}: {e}")))?;
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .map_err(|e| unreachable(format!("console {addr}: {e}")))?;
    let hello = Frame::Hello(Hello {
        session_id: ticket.session_id.clone(),
        token: ticket.session_token.clone(),
        execution_id: execution_id.to_string(),
        mode,
        cols,
        rows,
    });
    write_frame(&mut send, &hello)
        .await
        .map_err(|e| unreachable(format!("console {addr}: {e}")))?;
    match tokio::time::timeout(CONNECT_TIMEOUT, read_frame(&mut recv)).await {
        Ok(Ok(Some(Frame::Ready))) => Ok(Console {
            send,
            recv,
            conn,
            endpoint,
        }),
        Ok(Ok(Some(Frame::Error { code, message }))) => Err(ApiError {
            code,
            message,
            connect_code: String::new(),
            details: Vec::new(),
        }),
        // The connection or its stream ended before an answer: the server went away or
        // shed the connection (a flood, a restart) — the same as never reaching it.
        Ok(Ok(None)) => Err(unreachable(format!(
            "console {addr}: closed before answering hello"
        ))),
        Ok(Err(cleanroom_console::FrameError::Io(e))) => {
            Err(unreachable(format!("console {addr}: {e}")))
        }
        // An answer that breaks the protocol is a fault of the server, not of the network.
        Ok(other) => Err(err(
            ErrorCode::Internal,
            format!("console: unexpected answer to hello: {other:?}"),
        )),
        Err(_) => Err(unreachable("console: no answer to hello".into())),
    }
}

#[cfg(test)]
#[path = "console_tests.rs"]
mod tests;
