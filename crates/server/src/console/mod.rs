//! Interactive consoles: `AttachExecution` hands out a session ticket (session id,
//! single-use token, expiry, QUIC endpoint, ALPN, certificate pin); the client then opens a
//! QUIC connection to [`quic`] and speaks the frames of `cleanroom-console` there
//! ([`session`]). PTY bytes never flow through ConnectRPC (seed 000).
//!
//! The [`Broker`] keeps the pending tickets. A token is random (256 bits), kept only as
//! its sha256, bound to one execution and the principal that asked for it, valid for a
//! short time and for exactly one hello: whatever the outcome of a hello that names a
//! session, the session is gone afterwards (so a token cannot be guessed at twice).

pub mod quic;
pub mod session;

use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::model::sync::lock;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use subtle::ConstantTimeEq;

pub use quic::ConsoleConfig;

/// Pending tickets, server-wide and per principal (a client that asks and never
/// connects cannot grow the table).
const MAX_PENDING: usize = 4096;
const MAX_PENDING_PER_PRINCIPAL: usize = 64;

/// What `AttachExecution` returns.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub session_id: String,
    pub token: String,
    pub expires_at: SystemTime,
    pub endpoint: String,
    pub alpn: String,
    pub cert_pin_sha256: String,
}

/// A redeemed ticket: who may attach to what.
#[derive(Debug, Clone)]
pub struct Grant {
    pub execution_id: String,
    pub principal: Principal,
}

/// Why a hello was refused (sent back as an `unauthenticated` error frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("unknown or already used session")]
    Unknown,
    #[error("session token expired")]
    Expired,
    #[error("wrong session token")]
    WrongToken,
    #[error("session is for another execution")]
    WrongExecution,
}

struct Pending {
    token_sha: [u8; 32],
    execution_id: String,
    principal: Principal,
    expires: Instant,
}

/// Issues and redeems console session tickets for one QUIC endpoint.
pub struct Broker {
    pending: Mutex<HashMap<String, Pending>>,
    endpoint: SocketAddr,
    pin: String,
    ttl: Duration,
}

