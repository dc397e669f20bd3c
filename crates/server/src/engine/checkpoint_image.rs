//! The stored form of a memory checkpoint (`ckpt_…`, docs/checkpoints.md): one directory
//! per checkpoint under the server's state directory, holding `manifest.json` and
//! `image/` (the runtime's image files, e.g. `runsc checkpoint`'s `checkpoint.img`).
//!
//! The manifest records each image file's name, size and sha256, the runtime and its
//! version, the policy (hash and compiled form), image, limits, owner and what a restore
//! drops. Its canonical bytes' sha256 is the checkpoint's content digest and the id is
//! derived from it, so a changed manifest no longer matches its id, and a changed, swapped,
//! missing or extra image file no longer matches the manifest: both are refused
//! (`checkpoint_corrupt`) by [`verify`] before the runtime reads a byte of the image.
//! Nothing here follows a link: names are flat, files are opened with `O_NOFOLLOW` and
//! must be regular. The digests are taken while the runtime writes the files
//! ([`super::checkpoint_follow`]); a verification this process already made of a file
//! that has not changed since is not repeated ([`super::checkpoint_seal`]).

use super::checkpoint_seal::{self as seal, Stamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The manifest's file name in a checkpoint directory.
pub const MANIFEST: &str = "manifest.json";
/// The image directory's name in a checkpoint directory.
pub const IMAGE: &str = "image";
/// Manifest format version.
const VERSION: u32 = 1;
/// Largest manifest read (a real one is a few KiB plus the compiled policy).
const MAX_MANIFEST: u64 = 4 << 20;
/// Most image files a checkpoint may have (runsc writes one to three).
pub const MAX_FILES: usize = 64;

/// One image file as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    pub name: String,
    pub size: u64,
    /// Lower-case hex sha256 of the content.
    pub sha256: String,
}

/// What a checkpoint is (see the module doc). Field order is the canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    pub owner: String,
    pub source_sandbox_id: String,
    pub runtime: String,
    /// What the image is compatible with (gVisor: the `runsc --version` line).
    pub runtime_version: String,
    pub policy_hash: String,
    pub compiled_policy: String,
    pub image_ref: String,
    pub image_digest: String,
    /// The backend's `Limits` as JSON.
    pub limits: String,
    pub files: Vec<FileEntry>,
    pub dropped: Vec<String>,
    pub created_at: i64,
}

impl Manifest {
    /// A manifest of the current format.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        owner: String,
        source_sandbox_id: String,
        (runtime, runtime_version): (String, String),
        (policy_hash, compiled_policy): (String, String),
        (image_ref, image_digest): (String, String),
        limits: String,
        files: Vec<FileEntry>,
        dropped: Vec<String>,
        created_at: i64,
    ) -> Manifest {
        Manifest {
            version: VERSION,
            owner,
            source_sandbox_id,
            runtime,
            runtime_version,
            policy_hash,
            compiled_policy,
            image_ref,
            image_digest,
            limits,
            files,
            dropped,
            created_at,
        }
    }

    fn canonical(&self) -> Vec<u8> {
        // Strings, integers and vectors: serialising cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Lower-case hex sha256 of the canonical manifest.
    pub fn digest(&self) -> String {
        hex(&Sha256::digest(self.canonical()))
    }

    /// `ckpt_` and the digest's first 32 hex digits.
    pub fn id(&self) -> String {
        format!("ckpt_{}", &self.digest()[..32])
    }

    /// Bytes of image content.
    pub fn size_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    /// Write it into the checkpoint directory `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::write(dir.join(MANIFEST), self.canonical())
    }
}

/// Why a stored checkpoint cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    /// No such checkpoint directory (or no manifest in it).
    Missing,
    /// Its manifest or files do not match (see the module doc); the reason.
    Corrupt(String),
}

/// Read the manifest of checkpoint `id` in `dir`, checked against the id.
pub fn load(dir: &Path, id: &str) -> Result<Manifest, Invalid> {
    let path = dir.join(MANIFEST);
    let file = match open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Invalid::Missing),
        Err(e) => return Err(Invalid::Corrupt(format!("manifest: {e}"))),
    };
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Invalid::Corrupt(format!("manifest: {e}")))?;
    if bytes.len() as u64 > MAX_MANIFEST {
        return Err(Invalid::Corrupt("manifest is too large".into()));
    }
    let m: Manifest = serde_json::from_slice(&bytes)
        .map_err(|e| Invalid::Corrupt(format!("manifest does not parse: {e}")))?;
    if m.version != VERSION {
        return Err(Invalid::Corrupt(format!(
            "manifest version {} is not {VERSION}",
            m.version
        )));
    }
    if m.canonical() != bytes || m.id() != id {
        return Err(Invalid::Corrupt(
            "the manifest does not match the checkpoint's content address".into(),
        ));
    }
    Ok(m)
}

