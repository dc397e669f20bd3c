//! Listings by ownership: which sandboxes and cached images a principal may see.
//!
//! Every sandbox and execution row records its owner; an image's owners are the
//! principals that pulled it or rooted a sandbox on it (the cache is shared by digest,
//! so one unpacked image may have several). A principal sees only what it owns; an
//! `admin` sees everything. An object the caller may not see is reported exactly as one
//! that does not exist (`sandbox_not_found`, `execution_not_found`, `image_not_found`):
//! the API is no existence oracle. A single sandbox, execution or snapshot is reached
//! through an owned handle ([`crate::engine::owned`]); this file holds the listings and
//! the image cache's owners.

use crate::engine::Engine;
use crate::identity::auth::Principal;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::status::sandbox as ss;
use crate::store::{Changes, SandboxRow};
use cleanroom_image::ImageRecord;

impl Engine {
    /// The isolation runtimes this server has (what a cluster member offers).
    pub fn runtimes(&self) -> Vec<cleanroom_vocab::Runtime> {
        cleanroom_vocab::Runtime::ALL
            .iter()
            .copied()
            .filter(|rt| self.backend.capabilities_of(*rt).is_ok())
            .collect()
    }

    /// Sandboxes `who` may see.
    pub fn owned_sandboxes(
        &self,
        who: &Principal,
        include_stopped: bool,
    ) -> Result<Vec<SandboxRow>, EngineError> {
        Ok(self
            .list_sandboxes(include_stopped)?
            .into_iter()
            .filter(|s| who.can_see(&s.owner))
            .collect())
    }

    /// Sandboxes `who` may see whose row changed at or after `since` (micros; `None`:
    /// every one), with where the next read starts (see [`crate::store::Changes`]):
    /// ListSandboxes' `changed_since`.
    pub fn visible_sandboxes_since(
        &self,
        who: &Principal,
        since: Option<i64>,
    ) -> Result<Changes, EngineError> {
        let mut ch = self.store.sandboxes_changed_since(since)?;
        ch.rows.retain(|s| who.can_see(&s.owner));
        Ok(ch)
    }

    /// Record that `who` holds image `digest` (after a pull or an image-rooted create).
    pub fn claim_image(&self, who: &Principal, digest: &str) -> Result<(), EngineError> {
        if !digest.is_empty() {
            self.store.add_image_owner(digest, &who.owner())?;
        }
        Ok(())
    }

    /// Cached images `who` holds (admins: all).
    pub fn owned_images(&self, who: &Principal) -> Result<Vec<ImageRecord>, EngineError> {
        let mut out = Vec::new();
        for rec in self.list_images()? {
            if who.is_admin() || self.store.image_owners(&rec.digest)?.contains(&who.owner()) {
                out.push(rec);
            }
        }
        Ok(out)
    }

    /// `image rm` for `who`: an admin removes the image from the cache; a user drops
    /// their claim, and the image leaves the cache when nobody else holds it.
    pub fn remove_owned_image(
        &self,
        who: &Principal,
        digest: &str,
    ) -> Result<ImageRecord, EngineError> {
        let digest = if digest.starts_with("sha256:") {
            digest.to_string()
        } else {
            format!("sha256:{digest}")
        };
        // Exactly what a digest that is not cached gets.
        let not_found = || EngineError::from(cleanroom_image::ImageError::NotFound(digest.clone()));
        if who.is_admin() {
            let rec = self.remove_image(&digest)?;
            self.store.remove_image_owner(&digest, None)?;
            return Ok(rec);
        }
        let owners = self.store.image_owners(&digest)?;
        if !owners.contains(&who.owner()) {
            return Err(not_found());
        }
        let rec = self
            .list_images()?
            .into_iter()
            .find(|r| r.digest == digest)
            .ok_or_else(not_found)?;
        // The caller's own live sandboxes on it keep it; others' are not named.
        let mine_using: Vec<String> = self
            .owned_sandboxes(who, false)?
            .into_iter()
            .filter(|s| !ss::is_terminal(s.status) && s.image_digest == digest)
            .map(|s| s.id)
            .collect();
        if !mine_using.is_empty() {
            return Err(EngineError::new(
                ErrorCode::ImageInUse,
                format!("image {digest} is used by {}", mine_using.join(", ")),
            )
            .with("sandbox_ids", mine_using.join(",")));
        }
        self.store.remove_image_owner(&digest, Some(&who.owner()))?;
        if owners.len() == 1 {
            // Last holder: remove from the cache unless another principal's sandbox still
            // runs on it (then it stays cached; nothing about that sandbox is revealed).
            match self.remove_image(&digest) {
                Ok(r) => return Ok(r),
                Err(e) if e.code == ErrorCode::ImageInUse => {}
                Err(e) => return Err(e),
            }
        }
        Ok(rec)
    }
}
