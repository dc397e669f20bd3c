//! What one sandbox's gateway may hold at once, and what all of them together may.
//!
//! Every TCP flow costs a task, the userspace stack's buffers (bounded by its windows,
//! [`crate::TCP_RECV_BUFFER`] and [`crate::TCP_SEND_WINDOW`], and for all of one sandbox's
//! flows together by [`crate::STACK_BUDGET`]) and usually one upstream socket — a file
//! descriptor of the server. A sandbox at its cap is refused more (`too_many_connections`) and nothing
//! else; the per-sandbox caps are far below the server-wide budget, so one sandbox cannot
//! take the descriptors the API and the other sandboxes need. Each sandbox's owner also has
//! a share of the server-wide budget ([`crate::share`]), so one principal's many sandboxes
//! cannot take it either.

pub use crate::caps::{MAX_FLOWS, MAX_UDP_FLOWS};
use crate::share::Share;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// One sandbox's counters.
pub(crate) struct SandboxLimits {
    tcp: Arc<Semaphore>,
    udp: Arc<Semaphore>,
    share: Share,
}

/// A TCP flow's part of the three budgets; released when dropped.
pub(crate) struct TcpPermit {
    _sandbox: OwnedSemaphorePermit,
    _owner: OwnedSemaphorePermit,
    _server: OwnedSemaphorePermit,
}

impl SandboxLimits {
    /// A sandbox's caps; its TCP flows also count against its owner's `share`.
    pub(crate) fn new(share: Share) -> Self {
        SandboxLimits {
            tcp: Arc::new(Semaphore::new(MAX_FLOWS)),
            udp: Arc::new(Semaphore::new(MAX_UDP_FLOWS)),
            share,
        }
    }

    /// Room for one more TCP flow, or why not.
    pub(crate) fn tcp(&self) -> Result<TcpPermit, String> {
        let sandbox = self
            .tcp
            .clone()
            .try_acquire_owned()
            .map_err(|_| format!("more than {MAX_FLOWS} connections at once"))?;
        let owner = self
            .share
            .owner_flows()
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                "the sandbox's owner holds its share of the server's connection budget".to_string()
            })?;
        let server = self
            .share
            .total_flows
            .clone()
            .try_acquire_owned()
            .map_err(|_| "the server's gateways are at their connection budget".to_string())?;
        Ok(TcpPermit {
            _sandbox: sandbox,
            _owner: owner,
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
    use crate::share::Shares;

    #[test]
    fn caps_are_per_sandbox_and_released() {
        let a = SandboxLimits::new(Shares::server().solitary());
        let b = SandboxLimits::new(Shares::server().solitary());
        let held: Vec<_> = (0..MAX_FLOWS).map(|_| a.tcp().unwrap()).collect();
        assert!(a.tcp().is_err());
        assert!(b.tcp().is_ok(), "another sandbox is not starved");
        drop(held);
        assert!(a.tcp().is_ok());
        let udp: Vec<_> = (0..MAX_UDP_FLOWS).map(|_| a.udp().unwrap()).collect();
        assert!(a.udp().is_err());
        drop(udp);
        assert!(a.udp().is_ok());
        assert!(crate::caps::server_budget() >= MAX_FLOWS / 2);
    }

    /// One owner's sandboxes flood with every flow they can get; another owner's sandbox
    /// is still served, and a flood stopped by the share is refused with a reason.
    #[test]
    fn one_owner_cannot_take_the_server_budget() {
        // A server like a default one: 64,512 flows, 64 sandboxes of one principal.
        let shares = Shares::new(64_512, 2048);
        let flood: Vec<_> = (0..64)
            .map(|_| SandboxLimits::new(shares.owner("uid:1000")))
            .collect();
        let mut held = Vec::new();
        let mut refused = None;
        for sbx in &flood {
            loop {
                match sbx.tcp() {
                    Ok(p) => held.push(p),
                    Err(e) => {
                        refused = Some(e);
                        break;
                    }
                }
            }
        }
        let other = SandboxLimits::new(shares.owner("uid:1001"));
        let served: Vec<_> = (0..MAX_FLOWS).map_while(|_| other.tcp().ok()).collect();
        assert_eq!(served.len(), MAX_FLOWS, "another principal is still served");
        assert_eq!(held.len(), shares.flow_share(), "the flood holds its share");
        assert!(held.len() <= 64_512 / 8);
        let why = refused.expect("the flood was refused"); // the last sandbox's refusal
        assert!(why.contains("owner"), "{why}");
        drop(held);
        assert!(flood[0].tcp().is_ok(), "released with the flows");
    }
}
