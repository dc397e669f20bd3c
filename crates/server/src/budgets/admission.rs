//! Admission of connections that are not authenticated yet, and shares of those that are.
//!
//! One [`Admission`] per endpoint (the API listener, the console's QUIC endpoint) keeps
//! two separate budgets, so no amount of unauthenticated work can take what an
//! authenticated caller needs:
//! - **pre-authentication**: a connection that has not proven a principal yet (TCP before
//!   its first authenticated request, QUIC before its ticket's hello) holds a slot of a
//!   small budget, at most `preauth_per_peer` per peer address (an IPv6 /64 counts as one
//!   address) and `preauth_total` in all. At a peer's budget, its *oldest* pending
//!   connection is closed to admit the new one if it is at least [`MIN_AGE`] old, else
//!   the new one is refused at once (before any handshake); at the total budget, the
//!   oldest of the peer holding the most is closed if the newcomer's peer, the newcomer
//!   counted, would still hold fewer (or that one is at least [`MIN_AGE`] old). So a flood keeps at most a peer's budget
//!   of slots, pays a refusal (not a handshake) per further attempt, and a client at
//!   another address is admitted whatever the flood holds; a client that authenticates
//!   at once (its first request carries its credentials) then leaves the budget. A
//!   pending connection is closed `preauth_timeout` after it was accepted.
//! - **authenticated**: at most `max_connections` in all and `per_principal` per
//!   principal (admins exempt from the share, not from the total). A connection past
//!   either is refused with `resource_exhausted`.
//!
//! docs/limits.md lists every budget and its default.

use crate::identity::auth::Principal;
use crate::model::sync::lock;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Budgets of one endpoint (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitLimits {
    pub max_connections: usize,
    pub per_principal: usize,
    pub preauth_total: usize,
    pub preauth_per_peer: usize,
    pub preauth_timeout: Duration,
}

impl AdmitLimits {
    /// The shares derived from two totals: a principal may hold an eighth of the
    /// authenticated connections, a peer address an eighth of the pre-auth budget.
    pub fn derived(
        max_connections: usize,
        preauth_total: usize,
        preauth_timeout: Duration,
    ) -> Self {
        let max_connections = max_connections.max(1);
        let preauth_total = preauth_total.max(1);
        AdmitLimits {
            max_connections,
            per_principal: (max_connections / 8).max(1),
            preauth_total,
            preauth_per_peer: (preauth_total / 8).max(1),
            preauth_timeout,
        }
    }
}

/// The address a pre-auth budget is kept for: IPv4 addresses, IPv6 /64 prefixes (one
/// host usually owns a whole /64); unix peers have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerKey {
    V4([u8; 4]),
    V6([u8; 8]),
}

impl PeerKey {
    pub fn of(ip: IpAddr) -> PeerKey {
        match ip {
            IpAddr::V4(v4) => PeerKey::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => PeerKey::V4(v4.octets()),
                None => {
                    let o = v6.octets();
                    let mut p = [0u8; 8];
                    p.copy_from_slice(&o[..8]);
                    PeerKey::V6(p)
                }
            },
        }
    }
}

struct Pending {
    peer: PeerKey,
    since: Instant,
    closed: Arc<Notify>,
}

/// A pending connection younger than this is not closed to make room for another: a
/// flood then costs a refusal per attempt (no handshake), not a handshake.
pub const MIN_AGE: Duration = Duration::from_secs(1);

#[derive(Default)]
struct State {
    next_id: u64,
    /// Pending connections by age (ids grow).
    pending: BTreeMap<u64, Pending>,
    per_peer: HashMap<PeerKey, usize>,
    authenticated: usize,
    per_principal: HashMap<String, usize>,
}

impl State {
    fn forget_pending(&mut self, id: u64) -> Option<Pending> {
        let p = self.pending.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&p.peer) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_peer.remove(&p.peer);
            }
        }
        Some(p)
    }

    fn release_principal(&mut self, name: &str) {
        self.authenticated = self.authenticated.saturating_sub(1);
        if let Some(n) = self.per_principal.get_mut(name) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_principal.remove(name);
            }
        }
    }
}

/// Why an authenticated connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("this principal already holds {0} connections, its share of this endpoint")]
    Share(usize),
    #[error("this endpoint already holds {0} authenticated connections")]
    Full(usize),
}

/// The budgets of one endpoint.
pub struct Admission {
    limits: AdmitLimits,
    state: Mutex<State>,
}

enum Stage {
    Pending,
    Authenticated(String),
    Refused(Refused),
}

/// One admitted connection's place in the budgets; released when dropped.
pub struct Gate {
    adm: Arc<Admission>,
    id: u64,
    stage: Mutex<Stage>,
    /// When a still pending connection is closed.
    deadline: tokio::time::Instant,
    /// Notified when the connection must close now (evicted, or refused after a request).
    closed: Arc<Notify>,
}

impl Admission {
    pub fn new(limits: AdmitLimits) -> Arc<Admission> {
        Arc::new(Admission {
            limits,
            state: Mutex::new(State::default()),
        })
    }

