//! Ending established flows when live rules deny their destination (`--cut`).
//!
//! A flow is guarded by the destination it was admitted for ([`guarded`]); the HTTP proxy,
//! whose requests each name their own destination, records every destination it admitted
//! on the connection ([`Seen`]). At each cut the guard asks the one judge again, under the
//! new policy, about each destination; the first one denied ends the flow (its future is
//! dropped, which closes both sides) with a deny event (`host_denied` or whatever the judge
//! says) carrying `cut`.

use crate::ctx::Ctx;
use crate::event::EgressEvent;
use crate::judge::{judge, Query, Ruling};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// Destinations a proxy connection admitted, at most [`MAX_SEEN`] (a request to one more is
/// refused: see [`Seen::note`]).
#[derive(Clone, Default)]
pub(crate) struct Seen(Arc<Mutex<Vec<(String, u16)>>>);

/// Most distinct destinations one proxy connection is guarded for.
const MAX_SEEN: usize = 64;

impl Seen {
    /// Remember `host:port` (admitted on this connection). `false` when the connection has
    /// admitted too many distinct destinations to guard: the caller refuses the request.
    pub(crate) fn note(&self, host: &str, port: u16) -> bool {
        let mut g = match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if g.iter().any(|(h, p)| h == host && *p == port) {
            return true;
        }
        if g.len() >= MAX_SEEN {
            return false;
        }
        g.push((host.to_string(), port));
        true
    }

    fn all(&self) -> Vec<(String, u16)> {
        match self.0.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }
}

tokio::task_local! {
    /// The destinations of the proxy connection this task serves, if it is one.
    pub(crate) static SEEN: Seen;
}

/// Note a destination admitted by the proxy connection of the current task (no-op outside
/// one). `false`: too many to guard.
pub(crate) fn note(host: &str, port: u16) -> bool {
    SEEN.try_with(|s| s.note(host, port)).unwrap_or(true)
}

/// Which of `dests` the current policy denies, if any.
fn denied(ctx: &Ctx, dests: &[(String, u16)]) -> Option<(String, u16, Ruling)> {
    let policy = ctx.rules.current();
    dests.iter().find_map(
        |(host, port)| match judge(&policy, Query::Reach { host, port: *port }) {
            r @ Ruling::Deny(_) => Some((host.clone(), *port, r)),
            _ => None,
        },
    )
}

/// Wait until a cut denies one of `dests()`.
async fn until_cut(ctx: &Ctx, dests: impl Fn() -> Vec<(String, u16)>) -> (String, u16, Ruling) {
    let mut cuts = ctx.rules.cuts();
    loop {
        if cuts.changed().await.is_err() {
            // The rules outlive every flow (the gateway holds them): never reached.
            std::future::pending::<()>().await;
        }
        if let Some(hit) = denied(ctx, &dests()) {
            return hit;
        }
    }
}

/// Run `flow` (a connection admitted to `host:port`) until it ends or a cut denies its
/// destination.
pub(crate) async fn guarded(
    ctx: &Arc<Ctx>,
    host: &str,
    port: u16,
    proto: &'static str,
    flow: impl Future<Output = ()>,
) {
    let dest = vec![(host.to_string(), port)];
    tokio::select! {
        _ = flow => {}
        hit = until_cut(ctx, || dest.clone()) => report(ctx, proto, hit),
    }
}

/// Run a proxy connection's `flow` with a fresh [`Seen`] set until it ends or a cut denies
/// one of the destinations it admitted.
pub(crate) async fn guarded_proxy(ctx: &Arc<Ctx>, flow: impl Future<Output = ()>) {
    let seen = Seen::default();
    let watched = seen.clone();
    tokio::select! {
        _ = SEEN.scope(seen, flow) => {}
        hit = until_cut(ctx, || watched.all()) => report(ctx, "http-proxy", hit),
    }
}

fn report(ctx: &Ctx, proto: &'static str, (host, port, ruling): (String, u16, Ruling)) {
    if let Ruling::Deny(d) = ruling {
        ctx.events.emit(EgressEvent::deny(
            host,
            port,
            proto,
            d.reason,
            format!("connection cut: {} (live rules changed)", d.message),
        ));
    }
}
