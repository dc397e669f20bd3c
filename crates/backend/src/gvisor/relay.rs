//! Inbound connections into a gVisor sandbox (`sandbox expose`, `port-forward`).
//!
//! Under gVisor the sandbox's sockets live in the sentry's own network stack: nothing the
//! server could connect in the host's network namespaces reaches the sandbox's loopback.
//! So the connection is made from inside: the server `runsc exec`s its own binary as the
//! relay (`cleanroom __gvisor-init relay PORT`), a process of the sandbox with an
//! unprivileged identity (nobody), which connects to `127.0.0.1:PORT` in the sandbox and
//! carries the bytes between that connection and its stdio — host pipes the sentry reads
//! and writes directly. The sandbox gains no way out: the relay's only peer outside is the
//! server, through pipes, and it reaches only what the sandbox's own processes reach.
//!
//! The relay's first byte says how the connect went: `+` (connected; the app's bytes
//! follow) or `-` and a reason line. Everything after is the app's, unparsed. The relay
//! is a sandbox process, so nothing it says is trusted beyond that: the reason is bounded,
//! the first byte has a deadline, and a relay is killed (by its pid inside the sandbox)
//! when its connection ends. At most [`MAX_RELAYS`] run per sandbox.

use super::bundle::{INIT_ARG, INIT_PATH};
use super::GvisorBackend;
use crate::BackendError;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// The word after [`INIT_ARG`] that selects the relay.
pub const RELAY_ARG: &str = "relay";
/// Relays alive at once per sandbox (each is a `runsc exec` on the host).
pub const MAX_RELAYS: usize = 64;
/// How long the relay may take to say how its connect went (`runsc exec` ≈ 40 ms here).
const CONNECT_DEADLINE: Duration = Duration::from_secs(10);
/// The relay's own connect timeout, inside the sandbox.
const RELAY_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest reason line a relay may send.
const MAX_REASON: usize = 512;

/// A connection to a port of a gVisor sandbox's loopback, through its relay: read what the
/// app sends, write what it gets; shut down to send it EOF. Dropping it kills the relay.
pub struct Relay {
    stdout: tokio::net::unix::pipe::Receiver,
    stdin: Option<tokio::net::unix::pipe::Sender>,
    _guard: RelayGuard,
}

/// Kills the relay inside the sandbox and reaps `runsc exec` when the connection ends.
struct RelayGuard {
    child: Option<tokio::process::Child>,
    pid_file: PathBuf,
    sandbox_id: String,
    runsc: super::runsc::Runsc,
    count: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for RelayGuard {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            // Never started (`runsc exec` could not be spawned): only the slot to give back.
            self.count.fetch_sub(1, Ordering::SeqCst);
            return;
        };
        let (pid_file, id, runsc) = (
            self.pid_file.clone(),
            self.sandbox_id.clone(),
            self.runsc.clone(),
        );
        let count = self.count.clone();
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            let _ = child.start_kill();
            count.fetch_sub(1, Ordering::SeqCst);
            return;
        };
        rt.spawn(async move {
            // Its stdio is closed already, so it is on its way out; make sure.
            let waited = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            if waited.is_err() {
                if let Ok(pid) = std::fs::read_to_string(&pid_file) {
                    let pid = pid.trim();
                    if pid.parse::<u32>().is_ok() {
                        let _ = runsc.run(&["kill", "--pid", pid, &id, "9"]).await;
                    }
                }
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            let _ = std::fs::remove_file(&pid_file);
            count.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

impl AsyncRead for Relay {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stdout).poll_read(cx, buf)
    }
}

impl AsyncWrite for Relay {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.stdin.as_mut() {
            Some(w) => Pin::new(w).poll_write(cx, buf),
            None => Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into())),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.stdin.as_mut() {
            Some(w) => Pin::new(w).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Closing the pipe is the relay's EOF; it half-closes its connection.
        self.stdin = None;
        Poll::Ready(Ok(()))
    }
}

