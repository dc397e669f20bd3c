//! Sandbox lifecycle (create with the capability handshake, terminate, read a file) and
//! the image cache sandboxes are rooted on.

use super::events::EventLog;
use super::Engine;
use crate::model::error::EngineError;
use crate::model::ids;
use crate::model::owner::Owner;
use crate::model::status::sandbox as ss;
use crate::store::{now_micros, CapHit, SandboxCaps, SandboxRow};
use cleanroom_backend::{ImageRoot, Limits, NetworkSpec, SandboxSpec, TunConfig};
use cleanroom_image::{ImageRecord, ImageStore, PinnedRef};
use cleanroom_policy::CompiledPolicy;
use cleanroom_vocab::ErrorCode;
use std::sync::Arc;

impl Engine {
    /// The principal a sandbox of `owner` counts for: the owner, or for a pool's warm
    /// sandbox (`pool:<id>`) the pool's owner, as with the sandbox caps. The gateway's
    /// shares of server-wide budgets are keyed by it (a claimed warm sandbox keeps its
    /// pool owner's share: its gateway is already running).
    pub(crate) fn account_of(&self, owner: &Owner) -> String {
        let pool = match owner {
            Owner::Pool(id) => crate::model::sync::lock(&self.pools.map)
                .get(id)
                .map(|p| p.owner.clone()),
            _ => None,
        };
        pool.unwrap_or_else(|| owner.clone()).to_string()
    }

    /// Compile the policy once, check capabilities, provision. Returns the READY sandbox,
    /// owned by `owner`; refused with `resource_exhausted` when `sandbox_caps` are reached.
    pub async fn create_sandbox(
        &self,
        owner: &Owner,
        sandbox_caps: SandboxCaps,
        policy_yaml: &str,
        image_ref: &str,
        requested: crate::budgets::limits::RequestedLimits,
    ) -> Result<SandboxRow, EngineError> {
        let none = std::collections::BTreeMap::new();
        self.create_sandbox_with_lockfiles(
            owner,
            sandbox_caps,
            policy_yaml,
            image_ref,
            requested,
            (&none, None, false),
        )
        .await
    }

    /// [`Engine::create_sandbox`] with the lockfiles of the policy's `sandbox.registries`
    /// (path -> content, read by the client at the repository's committed HEAD): bound to
    /// the policy before anything else, so the policy hash covers them. With `binding`, the
    /// sandbox is bound to it (agent identity, signed attestation) in its READY commit.
    /// `one_shot`: made for one command whose end ends it ([`SandboxSpec::one_shot`]).
    pub async fn create_sandbox_with_lockfiles(
        &self,
        owner: &Owner,
        sandbox_caps: SandboxCaps,
        policy_yaml: &str,
        image_ref: &str,
        requested: crate::budgets::limits::RequestedLimits,
        (lockfiles, binding, one_shot): (
            &std::collections::BTreeMap<String, Vec<u8>>,
            Option<&crate::identity::attest::AgentBinding>,
            bool,
        ),
    ) -> Result<SandboxRow, EngineError> {
        let mut policy = self.compile_policy(policy_yaml)?;
        let mediation = crate::engine::registries::RegistryHub::bind(
            self.registries.as_ref(),
            &mut policy,
            lockfiles,
        )?;
        self.create_compiled(
            owner,
            sandbox_caps,
            policy,
            image_ref,
            requested,
            (None, mediation, binding, one_shot),
        )
        .await
    }

    /// Compile a policy's text (the one place the engine does: tests count the calls).
    pub(crate) fn compile_policy(&self, yaml: &str) -> Result<CompiledPolicy, EngineError> {
        #[cfg(test)]
        self.compiles
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(cleanroom_policy::compile(yaml)?)
    }

    /// [`Engine::create_sandbox`] from a policy compiled already (a pool's, compiled once
    /// for all its sandboxes), bound like a create's with no lockfiles.
    pub(crate) async fn create_from_compiled(
        &self,
        owner: &Owner,
        sandbox_caps: SandboxCaps,
        policy: &CompiledPolicy,
        image_ref: &str,
        requested: crate::budgets::limits::RequestedLimits,
    ) -> Result<SandboxRow, EngineError> {
        let mut policy = policy.clone();
        let none = std::collections::BTreeMap::new();
        let mediation = crate::engine::registries::RegistryHub::bind(
            self.registries.as_ref(),
            &mut policy,
            &none,
        )?;
        self.create_compiled(
            owner,
            sandbox_caps,
            policy,
            image_ref,
            requested,
            (None, mediation, None, false),
        )
        .await
    }

