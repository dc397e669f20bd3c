//! Named volumes (docs/volumes.md): one sparse ext4 image per volume under
//! `<state>/volumes/<vol_id>/`, loop-mounted once by the server at a private mountpoint
//! (`mnt/`, inside the 0700 state directory) and bound into sandboxes by the backend
//! (idmapped, read-write or read-only). The size quota is the filesystem's size: a write
//! past it fails with ENOSPC inside the sandbox.
//!
//! This module keeps the records (`volume.json` beside each image, written before the
//! image exists and removed after it is gone) and the mounts; who may mount what, and
//! when a volume is in use, are the engine's rules ([`crate::engine::volumes`]). A server
//! that was killed left its mounts in place: [`Volumes::open`] finds them and keeps them
//! (re-attach), mounts what is not mounted, and removes what a crash left half made.

mod host;

use crate::model::error::EngineError;
use cleanroom_vocab::ErrorCode;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Default size of `volume create` without `--size`.
pub const DEFAULT_SIZE: u64 = 1 << 30;
/// Accepted sizes: 16 MiB to 1 TiB (sparse: only written blocks take host disk).
pub const SIZE_BOUNDS: (u64, u64) = (16 << 20, 1 << 40);
/// Most volumes one principal may have.
pub const MAX_PER_OWNER: usize = 64;

/// One volume as recorded on disk.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VolumeRecord {
    /// `vol_…`
    pub id: String,
    pub name: String,
    /// The owner's stored text (`uid:<n>` or a principal name), as [`VolumeRecord::owner`]
    /// reads it.
    pub owner: String,
    pub size_bytes: u64,
    /// Microseconds since the Unix epoch.
    pub created_at: i64,
}

impl VolumeRecord {
    /// The typed owner. A text in no principal's form owns nothing anybody could claim:
    /// [`crate::model::owner::Owner::principal`] keeps it as a name no principal has.
    pub fn owner(&self) -> crate::model::owner::Owner {
        crate::model::owner::Owner::principal(&self.owner)
    }
}

/// The server's volumes.
pub struct Volumes {
    dir: PathBuf,
    map: Mutex<BTreeMap<String, VolumeRecord>>,
    /// One create at a time (the name stays unique while its image is made).
    creating: tokio::sync::Mutex<()>,
    /// Held while a mount is admitted (conflict check + the sandbox row's commit) and while
    /// a removal checks that nothing mounts the volume: neither can slip past the other.
    pub(crate) admission: Mutex<()>,
}

fn internal(e: impl std::fmt::Display) -> EngineError {
    EngineError::internal(format!("volume: {e}"))
}

/// `volume_not_found` for a volume the caller may not see or that does not exist.
pub fn not_found(key: &str) -> EngineError {
    EngineError::new(ErrorCode::VolumeNotFound, format!("no volume {key:?}")).with("volume", key)
}