/// Name, size and sha256 of every file of an image directory (sorted by name); anything
/// but flat regular files is refused.
#[cfg(test)]
pub fn describe(image: &Path) -> std::io::Result<Vec<FileEntry>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(image)? {
        let entry = entry?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| std::io::Error::other("an image file name is not UTF-8"))?;
        if out.len() >= MAX_FILES {
            return Err(std::io::Error::other("too many image files"));
        }
        let (size, sha256) = hash_file(open_regular(&image.join(&name))?)?;
        out.push(FileEntry { name, size, sha256 });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The image directory holds exactly the manifest's files, each regular (never a link)
/// with the recorded size and sha256: hashed in full unless this process verified the
/// very same unchanged file before ([`super::checkpoint_seal`]). `Err`: what differs.
pub fn verify(image: &Path, m: &Manifest) -> Result<(), String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(image).map_err(|e| format!("image directory: {e}"))? {
        let entry = entry.map_err(|e| format!("image directory: {e}"))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
        if names.len() > MAX_FILES {
            return Err("too many image files".into());
        }
    }
    names.sort();
    let listed: Vec<&str> = m.files.iter().map(|f| f.name.as_str()).collect();
    if names != listed {
        return Err(format!(
            "image files {names:?} are not the recorded {listed:?}"
        ));
    }
    for f in &m.files {
        let path = image.join(&f.name);
        let file = open_regular(&path).map_err(|e| format!("{}: {e}", f.name))?;
        let before = Stamp::of(&file).map_err(|e| format!("{}: {e}", f.name))?;
        if before.size == f.size && seal::holds(&path, &before, &f.sha256) {
            continue;
        }
        let stat = file.try_clone().map_err(|e| format!("{}: {e}", f.name))?;
        let (size, sha) = hash_file(file).map_err(|e| format!("{}: {e}", f.name))?;
        if size != f.size || sha != f.sha256 {
            return Err(format!("{} does not match its recorded sha256", f.name));
        }
        // Sealed only if nothing changed the file while it was read.
        if Stamp::of(&stat).is_ok_and(|after| after == before) {
            seal::remember(&path, before, &f.sha256);
        }
    }
    Ok(())
}

/// Open `path` read-only, refusing a link or anything but a regular file.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

fn hash_file(mut file: std::fs::File) -> std::io::Result<(u64, String)> {
    let mut h = Sha256::new();
    // Small reads: the bytes are still in the CPU's cache when hashed.
    let mut buf = vec![0u8; 256 << 10];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex(&h.finalize())))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(dir: &Path) -> (String, Manifest) {
        let image = dir.join(IMAGE);
        std::fs::create_dir_all(&image).unwrap();
        std::fs::write(image.join("checkpoint.img"), vec![7u8; 5000]).unwrap();
        let m = Manifest::new(
            "alice".into(),
            "sbx_1".into(),
            ("gvisor".into(), "runsc version 1".into()),
            ("sha256:p".into(), "{}".into()),
            (String::new(), String::new()),
            "{}".into(),
            describe(&image).unwrap(),
            vec![],
            1,
        );
        m.write(dir).unwrap();
        (m.id(), m)
    }

    #[test]
    fn a_stored_checkpoint_loads_and_verifies() {
        let d = tempfile::tempdir().unwrap();
        let (id, m) = stored(d.path());
        assert_eq!(load(d.path(), &id).unwrap(), m);
        verify(&d.path().join(IMAGE), &m).unwrap();
        assert_eq!(m.size_bytes(), 5000);
    }

    #[test]
    fn a_flipped_bit_an_extra_file_or_a_link_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let (_, m) = stored(d.path());
        let img = d.path().join(IMAGE).join("checkpoint.img");
        let mut bytes = std::fs::read(&img).unwrap();
        bytes[4000] ^= 1;
        std::fs::write(&img, &bytes).unwrap();
        assert!(verify(&d.path().join(IMAGE), &m).is_err());
        bytes[4000] ^= 1;
        std::fs::write(&img, &bytes).unwrap();
        verify(&d.path().join(IMAGE), &m).unwrap();
        std::fs::write(d.path().join(IMAGE).join("extra"), b"x").unwrap();
        assert!(verify(&d.path().join(IMAGE), &m).is_err());
        std::fs::remove_file(d.path().join(IMAGE).join("extra")).unwrap();
        let other = d.path().join("elsewhere");
        std::fs::rename(&img, &other).unwrap();
        std::os::unix::fs::symlink(&other, &img).unwrap();
        assert!(verify(&d.path().join(IMAGE), &m).is_err());
    }

    #[test]
    fn a_changed_manifest_no_longer_matches_its_id() {
        let d = tempfile::tempdir().unwrap();
        let (id, mut m) = stored(d.path());
        m.owner = "mallory".into();
        m.write(d.path()).unwrap();
        assert!(matches!(load(d.path(), &id), Err(Invalid::Corrupt(_))));
        assert_eq!(load(&d.path().join("nope"), &id), Err(Invalid::Missing));
    }
}
