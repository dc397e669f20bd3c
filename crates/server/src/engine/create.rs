//! The create path, in one place: [`Engine::create`] makes a sandbox for a caller from a
//! policy (a fresh one, or a warm pool's that matches) or restores one from a snapshot,
//! then binds the caller's agent identity, gives them a hold on its image, starts its
//! lifetime clocks and labels it — and takes it down again when any of that cannot be
//! recorded (the caller gets an error, not an id, and nothing runs unbounded).
//!
//! The API layer only translates a `CreateSandboxRequest` into a [`CreateSpec`]
//! (`CreateSandbox`, `RunExecution`); learn mode's policy rewriting, snapshot restores,
//! agent keys, clocks and the cleanup are rules, so they live here.

use super::pools::claim::CreateRequest;
use super::pools::pending::{PendingClaim, Taken};
use super::Engine;
use crate::budgets::limits::RequestedLimits;
use crate::identity::attest::AgentBinding;
use crate::identity::auth::Principal;
use crate::model::error::EngineError;
use crate::store::{SandboxCaps, SandboxRow};
use cleanroom_proto::cleanroom::v1::Bootstrap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where a new sandbox comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The spec's policy, served by a matching warm pool of the caller's when
    /// `use_pools` and no lockfiles, else made fresh.
    Policy {
        /// Learn mode: the policy is rewritten to ask for every host it does not name.
        learn: bool,
        /// Lockfiles of the policy's `sandbox.registries` (path -> content).
        lockfiles: BTreeMap<String, Vec<u8>>,
        use_pools: bool,
    },
    /// The caller's snapshot: its policy, image and limits (non-zero `limits` override).
    Snapshot(String),
    /// The caller's memory checkpoint: its processes, memory, files, policy, image and
    /// limits (docs/checkpoints.md).
    Checkpoint(String),
}

/// Everything a create asks for, in engine terms.
#[derive(Debug, Clone)]
pub struct CreateSpec {
    pub source: Source,
    /// The policy (YAML; empty: the built-in one). A snapshot brings its own.
    pub policy_yaml: String,
    /// The request's image (wins over the policy's `sandbox.image.ref`).
    pub image_ref: String,
    pub limits: RequestedLimits,
    /// The agent identity to bind (empty: none) and its delegation chain.
    pub agent_public_key: String,
    pub delegation_chain: Vec<String>,
    /// Lifetime clocks (0: the policy's, else the server's default).
    pub ttl_seconds: u64,
    pub idle_timeout_seconds: u64,
    /// Suspend (not terminate) after this many idle seconds (0: the policy's, else never).
    pub suspend_after_seconds: u64,
    pub labels: BTreeMap<String, String>,
    /// Named volumes to mount besides the policy's `sandbox.volumes` (merged into the
    /// policy before it is compiled: its hash covers them). Never served from a pool.
    pub volumes: Vec<cleanroom_policy::VolumeMount>,
    /// The request's runtime (wins over the policy's `sandbox.runtime`; `None`: the
    /// policy's, else the server's default).
    pub runtime: Option<cleanroom_vocab::Runtime>,
    /// Made for one command whose end ends it (`RunExecution` with `terminate_on_exit`):
    /// the runtime may start the sandbox with it ([`cleanroom_backend::SandboxSpec::one_shot`]).
    pub one_shot: bool,
}

impl CreateSpec {
    /// Refuse a malformed spec before anything is made or taken.
    fn check(&self) -> Result<(), EngineError> {
        super::lifetimes::check_seconds("ttl_seconds", self.ttl_seconds)?;
        super::lifetimes::check_seconds("idle_timeout_seconds", self.idle_timeout_seconds)?;
        super::lifetimes::check_seconds("suspend_after_seconds", self.suspend_after_seconds)?;
        crate::store::labels::check(self.labels.iter())
            .map_err(|m| EngineError::invalid(m).with("field", "labels"))?;
        if let Source::Checkpoint(_) = self.source {
            let l = &self.limits;
            let limits = l.memory_bytes | l.pids | l.cpu_millis | l.disk_bytes | l.output_bytes;
            if !self.policy_yaml.trim().is_empty()
                || !self.image_ref.trim().is_empty()
                || self.runtime.is_some()
                || !self.volumes.is_empty()
                || limits != 0
            {
                return Err(EngineError::invalid(
                    "from_checkpoint cannot be combined with a policy, an image, a runtime, \
                     volumes or limits: the checkpoint brings its own",
                )
                .with("field", "from_checkpoint"));
            }
        }
        if !self.volumes.is_empty() {
            if matches!(self.source, Source::Snapshot(_)) {
                return Err(snapshot_with_policy());
            }
            cleanroom_policy::volumes::check_all(self.volumes.clone()).map_err(|m| {
                EngineError::new(cleanroom_vocab::ErrorCode::VolumeMountInvalid, m)
                    .with("field", "volumes")
            })?;
        }
        Ok(())
    }
}

