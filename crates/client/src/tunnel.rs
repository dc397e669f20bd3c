//! Raw byte tunnels through the server: an HTTP/1.1 Upgrade on the API listener
//! (`port-forward`: `/_portforward/<sandbox>/<port>`), authenticated like every API call
//! (the unix socket by the peer's uid, TCP by the bearer token, TLS also by a client
//! certificate). One connection per tunnel; HTTP/1.1 because HTTP/2 has no Upgrade.

use crate::endpoint::{Endpoint, Target};
use crate::{ApiError, ErrorCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A tunnel's byte stream.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The longest response head read before the tunnel starts.
const MAX_HEAD: usize = 16 << 10;

/// Open a tunnel: `GET path` with `Upgrade: protocol`. After the server's `101` the stream
/// is the tunnel's; any other answer is the server's error (its stable code and message).
pub async fn open(target: &Target, path: &str, protocol: &str) -> Result<Box<dyn Io>, ApiError> {
    let unreachable = |e: String| {
        ApiError::local(
            ErrorCode::ServerUnreachable,
            format!(
                "cannot reach the cleanroom server at {}: {e}",
                target.endpoint.display()
            ),
        )
    };
    let (mut io, host): (Box<dyn Io>, String) = match &target.endpoint {
        Endpoint::Unix(p) => (
            Box::new(
                tokio::net::UnixStream::connect(p)
                    .await
                    .map_err(|e| unreachable(e.to_string()))?,
            ),
            "localhost".into(),
        ),
        Endpoint::Http(a) => {
            let s = tokio::net::TcpStream::connect(a)
                .await
                .map_err(|e| unreachable(e.to_string()))?;
            let _ = s.set_nodelay(true);
            (Box::new(s), a.clone())
        }
        Endpoint::Https(a) => (
            Box::new(
                crate::tls::connect_http1(
                    a,
                    target.ca_cert.as_deref(),
                    target.server_cert_sha256.as_deref(),
                )
                .await
                .map_err(unreachable)?,
            ),
            a.clone(),
        ),
    };
    let auth = match (&target.endpoint, &target.token) {
        (Endpoint::Unix(_), _) | (_, None) => String::new(),
        (_, Some(t)) => format!("Authorization: Bearer {t}\r\n"),
    };
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: {protocol}\r\n{auth}\r\n"
    );
    io.write_all(req.as_bytes())
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    // Read the head byte by byte: nothing of the tunnel's own bytes may be consumed.
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Err(unreachable("response head too long".into()));
        }
        let mut b = [0u8; 1];
        let n = io
            .read(&mut b)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        if n == 0 {
            return Err(unreachable("connection closed before the answer".into()));
        }
        head.push(b[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if status == 101 {
        return Ok(io);
    }
    // An error: its JSON body (`{"error": {"code", "message"}}`), bounded.
    let len: usize = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
        .min(MAX_HEAD);
    let mut body = vec![0u8; len];
    let _ = io.read_exact(&mut body).await;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let code = v["error"]["code"]
        .as_str()
        .unwrap_or("internal")
        .to_string();
    let message = v["error"]["message"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| format!("the server answered HTTP {status}"));
    Err(ApiError {
        code,
        message,
        connect_code: String::new(),
        details: Vec::new(),
    })
}
