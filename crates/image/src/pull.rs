//! Fetch one image over the OCI distribution API with `oci-client` (anonymous, Bearer
//! token flow, or basic credentials from the server's configuration) and verify every
//! byte against its digest before anything is unpacked.
//!
//! `oci-client` already checks digests; we hash again ourselves (manifest, config and
//! every layer as written to disk) so the guarantee does not depend on a dependency's
//! internals, and so a mismatch always surfaces as `image_digest_mismatch`.

use crate::manifest::{self, MAX_MANIFEST};
use crate::{ImageError, PinnedRef, RegistryConfig};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// What [`pull`] downloaded and verified.
#[derive(Debug)]
pub struct Pulled {
    pub manifest_digest: String,
    pub config_digest: String,
    pub layers: Vec<String>,
    /// Verified layer blobs, in application order.
    pub layer_files: Vec<PathBuf>,
    pub size: u64,
    pub env: Vec<String>,
    pub working_dir: String,
    pub cmd: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    #[serde(default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    platform: Option<Platform>,
}

#[derive(serde::Deserialize)]
struct Platform {
    architecture: String,
    os: String,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    #[serde(default)]
    media_type: String,
    #[serde(default)]
    manifests: Vec<Descriptor>,
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

#[derive(serde::Deserialize, Default)]
struct ConfigFile {
    #[serde(default)]
    architecture: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    config: Option<RunConfig>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RunConfig {
    #[serde(default)]
    env: Option<Vec<String>>,
    #[serde(default)]
    working_dir: Option<String>,
    #[serde(default)]
    cmd: Option<Vec<String>>,
}

pub(crate) fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sha256_file(path: &Path) -> Result<String, ImageError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| ImageError::Io(format!("open blob: {e}")))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| ImageError::Io(format!("read blob: {e}")))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!(
        "sha256:{}",
        h.finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

fn check_digest(what: &str, expected: &str, actual: &str) -> Result<(), ImageError> {
    if expected != actual {
        return Err(ImageError::DigestMismatch(format!(
            "{what}: expected {expected}, registry served {actual}"
        )));
    }
    Ok(())
}

fn valid_digest(d: &str) -> Result<(), ImageError> {
    match d.strip_prefix("sha256:") {
        Some(h)
            if h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) =>
        {
            Ok(())
        }
        _ => Err(ImageError::Unsupported(format!(
            "descriptor digest {d:?} is not sha256"
        ))),
    }
}

/// Map client errors onto our stable codes.
pub(crate) fn map_err(what: &str, e: OciDistributionError) -> ImageError {
    use OciDistributionError as E;
    match e {
        E::DigestError(DigestError::VerificationError { expected, actual }) => {
            ImageError::DigestMismatch(format!(
                "{what}: expected {expected}, registry served {actual}"
            ))
        }
        E::DigestError(other) => ImageError::DigestMismatch(format!("{what}: {other}")),
        E::ImageManifestNotFoundError(m) => ImageError::NotInRegistry(format!("{what}: {m}")),
        E::RegistryError { envelope, url } => {
            let codes: Vec<String> = envelope
                .errors
                .iter()
                .map(|e| format!("{:?}", e.code))
                .collect();
            let text = format!("{what}: {url}: {}", codes.join(","));
            if codes
                .iter()
                .any(|c| c.contains("Unknown") || c.contains("NameUnknown"))
            {
                ImageError::NotInRegistry(text)
            } else if codes
                .iter()
                .any(|c| c.contains("Unauthorized") || c.contains("Denied"))
            {
                ImageError::Unauthorized(text)
            } else {
                ImageError::RegistryUnavailable(text)
            }
        }
        E::ServerError { code: 404, url, .. } => {
            ImageError::NotInRegistry(format!("{what}: {url}"))
        }
        E::UnauthorizedError { url }
        | E::ServerError {
            code: 401 | 403,
            url,
            ..
        } => ImageError::Unauthorized(format!("{what}: {url}")),
        E::AuthenticationFailure(m) => ImageError::Unauthorized(format!("{what}: {m}")),
        E::IoError(e) => ImageError::Io(format!("{what}: {e}")),
        other => ImageError::RegistryUnavailable(format!("{what}: {other}")),
    }
}