fn snapshot_with_policy() -> EngineError {
    EngineError::invalid(
        "from_snapshot cannot be combined with a policy, an image or a runtime: the snapshot brings its own",
    )
    .with("field", "from_snapshot")
}

impl Engine {
    /// Make (or take from a warm pool, or restore) a sandbox for `who`. Returns it with
    /// the bootstrap its policy asks the client to perform before a workload. With
    /// `defer`, a pool's sandbox may be only taken ([`Taken::Pending`]): its claim is
    /// then the caller's to commit (with its command: [`Engine::create_execution_in`]),
    /// and its clocks start at that commit ([`Engine::start_clocks`]).
    pub async fn create(
        self: &Arc<Self>,
        who: &Principal,
        caps: SandboxCaps,
        spec: &CreateSpec,
        defer: bool,
    ) -> Result<(Taken, Option<Bootstrap>), EngineError> {
        let mut measured = crate::metrics::observe(crate::metrics::Op::Create);
        spec.check()?;
        let binding = AgentBinding::parse(&spec.agent_public_key, &spec.delegation_chain)?;
        let taken = match &spec.source {
            Source::Policy {
                learn,
                lockfiles,
                use_pools,
            } => {
                let yaml = if *learn {
                    cleanroom_policy::ask::learning_yaml(&spec.policy_yaml)?
                } else {
                    spec.policy_yaml.clone()
                };
                // The request's volumes become part of the policy (and of its hash); a
                // pool's template has none, so no pool serves such a request.
                let yaml = cleanroom_policy::volumes::yaml_with_volumes(&yaml, &spec.volumes)?;
                let yaml = match spec.runtime {
                    Some(rt) => cleanroom_policy::with_runtime(&yaml, rt)?,
                    None => yaml,
                };
                let req = CreateRequest {
                    policy_yaml: &yaml,
                    image_ref: &spec.image_ref,
                    requested: spec.limits,
                    binding: &binding,
                    use_pools: *use_pools && spec.volumes.is_empty(),
                    lockfiles,
                    one_shot: spec.one_shot,
                };
                self.create_or_take(who, caps, req, defer).await?
            }
            Source::Snapshot(id) => {
                if !spec.policy_yaml.trim().is_empty()
                    || !spec.image_ref.trim().is_empty()
                    || spec.runtime.is_some()
                {
                    return Err(snapshot_with_policy());
                }
                Taken::Made(
                    self.create_sandbox_from_snapshot(who, caps, id, spec.limits)
                        .await?,
                )
            }
            Source::Checkpoint(id) => {
                Taken::Made(self.create_sandbox_from_checkpoint(who, caps, id).await?)
            }
        };
        let restored = matches!(spec.source, Source::Snapshot(_) | Source::Checkpoint(_));
        let finish = || -> Result<Option<Bootstrap>, EngineError> {
            let row = match &taken {
                Taken::Pending(p) => p.row(),
                Taken::Made(row) => {
                    // A restored sandbox is READY before its binding is written.
                    if restored {
                        self.bind_sandbox(row, &binding, "")?;
                    }
                    // (A pending claim's commit holds the image for the claimer, and its
                    // clocks start once it is committed: a sandbox given back to its
                    // pool must not carry them.)
                    self.claim_image(who, &row.image_digest)?;
                    self.start_clocks(row, spec)?;
                    row
                }
            };
            crate::engine::bootstrap::plan_stored(&row.id, &row.policy)
        };
        match finish() {
            Ok(bootstrap) => {
                measured.ok();
                Ok((taken, bootstrap))
            }
            Err(e) => {
                // A sandbox made here whose binding, image hold or clocks cannot be
                // recorded is taken down: the caller gets an error, not its id, and it
                // must not run unbounded. (A pending claim is dropped: the sandbox goes
                // back to its pool.)
                if let Taken::Made(row) = &taken {
                    let _ = self.terminate_sandbox_in_background(&row.id);
                }
                Err(e)
            }
        }
    }

