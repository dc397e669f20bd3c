//! Uploads in progress: an anonymous temporary file inside the sandbox (created and later
//! committed by the sandbox's own helper), how many bytes it holds, their running sha256,
//! and the principal that owns it. Held in memory only: bounded in number per sandbox and
//! in total, dropped when idle too long or when their sandbox is no longer READY (closing
//! the last fd of an anonymous file frees its space). Every principal has its own share of
//! the server-wide table ([`PER_PRINCIPAL`], a sixteenth of [`TOTAL`]), so one principal
//! that opens uploads in all its sandboxes cannot lock every other principal out
//! (docs/limits.md).

use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Largest `data` of one `WriteSandboxFile` call (base64 JSON of it still fits the 4 MiB
/// request limit).
pub const MAX_CHUNK: usize = 2 << 20;
/// An upload untouched this long is dropped.
pub const IDLE: Duration = Duration::from_secs(15 * 60);
/// Uploads open at once in one sandbox.
pub const PER_SANDBOX: usize = 16;
/// Uploads open at once on the server.
pub const TOTAL: usize = 1024;
/// Uploads one principal may have open at once (its share of [`TOTAL`]): 16 principals
/// at their share fill the table, never one.
pub const PER_PRINCIPAL: usize = TOTAL / 16;

/// What the first call of an upload asked for.
#[derive(Debug, Clone)]
pub struct Target {
    pub sandbox_id: String,
    /// Normalized absolute path (the directory for a tar upload).
    pub path: String,
    pub tar: bool,
    pub mode: u32,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub no_overwrite: bool,
    pub expected_size: Option<u64>,
}

/// The part of an upload that changes; one call at a time holds its lock.
pub struct State {
    /// The anonymous file; `None` once finished or dropped.
    pub file: Option<OwnedFd>,
    pub offset: u64,
    pub hasher: Sha256,
}

pub struct Upload {
    pub id: String,
    pub owner: crate::model::owner::Owner,
    pub target: Target,
    pub created_at: SystemTime,
    pub state: tokio::sync::Mutex<State>,
    touched: Mutex<Instant>,
}

impl Upload {
    pub fn touch(&self) {
        if let Ok(mut t) = self.touched.lock() {
            *t = Instant::now();
        }
    }

    fn idle_since(&self) -> Instant {
        self.touched
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|_| Instant::now())
    }

    /// When the upload expires if untouched from now on.
    pub fn expires_at(&self) -> SystemTime {
        let left = IDLE.saturating_sub(self.idle_since().elapsed());
        SystemTime::now() + left
    }
}

/// New upload id (`upl_` + UUIDv7 hex, like sandbox ids).
pub fn new_id() -> String {
    format!("upl_{}", uuid::Uuid::now_v7().simple())
}

pub fn not_found(id: &str) -> EngineError {
    EngineError::new(
        ErrorCode::UploadNotFound,
        format!("no upload with id {id:?}"),
    )
    .with("upload_id", id)
}

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Uploads by id.
#[derive(Default)]
pub struct Uploads {
    map: Mutex<HashMap<String, Arc<Upload>>>,
}

impl Uploads {
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, Arc<Upload>>>, EngineError> {
        self.map
            .lock()
            .map_err(|_| EngineError::internal("upload table lock poisoned"))
    }

    /// Register a new upload of `who` holding `file`; refused when the caps are reached.
    pub fn insert(
        &self,
        who: &Principal,
        target: Target,
        file: OwnedFd,
    ) -> Result<Arc<Upload>, EngineError> {
        let mut map = self.lock()?;
        let (mut in_sandbox, mut mine) = (0, 0);
        for u in map.values() {
            in_sandbox += usize::from(u.target.sandbox_id == target.sandbox_id);
            mine += usize::from(who.owns(&u.owner));
        }
        let refuse = |what: &str, cap: usize| {
            Err(EngineError::resource_exhausted(format!(
                "too many uploads in progress ({what}: at most {cap}); finish or cancel one"
            ))
            .with("limit", cap.to_string()))
        };
        if in_sandbox >= PER_SANDBOX {
            return refuse("per sandbox", PER_SANDBOX);
        }
        if mine >= PER_PRINCIPAL {
            return refuse("per principal", PER_PRINCIPAL);
        }
        if map.len() >= TOTAL {
            return refuse("on this server", TOTAL);
        }
        let up = Arc::new(Upload {
            id: new_id(),
            owner: who.owner(),
            target,
            created_at: SystemTime::now(),
            state: tokio::sync::Mutex::new(State {
                file: Some(file),
                offset: 0,
                hasher: Sha256::new(),
            }),
            touched: Mutex::new(Instant::now()),
        });
        map.insert(up.id.clone(), up.clone());
        Ok(up)
    }

