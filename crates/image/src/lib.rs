//! OCI images for Cleanroom sandboxes: pull by digest, verify, unpack safely, cache.
//!
//! Knows nothing of RPC or sandboxes: the server asks an [`ImageStore`] for the root
//! filesystem of a digest-pinned reference and gets a read-only directory back.
//!
//! Cache layout under the store's root (one directory per pinned digest, so the same
//! content is never unpacked twice and a digest always means the same bytes):
//!
//! ```text
//! images/sha256/<hex>/image.json   what was pulled (ref, manifest/config/layer digests)
//! images/sha256/<hex>/rootfs/      the unpacked layers (never written after the fill)
//! images/tmp/<random>/             a fill in progress: blobs + rootfs, renamed into place
//! ```
//!
//! A fill is atomic: everything is downloaded, verified against its digest and unpacked
//! into a temporary directory first, then renamed into place; a failed or interrupted
//! pull leaves nothing in the cache. Pulls of the same digest are serialized per digest.

mod manifest;
pub mod pull;
pub mod resolve;
mod token;
pub mod unpack;

use cleanroom_vocab::reference::{split_pinned, PinError};
use cleanroom_vocab::ErrorCode;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Errors with stable codes (the server maps `code()` into `ErrorDetail`).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("{0}")]
    InvalidReference(String),
    #[error("image {0} is not in the cache")]
    NotFound(String),
    #[error("image not found in the registry: {0}")]
    NotInRegistry(String),
    #[error("digest mismatch: {0}")]
    DigestMismatch(String),
    #[error("registry unavailable: {0}")]
    RegistryUnavailable(String),
    #[error("registry refused the credentials: {0}")]
    Unauthorized(String),
    #[error("unsupported image: {0}")]
    Unsupported(String),
    #[error("unsafe layer content: {0}")]
    UnsafeLayer(String),
    #[error("image too large: {0}")]
    TooLarge(String),
    #[error("image store I/O: {0}")]
    Io(String),
}

impl ImageError {
    /// Stable machine code.
    pub fn code(&self) -> ErrorCode {
        match self {
            ImageError::InvalidReference(_) => ErrorCode::PolicyInvalid,
            ImageError::NotFound(_) | ImageError::NotInRegistry(_) => ErrorCode::ImageNotFound,
            ImageError::DigestMismatch(_) => ErrorCode::ImageDigestMismatch,
            ImageError::RegistryUnavailable(_) => ErrorCode::RegistryUnavailable,
            ImageError::Unauthorized(_) => ErrorCode::RegistryUnauthorized,
            ImageError::Unsupported(_) => ErrorCode::ImageUnsupported,
            ImageError::UnsafeLayer(_) => ErrorCode::ImageLayerUnsafe,
            ImageError::TooLarge(_) => ErrorCode::ImageTooLarge,
            ImageError::Io(_) => ErrorCode::Internal,
        }
    }
}

/// A parsed, digest-pinned reference `registry[:port]/repo[/more]@sha256:<64 hex>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedRef {
    pub registry: String,
    pub repository: String,
    /// `sha256:<hex>`
    pub digest: String,
}

impl PinnedRef {
    /// Parse and require a digest. A registry host is required too: implicit defaults
    /// would make the same string mean different things on different machines.
    pub fn parse(s: &str) -> Result<PinnedRef, ImageError> {
        let s = s.trim();
        // The digest grammar is shared with the policy compiler (`cleanroom_vocab::reference`).
        let (name, hex) = split_pinned(s).map_err(|e| {
            ImageError::InvalidReference(match e {
                PinError::NotPinned => format!(
                    "image {s:?} must be pinned by digest (registry/repo@sha256:<64 hex>); tags are mutable (`cleanroom image pull host/repo:TAG --pin` resolves a tag once and writes the digest into cleanroom.yaml)"
                ),
                PinError::BadDigest => {
                    format!("image {s:?}: digest must be sha256 with 64 lowercase hex digits")
                }
            })
        })?;
        // A tag next to the digest would be ignored by registries: refuse the ambiguity.
        let name = name.rsplit_once(':').map_or(name, |(n, t)| {
            if t.contains('/') {
                name // the colon was a registry port
            } else {
                n
            }
        });
        let (registry, repository) = split_name(name, s)?;
        Ok(PinnedRef {
            registry,
            repository,
            digest: format!("sha256:{hex}"),
        })
    }

