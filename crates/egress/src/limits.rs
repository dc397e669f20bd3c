//! What one sandbox's gateway may hold at once, and what all of them together may.
//!
//! Every TCP flow costs a task, the userspace stack's buffers (bounded by its window:
//! [`crate::TCP_WINDOW`] each way) and usually one upstream socket — a file descriptor of
//! the server. A sandbox at its cap is refused more (`too_many_connections`) and nothing
//! else; the per-sandbox caps are far below the server-wide budget, so one sandbox cannot
//! take the descriptors the API and the other sandboxes need.

use std::sync::{Arc, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Most TCP connections the gateway serves at once for one sandbox.
pub const MAX_FLOWS: usize = 1024;
/// Most UDP flows (DNS clients, one per source port, each served until it has been quiet
/// for a second) at once for one sandbox.
pub const MAX_UDP_FLOWS: usize = 1024;
/// File descriptors kept out of the gateways' budget for the API, the store, the
/// sandboxes' own plumbing.
const FD_RESERVE: usize = 1024;

/// Highest soft `RLIMIT_NOFILE` [`raise_fd_limit`] asks for: plenty for the budget, and no
/// pathological value (some hard limits are in the millions) for processes that inherit it.
const FD_SOFT_TARGET: libc::rlim_t = 65_536;

/// Raise the soft `RLIMIT_NOFILE` towards the hard limit (as most servers do), up to
/// [`FD_SOFT_TARGET`]. Sandboxes inherit it, but could raise their own soft limit to the same
/// hard limit anyway; the hard limit is untouched.
pub fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let target = hard.min(FD_SOFT_TARGET);
        if soft < target {
            // Best effort: the budget below follows whatever limit is in force.
            let _ = setrlimit(Resource::RLIMIT_NOFILE, target, hard);
        }
    }
}

/// Upstream connections all gateways of this server may hold together: the descriptor
/// limit minus a reserve (half the limit when it is small).
fn server_budget() -> usize {
    use nix::sys::resource::{getrlimit, Resource};
    let soft = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, _)) => usize::try_from(soft).unwrap_or(usize::MAX),
        Err(_) => 1024,
    };
    if soft > 2 * FD_RESERVE {
        (soft - FD_RESERVE).min(Semaphore::MAX_PERMITS)
    } else {
        soft / 2
    }
}

fn server_flows() -> &'static Arc<Semaphore> {
    static FLOWS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    FLOWS.get_or_init(|| Arc::new(Semaphore::new(server_budget())))
}

/// One sandbox's counters.
pub(crate) struct SandboxLimits {
    tcp: Arc<Semaphore>,
    udp: Arc<Semaphore>,
}

/// A TCP flow's share of both budgets; released when dropped.
pub(crate) struct TcpPermit {
    _sandbox: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

impl SandboxLimits {
    pub(crate) fn new() -> Self {
        SandboxLimits {
            tcp: Arc::new(Semaphore::new(MAX_FLOWS)),
            udp: Arc::new(Semaphore::new(MAX_UDP_FLOWS)),
        }
    }

    /// Room for one more TCP flow, or why not.
    pub(crate) fn tcp(&self) -> Result<TcpPermit, String> {
        let sandbox = self
            .tcp
            .clone()
            .try_acquire_owned()
            .map_err(|_| format!("more than {MAX_FLOWS} connections at once"))?;
        let server = server_flows()
            .clone()
            .try_acquire_owned()
            .map_err(|_| "the server's gateways are at their connection budget".to_string())?;
        Ok(TcpPermit {
            _sandbox: sandbox,
            _server: server,
        })
    }

    /// Room for one more UDP flow, or why not.
    pub(crate) fn udp(&self) -> Result<OwnedSemaphorePermit, String> {
        self.udp
            .clone()
            .try_acquire_owned()
            .map_err(|_| format!("more than {MAX_UDP_FLOWS} UDP flows at once"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_per_sandbox_and_released() {
        let a = SandboxLimits::new();
        let b = SandboxLimits::new();
        let held: Vec<_> = (0..MAX_FLOWS).map(|_| a.tcp().unwrap()).collect();
        assert!(a.tcp().is_err());
        assert!(b.tcp().is_ok(), "another sandbox is not starved");
        drop(held);
        assert!(a.tcp().is_ok());
        let udp: Vec<_> = (0..MAX_UDP_FLOWS).map(|_| a.udp().unwrap()).collect();
        assert!(a.udp().is_err());
        drop(udp);
        assert!(a.udp().is_ok());
        assert!(server_budget() >= MAX_FLOWS / 2);
    }
}
