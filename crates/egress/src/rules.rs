//! The network policy a sandbox's gateway judges by, replaceable while it runs (live egress
//! rules: `UpdateSandboxNetwork`).
//!
//! Every judged opening reads the current policy once ([`Rules::current`]), so a change
//! applies to every new connection, DNS answer and HTTP request from the moment
//! [`Rules::replace`] returns. A replacement that asks to cut bumps a generation that
//! established flows watch (`cut.rs`): each judges its own destination again under the new
//! policy and ends itself when it is denied there.

use cleanroom_policy::NetworkPolicy;
use std::sync::{Arc, RwLock};
use tokio::sync::watch;

/// One sandbox's effective network policy and its cut generation.
pub struct Rules {
    current: RwLock<Arc<NetworkPolicy>>,
    cuts: watch::Sender<u64>,
}

impl Rules {
    pub fn new(policy: NetworkPolicy) -> Rules {
        Rules {
            current: RwLock::new(Arc::new(policy)),
            cuts: watch::channel(0).0,
        }
    }

    /// The policy in effect now.
    pub fn current(&self) -> Arc<NetworkPolicy> {
        // A poisoned lock still holds a whole `Arc` (the writer only swaps it).
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Judge new openings by `policy` from now on; with `cut`, established flows whose
    /// destination `policy` denies end too.
    pub fn replace(&self, policy: NetworkPolicy, cut: bool) {
        let policy = Arc::new(policy);
        match self.current.write() {
            Ok(mut g) => *g = policy,
            Err(p) => *p.into_inner() = policy,
        }
        if cut {
            self.cuts.send_modify(|g| *g += 1);
        }
    }

    /// A receiver that wakes at each cut.
    pub(crate) fn cuts(&self) -> watch::Receiver<u64> {
        self.cuts.subscribe()
    }
}
