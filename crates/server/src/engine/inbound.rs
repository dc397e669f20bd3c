//! The engine's side of inbound connections (`sandbox expose`, `port-forward`; the HTTP
//! side is [`crate::inbound`]): a TCP connection to one port on the sandbox's own
//! loopback, made from a socket the backend created inside the sandbox's network namespace
//! ([`cleanroom_backend::Backend::inbound_socket`]) — or, under gvisor, by a relay process
//! inside the sandbox ([`cleanroom_backend::Backend::inbound_relay`]) — so it reaches only
//! that sandbox and never gives it a way out. A suspended sandbox is resumed first (the `sandbox.resumed`
//! event says `inbound …`), and inbound traffic counts as use for idle and suspend
//! ([`crate::engine::activity`]). Connections are recorded as `inbound.*` events.

use super::Engine;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::status::sandbox as ss;
use crate::store::EventRow;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection into a sandbox: a kernel socket made in its network namespace (linux), or
/// a relay process inside it (gvisor, whose sockets live in the sentry's own network
/// stack: [`cleanroom_backend::gvisor::relay`]).
pub enum InboundStream {
    Socket(tokio::net::TcpStream),
    Relay(Box<cleanroom_backend::gvisor::relay::Relay>),
}

impl AsyncRead for InboundStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            InboundStream::Socket(s) => Pin::new(s).poll_read(cx, buf),
            InboundStream::Relay(r) => Pin::new(r.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for InboundStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            InboundStream::Socket(s) => Pin::new(s).poll_write(cx, buf),
            InboundStream::Relay(r) => Pin::new(r.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            InboundStream::Socket(s) => Pin::new(s).poll_flush(cx),
            InboundStream::Relay(r) => Pin::new(r.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            InboundStream::Socket(s) => Pin::new(s).poll_shutdown(cx),
            InboundStream::Relay(r) => Pin::new(r.as_mut()).poll_shutdown(cx),
        }
    }
}

/// How long a connection to the sandbox's port may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Engine {
    /// Connect to `port` on the loopback of sandbox `id` (ownership is the caller's
    /// check), resuming it first if the reaper suspended it (`why` goes into the resume
    /// event). `sandbox_paused` / `sandbox_not_ready` when it cannot take connections,
    /// `sandbox_port_closed` when nothing accepts on the port.
    pub async fn inbound_dial(
        &self,
        id: &str,
        port: u16,
        why: &str,
    ) -> Result<InboundStream, EngineError> {
        self.wake_if_suspended(id, why).await?;
        let row = self.get_sandbox(id)?;
        if row.status != ss::READY {
            return Err(super::pause::not_ready(&row));
        }
        if self.backend.runtime_of_sandbox(id) == cleanroom_backend::Runtime::Gvisor {
            // The sentry's network stack is not a namespace the server can enter.
            let relay = self.backend.inbound_relay(id, port).await?;
            self.activity.touch(id);
            return Ok(InboundStream::Relay(Box::new(relay)));
        }
        let fd = self.backend.inbound_socket(id).await?;
        let sock = tokio::net::TcpSocket::from_std_stream(std::net::TcpStream::from(fd));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let closed = |why: String| {
            EngineError::new(
                ErrorCode::SandboxPortClosed,
                format!("nothing accepts connections on port {port} of sandbox {id}: {why}"),
            )
            .with("port", port.to_string())
        };
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, sock.connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(closed(e.to_string())),
            Err(_) => return Err(closed("connection timed out".into())),
        };
        let _ = stream.set_nodelay(true);
        self.activity.touch(id);
        Ok(InboundStream::Socket(stream))
    }

    /// Inbound traffic on an open connection: the sandbox is in use (resumed first if it
    /// was suspended meanwhile, so the bytes find it running).
    pub async fn inbound_activity(&self, id: &str, why: &str) -> Result<(), EngineError> {
        self.wake_if_suspended(id, why).await?;
        self.activity.touch(id);
        Ok(())
    }

    /// Fail closed with `backend_capability_mismatch` (naming `inbound_connections`) when
    /// the runtime of sandbox `id` cannot open connections into it.
    pub fn require_inbound(&self, id: &str) -> Result<(), EngineError> {
        use cleanroom_vocab::Capability;
        let runtime = self.backend.runtime_of_sandbox(id);
        let caps = self.backend.capabilities_of(runtime)?;
        if caps.contains(&Capability::InboundConnections) {
            return Ok(());
        }
        Err(EngineError::new(
            ErrorCode::BackendCapabilityMismatch,
            format!(
                "runtime {:?} does not declare {} (a root server's linux runtime does): \
                 the server cannot open connections into this sandbox",
                runtime.as_str(),
                Capability::InboundConnections.as_str()
            ),
        )
        .with("missing", Capability::InboundConnections.as_str())
        .with("runtime", runtime.as_str()))
    }

    /// Is sandbox `id` still there to take connections (not ended)? Exposures of a sandbox
    /// that is not are dropped.
    pub fn sandbox_lives(&self, id: &str) -> bool {
        self.get_sandbox(id)
            .is_ok_and(|r| !ss::is_terminal(r.status) && r.status != ss::STOPPING)
    }

    /// Record an `inbound.<what>` event (`open`, `close`, `refused`) of sandbox `id`.
    pub fn inbound_event(&self, id: &str, what: &str, message: String, attrs: serde_json::Value) {
        let status = self
            .get_sandbox(id)
            .map(|r| r.status.number())
            .unwrap_or_default();
        self.events.record(EventRow {
            sandbox_id: id.into(),
            kind: format!("inbound.{what}"),
            sandbox_status: status,
            message,
            attributes: attrs.to_string(),
            ..Default::default()
        });
    }
}
