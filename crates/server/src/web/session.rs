//! Web console sessions and one-time login codes, in memory and bounded.
//!
//! A session stands for one [`Principal`] — the one a bearer token or a login code named at
//! login — and carries its own CSRF token. The browser holds only the session id (an
//! `HttpOnly` cookie); the server keeps the sha256 of ids and codes, never the values, so a
//! heap dump or a log line cannot replay them. Everything here is bounded: sessions in
//! total and per principal, their idle and absolute lifetimes, and pending codes (each
//! single-use and short-lived). A server restart logs everyone out.

use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Live sessions, all principals together; past it a login is refused
/// (`resource_exhausted`) rather than pushing somebody else out.
pub const MAX_SESSIONS: usize = 256;
/// Sessions one principal keeps; a further login ends its least recently used one.
pub const MAX_SESSIONS_PER_PRINCIPAL: usize = 8;
/// A session unused this long is over.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// A session is over this long after its login, used or not.
pub const ABSOLUTE: Duration = Duration::from_secs(12 * 60 * 60);
/// A login code (`cleanroom ui`) is good for this long, once.
pub const CODE_TTL: Duration = Duration::from_secs(120);
/// Codes pending at once, all principals together.
pub const MAX_CODES: usize = 64;

type Key = [u8; 32];

fn key(secret: &str) -> Key {
    Sha256::digest(secret.as_bytes()).into()
}

/// 32 random bytes, base64url: a session id, CSRF token or login code.
fn random_secret() -> Result<String, EngineError> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b)
        .map_err(|e| EngineError::internal(format!("no randomness for a session: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
}

struct Session {
    principal: Principal,
    csrf: String,
    born: Instant,
    used: Instant,
}

impl Session {
    fn live(&self, now: Instant) -> bool {
        now.duration_since(self.used) < IDLE && now.duration_since(self.born) < ABSOLUTE
    }
}

struct Code {
    principal: Principal,
    born: Instant,
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<Key, Session>,
    codes: HashMap<Key, Code>,
}

impl Inner {
    fn purge(&mut self, now: Instant) {
        self.sessions.retain(|_, s| s.live(now));
        self.codes
            .retain(|_, c| now.duration_since(c.born) < CODE_TTL);
    }
}

/// A session just made: the cookie value and its CSRF token.
pub struct NewSession {
    pub id: String,
    pub csrf: String,
}

/// What a verified session cookie stands for.
#[derive(Clone)]
pub struct Current {
    pub principal: Principal,
    pub csrf: String,
}

impl Current {
    /// Does `presented` equal this session's CSRF token (compared in constant time)?
    pub fn csrf_ok(&self, presented: Option<&[u8]>) -> bool {
        presented.is_some_and(|p| bool::from(p.ct_eq(self.csrf.as_bytes())))
    }
}

/// The console's sessions and login codes.
#[derive(Default)]
pub struct Sessions {
    inner: Mutex<Inner>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open a session for `who`.
    pub fn open(&self, who: Principal) -> Result<NewSession, EngineError> {
        let now = Instant::now();
        let (id, csrf) = (random_secret()?, random_secret()?);
        let mut g = self.lock();
        g.purge(now);
        let mine: Vec<(Key, Instant)> = g
            .sessions
            .iter()
            .filter(|(_, s)| s.principal == who)
            .map(|(k, s)| (*k, s.used))
            .collect();
        if mine.len() >= MAX_SESSIONS_PER_PRINCIPAL {
            if let Some((k, _)) = mine.iter().min_by_key(|(_, used)| *used) {
                g.sessions.remove(k);
            }
        }
        if g.sessions.len() >= MAX_SESSIONS {
            return Err(EngineError::resource_exhausted(format!(
                "the web console has {MAX_SESSIONS} open sessions; log out of one or wait for one to expire"
            ))
            .with("limit", MAX_SESSIONS.to_string()));
        }
        g.sessions.insert(
            key(&id),
            Session {
                principal: who,
                csrf: csrf.clone(),
                born: now,
                used: now,
            },
        );
        Ok(NewSession { id, csrf })
    }

    /// The live session of cookie value `id` (its idle clock restarts), if any.
    pub fn get(&self, id: &str) -> Option<Current> {
        let now = Instant::now();
        let mut g = self.lock();
        let k = key(id);
        let s = g.sessions.get_mut(&k)?;
        if !s.live(now) {
            g.sessions.remove(&k);
            return None;
        }
        s.used = now;
        Some(Current {
            principal: s.principal.clone(),
            csrf: s.csrf.clone(),
        })
    }

    /// End the session of cookie value `id` (logout).
    pub fn close(&self, id: &str) {
        self.lock().sessions.remove(&key(id));
    }

    /// A single-use login code for `who` (`cleanroom ui`), good for [`CODE_TTL`].
    pub fn new_code(&self, who: Principal) -> Result<String, EngineError> {
        let now = Instant::now();
        let code = random_secret()?;
        let mut g = self.lock();
        g.purge(now);
        if g.codes.len() >= MAX_CODES {
            return Err(EngineError::resource_exhausted(format!(
                "{MAX_CODES} login codes are pending; use one or wait {}s",
                CODE_TTL.as_secs()
            ))
            .with("limit", MAX_CODES.to_string()));
        }
        g.codes.insert(
            key(&code),
            Code {
                principal: who,
                born: now,
            },
        );
        Ok(code)
    }

    /// Spend a login code: its principal, once; `None` when unknown, used or expired.
    pub fn redeem(&self, code: &str) -> Option<Principal> {
        let now = Instant::now();
        let c = self.lock().codes.remove(&key(code))?;
        (now.duration_since(c.born) < CODE_TTL).then_some(c.principal)
    }

    /// Open sessions (for tests and the bench).
    pub fn count(&self) -> usize {
        let mut g = self.lock();
        g.purge(Instant::now());
        g.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::auth::Role;

    fn p(n: &str) -> Principal {
        Principal {
            name: n.into(),
            role: Role::User,
        }
    }

    #[test]
    fn codes_are_single_use() {
        let s = Sessions::default();
        let c = s.new_code(p("alice")).unwrap();
        assert_eq!(s.redeem(&c).unwrap().name, "alice");
        assert!(s.redeem(&c).is_none());
        assert!(s.redeem("made-up").is_none());
    }

    #[test]
    fn sessions_are_bounded_per_principal_and_in_total() {
        let s = Sessions::default();
        let first = s.open(p("alice")).unwrap();
        for _ in 0..MAX_SESSIONS_PER_PRINCIPAL {
            s.open(p("alice")).unwrap();
        }
        // The oldest of alice's went; the count stayed at her share.
        assert!(s.get(&first.id).is_none());
        assert_eq!(s.count(), MAX_SESSIONS_PER_PRINCIPAL);
        for i in 0..(MAX_SESSIONS - MAX_SESSIONS_PER_PRINCIPAL) {
            s.open(p(&format!("u{i}"))).unwrap();
        }
        assert!(s.open(p("mallory")).is_err());
    }

    #[test]
    fn csrf_and_logout() {
        let s = Sessions::default();
        let n = s.open(p("bob")).unwrap();
        let cur = s.get(&n.id).unwrap();
        assert!(cur.csrf_ok(Some(n.csrf.as_bytes())));
        assert!(!cur.csrf_ok(None));
        assert!(!cur.csrf_ok(Some(b"nope")));
        s.close(&n.id);
        assert!(s.get(&n.id).is_none());
    }
}
