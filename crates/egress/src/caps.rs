//! The numbers that bound the gateways: one sandbox's caps, and the server-wide budgets
//! every owner gets a share of ([`crate::share`]). A leaf: [`crate::limits`],
//! [`crate::registry::budget`] and [`crate::share`] all size themselves from here.

use tokio::sync::Semaphore;

/// Most TCP connections the gateway serves at once for one sandbox.
pub const MAX_FLOWS: usize = 1024;
/// Most UDP flows (DNS clients, one per source port, each served until it has been quiet
/// for a second) at once for one sandbox.
pub const MAX_UDP_FLOWS: usize = 1024;
/// File descriptors kept out of the gateways' budget for the API, the store, the
/// sandboxes' own plumbing.
const FD_RESERVE: usize = 1024;

/// Buffered bodies of one sandbox at once.
pub const SANDBOX_BUDGET_MIB: usize = 512;
/// Buffered bodies of all sandboxes of the server at once.
pub const SERVER_BUDGET_MIB: usize = 2048;
/// Upstream connections all gateways of this server may hold together: the descriptor
/// limit minus a reserve (half the limit when it is small).
pub(crate) fn server_budget() -> usize {
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
