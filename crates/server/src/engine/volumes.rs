//! The rules of named volumes (docs/volumes.md); the records and mounts themselves are
//! [`crate::volumes`]'s.
//!
//! * Owned: a principal sees, mounts and removes only its own volumes (an admin sees and
//!   removes every one, but mounts only its own); any other answers `volume_not_found`
//!   exactly like a volume that does not exist.
//! * In use: a volume is in use while a live (non-terminal) sandbox's compiled policy
//!   mounts it — read from the sandbox rows, so it survives a restart with nothing more
//!   to record. A volume is mounted read-write into at most one live sandbox, and never
//!   read-write beside read-only mounts (`volume_busy`); `volume rm` of a volume in use is
//!   `volume_in_use`. Both checks run under one lock with the sandbox row's commit.
//! * No deputy: there is no file API on a volume; its files are reached only through a
//!   sandbox that mounts it, with that sandbox's own identity and mount flags.

use super::Engine;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::model::owner::Owner;
use crate::model::status::sandbox as ss;
use crate::volumes::{not_found, VolumeRecord, Volumes};
use cleanroom_backend::VolumeBind;
use cleanroom_policy::CompiledPolicy;
use cleanroom_vocab::ErrorCode;
use std::sync::Arc;

/// How long a mount or a removal waits for sandboxes that are already stopping.
const STOPPING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A volume as the API shows it: its record and the live sandboxes that mount it.
#[derive(Debug, Clone)]
pub struct VolumeView {
    pub record: VolumeRecord,
    /// Live sandboxes mounting it, with whether read-only.
    pub users: Vec<(String, bool)>,
}

impl Engine {
    fn volume_store(&self) -> Result<&Arc<Volumes>, EngineError> {
        self.volumes.as_ref().ok_or_else(|| {
            EngineError::new(ErrorCode::Unavailable, "this server has no volume store")
        })
    }

    /// Unmount every volume (shutdown, after every sandbox was terminated).
    pub(super) fn unmount_volumes(&self) {
        if let Some(v) = self.volumes.as_ref() {
            v.unmount_all();
        }
    }

    /// Every live sandbox of `owner` with its policy's volume mounts: one pass over the
    /// store, which the users of a volume, the busy check and the stopping wait all read.
    fn live_mounts(&self, owner: &Owner) -> Result<Vec<LiveMounts>, EngineError> {
        let mut out = Vec::new();
        for row in self.store.list_sandboxes()? {
            if ss::is_terminal(row.status) || row.owner != *owner {
                continue;
            }
            let Ok(policy) = row.policy.get(&row.id) else {
                continue;
            };
            if !policy.volumes.is_empty() {
                out.push(LiveMounts {
                    stopping: row.status == ss::STOPPING,
                    mounts: policy.volumes.clone(),
                    sandbox_id: row.id,
                });
            }
        }
        Ok(out)
    }

    /// Live sandboxes whose policy mounts `rec` (owned by its owner), with `read_only`.
    fn users_of(&self, rec: &VolumeRecord) -> Result<Vec<(String, bool)>, EngineError> {
        Ok(users_in(&self.live_mounts(&rec.owner())?, &rec.name))
    }