/// Install the process-wide TLS crypto provider once (rustls panics without one).
pub(crate) fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Every manifest kind a reference may name (an index is resolved to linux/amd64 later).
pub(crate) const ACCEPTED: [&str; 4] = [OCI_MANIFEST, DOCKER_MANIFEST, OCI_INDEX, DOCKER_LIST];

/// A registry client with the server's transport settings (plain HTTP only for the
/// configured insecure registries).
pub(crate) fn client(cfg: &RegistryConfig) -> Client {
    ensure_crypto_provider();
    Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(cfg.insecure.clone()),
        // We resolve indexes ourselves (below) so the chosen manifest's digest is verified.
        platform_resolver: None,
        // A registry that stops answering fails the pull instead of holding it forever.
        connect_timeout: Some(manifest::CONNECT_TIMEOUT),
        read_timeout: Some(manifest::READ_TIMEOUT),
        ..Default::default()
    })
}

/// The server's credentials for `registry`, else anonymous.
pub(crate) fn auth(cfg: &RegistryConfig, registry: &str) -> RegistryAuth {
    match cfg.credentials.get(registry) {
        Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
        None => RegistryAuth::Anonymous,
    }
}

/// Pull `pinned` into `blobs/`: manifest (resolving an index to linux/amd64), config and
/// layers, each verified.
/// Downloaded bytes (config + layers, compressed) are capped at `max_bytes`: a layer whose
/// declared size exceeds what is left is refused before it is fetched, and a blob that
/// streams more than that is cut off while it is written (`image_too_large`).
pub async fn pull(
    cfg: &RegistryConfig,
    pinned: &PinnedRef,
    blobs: &Path,
    max_bytes: u64,
) -> Result<Pulled, ImageError> {
    let client = client(cfg);
    let accepted = ACCEPTED;
    let reference = Reference::with_digest(
        pinned.registry.clone(),
        pinned.repository.clone(),
        pinned.digest.clone(),
    );
    let auth = crate::token::authorize(cfg, &reference, auth(cfg, &pinned.registry)).await?;
    let body = manifest::fetch(cfg, &client, &reference, &auth, &accepted, "manifest").await?;
    check_digest(
        "manifest",
        &pinned.digest,
        &format!("sha256:{}", sha256_hex(&body)),
    )?;
    let mut manifest = parse_manifest(&body)?;
    let mut manifest_digest = pinned.digest.clone();
    if manifest.media_type == OCI_INDEX
        || manifest.media_type == DOCKER_LIST
        || !manifest.manifests.is_empty()
    {
        let chosen = manifest
            .manifests
            .iter()
            .find(|m| {
                m.platform
                    .as_ref()
                    .is_some_and(|p| p.os == "linux" && p.architecture == "amd64")
            })
            .ok_or_else(|| {
                ImageError::Unsupported("the image index has no linux/amd64 manifest".into())
            })?;
        valid_digest(&chosen.digest)?;
        manifest_digest = chosen.digest.clone();
        let r = Reference::with_digest(
            pinned.registry.clone(),
            pinned.repository.clone(),
            manifest_digest.clone(),
        );
        let body = manifest::fetch(
            cfg,
            &client,
            &r,
            &auth,
            &[OCI_MANIFEST, DOCKER_MANIFEST],
            "platform manifest",
        )
        .await?;
        check_digest(
            "platform manifest",
            &manifest_digest,
            &format!("sha256:{}", sha256_hex(&body)),
        )?;
        manifest = parse_manifest(&body)?;
    }
    let config = manifest
        .config
        .ok_or_else(|| ImageError::Unsupported("manifest has no config".into()))?;
    valid_digest(&config.digest)?;
    let config_path = blobs.join("config");
    fetch_blob(
        &client,
        &reference,
        &config.digest,
        &config_path,
        MAX_MANIFEST as u64,
    )
    .await?;
    let config_bytes =
        std::fs::read(&config_path).map_err(|e| ImageError::Io(format!("read config: {e}")))?;
    let cf: ConfigFile = serde_json::from_slice(&config_bytes)
        .map_err(|e| ImageError::Unsupported(format!("image config: {e}")))?;
    if (!cf.os.is_empty() && cf.os != "linux")
        || (!cf.architecture.is_empty() && cf.architecture != "amd64")
    {
        return Err(ImageError::Unsupported(format!(
            "image is {}/{}, this host runs linux/amd64",
            cf.os, cf.architecture
        )));
    }
    let mut layer_files = Vec::new();
    let mut layers = Vec::new();
    let mut size = 0u64;
    let declared: u64 = manifest
        .layers
        .iter()
        .fold(0u64, |a, l| a.saturating_add(l.size));
    if declared > max_bytes {
        return Err(ImageError::TooLarge(format!(
            "its layers are {declared} bytes compressed, over the limit of {max_bytes} bytes"
        )));
    }
    for (i, l) in manifest.layers.iter().enumerate() {
        valid_digest(&l.digest)?;
        let known = l.media_type.is_empty()
            || l.media_type.contains("tar")
            || l.media_type.contains("rootfs.diff");
        if !known || l.media_type.contains("nondistributable") && l.media_type.contains("foreign") {
            return Err(ImageError::Unsupported(format!(
                "layer media type {:?}",
                l.media_type
            )));
        }
        let path = blobs.join(format!("layer-{i}"));
        fetch_blob(&client, &reference, &l.digest, &path, max_bytes - size).await?;
        size += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(l.size);
        layers.push(l.digest.clone());
        layer_files.push(path);
    }
    let run = cf.config.unwrap_or_default();
    Ok(Pulled {
        manifest_digest,
        config_digest: config.digest,
        layers,
        layer_files,
        size,
        env: run.env.unwrap_or_default(),
        working_dir: run.working_dir.unwrap_or_default(),
        cmd: run.cmd.unwrap_or_default(),
    })
}