    pub fn limits(&self) -> AdmitLimits {
        self.limits
    }

    /// Admit a connection from `peer` that has not authenticated yet, or `None` (close
    /// it at once, before any work is spent on it). At the peer's budget its oldest
    /// pending connection is closed to make room if it is at least [`MIN_AGE`] old; at
    /// the total budget, the oldest of the peer holding the most, if the newcomer's peer
    /// would still hold fewer with it (or that one is at least [`MIN_AGE`] old).
    pub fn pending(self: &Arc<Self>, peer: IpAddr) -> Option<Arc<Gate>> {
        let key = PeerKey::of(peer);
        let now = Instant::now();
        let old_enough = |p: &Pending| now.duration_since(p.since) >= MIN_AGE;
        let mut st = lock(&self.state);
        let of_peer = st.per_peer.get(&key).copied().unwrap_or(0);
        let victim = if of_peer >= self.limits.preauth_per_peer {
            let (id, p) = st.pending.iter().find(|(_, p)| p.peer == key)?;
            if !old_enough(p) {
                return None;
            }
            Some(*id)
        } else if st.pending.len() >= self.limits.preauth_total {
            let (heaviest, most) = st
                .per_peer
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(k, n)| (*k, *n))?;
            let (id, p) = st.pending.iter().find(|(_, p)| p.peer == heaviest)?;
            if of_peer + 1 >= most && !old_enough(p) {
                return None;
            }
            Some(*id)
        } else {
            None
        };
        if let Some(old) = victim.and_then(|v| st.forget_pending(v)) {
            old.closed.notify_one();
        }
        st.next_id += 1;
        let id = st.next_id;
        let closed = Arc::new(Notify::new());
        st.pending.insert(
            id,
            Pending {
                peer: key,
                since: now,
                closed: closed.clone(),
            },
        );
        *st.per_peer.entry(key).or_insert(0) += 1;
        drop(st);
        Some(Arc::new(Gate {
            adm: self.clone(),
            id,
            stage: Mutex::new(Stage::Pending),
            deadline: tokio::time::Instant::now() + self.limits.preauth_timeout,
            closed,
        }))
    }

    /// Admit a connection whose principal is known at once (a unix socket's peer uid).
    pub fn authenticated(self: &Arc<Self>, who: &Principal) -> Result<Arc<Gate>, Refused> {
        let mut st = lock(&self.state);
        self.take_share(&mut st, who)?;
        st.next_id += 1;
        let id = st.next_id;
        drop(st);
        Ok(Arc::new(Gate {
            adm: self.clone(),
            id,
            stage: Mutex::new(Stage::Authenticated(who.name.clone())),
            deadline: tokio::time::Instant::now() + self.limits.preauth_timeout,
            closed: Arc::new(Notify::new()),
        }))
    }

    fn take_share(&self, st: &mut State, who: &Principal) -> Result<(), Refused> {
        let mine = st.per_principal.get(&who.name).copied().unwrap_or(0);
        if !who.is_admin() && mine >= self.limits.per_principal {
            return Err(Refused::Share(self.limits.per_principal));
        }
        if st.authenticated >= self.limits.max_connections {
            return Err(Refused::Full(self.limits.max_connections));
        }
        st.authenticated += 1;
        *st.per_principal.entry(who.name.clone()).or_insert(0) += 1;
        Ok(())
    }

    /// Pending and authenticated connections now (for tests and logs).
    pub fn counts(&self) -> (usize, usize) {
        let st = lock(&self.state);
        (st.pending.len(), st.authenticated)
    }
}

impl Gate {
    /// The connection proved `who`: move it from the pending budget to `who`'s share.
    /// Idempotent for a connection already authenticated (whoever a later request on it
    /// names); `Err` (and the connection is to be closed) when the share or the total is
    /// full, or when it was already refused.
    pub fn authenticate(&self, who: &Principal) -> Result<(), Refused> {
        let mut stage = lock(&self.stage);
        match &*stage {
            Stage::Authenticated(_) => return Ok(()),
            Stage::Refused(r) => return Err(*r),
            Stage::Pending => {}
        }
        let mut st = lock(&self.adm.state);
        st.forget_pending(self.id);
        match self.adm.take_share(&mut st, who) {
            Ok(()) => {
                *stage = Stage::Authenticated(who.name.clone());
                Ok(())
            }
            Err(r) => {
                *stage = Stage::Refused(r);
                drop(st);
                self.closed.notify_one();
                Err(r)
            }
        }
    }

    /// Still waiting to authenticate?
    pub fn is_pending(&self) -> bool {
        matches!(*lock(&self.stage), Stage::Pending)
    }

    /// Refused after authenticating (its last answer is `resource_exhausted`)?
    pub fn is_refused(&self) -> bool {
        matches!(*lock(&self.stage), Stage::Refused(_))
    }