    /// Wait (up to [`STOPPING_WAIT`]) while the only live sandboxes of `owner` that mount
    /// any of `names` are STOPPING: the one-shot sandbox of an `exec` that just finished is
    /// torn down in the background, and the next `exec --volume` or `volume rm` should not
    /// fail `volume_busy`/`volume_in_use` because of it. The checks that decide run after.
    pub(super) async fn wait_for_stopping_volume_users(&self, owner: &Owner, names: &[&str]) {
        if names.is_empty() {
            return;
        }
        let deadline = tokio::time::Instant::now() + STOPPING_WAIT;
        loop {
            let Ok(live) = self.live_mounts(owner) else {
                return;
            };
            let users: Vec<_> = live
                .iter()
                .filter(|l| l.mounts.iter().any(|m| names.contains(&m.name.as_str())))
                .collect();
            let only_stopping = users.iter().all(|l| l.stopping);
            if users.is_empty() || !only_stopping || tokio::time::Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn view(&self, record: VolumeRecord) -> Result<VolumeView, EngineError> {
        let users = self.users_of(&record)?;
        Ok(VolumeView { record, users })
    }

    /// `who`'s volume named `key`, or (`vol_…`) the volume with that id if `who` may see
    /// it; anything else is `volume_not_found`.
    fn find_volume(&self, who: &Principal, key: &str) -> Result<VolumeRecord, EngineError> {
        let v = self.volume_store()?;
        let found = if crate::model::ids::looks_valid(key, "vol_") {
            v.by_id(key).filter(|r| who.can_see(&r.owner()))
        } else {
            v.by_name(&who.name, key)
        };
        found.ok_or_else(|| not_found(key))
    }

    pub async fn create_volume(
        &self,
        who: &Principal,
        name: &str,
        size: u64,
    ) -> Result<VolumeView, EngineError> {
        let rec = self.volume_store()?.create(&who.name, name, size).await?;
        Ok(VolumeView {
            record: rec,
            users: Vec::new(),
        })
    }

    /// Volumes `who` may see (admins: all), by name.
    pub fn list_volumes(&self, who: &Principal) -> Result<Vec<VolumeView>, EngineError> {
        let mut recs: Vec<VolumeRecord> = self
            .volume_store()?
            .all()
            .into_iter()
            .filter(|r| who.can_see(&r.owner()))
            .collect();
        recs.sort_by(|a, b| (&a.owner, &a.name).cmp(&(&b.owner, &b.name)));
        recs.into_iter().map(|r| self.view(r)).collect()
    }

    pub fn get_volume(&self, who: &Principal, key: &str) -> Result<VolumeView, EngineError> {
        let rec = self.find_volume(who, key)?;
        self.view(rec)
    }

    /// Remove a volume nothing mounts (`volume_in_use` otherwise).
    pub async fn delete_volume(
        &self,
        who: &Principal,
        key: &str,
    ) -> Result<VolumeView, EngineError> {
        let store = self.volume_store()?;
        let rec = self.find_volume(who, key)?;
        self.wait_for_stopping_volume_users(&rec.owner(), &[rec.name.as_str()])
            .await;
        {
            let _admission = crate::model::sync::lock(&store.admission);
            let users = self.users_of(&rec)?;
            if !users.is_empty() {
                let ids: Vec<&str> = users.iter().map(|(id, _)| id.as_str()).collect();
                return Err(EngineError::new(
                    ErrorCode::VolumeInUse,
                    format!(
                        "volume {:?} is mounted by live sandbox(es) {}; remove them first",
                        rec.name,
                        ids.join(", ")
                    ),
                )
                .with("volume", &rec.name)
                .with("sandbox_ids", ids.join(",")));
            }
            // Forgotten under the lock: no create can resolve it from here on.
            store.forget(&rec.id)?;
        }
        let removed = store.discard(rec).await?;
        Ok(VolumeView {
            record: removed,
            users: Vec::new(),
        })
    }

    /// The backend binds for `policy`'s volumes, resolved against `owner`'s volumes and
    /// checked against every live sandbox's mounts. Call with
    /// [`Engine::volume_admission`] held until the sandbox row is committed.
    pub(super) fn admit_volumes(
        &self,
        owner: &Owner,
        policy: &CompiledPolicy,
    ) -> Result<Vec<VolumeBind>, EngineError> {
        if policy.volumes.is_empty() {
            return Ok(Vec::new());
        }
        if owner.is_pool() {
            return Err(EngineError::new(
                ErrorCode::VolumeMountInvalid,
                "a warm pool's sandboxes cannot mount volumes",
            ));
        }
        let store = self.volume_store()?;
        let live = self.live_mounts(owner)?;
        let mut binds = Vec::new();
        for m in &policy.volumes {
            let rec = store
                .by_name(&owner.to_string(), &m.name)
                .ok_or_else(|| not_found(&m.name))?;
            let users = users_in(&live, &rec.name);
            let conflict = if m.read_only {
                users.iter().find(|(_, ro)| !ro)
            } else {
                users.first()
            };
            if let Some((other, other_ro)) = conflict {
                return Err(EngineError::new(
                    ErrorCode::VolumeBusy,
                    format!(
                        "volume {:?} is mounted {} by live sandbox {other}: a volume is read-write in at most one sandbox, and never beside read-only mounts",
                        m.name,
                        if *other_ro { "read-only" } else { "read-write" }
                    ),
                )
                .with("volume", &m.name)
                .with("sandbox_id", other));
            }
            let source = store.mountpoint(&rec.id).ok_or_else(|| {
                EngineError::new(
                    ErrorCode::Unavailable,
                    format!(
                        "volume {:?} is not mounted on the server (see its log)",
                        m.name
                    ),
                )
            })?;
            binds.push(VolumeBind {
                source,
                guest_path: m.path.clone(),
                read_only: m.read_only,
            });
        }
        Ok(binds)
    }

    /// The lock under which mounts are admitted (`None` when there is no volume store:
    /// then no policy with volumes is admitted at all).
    pub(super) fn volume_admission(&self) -> Option<&std::sync::Mutex<()>> {
        self.volumes.as_ref().map(|v| &v.admission)
    }
}

/// A live sandbox's volume mounts ([`Engine::live_mounts`]).
struct LiveMounts {
    sandbox_id: String,
    /// STOPPING: torn down in the background, about to let go of its mounts.
    stopping: bool,
    mounts: Vec<cleanroom_policy::VolumeMount>,
}

/// The sandboxes among `live` that mount the volume `name`, with `read_only`.
fn users_in(live: &[LiveMounts], name: &str) -> Vec<(String, bool)> {
    live.iter()
        .filter_map(|l| {
            let m = l.mounts.iter().find(|m| m.name == name)?;
            Some((l.sandbox_id.clone(), m.read_only))
        })
        .collect()
}
