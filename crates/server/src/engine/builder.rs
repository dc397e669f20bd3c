//! How an [`Engine`] comes to be: every part it holds is given before it exists, so an
//! engine is complete from its first moment — no setting filled in later, no window in
//! which a sandbox could be created without the registry hub or signed without the
//! attestor the operator configured.
//!
//! None of the parts needs the engine: the registry hub is opened from the state dir and
//! the settings, the attestor from the state dir, the init binary and the backend's
//! name and capabilities. The one task that needs the engine (recording egress notes)
//! holds a `Weak` to it.

use super::egress::EgressHub;
use super::events::EventLog;
use super::Engine;
use crate::engine::registries::RegistryHub;
use crate::identity::attest::Attestor;
use crate::identity::secrets::SecretStore;
use crate::model::error::EngineError;
use crate::store::Store;
use cleanroom_backend::Backend;
use cleanroom_egress::UpstreamConfig;
use cleanroom_image::ImageStore;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The parts of an [`Engine`]; [`EngineBuilder::build`] makes it.
pub struct EngineBuilder {
    state_dir: PathBuf,
    backend: Arc<dyn Backend>,
    images: Option<Arc<ImageStore>>,
    upstream: Arc<UpstreamConfig>,
    secrets: Arc<SecretStore>,
    registries: Option<RegistryHub>,
    attestor: Option<Arc<Attestor>>,
    volumes: Option<Arc<crate::volumes::Volumes>>,
}

/// Gateway decisions written to the store in one commit at most.
const EGRESS_BATCH: usize = 256;

impl Engine {
    /// Start building an engine on `state_dir` (database + logs) and `backend`. Without
    /// further parts: no image cache, default upstream settings, no secrets, no package
    /// registry hub, no attestation signer.
    pub fn builder(state_dir: &Path, backend: Arc<dyn Backend>) -> EngineBuilder {
        EngineBuilder {
            state_dir: state_dir.to_path_buf(),
            backend,
            images: None,
            upstream: Default::default(),
            secrets: Default::default(),
            registries: None,
            attestor: None,
            volumes: None,
        }
    }

    /// An engine of the given parts and no registry hub or attestor (see
    /// [`Engine::builder`]).
    pub fn new(
        state_dir: &Path,
        backend: Arc<dyn Backend>,
        images: Option<Arc<ImageStore>>,
        upstream: Arc<UpstreamConfig>,
        secrets: Arc<SecretStore>,
    ) -> Result<Arc<Engine>, EngineError> {
        Engine::builder(state_dir, backend)
            .images(images)
            .upstream(upstream)
            .secrets(secrets)
            .build()
    }
}

impl EngineBuilder {
    /// The OCI image cache (`None`: this server cannot root sandboxes on images).
    pub fn images(mut self, images: Option<Arc<ImageStore>>) -> Self {
        self.images = images;
        self
    }

    /// How the egress gateways reach allowed hosts.
    pub fn upstream(mut self, upstream: Arc<UpstreamConfig>) -> Self {
        self.upstream = upstream;
        self
    }

    /// The secrets the gateways may inject.
    pub fn secrets(mut self, secrets: Arc<SecretStore>) -> Self {
        self.secrets = secrets;
        self
    }

    /// The operator's package registry settings and the shared artifact cache.
    pub fn registries(mut self, hub: RegistryHub) -> Self {
        self.registries = Some(hub);
        self
    }

    /// The attestation signer.
    pub fn attestor(mut self, attestor: Attestor) -> Self {
        self.attestor = Some(Arc::new(attestor));
        self
    }

    /// Mount named volumes from this store ([`crate::volumes`]); without one the server
    /// mounts none and refuses creates that ask for a volume.
    pub fn volumes(mut self, volumes: crate::volumes::Volumes) -> Self {
        self.volumes = Some(Arc::new(volumes));
        self
    }

    /// The backend's name and capabilities, as an attestor states them (for
    /// [`Attestor::load_or_create`] before the engine exists).
    pub fn backend_facts(&self) -> (&'static str, Vec<&'static str>) {
        (
            self.backend.name(),
            cleanroom_vocab::Capability::keys(&self.backend.capabilities()),
        )
    }

    /// Every runtime this server has, with its capabilities (an attestor states each for
    /// the sandboxes of that runtime).
    pub fn runtime_facts(&self) -> Vec<(&'static str, Vec<&'static str>)> {
        cleanroom_vocab::Runtime::ALL
            .iter()
            .filter_map(|rt| {
                let caps = self.backend.capabilities_of(*rt).ok()?;
                Some((rt.as_str(), cleanroom_vocab::Capability::keys(&caps)))
            })
            .collect()
    }

    /// Open the store and make the engine. Must be called inside a tokio runtime
    /// (gateway decisions are recorded by a task of the engine). Call
    /// [`Engine::recover`] next.
    pub fn build(self) -> Result<Arc<Engine>, EngineError> {
        let logs_dir = self.state_dir.join("executions");
        std::fs::create_dir_all(&logs_dir)
            .map_err(|e| EngineError::internal(format!("create {}: {e}", logs_dir.display())))?;
        let store = Arc::new(Store::open(&self.state_dir.join("state.db"))?);
        let (notes_tx, mut notes_rx) = super::egress_notes::channel();
        let engine = Arc::new(Engine {
            events: Arc::new(EventLog::new(store.clone())),
            egress: EgressHub::new(
                self.upstream,
                self.secrets,
                notes_tx,
                self.backend.guest_layout(),
            ),
            store,
            backend: self.backend,
            live: Default::default(),
            images: self.images,
            retention: Arc::new(crate::output::quota::Retention::new(&logs_dir)),
            logs_dir,
            registries: self.registries,
            activity: Default::default(),
            lifetime_defaults: Default::default(),
            pools: Default::default(),
            attestor: self.attestor,
            volumes: self.volumes,
            stopping: Default::default(),
            foreground: Default::default(),
            #[cfg(test)]
            compiles: Default::default(),
        });
        let weak = Arc::downgrade(&engine);
        // Decisions are written in batches (what arrived while the last batch was being
        // written, up to EGRESS_BATCH) off the runtime's workers: the SQLite commit is the
        // largest cost of a small request's decision and must not hold a worker that
        // sandboxes' connections need.
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(EGRESS_BATCH);
            while notes_rx.recv_many(&mut batch, EGRESS_BATCH).await {
                let Some(engine) = weak.upgrade() else { break };
                let notes = std::mem::replace(&mut batch, Vec::with_capacity(EGRESS_BATCH));
                let n = notes.len();
                let _ = tokio::task::spawn_blocking(move || engine.record_egress(notes)).await;
                // Also after a panic: nobody waits for decisions that will never come.
                notes_rx.recorded().add(n);
            }
        });
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::fake::FakeBackend;

    #[tokio::test]
    async fn an_engine_holds_the_parts_it_was_built_with_from_its_first_moment() {
        let dir = tempfile::tempdir().unwrap();
        let bare = Engine::builder(dir.path(), Arc::new(FakeBackend::default()))
            .build()
            .unwrap();
        assert!(bare.attestation_public_key().is_none());
        drop(bare);
        let builder = Engine::builder(dir.path(), Arc::new(FakeBackend::default()));
        let (name, caps) = builder.backend_facts();
        let attestor =
            Attestor::load_or_create(dir.path(), &std::env::current_exe().unwrap(), name, &caps)
                .unwrap();
        let key = attestor.public_key();
        let engine = builder.attestor(attestor).build().unwrap();
        assert_eq!(engine.attestation_public_key(), Some(key));
    }
}
