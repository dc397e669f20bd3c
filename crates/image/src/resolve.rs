//! Tag resolution: `host[:port]/repository:TAG` -> the digest the registry serves for it
//! right now, so a user can pin it (`cleanroom image pull REF --pin`).
//!
//! This is the only place a tag is ever looked up. Sandboxes, pools and `PullImage` stay
//! digest-only: a tag is mutable, so it is resolved once, on request, and what is recorded
//! (printed, written into `cleanroom.yaml`) is the digest. The digest is computed here
//! over the manifest bytes the registry served (never taken from a response header), so it
//! is exactly what a later pull by that digest verifies against.

use crate::pull::{auth, check_manifest, client, sha256_hex, ACCEPTED};
use crate::{split_name, ImageError, PinnedRef, RegistryConfig};
use oci_client::Reference;

/// A parsed tagged reference `host[:port]/repository:TAG`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRef {
    pub registry: String,
    pub repository: String,
    pub tag: String,
}

/// What a reference names: already a digest, or a tag to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyRef {
    Pinned(PinnedRef),
    Tagged(TagRef),
}

impl AnyRef {
    /// Parse a pinned or tagged reference; a bare name (no tag, no digest) is refused:
    /// an implicit `latest` would be a default that means different things over time.
    pub fn parse(s: &str) -> Result<AnyRef, ImageError> {
        let s = s.trim();
        if s.contains('@') {
            return PinnedRef::parse(s).map(AnyRef::Pinned);
        }
        let (name, tag) = match s.rsplit_once(':') {
            Some((n, t)) if !t.contains('/') => (n, t),
            _ => {
                return Err(ImageError::InvalidReference(format!(
                    "image {s:?} names neither a tag nor a digest (host[:port]/repository:TAG or host[:port]/repository@sha256:<hex>)"
                )))
            }
        };
        let tag_ok = tag.len() <= 128
            && tag
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !tag_ok {
            return Err(ImageError::InvalidReference(format!(
                "image {s:?}: tag {tag:?} is not [A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}"
            )));
        }
        let (registry, repository) = split_name(name, s)?;
        Ok(AnyRef::Tagged(TagRef {
            registry,
            repository,
            tag: tag.to_string(),
        }))
    }
}

impl std::fmt::Display for TagRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}:{}", self.registry, self.repository, self.tag)
    }
}

/// A resolved reference: what to record, and the digest alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// `host/repo:TAG@sha256:<hex>` for a tag (the tag kept for readers; pulls use only
    /// the digest), or the canonical pinned reference when one was given.
    pub reference: String,
    pub digest: String,
}

/// Resolve `reference` against its registry (no network for a pinned one).
pub async fn resolve(cfg: &RegistryConfig, reference: &str) -> Result<Resolved, ImageError> {
    let tagged = match AnyRef::parse(reference)? {
        AnyRef::Pinned(p) => {
            return Ok(Resolved {
                reference: p.to_string(),
                digest: p.digest,
            })
        }
        AnyRef::Tagged(t) => t,
    };
    let r = Reference::with_tag(
        tagged.registry.clone(),
        tagged.repository.clone(),
        tagged.tag.clone(),
    );
    let auth = crate::token::authorize(cfg, &r, auth(cfg, &tagged.registry)).await?;
    let body = crate::manifest::fetch(cfg, &client(cfg), &r, &auth, &ACCEPTED, "manifest")
        .await
        .map_err(|e| match e {
            ImageError::NotInRegistry(m) => ImageError::NotInRegistry(format!(
                "tag {:?} of {}/{} does not exist ({m})",
                tagged.tag, tagged.registry, tagged.repository
            )),
            other => other,
        })?;
    check_manifest(&body)?;
    let digest = format!("sha256:{}", sha256_hex(&body));
    Ok(Resolved {
        reference: format!("{tagged}@{digest}"),
        digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_and_refuses_bare_names() {
        let t = AnyRef::parse("127.0.0.1:5000/lib/python:3.12").unwrap();
        assert_eq!(
            t,
            AnyRef::Tagged(TagRef {
                registry: "127.0.0.1:5000".into(),
                repository: "lib/python".into(),
                tag: "3.12".into()
            })
        );
        let hex = "b".repeat(64);
        assert!(matches!(
            AnyRef::parse(&format!("reg.example/app@sha256:{hex}")).unwrap(),
            AnyRef::Pinned(_)
        ));
        for bad in [
            "python:3.12",          // no registry: refused, never an implicit default
            "reg.example/app",      // no tag: no implicit latest
            "127.0.0.1:5000/app",   // the colon is the port
            "reg.example/app:.bad", // tag grammar
            "reg.example/app:a b",  // tag grammar
            "reg.example/App:1",    // repository grammar
            "reg.example/app:1@sha256:abc",
        ] {
            let e = AnyRef::parse(bad).unwrap_err();
            assert_eq!(e.code(), "policy_invalid", "{bad}");
        }
        let long = format!("reg.example/app:{}", "a".repeat(129));
        assert!(AnyRef::parse(&long).is_err());
    }

    #[tokio::test]
    async fn pinned_refs_resolve_without_network() {
        let hex = "c".repeat(64);
        let r = resolve(
            &RegistryConfig::default(),
            &format!("reg.invalid/app:v1@sha256:{hex}"),
        )
        .await
        .unwrap();
        assert_eq!(r.reference, format!("reg.invalid/app@sha256:{hex}"));
        assert_eq!(r.digest, format!("sha256:{hex}"));
    }
}
