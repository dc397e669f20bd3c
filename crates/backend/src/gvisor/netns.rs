//! A gVisor sandbox's network namespace: made by the server (as host root, so the
//! sandbox can never change its interfaces or routes) on a short-lived thread of its own,
//! with `lo` and the same tun device `cr0` the Linux backend gives its sandboxes. gVisor's
//! netstack (`--network=sandbox`) takes over the namespace's addresses and routes and sends
//! its raw IP packets into the tun, whose other end is the sandbox's egress gateway: there
//! is no other way out.
//!
//! Making a namespace costs the create path 2–20 ms on a quiet machine and 40–160 ms on a
//! loaded one (measured: the kernel's per-namespace setup, and the teardown of earlier
//! namespaces it waits behind), so one is made ahead of time for the next sandbox
//! ([`take`], [`refill`]): made exactly as on demand, handed out once, never reused.
//! It is only an fd of the server's: nothing of it outlives the server.

use crate::linux::sandbox::netif;
use crate::{BackendError, TunConfig};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The namespace made ahead of time, and the tun addressing it was made with.
static SPARE: Mutex<Option<(Option<TunConfig>, NetNs)>> = Mutex::new(None);
/// A refill is under way.
static FILLING: AtomicBool = AtomicBool::new(false);

/// The namespace made ahead of time, if it was made for `tun` (taken: the next caller
/// gets a new one).
pub fn take(tun: Option<TunConfig>) -> Option<NetNs> {
    let mut spare = SPARE.lock().ok()?;
    match spare.take() {
        Some((made_for, ns)) if made_for == tun => Some(ns),
        _ => None,
    }
}

/// Make the namespace for the next sandbox, unless there is one or one is being made.
/// Blocking (a thread of its own, see [`create`]); a failure only means the next create
/// makes its own.
pub fn refill(tun: Option<TunConfig>) {
    if FILLING.swap(true, Ordering::AcqRel) {
        return;
    }
    let empty = SPARE.lock().is_ok_and(|s| s.is_none());
    if empty {
        if let Ok(ns) = create(tun) {
            if let Ok(mut spare) = SPARE.lock() {
                if spare.is_none() {
                    *spare = Some((tun, ns));
                }
            }
        }
    }
    FILLING.store(false, Ordering::Release);
}

/// A network namespace (held by fd: it lives as long as this value, the tun or a process in
/// it) and its tun device's host end.
pub struct NetNs {
    pub ns: OwnedFd,
    pub tun: Option<OwnedFd>,
    /// The kernel plane's gateway sockets (host/gateway_ns.rs), when asked for.
    pub gateway: Option<crate::GatewaySockets>,
}

/// Make a namespace with `lo` up and, when asked for, the tun device as default route.
/// Runs on a thread that exists only for this: a thread that changed its network
/// namespace must never run anything else.
pub fn create(tun: Option<TunConfig>) -> Result<NetNs, BackendError> {
    match tun {
        Some(t) if t.plane == crate::Plane::Kernel => {
            // The gateway's namespace and table first: without them, no veth (fail closed).
            let gw = crate::linux::host::gateway_ns::create(t)?;
            let mut ns = create_ns(None, true)?;
            crate::linux::host::gateway_ns::attach(&gw, ns.ns.as_fd(), t)?;
            ns.gateway = Some(gw.sockets);
            Ok(ns)
        }
        tun => create_ns(tun, false),
    }
}

/// The sandbox's namespace: `lo`, and the tun when `tun` says so; IPv6 off with `ipv6_off`.
fn create_ns(tun: Option<TunConfig>, ipv6_off: bool) -> Result<NetNs, BackendError> {
    let worker = std::thread::Builder::new()
        .name("gvisor-netns".into())
        .spawn(move || -> std::io::Result<NetNs> {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)?;
            netif::loopback_up()?;
            if ipv6_off {
                // Before the veth exists (create_tun does the same for the tun).
                netif::disable_ipv6();
            }
            let tun = match tun {
                Some(cfg) => Some(netif::create_tun(&cfg)?),
                None => None,
            };
            let ns: OwnedFd = std::fs::File::open("/proc/thread-self/ns/net")?.into();
            Ok(NetNs {
                ns,
                tun,
                gateway: None,
            })
        })
        .map_err(|e| BackendError::io("spawn netns thread", e))?;
    worker
        .join()
        .map_err(|_| BackendError::LaunchFailed("netns thread panicked".into()))?
        .map_err(|e| BackendError::LaunchFailed(format!("network namespace: {e}")))
}

/// Address the tun of the namespace `ns` again, as [`create`] did: runsc moves the
/// device's addresses and routes into its netstack and takes them off the device, so a
/// `runsc restore` into the same namespace (a sandbox suspended with its memory released)
/// would find none and bring up no interface. On a thread of its own, like [`create`].
pub fn readdress(ns: &OwnedFd, cfg: TunConfig) -> Result<(), BackendError> {
    let ns = ns
        .try_clone()
        .map_err(|e| BackendError::io("dup network namespace", e))?;
    let worker = std::thread::Builder::new()
        .name("gvisor-netns".into())
        .spawn(move || -> std::io::Result<()> {
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)?;
            match netif::address_tun(&cfg) {
                // Still routed (a restore that failed after this ran): as wanted.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                r => r,
            }
        })
        .map_err(|e| BackendError::io("spawn netns thread", e))?;
    worker
        .join()
        .map_err(|_| BackendError::LaunchFailed("netns thread panicked".into()))?
        .map_err(|e| BackendError::LaunchFailed(format!("address the tun again: {e}")))
}
