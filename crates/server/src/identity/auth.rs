//! Who is calling: principals, bearer tokens, client certificates, peer credentials.
//!
//! Every request gets exactly one [`Principal`] before any handler runs, or is refused
//! with `unauthenticated`:
//! - **unix socket**: the connecting process's uid from `SO_PEERCRED` (`uid:<n>`); uid 0
//!   and the server's own uid are `admin`, every other uid a `user`;
//! - **TCP / TLS**: an `Authorization: Bearer <token>` header whose sha256 is in the
//!   tokens file (`serve --tokens-file`), else a client certificate verified against
//!   `--client-ca` (principal: its first DNS/email SAN, else its CN; role `user`);
//! - `--insecure-no-auth` (loopback only): every TCP caller is the admin `anonymous`.
//!
//! A present but wrong token is refused even when a certificate would have matched:
//! fail closed on anything presented that does not verify.
//!
//! Tokens file format (mode 600, owned by the server's user), one token per line:
//! `sha256:<64 hex digits of sha256(token)> <principal> <user|admin>`; blank lines and
//! `#` comments are ignored. Principal names are `[A-Za-z0-9][A-Za-z0-9._@-]*` (at most
//! 64 bytes): never `:`, so no token can claim a unix principal `uid:<n>`.

use crate::model::error::EngineError;
use crate::model::owner::Owner;
use sha2::{Digest, Sha256};
use std::path::Path;
use subtle::ConstantTimeEq;

/// What a principal may do beyond its own objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sees and acts on only the objects it owns.
    User,
    /// Sees and acts on every object.
    Admin,
}

/// An authenticated caller. It owns the objects whose [`Owner`] is its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }
    /// The owner of the objects this principal creates.
    pub fn owner(&self) -> Owner {
        Owner::principal(&self.name)
    }
    /// Does this principal own objects of `owner` (admin or not)?
    pub fn owns(&self, owner: &Owner) -> bool {
        *owner == self.owner()
    }
    /// May this principal see an object owned by `owner`? Nobody — admins included — sees
    /// a pool's unclaimed sandboxes (owner `pool:<id>`): they must stay pristine until one
    /// claim hands them over (see docs/pools.md). Legacy rows: admins only.
    pub fn can_see(&self, owner: &Owner) -> bool {
        !owner.is_pool() && (self.is_admin() || self.owns(owner))
    }
}

/// How the connection a request arrived on was established; inserted into every
/// request's extensions by [`crate::serve::listener`] (clients cannot forge extensions).
#[derive(Debug, Clone)]
pub enum Peer {
    /// Unix socket; the peer's uid from `SO_PEERCRED`.
    Unix { uid: u32 },
    /// TCP (with or without TLS); the principal of a verified client certificate.
    Tcp { cert_principal: Option<String> },
}

/// The principal of a web console session (`crate::web`), inserted into a request's
/// extensions by the console's front service once the session cookie and its CSRF token
/// verified. Like [`Peer`], only the server puts it there: clients cannot forge extensions.
#[derive(Debug, Clone)]
pub struct SessionPrincipal(pub Principal);

/// Why a tokens file or certificate was refused.
#[derive(Debug, thiserror::Error)]
#[error("tokens file {path}: {msg}")]
pub struct TokensError {
    pub path: String,
    pub msg: String,
}

/// Valid principal name for tokens and certificates (the grammar lives with the owners
/// it names).
pub use crate::model::owner::valid_name;

struct TokenEntry {
    hash: [u8; 32],
    principal: Principal,
}

/// Hashed bearer tokens from `serve --tokens-file`.
#[derive(Default)]
pub struct TokenStore {
    entries: Vec<TokenEntry>,
}

impl TokenStore {
    /// Load and validate the tokens file (mode and owner checked like `--secrets-file`).
    pub fn load(path: &Path) -> Result<TokenStore, TokensError> {
        let fail = |msg: String| TokensError {
            path: path.display().to_string(),
            msg,
        };
        let text = crate::identity::private_file::read_private(path).map_err(fail)?;
        Self::parse(&text).map_err(fail)
    }

    /// Parse the file's text (see the module docs for the format).
    pub fn parse(text: &str) -> Result<TokenStore, String> {
        let mut store = TokenStore::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |m: &str| format!("line {}: {m}", n + 1);
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [hash, name, role] = fields[..] else {
                return Err(bad("expected `sha256:<hex> <principal> <user|admin>`"));
            };
            let hex = hash
                .strip_prefix("sha256:")
                .ok_or_else(|| bad("the hash must start with sha256:"))?;
            let hash = decode_hex32(hex).ok_or_else(|| bad("expected 64 hex digits"))?;
            if !valid_name(name) {
                return Err(bad("principal names are [A-Za-z0-9][A-Za-z0-9._@-]*"));
            }
            let role = match role {
                "user" => Role::User,
                "admin" => Role::Admin,
                _ => return Err(bad("role must be user or admin")),
            };
            if store.entries.iter().any(|e| e.hash == hash) {
                return Err(bad("the same token hash appears twice"));
            }
            store.entries.push(TokenEntry {
                hash,
                principal: Principal {
                    name: name.to_string(),
                    role,
                },
            });
        }
        if store.entries.is_empty() {
            return Err("no tokens".into());
        }
        Ok(store)
    }

    /// The principal whose token this is. Every entry is compared in constant time.
    pub fn verify(&self, token: &str) -> Option<Principal> {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.hash.ct_eq(&presented)) {
                found = Some(e.principal.clone());
            }
        }
        found
    }
}