fn sha(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Broker {
    pub fn new(endpoint: SocketAddr, pin: String, ttl: Duration) -> Broker {
        Broker {
            pending: Mutex::new(HashMap::new()),
            endpoint,
            pin,
            ttl,
        }
    }

    /// A ticket for `who` to attach to an execution (ownership is the caller's check).
    pub fn issue(&self, who: &Principal, execution_id: &str) -> Result<Ticket, EngineError> {
        let mut raw = [0u8; 32];
        getrandom::getrandom(&mut raw)
            .map_err(|e| EngineError::internal(format!("no randomness for a token: {e}")))?;
        let token = hex(&raw);
        let session_id = format!("ses_{}", uuid::Uuid::now_v7().simple());
        let now = Instant::now();
        let mut pending = lock(&self.pending);
        pending.retain(|_, p| p.expires > now);
        let mine = pending.values().filter(|p| p.principal == *who).count();
        if pending.len() >= MAX_PENDING || mine >= MAX_PENDING_PER_PRINCIPAL {
            return Err(EngineError::resource_exhausted(
                "too many console sessions waiting to be connected",
            ));
        }
        pending.insert(
            session_id.clone(),
            Pending {
                token_sha: sha(&token),
                execution_id: execution_id.to_string(),
                principal: who.clone(),
                expires: now + self.ttl,
            },
        );
        Ok(Ticket {
            session_id,
            token,
            expires_at: SystemTime::now() + self.ttl,
            endpoint: self.endpoint.to_string(),
            alpn: cleanroom_console::ALPN.to_string(),
            cert_pin_sha256: self.pin.clone(),
        })
    }

    /// Check a hello's session, token and execution. The session is consumed whatever
    /// the outcome (single use; no second guess at a token).
    pub fn redeem(
        &self,
        session_id: &str,
        token: &str,
        execution_id: &str,
    ) -> Result<Grant, Refusal> {
        let p = lock(&self.pending)
            .remove(session_id)
            .ok_or(Refusal::Unknown)?;
        if !bool::from(p.token_sha.ct_eq(&sha(token))) {
            return Err(Refusal::WrongToken);
        }
        if Instant::now() >= p.expires {
            return Err(Refusal::Expired);
        }
        if p.execution_id != execution_id {
            return Err(Refusal::WrongExecution);
        }
        Ok(Grant {
            execution_id: p.execution_id,
            principal: p.principal,
        })
    }

    /// Tickets not yet redeemed (and not expired).
    pub fn pending(&self) -> usize {
        let now = Instant::now();
        lock(&self.pending)
            .values()
            .filter(|p| p.expires > now)
            .count()
    }
}

/// `AttachExecution`: a ticket for `who` to attach to one of its interactive executions.
pub fn attach(
    engine: &std::sync::Arc<crate::engine::Engine>,
    broker: Option<&Broker>,
    who: &Principal,
    sandbox_id: &str,
    execution_id: &str,
) -> Result<Ticket, EngineError> {
    let exe = engine.execution(who, sandbox_id, execution_id)?;
    let row = exe.row();
    if !row.tty {
        return Err(EngineError::new(
            cleanroom_vocab::ErrorCode::ExecutionNotInteractive,
            format!("execution {} has no terminal (create it with tty)", row.id),
        )
        .with("execution_id", &row.id));
    }
    let broker =
        broker.ok_or_else(|| EngineError::unimplemented("this server runs no console endpoint"))?;
    broker.issue(who, &row.id)
}

/// The initial terminal size of a `CreateExecution` (80x24 when not given).
pub fn tty_size(cols: u32, rows: u32) -> (u16, u16) {
    let clamp = |v: u32, default: u16| {
        if v == 0 {
            default
        } else {
            u16::try_from(v).unwrap_or(u16::MAX)
        }
    };
    (clamp(cols, 80), clamp(rows, 24))
}

/// Microseconds since the epoch (for the wire's `Timestamp`).
pub fn unix_micros(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::auth::Role;

    fn who(name: &str) -> Principal {
        Principal {
            name: name.into(),
            role: Role::User,
        }
    }

    fn broker(ttl: Duration) -> Broker {
        Broker::new("127.0.0.1:1".parse().unwrap(), "00".into(), ttl)
    }

    #[test]
    fn a_token_is_single_use_and_bound_to_its_execution() {
        let b = broker(Duration::from_secs(30));
        let t = b.issue(&who("a"), "exe_1").unwrap();
        assert_eq!(t.token.len(), 64);
        let g = b.redeem(&t.session_id, &t.token, "exe_1").unwrap();
        assert_eq!(g.principal, who("a"));
        assert_eq!(
            b.redeem(&t.session_id, &t.token, "exe_1").unwrap_err(),
            Refusal::Unknown
        );

        let t = b.issue(&who("a"), "exe_1").unwrap();
        assert_eq!(
            b.redeem(&t.session_id, &t.token, "exe_2").unwrap_err(),
            Refusal::WrongExecution
        );
        // Refused once, gone: the right execution afterwards does not help.
        assert_eq!(
            b.redeem(&t.session_id, &t.token, "exe_1").unwrap_err(),
            Refusal::Unknown
        );

        let t = b.issue(&who("a"), "exe_1").unwrap();
        let mut wrong = t.token.clone();
        wrong.replace_range(0..1, if wrong.starts_with('0') { "1" } else { "0" });
        assert_eq!(
            b.redeem(&t.session_id, &wrong, "exe_1").unwrap_err(),
            Refusal::WrongToken
        );
        assert_eq!(
            b.redeem(&t.session_id, &t.token, "exe_1").unwrap_err(),
            Refusal::Unknown
        );
        assert_eq!(b.pending(), 0);
    }

    #[test]
    fn expired_tokens_are_refused() {
        let b = broker(Duration::ZERO);
        let t = b.issue(&who("a"), "exe_1").unwrap();
        assert_eq!(
            b.redeem(&t.session_id, &t.token, "exe_1").unwrap_err(),
            Refusal::Expired
        );
    }

    #[test]
    fn pending_tickets_are_capped_per_principal() {
        let b = broker(Duration::from_secs(30));
        for _ in 0..MAX_PENDING_PER_PRINCIPAL {
            b.issue(&who("a"), "exe_1").unwrap();
        }
        let e = b.issue(&who("a"), "exe_1").unwrap_err();
        assert_eq!(e.code, cleanroom_vocab::ErrorCode::ResourceExhausted);
        b.issue(&who("b"), "exe_1").unwrap();
    }
}