    pub fn hex(&self) -> &str {
        self.digest.trim_start_matches("sha256:")
    }
}

/// Split `host[:port]/repository` (no tag, no digest) and check both parts; `whole` is the
/// reference as the caller wrote it, for messages. Shared by pinned and tagged references
/// so both name images by the same rules.
pub(crate) fn split_name(name: &str, whole: &str) -> Result<(String, String), ImageError> {
    let s = whole;
    let (registry, repository) = name.split_once('/').ok_or_else(|| {
        ImageError::InvalidReference(format!(
            "image {s:?} must name its registry (host[:port]/repository@sha256:... or host[:port]/repository:TAG)"
        ))
    })?;
    let registry_ok = registry.contains('.') || registry.contains(':') || registry == "localhost";
    let repo_ok = !repository.is_empty()
        && repository.split('/').all(|c| {
            !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        });
    if !registry_ok || !repo_ok || registry.contains(['@', ' ']) {
        return Err(ImageError::InvalidReference(format!(
            "image {s:?} is not host[:port]/repository@sha256:<hex>"
        )));
    }
    Ok((registry.to_string(), repository.to_string()))
}

impl std::fmt::Display for PinnedRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}@{}", self.registry, self.repository, self.digest)
    }
}

/// What the cache knows about one image (`image.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImageRecord {
    /// The pinned digest (of the manifest or index the reference names): the cache key.
    pub digest: String,
    /// The reference it was first pulled as.
    pub reference: String,
    /// Digest of the linux/amd64 image manifest (equals `digest` unless it was an index).
    pub manifest_digest: String,
    pub config_digest: String,
    pub layers: Vec<String>,
    /// Compressed bytes downloaded (sum of layer sizes).
    pub size: u64,
    /// Seconds since the Unix epoch.
    pub pulled_at: i64,
    /// From the image config: default environment, working dir, command.
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub working_dir: String,
    #[serde(default)]
    pub cmd: Vec<String>,
    /// Decompressed bytes its layers unpacked to (what the image costs the cache).
    #[serde(default)]
    pub unpacked_size: u64,
}

/// Size caps of the cache (`serve --image-max-mb`, `--image-max-entries`,
/// `--image-cache-max-mb`). Layers are hostile: a few KiB of gzip can unpack to many GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Bytes one image may unpack to (all layers' decompressed tar streams together);
    /// also caps its compressed download.
    pub max_image_bytes: u64,
    /// Tar entries one image may have (all layers together).
    pub max_entries: u64,
    /// Bytes of all cached images together (their recorded unpacked sizes) plus fills
    /// in progress.
    pub max_cache_bytes: u64,
}

impl Default for ImageLimits {
    fn default() -> Self {
        ImageLimits {
            max_image_bytes: 8 << 30,
            max_entries: 1_000_000,
            max_cache_bytes: 32 << 30,
        }
    }
}

/// Credentials for one registry host (server-side configuration only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// How the server reaches registries.
#[derive(Debug, Clone, Default)]
pub struct RegistryConfig {
    /// `host:port` entries spoken to over plain HTTP (loopback test registries).
    pub insecure: Vec<String>,
    /// Per registry host: basic credentials, also used for the Bearer token exchange.
    pub credentials: HashMap<String, Credentials>,
}

/// The digest-keyed image cache plus a registry client.
pub struct ImageStore {
    root: PathBuf,
    registry: RegistryConfig,
    /// One lock per digest: concurrent pulls of the same image wait for the first.
    fills: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    limits: ImageLimits,
    /// Bytes reserved by fills in progress (counted against `max_cache_bytes`).
    reserved: Mutex<u64>,
}

fn io(ctx: impl std::fmt::Display, e: std::io::Error) -> ImageError {
    ImageError::Io(format!("{ctx}: {e}"))
}