    /// The upload `id` of sandbox `sandbox_id`, if `who` may see it (else
    /// `upload_not_found`, exactly as if it did not exist).
    pub fn get(
        &self,
        who: &Principal,
        sandbox_id: &str,
        id: &str,
    ) -> Result<Arc<Upload>, EngineError> {
        if !crate::model::ids::looks_valid(id, "upl_") {
            return Err(not_found(id));
        }
        let up = self.lock()?.get(id).cloned().ok_or_else(|| not_found(id))?;
        if !who.can_see(&up.owner) || up.target.sandbox_id != sandbox_id {
            return Err(not_found(id));
        }
        if up.idle_since().elapsed() > IDLE {
            self.remove(id);
            return Err(not_found(id));
        }
        up.touch();
        Ok(up)
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Upload>> {
        self.map.lock().ok().and_then(|mut m| m.remove(id))
    }

    /// Drop uploads idle too long or whose sandbox `keep` says is gone.
    pub fn sweep(&self, keep: impl Fn(&str) -> bool) -> usize {
        let Ok(mut map) = self.map.lock() else {
            return 0;
        };
        let before = map.len();
        map.retain(|_, u| u.idle_since().elapsed() <= IDLE && keep(&u.target.sandbox_id));
        before - map.len()
    }

    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    fn target(sbx: &str) -> Target {
        Target {
            sandbox_id: sbx.into(),
            path: "/workspace/f".into(),
            tar: false,
            mode: 0,
            uid: None,
            gid: None,
            no_overwrite: false,
            expected_size: None,
        }
    }

    fn fd() -> OwnedFd {
        std::fs::File::open("/dev/null").unwrap().into()
    }

    #[test]
    fn other_principals_and_other_sandboxes_get_not_found() {
        let ups = Uploads::default();
        let alice = who("alice", Role::User);
        let up = ups.insert(&alice, target("sbx_a"), fd()).unwrap();
        assert!(ups.get(&alice, "sbx_a", &up.id).is_ok());
        let bob = who("bob", Role::User);
        let e = ups.get(&bob, "sbx_a", &up.id).err().unwrap();
        assert_eq!(e.code, ErrorCode::UploadNotFound);
        let e = ups.get(&alice, "sbx_b", &up.id).err().unwrap();
        assert_eq!(e.code, ErrorCode::UploadNotFound);
        assert!(ups.get(&who("root", Role::Admin), "sbx_a", &up.id).is_ok());
        let e = ups.get(&alice, "sbx_a", "upl_nope").err().unwrap();
        assert_eq!(e.code, ErrorCode::UploadNotFound);
    }

    #[test]
    fn caps_per_sandbox_and_sweep_of_gone_sandboxes() {
        let ups = Uploads::default();
        let alice = who("alice", Role::User);
        for _ in 0..PER_SANDBOX {
            ups.insert(&alice, target("sbx_a"), fd()).unwrap();
        }
        let e = ups.insert(&alice, target("sbx_a"), fd()).err().unwrap();
        assert_eq!(e.code, ErrorCode::ResourceExhausted);
        ups.insert(&alice, target("sbx_b"), fd()).unwrap();
        assert_eq!(ups.sweep(|s| s != "sbx_a"), PER_SANDBOX);
        assert_eq!(ups.len(), 1);
    }

    #[test]
    fn one_principal_fills_only_its_share() {
        let ups = Uploads::default();
        let alice = who("alice", Role::User);
        for i in 0..PER_PRINCIPAL {
            ups.insert(&alice, target(&format!("sbx_{}", i / PER_SANDBOX)), fd())
                .unwrap();
        }
        let e = ups.insert(&alice, target("sbx_new"), fd()).err().unwrap();
        assert_eq!(e.code, ErrorCode::ResourceExhausted);
        assert!(e.message.contains("per principal"), "{}", e.message);
        // Everyone else still has the rest of the table.
        for i in 0..(TOTAL - PER_PRINCIPAL) {
            let p = who(&format!("p{}", i / PER_PRINCIPAL), Role::User);
            ups.insert(&p, target(&format!("sbx_o{}", i / PER_SANDBOX)), fd())
                .unwrap();
        }
        let e = ups.insert(&who("late", Role::User), target("sbx_z"), fd());
        assert!(e.is_err(), "the table is full");
    }

    #[test]
    fn hex_is_lowercase() {
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
    }
}