impl Volumes {
    /// Open `<state_dir>/volumes`: read every record, keep or make its mount, remove what a
    /// crash left half made (no record, or no image).
    pub fn open(state_dir: &Path) -> Result<Volumes, EngineError> {
        let dir = state_dir.join("volumes");
        std::fs::create_dir_all(&dir).map_err(internal)?;
        let mut map = BTreeMap::new();
        for entry in std::fs::read_dir(&dir).map_err(internal)?.flatten() {
            let id = entry.file_name().to_string_lossy().to_string();
            let vdir = entry.path();
            let rec = std::fs::read(vdir.join("volume.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<VolumeRecord>(&b).ok())
                .filter(|r| r.id == id && crate::model::ids::looks_valid(&id, "vol_"));
            let image = vdir.join("image.ext4");
            let (Some(rec), true) = (rec, image.is_file()) else {
                tracing::warn!(dir = %vdir.display(), "removing a half-made volume");
                if let Err(e) = discard(&vdir) {
                    tracing::warn!(dir = %vdir.display(), error = %e, "could not remove it");
                }
                continue;
            };
            let mnt = vdir.join("mnt");
            if host::is_mounted(&mnt) {
                tracing::info!(volume = %rec.id, "volume still mounted from the previous run: kept");
            } else if let Err(e) = std::fs::create_dir_all(&mnt)
                .map_err(|e| e.to_string())
                .and_then(|()| host::mount(&image, &mnt))
            {
                tracing::warn!(volume = %rec.id, error = %e, "could not mount volume");
            }
            map.insert(rec.id.clone(), rec);
        }
        Ok(Volumes {
            dir,
            map: Mutex::new(map),
            creating: Default::default(),
            admission: Mutex::new(()),
        })
    }

    fn vdir(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Where the volume's filesystem is mounted (what the backend binds into sandboxes);
    /// `None` when it is not mounted (a failed re-attach).
    pub fn mountpoint(&self, id: &str) -> Option<PathBuf> {
        let mnt = self.vdir(id).join("mnt");
        host::is_mounted(&mnt).then_some(mnt)
    }

    /// Every record (the engine filters by owner).
    pub fn all(&self) -> Vec<VolumeRecord> {
        crate::model::sync::lock(&self.map)
            .values()
            .cloned()
            .collect()
    }

    pub fn by_id(&self, id: &str) -> Option<VolumeRecord> {
        crate::model::sync::lock(&self.map).get(id).cloned()
    }

    /// `owner`'s volume called `name`.
    pub fn by_name(&self, owner: &str, name: &str) -> Option<VolumeRecord> {
        crate::model::sync::lock(&self.map)
            .values()
            .find(|r| r.owner == owner && r.name == name)
            .cloned()
    }

    /// Make a volume for `owner`: its record, its image, its mount.
    pub async fn create(
        &self,
        owner: &str,
        name: &str,
        size: u64,
    ) -> Result<VolumeRecord, EngineError> {
        cleanroom_policy::volumes::check_name(name)
            .map_err(|m| EngineError::invalid(m).with("field", "name"))?;
        let size = if size == 0 { DEFAULT_SIZE } else { size };
        let (lo, hi) = SIZE_BOUNDS;
        if !(lo..=hi).contains(&size) {
            return Err(EngineError::invalid(format!(
                "size {size} bytes is outside {lo}..={hi} (16 MiB to 1 TiB)"
            ))
            .with("field", "size_bytes"));
        }
        let _one = self.creating.lock().await;
        if self.by_name(owner, name).is_some() {
            return Err(EngineError::new(
                ErrorCode::VolumeExists,
                format!("you already have a volume named {name:?}"),
            )
            .with("volume", name));
        }
        let mine = self.all().iter().filter(|r| r.owner == owner).count();
        if mine >= MAX_PER_OWNER {
            return Err(EngineError::resource_exhausted(format!(
                "{owner} already has {mine} volumes (at most {MAX_PER_OWNER})"
            ))
            .with("limit", MAX_PER_OWNER.to_string()));
        }
        self.check_disk(size)?;
        let rec = VolumeRecord {
            id: format!("vol_{}", uuid::Uuid::now_v7().simple()),
            name: name.to_string(),
            owner: owner.to_string(),
            size_bytes: size,
            created_at: crate::store::now_micros(),
        };
        let vdir = self.vdir(&rec.id);
        let made = {
            let (vdir, rec) = (vdir.clone(), rec.clone());
            tokio::task::spawn_blocking(move || make(&vdir, &rec))
                .await
                .map_err(internal)?
        };
        if let Err(e) = made {
            let d = vdir.clone();
            let _ = tokio::task::spawn_blocking(move || discard(&d)).await;
            return Err(internal(e));
        }
        crate::model::sync::lock(&self.map).insert(rec.id.clone(), rec.clone());
        Ok(rec)
    }

    /// Refuse a volume the disk could not hold once every volume is full: the new size
    /// plus what the existing (sparse) volumes may still grow by must fit in the free space
    /// of the filesystem holding the state directory. Sparse images are never overcommitted
    /// (a sandbox filling its volume cannot take the disk from the server or other
    /// volumes). Other writers can still use the free space; this is a reservation at
    /// create time, not a hold.
    fn check_disk(&self, size: u64) -> Result<(), EngineError> {
        let Some(free) = crate::output::quota::free_bytes(&self.dir) else {
            // Fail closed: no statvfs, no new volume.
            return Err(EngineError::internal(format!(
                "cannot read the free space of {}",
                self.dir.display()
            )));
        };
        let growth: u64 = self
            .all()
            .iter()
            .map(|r| r.size_bytes.saturating_sub(allocated(&self.vdir(&r.id))))
            .sum();
        let need = size.saturating_add(growth);
        if need > free {
            return Err(EngineError::resource_exhausted(format!(
                "a {size}-byte volume does not fit: the existing volumes may still grow by \
                 {growth} bytes and the disk has {free} bytes free"
            ))
            .with("limit", "disk")
            .with("free_bytes", free.to_string()));
        }
        Ok(())
    }

    /// Take the volume out of the map, so no create resolves it from here on. Call under
    /// [`Volumes::admission`], after checking that no live sandbox mounts it: a create
    /// admitted after the check but before this would otherwise bind a mountpoint that
    /// [`Volumes::discard`] is about to unmount (a plain directory of the server's).
    pub fn forget(&self, id: &str) -> Result<VolumeRecord, EngineError> {
        crate::model::sync::lock(&self.map)
            .remove(id)
            .ok_or_else(|| not_found(id))
    }

    /// Remove a volume [`Volumes::forget`] took out: unmount it, then its files. When that
    /// fails the volume is still there, so it is remembered again (and can be retried).
    pub async fn discard(&self, rec: VolumeRecord) -> Result<VolumeRecord, EngineError> {
        let vdir = self.vdir(&rec.id);
        let gone = tokio::task::spawn_blocking(move || discard(&vdir))
            .await
            .map_err(internal)
            .and_then(|r| r.map_err(internal));
        match gone {
            Ok(()) => Ok(rec),
            Err(e) => {
                crate::model::sync::lock(&self.map).insert(rec.id.clone(), rec);
                Err(e)
            }
        }
    }

    /// Unmount every volume (server shutdown: nothing mounts them any more). The records
    /// and images stay; the next start mounts them again.
    pub fn unmount_all(&self) {
        for rec in self.all() {
            if let Err(e) = host::unmount(&self.vdir(&rec.id).join("mnt")) {
                tracing::warn!(volume = %rec.id, error = %e, "could not unmount volume");
            }
        }
    }
}

/// Bytes a volume's image already takes on the host disk (its allocated blocks).
fn allocated(vdir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(vdir.join("image.ext4"))
        .map(|m| m.blocks().saturating_mul(512))
        .unwrap_or(0)
}

/// Record, image, mountpoint, mount — in that order, so a crash leaves something
/// [`Volumes::open`] recognizes.
fn make(vdir: &Path, rec: &VolumeRecord) -> Result<(), String> {
    let e = |what: &str, err: std::io::Error| format!("{what} {}: {err}", vdir.display());
    std::fs::create_dir(vdir).map_err(|x| e("create", x))?;
    let json = serde_json::to_vec_pretty(rec).map_err(|x| x.to_string())?;
    let tmp = vdir.join("volume.json.tmp");
    std::fs::write(&tmp, json).map_err(|x| e("write record in", x))?;
    std::fs::rename(&tmp, vdir.join("volume.json")).map_err(|x| e("commit record in", x))?;
    let image = vdir.join("image.ext4");
    host::make_image(&image, rec.size_bytes)?;
    let mnt = vdir.join("mnt");
    std::fs::create_dir(&mnt).map_err(|x| e("create mountpoint in", x))?;
    host::mount(&image, &mnt)
}

/// Unmount (if mounted) and delete a volume's directory: the server's own files only
/// (record, image, the now empty mountpoint) — never anything inside the filesystem.
fn discard(vdir: &Path) -> Result<(), String> {
    let mnt = vdir.join("mnt");
    host::unmount(&mnt)?;
    if host::is_mounted(&mnt) {
        return Err(format!("{} is still mounted", mnt.display()));
    }
    for f in ["volume.json", "volume.json.tmp", "image.ext4"] {
        let _ = std::fs::remove_file(vdir.join(f));
    }
    let _ = std::fs::remove_dir(&mnt);
    std::fs::remove_dir(vdir).map_err(|e| format!("remove {}: {e}", vdir.display()))
}