    /// Create from a compiled policy (a new one, or a snapshot's) and its registry
    /// mediation, optionally restoring a snapshot's files (see [`super::snapshots`]).
    pub(crate) async fn create_compiled(
        &self,
        owner: &Owner,
        sandbox_caps: SandboxCaps,
        policy: CompiledPolicy,
        image_ref: &str,
        requested: crate::budgets::limits::RequestedLimits,
        (restore, mediation, binding, one_shot): (
            Option<super::snapshots::Restore>,
            cleanroom_egress::registry::Mediation,
            Option<&crate::identity::attest::AgentBinding>,
            bool,
        ),
    ) -> Result<SandboxRow, EngineError> {
        let requested: Limits = requested.into();
        // The policy's runtime (a request's was applied to it), else the server's default;
        // one this server lacks is refused (`runtime_unavailable`), never replaced.
        let runtime = policy
            .runtime
            .unwrap_or_else(|| self.backend.default_runtime());
        // The name recorded and attested: the backend's own for its default runtime.
        let backend_name = if runtime == self.backend.default_runtime() {
            self.backend.name()
        } else {
            runtime.as_str()
        };
        // Capability handshake: fail closed before anything is provisioned.
        let caps = cleanroom_vocab::Capability::keys(
            &self
                .backend
                .capabilities_of(runtime)
                .map_err(EngineError::from)?,
        );
        let mut required = policy.required_capabilities();
        match &restore {
            Some(r) if r.memory => {
                required.push(cleanroom_vocab::Capability::CheckpointRestore.as_str())
            }
            Some(_) => required.push(cleanroom_vocab::Capability::FilesystemSnapshots.as_str()),
            None => {}
        }
        if !policy.volumes.is_empty() {
            required.push(cleanroom_vocab::Capability::NamedVolumes.as_str());
        }
        // The request's image (CLI --image) wins over the policy's `sandbox.image.ref`.
        let image_ref = match (image_ref.trim(), &policy.image_ref) {
            ("", Some(p)) => p.clone(),
            (r, _) => r.to_string(),
        };
        let pinned = if image_ref.is_empty() {
            None
        } else {
            required.push(cleanroom_vocab::Capability::OciImages.as_str());
            Some(PinnedRef::parse(&image_ref).map_err(EngineError::from)?)
        };
        let missing: Vec<&str> = required.into_iter().filter(|c| !caps.contains(c)).collect();
        if !missing.is_empty() {
            return Err(EngineError::new(
                ErrorCode::BackendCapabilityMismatch,
                format!(
                    "backend {:?} lacks capabilities this sandbox needs: {}",
                    backend_name,
                    missing.join(", ")
                ),
            )
            .with("missing", missing.join(","))
            .with("backend", backend_name));
        }
        let limits = crate::budgets::limits::effective(&policy, requested)?;
        let names: Vec<&str> = policy.volumes.iter().map(|m| m.name.as_str()).collect();
        self.wait_for_stopping_volume_users(owner, &names).await;
        let id = ids::sandbox_id();
        // Secrets and the sandbox CA before anything exists: a secret this server has no
        // value for refuses the sandbox like a capability mismatch does.
        let prepared = self
            .egress
            .prepare(&id, &policy, mediation, &self.account_of(owner))?;
        let now = now_micros();
        let row = SandboxRow {
            id: id.clone(),
            status: ss::PROVISIONING,
            backend: backend_name.into(),
            policy_hash: policy.policy_hash(),
            policy: crate::store::StoredPolicy::new(policy.clone()),
            created_at: now,
            updated_at: now,
            last_execution_id: String::new(),
            active_execution_id: String::new(),
            message: String::new(),
            provisioned: Default::default(),
            image_ref: pinned.as_ref().map(|p| p.to_string()).unwrap_or_default(),
            image_digest: pinned
                .as_ref()
                .map(|p| p.digest.clone())
                .unwrap_or_default(),
            owner: owner.clone(),
            labels: Default::default(),
        };
        // One commit: the row (within the caps), its snapshot facts and its event.
        let provisioning = EventLog::sandbox_status_row(&id, ss::PROVISIONING, "");
        let origin = restore
            .as_ref()
            .map(|r| r.snapshot_id.as_str())
            .unwrap_or("");
        let limits_json = serde_json::to_string(&limits).unwrap_or_default();
        // Volume mounts are admitted with the row's commit, under one lock: two creates
        // cannot both take a volume read-write (see `volumes`).
        let (begun, volumes) = {
            let lock = match policy.volumes.is_empty() {
                true => None,
                false => Some(self.volume_admission().ok_or_else(|| {
                    EngineError::new(ErrorCode::Unavailable, "this server has no volume store")
                })?),
            };
            let _admission = lock.map(crate::model::sync::lock);
            let volumes = self.admit_volumes(owner, &policy)?;
            let begun = self.store.begin_sandbox(
                &row,
                sandbox_caps,
                (origin, &limits_json),
                &provisioning,
            )?;
            (begun, volumes)
        };
        match begun {
            Ok(seq) => self.events.committed(seq),
            Err(hit) => {
                return Err(match hit {
                    CapHit::PerOwner(n) => EngineError::resource_exhausted(format!(
                    "{owner} already has {n} live sandboxes (serve --max-sandboxes-per-principal)"
                )),
                    CapHit::Total(n) => EngineError::resource_exhausted(format!(
                        "the server already runs {n} sandboxes (serve --max-sandboxes)"
                    )),
                }
                .with("limit", n_of(hit)))
            }
        }
        // The row exists (PROVISIONING, with its digest) before the pull, so the image
        // counts as in use from here on and `image rm` cannot pull it from under us.
        let image = match &pinned {
            None => None,
            Some(p) => match tracing::Instrument::instrument(
                self.image_root(p),
                crate::telemetry::step("image.resolve", &id),
            )
            .await
            {
                Ok(i) => Some(i),
                Err(e) => {
                    self.events.end_sandbox(&id, ss::FAILED, &e.message)?;
                    return Err(e.with("sandbox_id", &id));
                }
            },
        };
        let spec = SandboxSpec {
            sandbox_id: id.clone(),
            runtime,
            hostname: "cleanroom".into(),
            limits,
            network: NetworkSpec::Tun(TunConfig {
                guest: cleanroom_egress::GUEST_ADDR,
                gateway: cleanroom_egress::GATEWAY_ADDR,
                mtu: cleanroom_egress::MTU,
                plane: super::egress::plane(),
            }),
            image,
            trusted_ca_pem: prepared.ca_pem(),
            restore: restore
                .as_ref()
                .filter(|r| !r.memory)
                .map(|r| r.layers.clone()),
            checkpoint: restore.filter(|r| r.memory).map(|r| r.layers),
            volumes,
            one_shot,
        };
        let provisioned = tracing::Instrument::instrument(
            self.backend.provision(&spec),
            crate::telemetry::step("backend.provision", &id),
        )
        .await
        .and_then(|p| {
            // Fail closed: a sandbox whose gateway is not running must not become READY.
            let device = p.network_device.as_ref().ok_or_else(|| {
                cleanroom_backend::BackendError::LaunchFailed(
                    "backend returned no network device for the egress gateway".into(),
                )
            })?;
            let live = self
                .stored_live_rules(&id)
                .map_err(|e| cleanroom_backend::BackendError::LaunchFailed(e.message))?;
            self.egress
                .attach(&id, &policy, &live, device, prepared)
                .map_err(|e| {
                    cleanroom_backend::BackendError::LaunchFailed(format!("egress gateway: {e}"))
                })?;
            Ok(p)
        });
        if provisioned.is_err() {
            // The sandbox may exist without a gateway: take it down again.
            let _ = self.backend.terminate(&id).await;
        }
        match provisioned {
            Ok(p) => {
                self.retention.add_sandbox(&id, limits.output_bytes);
                // One commit: the provision record, READY and its event.
                let ready = EventLog::sandbox_status_row(&id, ss::READY, "");
                let bound = binding.map(|b| self.binding_row(&row, b, ""));
                let committed = self.store.sandbox_ready(&id, &p, &ready, bound.as_ref());
                let seq = match committed {
                    Ok(seq) => seq,
                    Err(e) => {
                        // A terminate won the race while this create provisioned (the row
                        // is STOPPING or STOPPED, so it cannot become READY): its teardown
                        // ran before the backend knew the sandbox, so what was just made is
                        // this call's to take down — nothing else will see it again. The
                        // teardown's own last step does it (its final status write finds
                        // the row already ended and leaves it).
                        let _ = self.finish_teardown(&id, Vec::new(), "").await;
                        return Err(EngineError::from(e).with("sandbox_id", &id));
                    }
                };
                self.events.committed(seq);
            }
            Err(e) => {
                let msg = e.to_string();
                self.events.end_sandbox(&id, ss::FAILED, &msg)?;
                return Err(EngineError::from(e).with("sandbox_id", &id));
            }
        }
        self.get_sandbox(&id)
    }

