//! Memory held by mediated bodies, bounded.
//!
//! Registry artifacts are verified whole before any byte reaches the sandbox, and git request
//! bodies are re-sent with a length, so both are buffered. Each buffered MiB takes a permit
//! from the sandbox's budget and from the server's; the permits travel with the bytes (they
//! are released when the response body is dropped), so a sandbox opening many connections
//! cannot make the server hold more than its budget, nor all sandboxes more than the server's.
//! A body that cannot get its permits in time is refused (fail closed), never half-buffered.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const MIB: usize = 1 << 20;
/// Buffered bodies of one sandbox at once.
pub const SANDBOX_BUDGET_MIB: usize = 512;
/// Buffered bodies of all sandboxes of the server at once.
pub const SERVER_BUDGET_MIB: usize = 2048;
/// How long a body may wait for budget before it is refused.
const BUDGET_WAIT: Duration = Duration::from_secs(30);

static SERVER: LazyLock<Arc<Semaphore>> =
    LazyLock::new(|| Arc::new(Semaphore::new(SERVER_BUDGET_MIB)));

/// One sandbox's budget (cheap to clone).
#[derive(Debug, Clone)]
pub struct Budget {
    sandbox: Arc<Semaphore>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            sandbox: Arc::new(Semaphore::new(SANDBOX_BUDGET_MIB)),
        }
    }
}

/// Permits held for buffered bytes; dropping it gives them back.
#[derive(Debug, Default)]
pub struct Held(Vec<OwnedSemaphorePermit>);

impl Budget {
    async fn take(&self, mib: u32, held: &mut Held) -> Result<(), String> {
        let get = async {
            let a = self.sandbox.clone().acquire_many_owned(mib).await;
            let b = SERVER.clone().acquire_many_owned(mib).await;
            match (a, b) {
                (Ok(a), Ok(b)) => Ok((a, b)),
                _ => Err("budget closed".to_string()),
            }
        };
        match tokio::time::timeout(BUDGET_WAIT, get).await {
            Ok(Ok((a, b))) => {
                held.0.push(a);
                held.0.push(b);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err("too much is being buffered for this sandbox or server".into()),
        }
    }

    /// Permits for `len` bytes already in memory (a cache hit being served).
    pub async fn hold(&self, len: usize) -> Result<Held, String> {
        let mut held = Held::default();
        let mib = u32::try_from(len.div_ceil(MIB)).map_err(|e| e.to_string())?;
        if mib > 0 {
            self.take(mib, &mut held).await?;
        }
        Ok(held)
    }

    /// Read `body` whole, at most `max` bytes, holding a permit per started MiB.
    pub async fn collect<B>(&self, mut body: B, max: usize) -> Result<(Bytes, Held), String>
    where
        B: hyper::body::Body<Data = Bytes> + Unpin,
        B::Error: std::fmt::Display,
    {
        let mut held = Held::default();
        let mut buf = BytesMut::new();
        let mut permits = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buf.len() + data.len() > max {
                return Err(format!("body larger than {max} bytes"));
            }
            let need = (buf.len() + data.len()).div_ceil(MIB);
            if need > permits {
                let more = u32::try_from(need - permits).map_err(|e| e.to_string())?;
                self.take(more, &mut held).await?;
                permits = need;
            }
            buf.extend_from_slice(&data);
        }
        Ok((buf.freeze(), held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    #[tokio::test]
    async fn permits_follow_the_bytes_and_the_limit_holds() {
        let b = Budget::default();
        let data = Bytes::from(vec![1u8; 3 * MIB + 1]);
        let (got, held) = b.collect(Full::new(data.clone()), 8 * MIB).await.unwrap();
        assert_eq!(got, data);
        assert_eq!(b.sandbox.available_permits(), SANDBOX_BUDGET_MIB - 4);
        drop(held);
        assert_eq!(b.sandbox.available_permits(), SANDBOX_BUDGET_MIB);
        assert!(b.collect(Full::new(data), MIB).await.is_err());
    }
}
