//! Per-owner shares of the server-wide gateway budgets (issue 30, class 5).
//!
//! The server's gateways share two budgets: upstream flows ([`crate::limits`]) and memory for
//! mediated bodies ([`crate::registry::budget`]), both sized in [`crate::caps`]. Each sandbox has its own cap of both, but a
//! principal may run many sandboxes, so each *owner* also gets a share of each total: an
//! eighth, and never less than one sandbox's cap. A flow or a buffered MiB takes a permit from
//! its sandbox, then its owner's share, then the total.
//!
//! The owner is an opaque key the server chooses (its account of the sandbox's principal);
//! this crate only groups sandboxes by it. A share is kept while a sandbox of its owner holds
//! a handle on it or any of its permits is out.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use tokio::sync::Semaphore;

/// Each owner's share of a total: this fraction of it ...
const SHARE_DIVISOR: usize = 8;

/// The server-wide budgets and every owner's share of them.
pub struct Shares {
    flows: Arc<Semaphore>,
    flow_share: usize,
    body_mib: Arc<Semaphore>,
    mib_share: usize,
    owners: Mutex<HashMap<String, Arc<Owned>>>,
}

/// One owner's permits.
#[derive(Debug)]
struct Owned {
    flows: Arc<Semaphore>,
    body_mib: Arc<Semaphore>,
}

/// A sandbox's handle on its owner's shares and on the totals (cheap to clone).
#[derive(Debug, Clone)]
pub struct Share {
    owner: Arc<Owned>,
    pub(crate) total_flows: Arc<Semaphore>,
    pub(crate) total_mib: Arc<Semaphore>,
}

impl Share {
    pub(crate) fn owner_flows(&self) -> &Arc<Semaphore> {
        &self.owner.flows
    }
    pub(crate) fn owner_mib(&self) -> &Arc<Semaphore> {
        &self.owner.body_mib
    }
}

/// A total's share for one owner: an eighth, at least `floor` (one sandbox's cap), at most
/// the total.
fn share_of(total: usize, floor: usize) -> usize {
    (total / SHARE_DIVISOR).max(floor).min(total)
}

impl Shares {
    /// Budgets of `flows` upstream flows and `body_mib` MiB of buffered bodies, shared in
    /// eighths (at least one sandbox's cap each).
    pub fn new(flows: usize, body_mib: usize) -> Shares {
        Shares {
            flows: Arc::new(Semaphore::new(flows)),
            flow_share: share_of(flows, crate::caps::MAX_FLOWS),
            body_mib: Arc::new(Semaphore::new(body_mib)),
            mib_share: share_of(body_mib, crate::caps::SANDBOX_BUDGET_MIB),
            owners: Mutex::new(HashMap::new()),
        }
    }

    /// This server's budgets ([`crate::caps`]: descriptors for upstream flows, MiB of
    /// mediated bodies).
    pub fn server() -> &'static Shares {
        static SERVER: LazyLock<Shares> = LazyLock::new(|| {
            Shares::new(crate::caps::server_budget(), crate::caps::SERVER_BUDGET_MIB)
        });
        &SERVER
    }

    /// Flows one owner may hold at once.
    pub fn flow_share(&self) -> usize {
        self.flow_share
    }

    /// MiB of buffered bodies one owner may hold at once.
    pub fn mib_share(&self) -> usize {
        self.mib_share
    }

    /// Nobody but the table holds `o`, and all of its permits are in.
    fn idle(&self, o: &Arc<Owned>) -> bool {
        Arc::strong_count(o) == 1
            && o.flows.available_permits() == self.flow_share
            && o.body_mib.available_permits() == self.mib_share
    }

    fn fresh(&self) -> Arc<Owned> {
        Arc::new(Owned {
            flows: Arc::new(Semaphore::new(self.flow_share)),
            body_mib: Arc::new(Semaphore::new(self.mib_share)),
        })
    }

    fn handle(&self, owner: Arc<Owned>) -> Share {
        Share {
            owner,
            total_flows: self.flows.clone(),
            total_mib: self.body_mib.clone(),
        }
    }

    /// The share of the owner called `key`: every sandbox given the same key draws on the
    /// same share.
    pub fn owner(&self, key: &str) -> Share {
        let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = owners.get(key) {
            return self.handle(o.clone());
        }
        // Forget owners with no sandbox and no permit out (the table stays bounded by the
        // live sandboxes and flows).
        owners.retain(|_, o| !self.idle(o));
        let o = self.fresh();
        owners.insert(key.to_string(), o.clone());
        self.handle(o)
    }

    /// A share of its own, for a sandbox grouped with no other.
    pub fn solitary(&self) -> Share {
        self.handle(self.fresh())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_an_eighth_at_least_one_sandbox_and_at_most_the_total() {
        assert_eq!(share_of(64_000, 1024), 8_000);
        assert_eq!(share_of(4_000, 1024), 1024);
        assert_eq!(share_of(512, 1024), 512);
        let s = Shares::new(16_384, 2048);
        assert_eq!((s.flow_share(), s.mib_share()), (2048, 512));
    }

    #[test]
    fn one_key_one_share_and_forgotten_when_unused() {
        let s = Shares::new(16_384, 2048);
        let a = s.owner("a");
        assert!(Arc::ptr_eq(&a.owner, &s.owner("a").owner));
        assert!(!Arc::ptr_eq(&a.owner, &s.owner("b").owner));
        assert!(!Arc::ptr_eq(&a.owner, &s.solitary().owner));
        let held = a.owner_flows().clone().try_acquire_owned().unwrap();
        drop(a);
        let _c = s.owner("c");
        assert_eq!(
            s.owners.lock().unwrap().len(),
            2,
            "b is gone, a has a permit out"
        );
        drop(held);
        let _d = s.owner("d");
        assert_eq!(s.owners.lock().unwrap().len(), 2, "a is gone too");
    }
}
