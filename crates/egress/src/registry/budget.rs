//! Memory held by mediated bodies, bounded.
//!
//! Registry artifacts are verified whole before any byte reaches the sandbox, and git request
//! bodies are re-sent with a length, so both are buffered. Each buffered MiB takes a permit
//! from the sandbox's budget, from its owner's share of the server's ([`crate::share`]) and
//! from the server's; the permits travel with the bytes (they are released when the response
//! body is dropped), so a sandbox opening many connections cannot make the server hold more
//! than its budget, nor one principal's sandboxes more than its share, nor all sandboxes more
//! than the server's.
//! A body that cannot get its permits in time is refused (fail closed), never half-buffered.

pub use crate::caps::{SANDBOX_BUDGET_MIB, SERVER_BUDGET_MIB};
use crate::share::{Share, Shares};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

const MIB: usize = 1 << 20;
/// How long a body may wait for budget before it is refused.
const BUDGET_WAIT: Duration = Duration::from_secs(30);

/// One sandbox's budget (cheap to clone).
#[derive(Debug, Clone)]
pub struct Budget {
    sandbox: Arc<Semaphore>,
    share: Share,
}

impl Default for Budget {
    /// A sandbox grouped with no other (tests, sandboxes without mediation).
    fn default() -> Self {
        Budget::new(Shares::server().solitary())
    }
}

/// Permits held for buffered bytes; dropping it gives them back.
#[derive(Debug, Default)]
pub struct Held(Vec<OwnedSemaphorePermit>);

impl Budget {
    /// A sandbox's budget, drawing on its owner's `share` too.
    pub fn new(share: Share) -> Budget {
        Budget {
            sandbox: Arc::new(Semaphore::new(SANDBOX_BUDGET_MIB)),
            share,
        }
    }

    async fn take(&self, mib: u32, held: &mut Held) -> Result<(), String> {
        let get = async {
            // Always in this order (sandbox, owner, server): no two takers wait on each other.
            let a = self.sandbox.clone().acquire_many_owned(mib).await;
            let b = self.share.owner_mib().clone().acquire_many_owned(mib).await;
            let c = self.share.total_mib.clone().acquire_many_owned(mib).await;
            match (a, b, c) {
                (Ok(a), Ok(b), Ok(c)) => Ok([a, b, c]),
                _ => Err("budget closed".to_string()),
            }
        };
        match tokio::time::timeout(BUDGET_WAIT, get).await {
            Ok(Ok(permits)) => {
                held.0.extend(permits);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => {
                Err("too much is being buffered for this sandbox, its owner or the server".into())
            }
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

    /// One principal's sandboxes hold every MiB they can get; another principal's body is
    /// still buffered at once. (On the server's own budget, four sandboxes of one owner
    /// took all 2,048 MiB and everyone else waited and was refused.)
    #[tokio::test]
    async fn one_owner_cannot_take_the_server_budget() {
        let shares = Shares::new(64_512, SERVER_BUDGET_MIB);
        let mut held = Vec::new();
        for _ in 0..4 {
            let b = Budget::new(shares.owner("uid:1000"));
            // Each sandbox asks for all of its own budget, without waiting for the share.
            let got =
                tokio::time::timeout(Duration::from_millis(200), b.hold(SANDBOX_BUDGET_MIB * MIB))
                    .await;
            if let Ok(Ok(h)) = got {
                held.push(h);
            }
        }
        assert_eq!(held.len() * SANDBOX_BUDGET_MIB, shares.mib_share());
        let other = Budget::new(shares.owner("uid:1001"));
        let served = tokio::time::timeout(
            Duration::from_millis(200),
            other.hold(SANDBOX_BUDGET_MIB * MIB),
        )
        .await;
        assert!(
            matches!(served, Ok(Ok(_))),
            "another principal is still served"
        );
    }
}