    /// [`Engine::create`] for a caller that starts nothing in it (`CreateSandbox`): a
    /// pool's sandbox is claimed and committed at once.
    pub async fn create_now(
        self: &Arc<Self>,
        who: &Principal,
        caps: SandboxCaps,
        spec: &CreateSpec,
    ) -> Result<(SandboxRow, Option<Bootstrap>), EngineError> {
        match self.create(who, caps, spec, false).await? {
            (Taken::Made(row), bootstrap) => Ok((row, bootstrap)),
            (Taken::Pending(p), bootstrap) => Ok((self.commit_alone(p, spec)?, bootstrap)),
        }
    }

    /// The sandbox's lifetime clocks (TTL, idle timeout) as the spec, its policy or the
    /// server's defaults set them, and the spec's labels: both are the caller's, so a
    /// pool's sandbox gets them only once its claim is committed.
    pub fn start_clocks(&self, row: &SandboxRow, spec: &CreateSpec) -> Result<(), EngineError> {
        if !spec.labels.is_empty() {
            self.store.set_sandbox_labels(&row.id, &spec.labels)?;
        }
        self.init_lifetime(
            row,
            super::lifetimes::Clocks {
                ttl_seconds: spec.ttl_seconds,
                idle_timeout_seconds: spec.idle_timeout_seconds,
                suspend_after_seconds: spec.suspend_after_seconds,
            },
        )
    }

    /// Commit a pending claim made without a command, and start its clocks. Once the claim
    /// is committed the sandbox is the caller's: clocks that cannot be recorded would leave
    /// it unbounded (and the error names no sandbox), so it is taken down — fail closed, as
    /// [`Engine::claim_with_clocks`] does.
    pub fn commit_alone(
        self: &Arc<Self>,
        p: PendingClaim,
        spec: &CreateSpec,
    ) -> Result<SandboxRow, EngineError> {
        let row = p.commit()?;
        if let Err(e) = self.start_clocks(&row, spec) {
            let _ = self.terminate_sandbox_in_background(&row.id);
            return Err(e);
        }
        Ok(row)
    }

    /// A pooled start whose command could not be started may have committed its claim all
    /// the same (a process ran, or the failure was recorded as the caller's execution):
    /// the sandbox is then the caller's, unknown to them but by the error's `sandbox_id`.
    /// It is torn down as `terminate_on_exit` asks, or else gets its lifetime clocks —
    /// never left running unbounded and charged to its owner. A claim given back to its
    /// pool is the pool's again.
    pub fn settle_failed_claim(
        self: &Arc<Self>,
        who: &Principal,
        row: &SandboxRow,
        spec: &CreateSpec,
        terminate_on_exit: bool,
    ) {
        let claimed = self
            .get_sandbox(&row.id)
            .is_ok_and(|now| who.owns(&now.owner));
        if claimed && (terminate_on_exit || self.start_clocks(row, spec).is_err()) {
            if let Err(e) = self.terminate_sandbox_in_background(&row.id) {
                tracing::warn!(sandbox_id = %row.id, error = %e, "could not tear down the sandbox of a failed start");
            }
        }
    }

    /// `ClaimSandbox`: a warm sandbox of `pool_id` for `who`, with its lifetime clocks
    /// started (the policy's, else the server's TTL and idle timeout) as for every sandbox
    /// a caller gets. Unrecorded clocks would leave it unbounded: fail closed, and take
    /// it down.
    pub fn claim_with_clocks(
        self: &Arc<Self>,
        who: &Principal,
        pool_id: &str,
        binding: &AgentBinding,
        caps: SandboxCaps,
    ) -> Result<super::pools::claim::Claimed, EngineError> {
        let mut measured = crate::metrics::observe(crate::metrics::Op::Claim);
        let c = self.claim_sandbox(who, pool_id, binding, caps)?;
        if let Err(e) = self.init_lifetime(&c.sandbox, Default::default()) {
            let _ = self.terminate_sandbox_in_background(&c.sandbox.id);
            return Err(e);
        }
        measured.ok();
        Ok(c)
    }
}