impl GvisorBackend {
    /// Start a relay to `port` in `sandbox_id` and wait for its connect (see the module
    /// doc): `PortClosed` when nothing accepts there.
    pub(super) async fn relay_to(
        &self,
        sandbox_id: &str,
        port: u16,
    ) -> Result<Relay, BackendError> {
        let sbx = self.get(sandbox_id)?;
        let count = sbx.relays.clone();
        if count.fetch_add(1, Ordering::SeqCst) >= MAX_RELAYS {
            count.fetch_sub(1, Ordering::SeqCst);
            return Err(BackendError::PortClosed(format!(
                "sandbox {sandbox_id} has {MAX_RELAYS} inbound connections open, the most allowed"
            )));
        }
        let n = sbx.next_id.fetch_add(1, Ordering::Relaxed);
        let pid_file = sbx.bundle.procs().join(format!("relay-{n}.pid"));
        let mut cmd = self.runsc.command();
        cmd.arg("exec")
            .arg("--user")
            .arg("65534:65534")
            .arg("--internal-pid-file")
            .arg(&pid_file)
            .arg(sandbox_id)
            .arg(INIT_PATH)
            .arg(INIT_ARG)
            .arg(RELAY_ARG)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut guard = RelayGuard {
            child: None,
            pid_file,
            sandbox_id: sandbox_id.to_string(),
            runsc: self.runsc.clone(),
            count,
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| BackendError::io("runsc exec relay", e))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        guard.child = Some(child);
        let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
            return Err(BackendError::io(
                "runsc exec relay",
                std::io::Error::other("no stdio"),
            ));
        };
        let stdin = tokio::net::unix::pipe::Sender::from_owned_fd(
            stdin
                .into_owned_fd()
                .map_err(|e| BackendError::io("relay stdin", e))?,
        )
        .map_err(|e| BackendError::io("relay stdin", e))?;
        let mut stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(
            stdout
                .into_owned_fd()
                .map_err(|e| BackendError::io("relay stdout", e))?,
        )
        .map_err(|e| BackendError::io("relay stdout", e))?;
        let said = tokio::time::timeout(CONNECT_DEADLINE, async {
            let mut first = [0u8; 1];
            let n = stdout.read(&mut first).await?;
            if n == 1 && first[0] == b'+' {
                return Ok::<_, std::io::Error>(None);
            }
            let mut reason = Vec::new();
            let _ = (&mut stdout)
                .take(MAX_REASON as u64)
                .read_to_end(&mut reason)
                .await;
            Ok(Some(reason))
        })
        .await;
        let closed = |why: String| {
            BackendError::PortClosed(format!(
                "nothing accepts connections on port {port} of sandbox {sandbox_id}: {why}"
            ))
        };
        match said {
            Ok(Ok(None)) => Ok(Relay {
                stdout,
                stdin: Some(stdin),
                _guard: guard,
            }),
            Ok(Ok(Some(reason))) => {
                let text: String = String::from_utf8_lossy(&reason)
                    .trim_start_matches('-')
                    .chars()
                    .filter(|c| !c.is_control())
                    .collect();
                Err(closed(if text.is_empty() {
                    "the relay ended".into()
                } else {
                    text
                }))
            }
            Ok(Err(e)) => Err(closed(e.to_string())),
            Err(_) => Err(closed("connection timed out".into())),
        }
    }
}

/// The relay itself, inside the sandbox: `relay PORT` (0 when the connection ended, 1 when
/// it could not be made, 2 on bad arguments).
pub fn main(args: &[String]) -> i32 {
    let Some(port) = args
        .first()
        .and_then(|p| p.parse::<u16>().ok())
        .filter(|p| *p != 0)
    else {
        return 2;
    };
    let mut out = std::io::stdout().lock();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let sock = match std::net::TcpStream::connect_timeout(&addr, RELAY_CONNECT_TIMEOUT) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "-{e}");
            return 1;
        }
    };
    let _ = sock.set_nodelay(true);
    if out.write_all(b"+").and_then(|_| out.flush()).is_err() {
        return 0;
    }
    drop(out);
    let Ok(up) = sock.try_clone() else {
        return 1;
    };
    // In: stdin → the app, then half-close. Out: the app → stdout, until it closes.
    let inbound = std::thread::spawn(move || {
        let mut up = up;
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut up);
        let _ = up.shutdown(std::net::Shutdown::Write);
    });
    let mut sock = sock;
    let mut buf = vec![0u8; 64 << 10];
    let mut stdout = std::io::stdout().lock();
    loop {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|_| stdout.flush())
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    // The app is done: the host's side of the connection ends with our stdout.
    drop(stdout);
    let _ = sock.shutdown(std::net::Shutdown::Both);
    drop(inbound);
    0
}
