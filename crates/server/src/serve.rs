//! `cleanroom serve`: bind the Connect services on a unix socket or TCP and run until a
//! signal. HTTP/1.1 and HTTP/2 (h2c) are both accepted on either listener.

use crate::api::Api;
use crate::engine::Engine;
use cleanroom_backend::linux::LinuxBackend;
use cleanroom_proto::cleanroom::v1::{ExecutionServiceExt, ImageServiceExt, SandboxServiceExt};
use std::future::IntoFuture;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where to listen.
#[derive(Debug, Clone)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(String),
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Listen,
    pub state_dir: PathBuf,
    /// The `cleanroom` binary, re-executed as each sandbox's pid 1.
    pub init_exe: PathBuf,
    /// `HOST=IP[,IP…]` overrides for the egress gateway's upstream resolution.
    pub egress_resolve: Vec<String>,
    /// Name patterns whose special-purpose DNS answers the egress gateway may use.
    pub egress_trust_internal: Vec<String>,
    /// How OCI registries are reached (plain-HTTP exceptions, credentials).
    pub registry: cleanroom_image::RegistryConfig,
    /// File of `ID=value` secret values (see [`crate::secrets`]); the server's
    /// `CLEANROOM_SECRET_<ID>` environment variables are read too.
    pub secrets_file: Option<PathBuf>,
    /// PEM files of CAs the gateway trusts for upstream TLS besides the system's.
    pub upstream_ca: Vec<PathBuf>,
    /// Output retention watermarks and GC ([`crate::quota`], [`crate::retention`]).
    pub retention: crate::quota::RetentionConfig,
    /// Size caps of the image cache.
    pub image_limits: cleanroom_image::ImageLimits,
}

/// Startup failures.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("state directory {0}: {1}")]
    StateDir(PathBuf, std::io::Error),
    #[error("another cleanroom server already uses state directory {0}")]
    StateLocked(PathBuf),
    #[error("another server is already listening on {0}")]
    AddressInUse(String),
    #[error("invalid --egress-resolve {0}")]
    EgressResolve(String),
    #[error("invalid --egress-trust-internal {0}")]
    EgressTrustInternal(String),
    #[error("--upstream-ca {0}: {1}")]
    UpstreamCa(PathBuf, String),
    #[error(transparent)]
    Secrets(#[from] crate::secrets::SecretsError),
    #[error("cannot listen on {0}: {1}")]
    Listen(String, std::io::Error),
    #[error(transparent)]
    Engine(#[from] crate::error::EngineError),
    #[error(transparent)]
    Backend(#[from] cleanroom_backend::BackendError),
    #[error(transparent)]
    Image(#[from] cleanroom_image::ImageError),
}

/// Hold an exclusive flock on the state dir for the server's life: two servers sharing
/// one store and one sandbox root would reconcile each other's sandboxes away.
fn lock_state_dir(dir: &Path) -> Result<std::fs::File, ServeError> {
    std::fs::create_dir_all(dir).map_err(|e| ServeError::StateDir(dir.into(), e))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("server.lock"))
        .map_err(|e| ServeError::StateDir(dir.into(), e))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(ServeError::StateLocked(dir.into()));
    }
    Ok(f)
}

/// Build the router with both services.
pub fn router(engine: Arc<Engine>) -> connectrpc::Router {
    let api = Arc::new(Api { engine });
    let router = SandboxServiceExt::register(api.clone(), connectrpc::Router::new());
    let router = ImageServiceExt::register(api.clone(), router);
    ExecutionServiceExt::register(api, router)
}

/// Prepare a unix socket path: create its directory, refuse if a live server owns it,
/// remove a stale socket file.
fn prepare_socket(path: &Path) -> Result<(), ServeError> {
    let display = path.display().to_string();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ServeError::Listen(display.clone(), e))?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ServeError::AddressInUse(display));
        }
        std::fs::remove_file(path).map_err(|e| ServeError::Listen(display, e))?;
    }
    Ok(())
}

/// Run the server until `shutdown` resolves; sandboxes still running are terminated.
pub async fn run(
    cfg: ServeConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let _lock = lock_state_dir(&cfg.state_dir)?;
    let mut upstream = cleanroom_egress::UpstreamConfig::default();
    for spec in &cfg.egress_resolve {
        upstream
            .add_override(spec)
            .map_err(ServeError::EgressResolve)?;
    }
    for pattern in &cfg.egress_trust_internal {
        upstream
            .add_trusted_internal(pattern)
            .map_err(ServeError::EgressTrustInternal)?;
    }
    for path in &cfg.upstream_ca {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| ServeError::UpstreamCa(path.clone(), e.to_string()))?;
        upstream
            .add_extra_roots(&pem)
            .map_err(|e| ServeError::UpstreamCa(path.clone(), e.to_string()))?;
    }
    let secrets = crate::secrets::SecretStore::load(cfg.secrets_file.as_deref(), std::env::vars())?;
    if !secrets.ids().is_empty() {
        tracing::info!(ids = ?secrets.ids(), "secrets loaded");
    }
    let backend = Arc::new(LinuxBackend::new(
        cfg.state_dir.join("sandboxes"),
        cfg.init_exe.clone(),
    )?);
    let images =
        cleanroom_image::ImageStore::open(&cfg.state_dir.join("images"), cfg.registry.clone())?
            .with_limits(cfg.image_limits);
    let engine = Engine::new(
        &cfg.state_dir,
        backend,
        Some(Arc::new(images)),
        Arc::new(upstream),
        Arc::new(secrets),
    )?;
    engine.recover().await?;
    engine.start_retention(cfg.retention.clone());
    let app = router(engine.clone()).into_axum_router();

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let graceful = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let served = match &cfg.listen {
        Listen::Unix(path) => {
            prepare_socket(path)?;
            let listener = tokio::net::UnixListener::bind(path)
                .map_err(|e| ServeError::Listen(path.display().to_string(), e))?;
            // Only the server's own user may drive it: a socket is a full control channel.
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
            tracing::info!(listen = %format!("unix://{}", path.display()), "cleanroom server ready");
            eprintln!("cleanroom: listening on unix://{}", path.display());
            let server = axum::serve(listener, app).with_graceful_shutdown(graceful);
            let out = run_until_stopped(server.into_future(), stop_rx).await;
            let _ = std::fs::remove_file(path);
            out
        }
        Listen::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ServeError::Listen(addr.clone(), e))?;
            let local = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| addr.clone());
            tracing::info!(listen = %format!("http://{local}"), "cleanroom server ready");
            eprintln!("cleanroom: listening on http://{local}");
            let server = axum::serve(listener, app).with_graceful_shutdown(graceful);
            run_until_stopped(server.into_future(), stop_rx).await
        }
    };
    if let Err(e) = served {
        tracing::error!(error = %e, "server error");
    }
    for s in engine.list_sandboxes(false).unwrap_or_default() {
        if let Err(e) = engine.terminate_sandbox(&s.id).await {
            tracing::warn!(sandbox_id = %s.id, error = %e, "could not terminate sandbox on shutdown");
        }
    }
    engine.close().await;
    Ok(())
}

/// Graceful shutdown waits for open streams; give them a moment, then stop anyway.
async fn run_until_stopped(
    server: impl std::future::Future<Output = std::io::Result<()>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    tokio::pin!(server);
    tokio::select! {
        r = &mut server => r,
        _ = async {
            let _ = stop.wait_for(|s| *s).await;
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        } => Ok(()),
    }
}
