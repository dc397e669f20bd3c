//! Exposure URL tokens: `<expires_unix>.<base64url(HMAC-SHA256)>`, the MAC over the
//! exposure id and the expiry with a server key kept in the state directory
//! (`inbound.key`, mode 0600, made on first start). A token names one exposure only (its id
//! is in the URL path and in the MAC) and stops working when it expires or when the
//! exposure is removed (`sandbox unexpose`, the sandbox ending): revocation is the
//! exposure's absence, so nothing about a token is stored. The comparison is constant-time
//! (`ring::hmac::verify`).

use base64::Engine as _;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The MAC key (32 random bytes).
pub struct TokenKey(ring::hmac::Key);

/// What a presented token says once its MAC checks out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Signed for this exposure and not expired (expiry in unix seconds).
    Valid { expires_at: i64 },
    /// Signed for this exposure, but past its expiry.
    Expired { expires_at: i64 },
    /// Malformed, or not signed by this server for this exposure.
    Forged,
}

const DOMAIN: &[u8] = b"cleanroom-exposure-v1\n";

impl TokenKey {
    /// The key in `dir/inbound.key`, made (0600, created exclusively) when missing.
    pub fn load_or_create(dir: &Path) -> std::io::Result<TokenKey> {
        let path = dir.join("inbound.key");
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut b = [0u8; 32];
                getrandom::getrandom(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&path)?;
                f.write_all(&b)?;
                f.sync_all()?;
                b.to_vec()
            }
            Err(e) => return Err(e),
        };
        if bytes.len() != 32 {
            return Err(std::io::Error::other(format!(
                "{}: expected 32 bytes, found {}",
                path.display(),
                bytes.len()
            )));
        }
        Ok(TokenKey::from_bytes(&bytes))
    }

    pub fn from_bytes(bytes: &[u8]) -> TokenKey {
        TokenKey(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, bytes))
    }

    fn message(exposure_id: &str, expires_at: i64) -> Vec<u8> {
        let mut m = DOMAIN.to_vec();
        m.extend_from_slice(exposure_id.as_bytes());
        m.push(b'\n');
        m.extend_from_slice(expires_at.to_string().as_bytes());
        m
    }

    /// The token of `exposure_id` expiring at `expires_at` (unix seconds).
    pub fn sign(&self, exposure_id: &str, expires_at: i64) -> String {
        let tag = ring::hmac::sign(&self.0, &Self::message(exposure_id, expires_at));
        format!(
            "{expires_at}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// Judge `token` for `exposure_id` at `now` (unix seconds).
    pub fn verify(&self, exposure_id: &str, token: &str, now: i64) -> Verdict {
        let Some((exp, mac)) = token.split_once('.') else {
            return Verdict::Forged;
        };
        // Digits only: `+5`, ` 5` or `05` would sign as another text than they parse to.
        if exp.is_empty() || exp.len() > 12 || !exp.bytes().all(|b| b.is_ascii_digit()) {
            return Verdict::Forged;
        }
        let Ok(expires_at) = exp.parse::<i64>() else {
            return Verdict::Forged;
        };
        if expires_at.to_string() != exp {
            return Verdict::Forged;
        }
        let Ok(mac) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(mac) else {
            return Verdict::Forged;
        };
        if ring::hmac::verify(&self.0, &Self::message(exposure_id, expires_at), &mac).is_err() {
            return Verdict::Forged;
        }
        if now >= expires_at {
            Verdict::Expired { expires_at }
        } else {
            Verdict::Valid { expires_at }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_for_their_exposure_and_until_expiry() {
        let k = TokenKey::from_bytes(&[7; 32]);
        let t = k.sign("exp_a", 1000);
        assert_eq!(
            k.verify("exp_a", &t, 999),
            Verdict::Valid { expires_at: 1000 }
        );
        assert_eq!(
            k.verify("exp_a", &t, 1000),
            Verdict::Expired { expires_at: 1000 }
        );
        assert_eq!(k.verify("exp_b", &t, 999), Verdict::Forged);
        // Another key, a changed expiry, garbage: forged.
        let other = TokenKey::from_bytes(&[8; 32]);
        assert_eq!(other.verify("exp_a", &t, 999), Verdict::Forged);
        let (_, mac) = t.split_once('.').unwrap();
        assert_eq!(
            k.verify("exp_a", &format!("2000.{mac}"), 999),
            Verdict::Forged
        );
        assert_eq!(
            k.verify("exp_a", &format!("01000.{mac}"), 999),
            Verdict::Forged
        );
        for junk in ["", ".", "1000", "1000.", "x.y", "-1.abc"] {
            assert_eq!(k.verify("exp_a", junk, 0), Verdict::Forged, "{junk}");
        }
    }

    #[test]
    fn the_key_is_made_once_and_kept_private() {
        let d = tempfile::tempdir().unwrap();
        let a = TokenKey::load_or_create(d.path()).unwrap().sign("e", 5);
        let b = TokenKey::load_or_create(d.path()).unwrap().sign("e", 5);
        assert_eq!(a, b);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.path().join("inbound.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
