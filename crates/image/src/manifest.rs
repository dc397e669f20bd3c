//! Manifest downloads with a hard size bound and transport timeouts.
//!
//! `oci-client` reads a manifest response into memory whole before anything can look at
//! its size, so a hostile or broken registry could stream gigabytes into the server (rule 4:
//! nothing outside may consume a host resource beyond a bound). We therefore fetch
//! manifests ourselves: the same URL, `Accept` list and credentials `oci-client` would use
//! (its token flow is still the one that obtains the token), but the body is read in chunks
//! and cut off at [`MAX_MANIFEST`] (`image_too_large`). Digests are checked by the callers.
//!
//! Credentials only ever go to the registry host: the URL is built from the reference's
//! registry, and `reqwest` drops `Authorization` on a redirect to another origin.

use crate::pull::map_err;
use crate::{ImageError, RegistryConfig};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use std::time::Duration;

/// Manifests are small (a large index is tens of KiB); anything larger is hostile.
pub(crate) const MAX_MANIFEST: usize = 4 << 20;
/// How long a registry may take to accept a connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a registry may stay silent in the middle of a response.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the whole manifest fetch may take (token flow included): the read timeout
/// bounds silence, this bounds a registry that trickles a byte at a time.
pub(crate) const TOTAL_TIMEOUT: Duration = Duration::from_secs(120);

/// `GET /v2/<repo>/manifests/<tag|digest>` from `reference`'s registry, bounded in size
/// ([`MAX_MANIFEST`]) and in time ([`TOTAL_TIMEOUT`]).
pub(crate) async fn fetch(
    cfg: &RegistryConfig,
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
    accepted: &[&str],
    what: &str,
) -> Result<Vec<u8>, ImageError> {
    tokio::time::timeout(
        TOTAL_TIMEOUT,
        fetch_unbounded_in_time(cfg, client, reference, auth, accepted, what),
    )
    .await
    .map_err(|_| {
        ImageError::RegistryUnavailable(format!(
            "{what}: the registry did not finish within {} s",
            TOTAL_TIMEOUT.as_secs()
        ))
    })?
}

async fn fetch_unbounded_in_time(
    cfg: &RegistryConfig,
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
    accepted: &[&str],
    what: &str,
) -> Result<Vec<u8>, ImageError> {
    // The token flow ran already (bounded, crate::token); hand its result to oci-client
    // too, so its blob requests carry it without running a flow of their own.
    prime(client, reference, auth).await?;
    let registry = reference.resolve_registry();
    let scheme = scheme(cfg, registry);
    let target = reference
        .digest()
        .or(reference.tag())
        .ok_or_else(|| ImageError::InvalidReference(format!("{what}: no tag or digest")))?;
    let url = format!(
        "{scheme}://{registry}/v2/{}/manifests/{target}",
        reference.repository()
    );
    let http = http_client(what)?;
    let mut req = http.get(&url).header("Accept", accepted.join(", "));
    req = match auth {
        RegistryAuth::Bearer(t) => req.bearer_auth(t),
        RegistryAuth::Basic(user, pass) => req.basic_auth(user, Some(pass)),
        RegistryAuth::Anonymous => req,
    };
    let mut resp = req
        .send()
        .await
        .map_err(|e| ImageError::RegistryUnavailable(format!("{what}: {url}: {e}")))?;
    let status = resp.status().as_u16();
    match status {
        200..=299 => {}
        404 => return Err(ImageError::NotInRegistry(format!("{what}: {url}"))),
        401 | 403 => return Err(ImageError::Unauthorized(format!("{what}: {url}"))),
        _ => {
            return Err(ImageError::RegistryUnavailable(format!(
                "{what}: {url}: HTTP {status}"
            )))
        }
    }
    if resp
        .content_length()
        .is_some_and(|n| n > MAX_MANIFEST as u64)
    {
        return Err(too_large(what));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| ImageError::RegistryUnavailable(format!("{what}: {url}: {e}")))?
    {
        if body.len() + chunk.len() > MAX_MANIFEST {
            return Err(too_large(what));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// `http` for the configured insecure registries (loopback test registries), else `https`.
pub(crate) fn scheme(cfg: &RegistryConfig, registry: &str) -> &'static str {
    if cfg.insecure.iter().any(|h| h == registry) {
        "http"
    } else {
        "https"
    }
}

/// A registry HTTP client with the transport bounds above (connect, silence, at most 5
/// redirects; reqwest drops `Authorization` on a redirect to another origin).
pub(crate) fn http_client(what: &str) -> Result<reqwest::Client, ImageError> {
    crate::pull::ensure_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(READ_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .build()
        .map_err(|e| ImageError::RegistryUnavailable(format!("{what}: transport: {e}")))
}

/// Give `client` the credentials for `reference`'s registry, as [`crate::token::authorize`]
/// settled them: a bearer token is cached for the repository (no network: `oci-client`
/// takes a `Bearer` as it is); basic credentials are stored for every request; anonymous
/// stores nothing, so `oci-client` never runs a token flow of its own.
pub(crate) async fn prime(
    client: &Client,
    reference: &Reference,
    auth: &RegistryAuth,
) -> Result<(), ImageError> {
    match auth {
        RegistryAuth::Bearer(_) => client
            .auth(reference, auth, RegistryOperation::Pull)
            .await
            .map(|_| ())
            .map_err(|e| map_err("token", e)),
        RegistryAuth::Basic(..) => {
            client
                .store_auth_if_needed(reference.resolve_registry(), auth)
                .await;
            Ok(())
        }
        RegistryAuth::Anonymous => Ok(()),
    }
}

fn too_large(what: &str) -> ImageError {
    ImageError::TooLarge(format!(
        "{what}: the registry sent more than {MAX_MANIFEST} bytes (manifests are small)"
    ))
}

#[cfg(test)]
mod tests;