    async fn image_root(&self, pinned: &PinnedRef) -> Result<ImageRoot, EngineError> {
        let images = self.image_store()?;
        let rec = images.ensure(&pinned.to_string()).await?;
        Ok(ImageRoot {
            rootfs: images.rootfs(&rec.digest)?,
            digest: rec.digest,
        })
    }

    fn image_store(&self) -> Result<&Arc<ImageStore>, EngineError> {
        self.images.as_ref().ok_or_else(|| {
            EngineError::new(
                ErrorCode::BackendCapabilityMismatch,
                "this server has no image store",
            )
        })
    }

    // ---- images ------------------------------------------------------------

    /// Pull (or find cached) a digest-pinned image.
    pub async fn pull_image(&self, reference: &str) -> Result<ImageRecord, EngineError> {
        let pinned = PinnedRef::parse(reference)?;
        Ok(self.image_store()?.ensure(&pinned.to_string()).await?)
    }

    /// Resolve a tag to its current digest (for pinning; nothing is pulled or cached).
    pub async fn resolve_image(
        &self,
        reference: &str,
    ) -> Result<cleanroom_image::resolve::Resolved, EngineError> {
        Ok(self.image_store()?.resolve(reference).await?)
    }

    pub fn list_images(&self) -> Result<Vec<ImageRecord>, EngineError> {
        Ok(self.image_store()?.list())
    }