    /// Resolves when the connection must close now: it was evicted from the pending
    /// budget, refused, or is still pending `preauth_timeout` after it was admitted.
    pub async fn must_close(&self) {
        let deadline = tokio::time::sleep_until(self.deadline);
        tokio::pin!(deadline);
        let mut expired = false;
        loop {
            tokio::select! {
                _ = self.closed.notified() => return,
                _ = &mut deadline, if !expired => {
                    if self.is_pending() {
                        return;
                    }
                    expired = true;
                }
            }
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let stage = std::mem::replace(
            &mut *self.stage.lock().unwrap_or_else(|p| p.into_inner()),
            Stage::Pending,
        );
        let mut st = lock(&self.adm.state);
        match stage {
            Stage::Pending => {
                st.forget_pending(self.id);
            }
            Stage::Authenticated(name) => st.release_principal(&name),
            Stage::Refused(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::auth::Role;

    fn who(name: &str, role: Role) -> Principal {
        Principal {
            name: name.into(),
            role,
        }
    }

    fn limits() -> AdmitLimits {
        AdmitLimits {
            max_connections: 4,
            per_principal: 2,
            preauth_total: 4,
            preauth_per_peer: 2,
            preauth_timeout: Duration::from_secs(10),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[tokio::test]
    async fn a_flood_of_one_peer_keeps_only_its_newest_and_evicts_itself() {
        let adm = Admission::new(limits());
        let a1 = adm.pending(ip("10.0.0.1")).unwrap();
        let a2 = adm.pending(ip("10.0.0.1")).unwrap();
        let b1 = adm.pending(ip("10.0.0.2")).unwrap();
        // At its budget, a peer's new connection is refused while its own are young...
        assert!(adm.pending(ip("10.0.0.1")).is_none());
        assert_eq!(adm.counts(), (3, 0));
        // ...and closes its oldest once that one is MIN_AGE old, not the other peer's.
        tokio::time::sleep(MIN_AGE + Duration::from_millis(100)).await;
        let a3 = adm.pending(ip("10.0.0.1")).unwrap();
        tokio::time::timeout(Duration::from_secs(1), a1.must_close())
            .await
            .expect("a1 evicted");
        assert_eq!(adm.counts(), (3, 0));
        // The total is full: a lighter peer's newcomer closes the oldest of the heaviest
        // peer (10.0.0.1), not b1 although b1 is older than a3.
        let _c1 = adm.pending(ip("10.0.0.3")).unwrap();
        let _c2 = adm.pending(ip("10.0.0.4")).unwrap();
        tokio::time::timeout(Duration::from_secs(1), a2.must_close())
            .await
            .expect("a2 evicted");
        assert_eq!(adm.counts().0, 4);
        assert!(b1.is_pending());
        // Authenticating moves a connection out of the pending budget.
        b1.authenticate(&who("alice", Role::User)).unwrap();
        assert_eq!(adm.counts(), (3, 1));
        drop(a3);
        drop(b1);
        assert_eq!(adm.counts(), (2, 0));
        drop(a1);
        drop(a2);
        assert_eq!(adm.counts(), (2, 0), "evicted ones were already forgotten");
        // IPv6 peers of one /64 share a budget; a v4-mapped address is its v4 one.
        assert_eq!(
            PeerKey::of(ip("2001:db8::1")),
            PeerKey::of(ip("2001:db8::ffff:2"))
        );
        assert_eq!(
            PeerKey::of(ip("::ffff:10.0.0.1")),
            PeerKey::of(ip("10.0.0.1"))
        );
    }

    #[tokio::test]
    async fn shares_per_principal_admins_only_bounded_by_the_total() {
        let adm = Admission::new(limits());
        let alice = who("alice", Role::User);
        let _a = adm.authenticated(&alice).unwrap();
        let g = adm.pending(ip("10.0.0.1")).unwrap();
        g.authenticate(&alice).unwrap();
        assert_eq!(
            adm.authenticated(&alice).err(),
            Some(Refused::Share(2)),
            "alice's share"
        );
        let third = adm.pending(ip("10.0.0.1")).unwrap();
        assert_eq!(third.authenticate(&alice), Err(Refused::Share(2)));
        tokio::time::timeout(Duration::from_secs(1), third.must_close())
            .await
            .expect("refused closes");
        // Bob still gets in; an admin takes the rest, then the total says no.
        let _b = adm.authenticated(&who("bob", Role::User)).unwrap();
        let root = who("uid:0", Role::Admin);
        let _r = adm.authenticated(&root).unwrap();
        assert_eq!(adm.authenticated(&root).err(), Some(Refused::Full(4)));
        drop(g);
        assert!(adm.authenticated(&root).is_ok());
    }

    #[tokio::test]
    async fn pending_connections_expire() {
        let adm = Admission::new(AdmitLimits {
            preauth_timeout: Duration::from_millis(200),
            ..limits()
        });
        let g = adm.pending(ip("10.0.0.1")).unwrap();
        let h = adm.pending(ip("10.0.0.2")).unwrap();
        h.authenticate(&who("alice", Role::User)).unwrap();
        tokio::time::timeout(Duration::from_secs(5), g.must_close())
            .await
            .expect("pending expires");
        assert!(
            tokio::time::timeout(Duration::from_millis(600), h.must_close())
                .await
                .is_err(),
            "an authenticated connection does not"
        );
    }
}
