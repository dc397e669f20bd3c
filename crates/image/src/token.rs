//! The registry's token flow (the distribution spec's `WWW-Authenticate: Bearer realm=…`),
//! bounded in size and time.
//!
//! `oci-client` runs this flow itself, reading the token server's answer whole into memory:
//! a registry — or the token server its challenge names, any host it likes — could stream
//! gigabytes into the server (rule 4). So we run the flow ourselves, reading at most
//! [`MAX_TOKEN`] bytes, and hand `oci-client` the result as [`RegistryAuth::Bearer`]: with
//! a bearer token it never runs its own flow. Without a bearer challenge nothing changes
//! (anonymous, or the configured basic credentials on every request).
//!
//! The configured credentials go to the token server the registry names (that is how the
//! flow works: the registry delegates authentication to it); the token then goes only to
//! the registry.

use crate::manifest::TOTAL_TIMEOUT;
use crate::{ImageError, RegistryConfig};
use oci_client::secrets::RegistryAuth;
use oci_client::Reference;

/// A token answer is a small JSON object (a JWT of a few KiB at most).
pub(crate) const MAX_TOKEN: usize = 64 << 10;

/// Run the token flow for pulling `reference` and return how to authenticate: the bearer
/// token when the registry asks for one, else `auth` unchanged.
pub(crate) async fn authorize(
    cfg: &RegistryConfig,
    reference: &Reference,
    auth: RegistryAuth,
) -> Result<RegistryAuth, ImageError> {
    tokio::time::timeout(
        TOTAL_TIMEOUT,
        authorize_unbounded_in_time(cfg, reference, auth),
    )
    .await
    .map_err(|_| {
        ImageError::RegistryUnavailable(format!(
            "token: the registry did not finish within {} s",
            TOTAL_TIMEOUT.as_secs()
        ))
    })?
}

async fn authorize_unbounded_in_time(
    cfg: &RegistryConfig,
    reference: &Reference,
    auth: RegistryAuth,
) -> Result<RegistryAuth, ImageError> {
    if let RegistryAuth::Bearer(_) = auth {
        return Ok(auth);
    }
    let registry = reference.resolve_registry();
    let scheme = crate::manifest::scheme(cfg, registry);
    let http = crate::manifest::http_client("token")?;
    let probe = format!("{scheme}://{registry}/v2/");
    // Only the headers are looked at; the body is dropped unread.
    let resp = http
        .get(&probe)
        .send()
        .await
        .map_err(|e| ImageError::RegistryUnavailable(format!("token: {probe}: {e}")))?;
    let Some(challenge) = resp
        .headers()
        .get_all(reqwest::header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(bearer_challenge)
    else {
        return Ok(auth);
    };
    // A registry reached over TLS may not send the credentials to a cleartext realm.
    if scheme == "https" && !challenge.realm.starts_with("https://") {
        return Err(ImageError::Unauthorized(format!(
            "token: the registry names a realm over plain HTTP ({}); refused",
            challenge.realm
        )));
    }
    let scope = format!("repository:{}:pull", reference.repository());
    let mut query = vec![("scope", scope.as_str())];
    if let Some(s) = &challenge.service {
        query.push(("service", s.as_str()));
    }
    let mut req = http.get(&challenge.realm).query(&query);
    if let RegistryAuth::Basic(user, pass) = &auth {
        req = req.basic_auth(user, Some(pass));
    }
    let mut resp = req
        .send()
        .await
        .map_err(|e| ImageError::RegistryUnavailable(format!("token: {}: {e}", challenge.realm)))?;
    let status = resp.status().as_u16();
    match status {
        200..=299 => {}
        401 | 403 => {
            return Err(ImageError::Unauthorized(format!(
                "token: {} refused (HTTP {status})",
                challenge.realm
            )))
        }
        _ => {
            return Err(ImageError::RegistryUnavailable(format!(
                "token: {}: HTTP {status}",
                challenge.realm
            )))
        }
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| ImageError::RegistryUnavailable(format!("token: {}: {e}", challenge.realm)))?
    {
        if body.len() + chunk.len() > MAX_TOKEN {
            return Err(ImageError::TooLarge(format!(
                "token: {} sent more than {MAX_TOKEN} bytes (a token is small)",
                challenge.realm
            )));
        }
        body.extend_from_slice(&chunk);
    }
    parse_token(&body).map(RegistryAuth::Bearer)
}

/// A `Bearer` challenge's realm (required) and service.
#[derive(Debug, PartialEq, Eq)]
struct Challenge {
    realm: String,
    service: Option<String>,
}

fn bearer_challenge(header: &str) -> Option<Challenge> {
    http_auth::ChallengeParser::new(header)
        .filter_map(Result::ok)
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        .and_then(|c| {
            let param = |name: &str| {
                c.params
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.to_unescaped())
            };
            let realm = param("realm")?;
            // Only a web URL is followed (no file:, no data:).
            let ok = realm.starts_with("https://") || realm.starts_with("http://");
            ok.then(|| Challenge {
                realm,
                service: param("service"),
            })
        })
}

/// The token answer: `token` (the spec's name) or `access_token` (OAuth's), non-empty.
fn parse_token(body: &[u8]) -> Result<String, ImageError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        token: Option<String>,
        access_token: Option<String>,
    }
    let bad = |m: String| ImageError::Unauthorized(format!("token: {m}"));
    let a: Answer =
        serde_json::from_slice(body).map_err(|e| bad(format!("not a token answer: {e}")))?;
    a.token
        .filter(|t| !t.is_empty())
        .or(a.access_token.filter(|t| !t.is_empty()))
        .ok_or_else(|| bad("the answer holds no token".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_like_registries_send_them() {
        let c = bearer_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="x""#,
        )
        .expect("a bearer challenge");
        assert_eq!(c.realm, "https://auth.example/token");
        assert_eq!(c.service.as_deref(), Some("registry.example"));
        assert_eq!(bearer_challenge(r#"Basic realm="r""#), None);
        assert_eq!(bearer_challenge(r#"Bearer service="s""#), None, "no realm");
        assert_eq!(
            bearer_challenge(r#"Bearer realm="file:///etc/passwd""#),
            None,
            "only web URLs"
        );
    }

    #[test]
    fn token_answers_in_both_spellings_are_accepted_and_empty_ones_refused() {
        assert_eq!(parse_token(br#"{"token":"a"}"#).unwrap(), "a");
        assert_eq!(parse_token(br#"{"access_token":"b"}"#).unwrap(), "b");
        assert_eq!(
            parse_token(br#"{"token":"","access_token":"c"}"#).unwrap(),
            "c"
        );
        assert!(parse_token(br#"{"token":""}"#).is_err());
        assert!(parse_token(b"not json").is_err());
    }
}
