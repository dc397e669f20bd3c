//! The grammar of a digest-pinned OCI reference, `name@sha256:<64 lowercase hex>`: the one
//! parser that both the policy compiler (`sandbox.image.ref`) and the image store
//! (`PinnedRef::parse`, which adds the registry and repository rules) use.

/// Why a string is not digest-pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinError {
    /// There is no `@sha256:` part (a tag alone is mutable).
    NotPinned,
    /// The digest is not 64 lowercase hex digits.
    BadDigest,
}

/// Split `name@sha256:<hex>` into `(name, hex)`. The name is returned as written (it may
/// be empty or carry a tag); callers apply their own rules to it.
pub fn split_pinned(reference: &str) -> Result<(&str, &str), PinError> {
    let (name, hex) = reference
        .rsplit_once("@sha256:")
        .ok_or(PinError::NotPinned)?;
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(PinError::BadDigest);
    }
    Ok((name, hex))
}

/// A digest-pinned reference: `name[:tag]@sha256:<64 hex>` with a non-empty name.
pub fn is_digest_pinned(reference: &str) -> bool {
    matches!(split_pinned(reference), Ok((name, _)) if !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_references() {
        let hex = "0123456789abcdef".repeat(4);
        assert_eq!(
            split_pinned(&format!("r.test/a:1@sha256:{hex}")),
            Ok(("r.test/a:1", hex.as_str()))
        );
        assert!(is_digest_pinned(&format!("alpine@sha256:{hex}")));
        assert!(!is_digest_pinned(&format!("@sha256:{hex}")));
        assert!(!is_digest_pinned("alpine:latest"));
        assert_eq!(split_pinned("alpine:latest"), Err(PinError::NotPinned));
        for bad in [
            hex.to_uppercase(),
            hex[1..].to_string(),
            format!("{hex}0"),
            format!("{}g", &hex[1..]),
        ] {
            assert_eq!(
                split_pinned(&format!("a@sha256:{bad}")),
                Err(PinError::BadDigest),
                "{bad}"
            );
        }
    }
}
