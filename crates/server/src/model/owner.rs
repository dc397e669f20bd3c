//! Who owns an object: the one typed home of the owner names the store keeps.
//!
//! A sandbox, execution, snapshot or pool row records its owner as text: a principal's
//! name (`uid:<n>` for a unix peer; a token's or certificate's name, which never holds
//! `:`), `pool:<id>` for a pool's unclaimed warm sandbox, or `legacy:` for rows from
//! before ownership existed. The text is parsed once, when a row is decoded, into an
//! [`Owner`]; every ownership comparison is between `Owner`s, so a pool's or a legacy
//! owner can never equal a principal by a string coincidence. [`Owner`]'s `Display` is
//! the stored text, unchanged (old state dirs keep working).
//!
//! A stored owner in no known form is a corrupt row: refused ([`UnknownOwner`], reported
//! as `internal`), never guessed to be someone's.

use std::fmt;

/// An object's owner. The default is [`Owner::Legacy`]: something built without an owner
/// is seen by admins only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    /// A unix peer: `uid:<n>`.
    Uid(u32),
    /// A token's or client certificate's principal (or `anonymous`): a
    /// [`valid_name`], never holding `:`.
    Named(String),
    /// A pool's READY, unclaimed sandbox: `pool:<id>`. No principal — admins included —
    /// sees it until a claim hands it over.
    Pool(String),
    /// Rows from before ownership existed: `legacy:`. Only admins see them.
    #[default]
    Legacy,
}

/// A stored owner in no known form (a corrupt or foreign row).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("stored owner {0:?} is no known owner (uid:<n>, pool:<id>, legacy:, or a principal name)")]
pub struct UnknownOwner(pub String);

/// A principal name of tokens and certificates: `[A-Za-z0-9][A-Za-z0-9._@-]*`, at most
/// 64 bytes (so never `:`, and never a unix principal `uid:<n>`).
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

const LEGACY: &str = "legacy:";

impl Owner {
    /// Parse a stored owner (exactly what [`Owner`]'s `Display` writes).
    pub fn parse(text: &str) -> Result<Owner, UnknownOwner> {
        let unknown = || UnknownOwner(text.to_string());
        if text == LEGACY {
            return Ok(Owner::Legacy);
        }
        if let Some(id) = text.strip_prefix("pool:") {
            return match id.is_empty() || id.contains(':') {
                true => Err(unknown()),
                false => Ok(Owner::Pool(id.to_string())),
            };
        }
        if let Some(n) = text.strip_prefix("uid:") {
            // Digits only: `uid:+1` or `uid:01` would be a second spelling of one owner.
            let canonical = !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n == "0" || !n.starts_with('0'));
            return match n.parse::<u32>() {
                Ok(uid) if canonical => Ok(Owner::Uid(uid)),
                _ => Err(unknown()),
            };
        }
        match valid_name(text) {
            true => Ok(Owner::Named(text.to_string())),
            false => Err(unknown()),
        }
    }

    /// The owner a principal's own objects get, from its name (`uid:<n>` or a
    /// [`valid_name`], as [`crate::identity::auth`] makes them). A name in neither form owns
    /// nothing anybody else could: it is kept as a name, which equals no pool's or
    /// legacy owner.
    pub fn principal(name: &str) -> Owner {
        match Owner::parse(name) {
            Ok(o @ (Owner::Uid(_) | Owner::Named(_))) => o,
            _ => Owner::Named(name.to_string()),
        }
    }

    /// A pool's internal owner.
    pub fn pool(pool_id: &str) -> Owner {
        Owner::Pool(pool_id.to_string())
    }

    /// Is this a pool's internal owner (an unclaimed warm sandbox)?
    pub fn is_pool(&self) -> bool {
        matches!(self, Owner::Pool(_))
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Uid(uid) => write!(f, "uid:{uid}"),
            Owner::Named(name) => f.write_str(name),
            Owner::Pool(id) => write!(f, "pool:{id}"),
            Owner::Legacy => f.write_str(LEGACY),
        }
    }
}

impl rusqlite::types::ToSql for Owner {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(rusqlite::types::ToSqlOutput::from(self.to_string()))
    }
}

impl rusqlite::types::FromSql for Owner {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        Owner::parse(text).map_err(|e| rusqlite::types::FromSqlError::Other(Box::new(e)))
    }
}

/// Tests write owners as their stored text.
#[cfg(test)]
impl From<&str> for Owner {
    fn from(text: &str) -> Owner {
        Owner::parse(text).expect("a test's owner is in a stored form")
    }
}

/// Tests compare owners with their stored text.
#[cfg(test)]
impl PartialEq<&str> for Owner {
    fn eq(&self, text: &&str) -> bool {
        Owner::parse(text).is_ok_and(|o| o == *self)
    }
}

#[cfg(test)]
impl PartialEq<String> for Owner {
    fn eq(&self, text: &String) -> bool {
        *self == text.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stored_form_decodes_and_writes_back_unchanged() {
        for (text, owner) in [
            ("uid:0", Owner::Uid(0)),
            ("uid:1000", Owner::Uid(1000)),
            ("alice", Owner::Named("alice".into())),
            ("bob@example.test", Owner::Named("bob@example.test".into())),
            ("anonymous", Owner::Named("anonymous".into())),
            ("pool:pool_0190abcd", Owner::Pool("pool_0190abcd".into())),
            ("legacy:", Owner::Legacy),
        ] {
            assert_eq!(Owner::parse(text), Ok(owner.clone()), "{text}");
            assert_eq!(owner.to_string(), text);
        }
    }

    #[test]
    fn an_unknown_form_is_refused_not_guessed() {
        for text in [
            "",
            "root:x",
            "legacy:x",
            "pool:",
            "pool:a:b",
            "uid:",
            "uid:x",
            "uid:-1",
            "uid:+1",
            "uid:01",
            "uid:4294967296",
            "a b",
            ":",
            "-lead",
        ] {
            assert_eq!(
                Owner::parse(text),
                Err(UnknownOwner(text.into())),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_principal_is_never_a_pool_or_legacy_owner() {
        assert_eq!(Owner::principal("uid:7"), Owner::Uid(7));
        assert_eq!(Owner::principal("alice"), Owner::Named("alice".into()));
        assert_ne!(Owner::principal("pool:p1"), Owner::pool("p1"));
        assert_ne!(Owner::principal("legacy:"), Owner::Legacy);
        assert!(Owner::pool("p1").is_pool() && !Owner::Legacy.is_pool());
    }
}