fn parse_manifest(body: &[u8]) -> Result<Manifest, ImageError> {
    if body.len() > MAX_MANIFEST {
        return Err(ImageError::Unsupported("manifest larger than 4 MiB".into()));
    }
    serde_json::from_slice(body).map_err(|e| ImageError::Unsupported(format!("manifest: {e}")))
}

/// Refuse a body that is not a manifest or index we could pull (size, JSON shape).
pub(crate) fn check_manifest(body: &[u8]) -> Result<(), ImageError> {
    parse_manifest(body).map(drop)
}

/// Download one blob to `path` and verify its digest; on mismatch the file is removed.
async fn fetch_blob(
    client: &Client,
    image: &Reference,
    digest: &str,
    path: &Path,
    max_bytes: u64,
) -> Result<(), ImageError> {
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|e| ImageError::Io(format!("create {}: {e}", path.display())))?;
    let exceeded = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let out = Capped {
        inner: file,
        left: max_bytes,
        exceeded: exceeded.clone(),
    };
    let res = client.pull_blob(image, digest, out).await;
    let checked = match res {
        _ if exceeded.load(std::sync::atomic::Ordering::Relaxed) => Err(ImageError::TooLarge(
            format!("blob {digest} is larger than the {max_bytes} bytes left for this image"),
        )),
        Ok(()) => {
            let p = path.to_path_buf();
            let actual = tokio::task::spawn_blocking(move || sha256_file(&p))
                .await
                .map_err(|e| ImageError::Io(format!("hash task: {e}")))??;
            check_digest(&format!("blob {digest}"), digest, &actual)
        }
        Err(e) => Err(map_err(&format!("blob {digest}"), e)),
    };
    if checked.is_err() {
        let _ = std::fs::remove_file(path);
    }
    checked
}

/// A file writer that refuses to grow past `left` bytes (the registry decides how much it
/// sends; we decide how much we store).
struct Capped {
    inner: tokio::fs::File,
    left: u64,
    exceeded: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if buf.len() as u64 > this.left {
            this.exceeded
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return std::task::Poll::Ready(Err(std::io::Error::other("blob over the size cap")));
        }
        let r = std::pin::Pin::new(&mut this.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &r {
            this.left -= *n as u64;
        }
        r
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