    /// Remove a cached image unless a sandbox that is not yet stopped uses it.
    pub fn remove_image(&self, digest: &str) -> Result<ImageRecord, EngineError> {
        let digest = if digest.starts_with("sha256:") {
            digest.to_string()
        } else {
            format!("sha256:{digest}")
        };
        let users: Vec<String> = self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| !ss::is_terminal(s.status) && s.image_digest == digest)
            .map(|s| s.id)
            .collect();
        if !users.is_empty() {
            return Err(EngineError::new(
                ErrorCode::ImageInUse,
                format!("image {digest} is used by {}", users.join(", ")),
            )
            .with("sandbox_ids", users.join(",")));
        }
        Ok(self.image_store()?.remove(&digest)?)
    }

    pub(in crate::engine) fn get_sandbox(&self, id: &str) -> Result<SandboxRow, EngineError> {
        if !ids::looks_valid(id, "sbx_") {
            return Err(EngineError::sandbox_not_found(id));
        }
        self.store
            .get_sandbox(id)?
            .ok_or_else(|| EngineError::sandbox_not_found(id))
    }

    pub fn list_sandboxes(&self, include_stopped: bool) -> Result<Vec<SandboxRow>, EngineError> {
        Ok(self
            .store
            .list_sandboxes()?
            .into_iter()
            .filter(|s| include_stopped || !ss::is_terminal(s.status))
            .collect())
    }

    /// Read a file out of a READY sandbox (at most `max_bytes`, default 4 MiB, cap 16 MiB).
    pub(in crate::engine) async fn download_file(
        &self,
        sandbox_id: &str,
        path: &str,
        max_bytes: u64,
    ) -> Result<cleanroom_backend::FileContent, EngineError> {
        self.wake_if_suspended(sandbox_id, "files").await?;
        let sbx = self.get_sandbox(sandbox_id)?;
        if sbx.status != ss::READY {
            return Err(super::pause::not_ready(&sbx));
        }
        if !path.starts_with('/') || path.contains('\0') || path.len() > 4096 {
            return Err(EngineError::invalid(
                "path must be an absolute path inside the sandbox",
            ));
        }
        self.activity.touch(sandbox_id);
        let max = match max_bytes {
            0 => 4 << 20,
            n => n.min(16 << 20),
        };
        Ok(self.backend.read_file(sandbox_id, path, max).await?)
    }

    /// The sandbox's compiled policy; one that cannot be decoded is refused
    /// (`internal`, see [`crate::store::policy`]).
    pub fn compiled_policy(&self, row: &SandboxRow) -> Result<Arc<CompiledPolicy>, EngineError> {
        Ok(row.policy.get(&row.id)?.clone())
    }
}

fn n_of(hit: CapHit) -> String {
    match hit {
        CapHit::PerOwner(n) | CapHit::Total(n) => n.to_string(),
    }
}

/// What the backend reported about a provisioned sandbox (`sandbox inspect`'s
/// `backend_info`), from the stored provision record; empty before provisioning (and,
/// a display field, for a record that does not decode: see [`crate::store::provision`]).
pub fn backend_info(row: &SandboxRow) -> std::collections::BTreeMap<String, String> {
    match row.provisioned.get(&row.id) {
        Ok(Some(p)) => p.info.clone(),
        _ => Default::default(),
    }
}