fn decode_hex32(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The principal a verified client certificate names: its first DNS or email SAN, else
/// its subject CN; `None` when none is a valid principal name.
pub fn cert_principal(der: &[u8]) -> Option<String> {
    use x509_parser::prelude::*;
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let san = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .and_then(|s| {
            s.value.general_names.iter().find_map(|n| match n {
                GeneralName::DNSName(d) | GeneralName::RFC822Name(d) => Some(d.to_string()),
                _ => None,
            })
        });
    let cn = || {
        cert.subject()
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .map(str::to_string)
    };
    san.or_else(cn).filter(|n| valid_name(n))
}

/// Server-side authentication settings.
#[derive(Default)]
pub struct Authenticator {
    /// Bearer tokens (`--tokens-file`).
    pub tokens: Option<TokenStore>,
    /// `--insecure-no-auth`: unauthenticated TCP callers are the admin `anonymous`.
    pub insecure_no_auth: bool,
}

impl Authenticator {
    /// Resolve the caller of one request.
    pub fn authenticate(
        &self,
        peer: Option<&Peer>,
        authorization: Option<&[u8]>,
    ) -> Result<Principal, EngineError> {
        match peer {
            Some(Peer::Unix { uid }) => Ok(unix_principal(*uid)),
            Some(Peer::Tcp { cert_principal }) => {
                if let Some(value) = authorization {
                    let token = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .ok_or_else(|| {
                            EngineError::unauthenticated(
                                "the Authorization header must be `Bearer <token>`",
                            )
                        })?;
                    return self
                        .tokens
                        .as_ref()
                        .and_then(|t| t.verify(token))
                        .ok_or_else(|| EngineError::unauthenticated("unknown bearer token"));
                }
                if let Some(name) = cert_principal {
                    return Ok(Principal {
                        name: name.clone(),
                        role: Role::User,
                    });
                }
                if self.insecure_no_auth {
                    return Ok(Principal {
                        name: "anonymous".into(),
                        role: Role::Admin,
                    });
                }
                Err(EngineError::unauthenticated(
                    "this server requires a bearer token (--token / CLEANROOM_TOKEN) or a client certificate",
                ))
            }
            None => Err(EngineError::unauthenticated(
                "the connection carries no peer identity",
            )),
        }
    }
}

/// `uid:<n>`; the server's own uid and root are admins.
pub fn unix_principal(uid: u32) -> Principal {
    let me = nix::unistd::geteuid().as_raw();
    Principal {
        name: format!("uid:{uid}"),
        role: if uid == 0 || uid == me {
            Role::Admin
        } else {
            Role::User
        },
    }
}

/// The caller of a request, as the interceptor resolved it; `unauthenticated` when
/// absent (a route that bypassed the interceptor fails closed).
pub fn principal_of(ctx: &connectrpc::RequestContext) -> Result<Principal, EngineError> {
    ctx.extensions()
        .get::<Principal>()
        .cloned()
        .ok_or_else(|| EngineError::unauthenticated("request was not authenticated"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(t: &str) -> String {
        let d: [u8; 32] = Sha256::digest(t.as_bytes()).into();
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn tokens_verify_and_reject() {
        let text = format!(
            "# comment\nsha256:{} alice user\n\nsha256:{} ops admin\n",
            hash("tok-a"),
            hash("tok-b")
        );
        let s = TokenStore::parse(&text).unwrap();
        assert_eq!(s.verify("tok-a").unwrap().name, "alice");
        assert_eq!(s.verify("tok-b").unwrap().role, Role::Admin);
        assert!(s.verify("tok-c").is_none());
        assert!(s.verify("").is_none());
        for bad in [
            "",
            "sha256:00 alice user",
            &format!("{} alice user", hash("x")),
            &format!("sha256:{} uid:0 admin", hash("x")),
            &format!("sha256:{} alice root", hash("x")),
            &format!("sha256:{0} a user\nsha256:{0} b user", hash("x")),
        ] {
            assert!(TokenStore::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tcp_needs_credentials() {
        let a = Authenticator {
            tokens: Some(TokenStore::parse(&format!("sha256:{} alice user", hash("t"))).unwrap()),
            insecure_no_auth: false,
        };
        let tcp = Peer::Tcp {
            cert_principal: None,
        };
        assert!(a.authenticate(Some(&tcp), None).is_err());
        assert!(a.authenticate(Some(&tcp), Some(b"Bearer x")).is_err());
        assert!(a.authenticate(Some(&tcp), Some(b"Basic dA==")).is_err());
        assert!(a.authenticate(None, Some(b"Bearer t")).is_err());
        assert_eq!(
            a.authenticate(Some(&tcp), Some(b"Bearer t")).unwrap().name,
            "alice"
        );
        let cert = Peer::Tcp {
            cert_principal: Some("bob".into()),
        };
        assert_eq!(a.authenticate(Some(&cert), None).unwrap().name, "bob");
        // A wrong token is refused even with a good certificate.
        assert!(a.authenticate(Some(&cert), Some(b"Bearer x")).is_err());
    }
}