impl ImageStore {
    /// Open (create) the cache at `root` and sweep fills a crash left behind.
    pub fn open(root: &Path, registry: RegistryConfig) -> Result<ImageStore, ImageError> {
        for d in [root.join("sha256"), root.join("tmp")] {
            std::fs::create_dir_all(&d).map_err(|e| io(format!("create {}", d.display()), e))?;
        }
        // Nothing in tmp/ belongs to a live fill at startup (the server holds the state lock).
        if let Ok(rd) = std::fs::read_dir(root.join("tmp")) {
            for e in rd.flatten() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
        Ok(ImageStore {
            root: root.to_path_buf(),
            registry,
            fills: Mutex::new(HashMap::new()),
            limits: ImageLimits::default(),
            reserved: Mutex::new(0),
        })
    }

    /// Use these size caps instead of the defaults.
    pub fn with_limits(mut self, limits: ImageLimits) -> ImageStore {
        self.limits = limits;
        self
    }

    /// Reserve what the next fill may use: the per-image cap, or less when the cache is
    /// nearly full. Released (and replaced by the recorded size) when the fill ends.
    fn reserve(&self) -> Result<u64, ImageError> {
        let used: u64 = self.list().iter().map(|r| r.unpacked_size).sum();
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        let free = self
            .limits
            .max_cache_bytes
            .saturating_sub(used)
            .saturating_sub(*reserved);
        if free == 0 {
            return Err(ImageError::TooLarge(format!(
                "the image cache is full ({used} of {} bytes used; remove images with `cleanroom image rm`)",
                self.limits.max_cache_bytes
            )));
        }
        let take = free.min(self.limits.max_image_bytes);
        *reserved += take;
        Ok(take)
    }

    fn release(&self, bytes: u64) {
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        *reserved = reserved.saturating_sub(bytes);
    }

    fn dir(&self, digest: &str) -> Result<PathBuf, ImageError> {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ImageError::InvalidReference(format!(
                "{digest:?} is not a sha256 digest"
            )));
        }
        Ok(self.root.join("sha256").join(hex.to_ascii_lowercase()))
    }

    /// Read-only root filesystem of a cached image.
    pub fn rootfs(&self, digest: &str) -> Result<PathBuf, ImageError> {
        let dir = self.dir(digest)?;
        if !dir.join("image.json").is_file() {
            return Err(ImageError::NotFound(digest.to_string()));
        }
        Ok(dir.join("rootfs"))
    }

    /// The cached record of `digest`.
    pub fn get(&self, digest: &str) -> Result<ImageRecord, ImageError> {
        let path = self.dir(digest)?.join("image.json");
        let text =
            std::fs::read_to_string(&path).map_err(|_| ImageError::NotFound(digest.to_string()))?;
        serde_json::from_str(&text).map_err(|e| ImageError::Io(format!("{}: {e}", path.display())))
    }

    /// Every cached image, oldest pull first.
    pub fn list(&self) -> Vec<ImageRecord> {
        let mut out: Vec<ImageRecord> = std::fs::read_dir(self.root.join("sha256"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("image.json")).ok())
            .filter_map(|t| serde_json::from_str(&t).ok())
            .collect();
        out.sort_by(|a, b| (a.pulled_at, &a.digest).cmp(&(b.pulled_at, &b.digest)));
        out
    }

    /// Remove a cached image. The caller checks that no sandbox uses it.
    pub fn remove(&self, digest: &str) -> Result<ImageRecord, ImageError> {
        let rec = self.get(digest)?;
        let dir = self.dir(digest)?;
        // Rename first so the image vanishes atomically, then delete at leisure.
        let trash = self.root.join("tmp").join(format!("rm-{}", uuid_like()));
        std::fs::rename(&dir, &trash).map_err(|e| io(format!("remove {}", dir.display()), e))?;
        std::fs::remove_dir_all(&trash).map_err(|e| io("remove image", e))?;
        Ok(rec)
    }

    /// The digest a tag names right now at its registry (see [`resolve`]); caches nothing.
    pub async fn resolve(&self, reference: &str) -> Result<resolve::Resolved, ImageError> {
        resolve::resolve(&self.registry, reference).await
    }

    /// Make sure the image `reference` names is cached; pull, verify and unpack it if not.
    pub async fn ensure(&self, reference: &str) -> Result<ImageRecord, ImageError> {
        let pinned = PinnedRef::parse(reference)?;
        if let Ok(rec) = self.get(&pinned.digest) {
            return Ok(rec);
        }
        let lock = {
            let mut fills = self.fills.lock().unwrap_or_else(|p| p.into_inner());
            fills.entry(pinned.digest.clone()).or_default().clone()
        };
        let _guard = lock.lock().await;
        if let Ok(rec) = self.get(&pinned.digest) {
            return Ok(rec); // another pull filled it while we waited
        }
        let tmp = self.root.join("tmp").join(uuid_like());
        std::fs::create_dir_all(&tmp).map_err(|e| io("create fill dir", e))?;
        let result = match self.reserve() {
            Ok(budget) => {
                let r = self.fill(&pinned, &tmp, budget).await;
                self.release(budget);
                r
            }
            Err(e) => Err(e),
        };
        {
            let mut fills = self.fills.lock().unwrap_or_else(|p| p.into_inner());
            fills.remove(&pinned.digest);
        }
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        let rec = result?;
        let dst = self.dir(&pinned.digest)?;
        if let Err(e) = std::fs::rename(&tmp, &dst) {
            let _ = std::fs::remove_dir_all(&tmp);
            if !dst.join("image.json").is_file() {
                return Err(io("move image into the cache", e));
            }
        }
        Ok(rec)
    }

    async fn fill(
        &self,
        pinned: &PinnedRef,
        tmp: &Path,
        budget: u64,
    ) -> Result<ImageRecord, ImageError> {
        let blobs = tmp.join("blobs");
        std::fs::create_dir_all(&blobs).map_err(|e| io("create blobs dir", e))?;
        let pulled = pull::pull(&self.registry, pinned, &blobs, budget).await?;
        let mut unpack_budget = unpack::UnpackBudget::new(budget, self.limits.max_entries);
        let rootfs = tmp.join("rootfs");
        std::fs::create_dir(&rootfs).map_err(|e| io("create rootfs", e))?;
        let as_root = nix::unistd::geteuid().is_root();
        let layer_files = pulled.layer_files.clone();
        let root2 = rootfs.clone();
        let unpacked_size = tokio::task::spawn_blocking(move || -> Result<u64, ImageError> {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&root2, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| io("chmod rootfs", e))?;
            for layer in &layer_files {
                let rep = unpack::apply_layer(&root2, layer, as_root, &mut unpack_budget)?;
                if !rep.skipped.is_empty() {
                    tracing::warn!(skipped = ?rep.skipped, "layer entries not created (devices, fifos)");
                }
            }
            Ok(unpack_budget.used_bytes)
        })
        .await
        .map_err(|e| ImageError::Io(format!("unpack task: {e}")))??;
        std::fs::remove_dir_all(&blobs).map_err(|e| io("remove blobs", e))?;
        let rec = ImageRecord {
            digest: pinned.digest.clone(),
            reference: pinned.to_string(),
            manifest_digest: pulled.manifest_digest,
            config_digest: pulled.config_digest,
            layers: pulled.layers,
            size: pulled.size,
            pulled_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
            env: pulled.env,
            working_dir: pulled.working_dir,
            cmd: pulled.cmd,
            unpacked_size,
        };
        let json = serde_json::to_vec_pretty(&rec).map_err(|e| ImageError::Io(e.to_string()))?;
        std::fs::write(tmp.join("image.json"), json).map_err(|e| io("write image.json", e))?;
        Ok(rec)
    }
}

/// A unique name for temporary directories (pid + time + counter; no RNG needed).
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{t}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references() {
        let hex = "a".repeat(64);
        let r = PinnedRef::parse(&format!("127.0.0.1:5000/test/img@sha256:{hex}")).unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "test/img");
        assert_eq!(r.digest, format!("sha256:{hex}"));
        let r = PinnedRef::parse(&format!("reg.example/app:v1@sha256:{hex}")).unwrap();
        assert_eq!(r.repository, "app");
        for bad in [
            "reg.example/app:latest".to_string(),
            format!("app@sha256:{hex}"),
            format!("reg.example/app@sha256:{}", "A".repeat(64)),
            format!("reg.example/App@sha256:{hex}"),
            format!("reg.example/app@sha256:{}", "a".repeat(63)),
        ] {
            let e = PinnedRef::parse(&bad).unwrap_err();
            assert_eq!(e.code(), "policy_invalid", "{bad}");
        }
    }
}
