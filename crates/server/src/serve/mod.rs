//! `cleanroom serve`: bind the Connect services on a unix socket, TCP or TLS and run
//! until a signal. HTTP/1.1 and HTTP/2 are both accepted on every listener. Every
//! listener authenticates (see [`crate::identity::auth`]); a TCP listener without credentials
//! configured refuses to start unless `--insecure-no-auth` is given and it is loopback.
//! The listeners' accept loops are in [`listener`]; [`assemble`] turns plain settings
//! (the CLI's flags) into a [`ServeConfig`].

pub mod assemble;
pub mod front;
pub mod listener;
pub mod ui;

use crate::api::Api;
use crate::engine::Engine;
use cleanroom_backend::linux::LinuxBackend;
use cleanroom_proto::cleanroom::v1::{ExecutionServiceExt, ImageServiceExt, SandboxServiceExt};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where to listen.
#[derive(Debug, Clone)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(String),
    /// `https://HOST:PORT`: TLS with [`AuthConfig::tls_cert`]/`tls_key`.
    Https(String),
}

/// Who may call the API and how connections are bounded.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Hashed bearer tokens (see [`crate::identity::auth`] for the format).
    pub tokens_file: Option<PathBuf>,
    /// TLS certificate chain and key (PEM) for `https://` listeners.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// CA (PEM) whose client certificates authenticate callers on `https://`.
    pub client_ca: Option<PathBuf>,
    /// Allow an unauthenticated TCP listener (loopback only; every caller is admin).
    pub insecure_no_auth: bool,
    /// Connection guards.
    pub conn: crate::serve::listener::ConnLimits,
    /// Caps on live sandboxes.
    pub caps: crate::store::SandboxCaps,
}

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub listen: Listen,
    /// A further TCP listener for browsers (`--ui-listen`, [`crate::web`]).
    pub ui_listen: Option<Listen>,
    /// A further TCP listener serving `/metrics` only (`--metrics-listen`).
    pub metrics_listen: Option<Listen>,
    pub state_dir: PathBuf,
    /// The `cleanroom` binary, re-executed as each sandbox's pid 1.
    pub init_exe: PathBuf,
    /// Leave the host's cgroup2 mount options alone (no `favordynmods`, see
    /// [`cleanroom_backend::linux::hosttune`]).
    pub keep_cgroup_options: bool,
    /// `HOST=IP[,IP…]` overrides for the egress gateway's upstream resolution.
    pub egress_resolve: Vec<String>,
    /// Name patterns whose special-purpose DNS answers the egress gateway may use.
    pub egress_trust_internal: Vec<String>,
    /// How OCI registries are reached (plain-HTTP exceptions, credentials).
    pub registry: cleanroom_image::RegistryConfig,
    /// File of `ID=value` secret values (see [`crate::identity::secrets`]); the server's
    /// `CLEANROOM_SECRET_<ID>` environment variables are read too.
    pub secrets_file: Option<PathBuf>,
    /// PEM files of CAs the gateway trusts for upstream TLS besides the system's.
    pub upstream_ca: Vec<PathBuf>,
    /// Package registry mediation: default upstreams, artifact cache cap.
    pub package_registries: crate::engine::registries::RegistrySettings,
    /// Output retention watermarks and GC ([`crate::output::quota`], [`crate::output::retention`]).
    pub retention: crate::output::quota::RetentionConfig,
    /// Size caps of the image cache.
    pub image_limits: cleanroom_image::ImageLimits,
    /// Authentication, TLS, connection limits and sandbox caps.
    pub auth: AuthConfig,
    /// Egress approval defaults ([`crate::engine::approvals`]).
    pub approvals: crate::engine::approvals::ApprovalSettings,
    /// Default sandbox TTL / idle timeout ([`crate::engine::lifetimes`]).
    pub lifetimes: crate::engine::lifetimes::LifetimeDefaults,
    /// The interactive console's QUIC endpoint ([`crate::console`]).
    pub console: crate::console::ConsoleConfig,
    /// Isolation runtimes: the default and where gVisor's `runsc` is.
    pub runtimes: RuntimeSettings,
    /// `--cluster etcd=URL… --node-name --advertise`: join the cluster (docs/cluster.md).
    pub cluster: Option<cleanroom_cluster::ClusterConfig>,
    /// Bounds of inbound traffic (`sandbox expose`, `port-forward`; [`crate::inbound`]).
    pub inbound: crate::inbound::InboundLimits,
    /// `--preview-domain`: exposures at host names of their own
    /// ([`crate::inbound::preview`]); needs a TCP listener.
    pub preview_domain: Option<crate::inbound::preview::PreviewDomain>,
}

/// `serve --default-runtime`, `--runsc`, `--gvisor-platform`.
#[derive(Debug, Clone, Default)]
pub struct RuntimeSettings {
    /// The runtime of sandboxes whose request and policy name none (default `linux`).
    pub default: Option<cleanroom_vocab::Runtime>,
    /// The `runsc` binary (default: on `PATH`).
    pub runsc: Option<PathBuf>,
    /// gVisor platform (default: systrap where runsc has it, else ptrace).
    pub gvisor_platform: Option<cleanroom_backend::gvisor::Platform>,
    /// `--egress-plane`: the data plane of new sandboxes' egress (`None`: the default,
    /// [`crate::engine::egress::DEFAULT_PLANE`]).
    pub egress_plane: Option<cleanroom_backend::Plane>,
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
    Secrets(#[from] crate::identity::secrets::SecretsError),
    #[error("cannot listen on {0}: {1}")]
    Listen(String, std::io::Error),
    /// Refused authentication/TLS settings (stable code `auth_config_invalid`).
    #[error("{0}")]
    Auth(String),
    #[error(transparent)]
    Engine(#[from] crate::model::error::EngineError),
    #[error(transparent)]
    Backend(#[from] cleanroom_backend::BackendError),
    #[error(transparent)]
    Image(#[from] cleanroom_image::ImageError),
    /// `--default-runtime gvisor` on a server where gVisor cannot run.
    #[error("{0}")]
    Runtime(String),
}

/// The server's runtimes: Linux always, gVisor where `runsc` is usable (said on stderr
/// either way, with the platform picked); the default must be available.
async fn runtimes(
    cfg: &ServeConfig,
    linux: Arc<LinuxBackend>,
) -> Result<Arc<dyn cleanroom_backend::Backend>, ServeError> {
    use cleanroom_backend::gvisor::GvisorBackend;
    let rt = &cfg.runtimes;
    let plane = crate::engine::egress::set_plane(rt.egress_plane);
    eprintln!("cleanroom: egress data plane: {}", plane.as_str());
    let gvisor = GvisorBackend::new(&cfg.state_dir, rt.runsc.as_deref(), rt.gvisor_platform).await;
    let gvisor: Result<Arc<dyn cleanroom_backend::Backend>, String> = match gvisor {
        Ok(g) => {
            eprintln!(
                "cleanroom: runtime gvisor: {} (platform {})",
                g.version(),
                g.platform().as_str()
            );
            Ok(Arc::new(g))
        }
        Err(why) => {
            eprintln!("cleanroom: runtime gvisor unavailable: {why}");
            Err(why)
        }
    };
    let default = rt.default.unwrap_or(cleanroom_vocab::Runtime::Linux);
    let runtimes = cleanroom_backend::runtimes::Runtimes::new(default, linux, gvisor)
        .map_err(ServeError::Runtime)?;
    Ok(Arc::new(runtimes))
}

/// Host tuning a root server applies once (docs/performance.md): cgroup migrations
/// without an RCU grace period. Logged either way; never fatal.
fn tune_host(keep_cgroup_options: bool) {
    use cleanroom_backend::linux::hosttune::{favor_dynamic_cgroups, Tuning};
    if keep_cgroup_options || !nix::unistd::geteuid().is_root() {
        return;
    }
    match favor_dynamic_cgroups() {
        Tuning::Enabled { mount } => tracing::info!(
            mount = %mount,
            "cgroup2 remounted with favordynmods: sandboxes join their cgroups without waiting for an RCU grace period (--keep-cgroup-options to leave it alone)"
        ),
        Tuning::AlreadyOn { mount } => {
            tracing::debug!(mount = %mount, "cgroup2 favordynmods already on")
        }
        Tuning::Unchanged { reason } => tracing::info!(
            reason = %reason,
            "cgroup2 favordynmods not set: each sandbox create may wait for an RCU grace period when joining its cgroups"
        ),
    }
}

/// Held while the server starts: if the start fails after the backend was made (the
/// store, the images, recovery, the listener …), the backend's runtime directory and the
/// tmpfs a root server mounted there are removed as a stop would (only when empty).
struct StartGuard(Option<Arc<LinuxBackend>>);

impl Drop for StartGuard {
    fn drop(&mut self) {
        if let Some(backend) = self.0.take() {
            backend.release_runtime_dir();
        }
    }
}

/// Grow the server's descriptor table for its sandbox cap now (after the backend raised
/// the descriptor limit), so no create or claim waits for an RCU grace period while the
/// kernel grows it under load ([`cleanroom_backend::linux::fdtable`]). Never fatal.
fn reserve_descriptors(max_sandboxes: u32) {
    use cleanroom_backend::linux::fdtable;
    match fdtable::reserve(fdtable::slots_for(max_sandboxes)) {
        Ok(slots) => tracing::debug!(slots, "descriptor table reserved"),
        Err(e) => {
            tracing::warn!(error = %e, "descriptor table not reserved: it grows while sandboxes are created")
        }
    }
}

/// Hold an exclusive flock on the state dir for the server's life: two servers sharing
/// one store and one sandbox root would reconcile each other's sandboxes away.
fn lock_state_dir(dir: &Path) -> Result<std::fs::File, ServeError> {
    std::fs::create_dir_all(dir).map_err(|e| ServeError::StateDir(dir.into(), e))?;
    secure_state_dir(dir)?;
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

/// The state dir holds sandbox-written data (snapshots, output) and the store: it must be
/// the server's own directory with mode 0700, or the server does not start (fail closed).
/// The mode is set through a descriptor of the directory itself (not following a link in
/// its last component) and both owner and mode are checked afterwards.
fn secure_state_dir(dir: &Path) -> Result<(), ServeError> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let fail = |what: String| {
        ServeError::StateDir(
            dir.into(),
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, what),
        )
    };
    let fd = nix::fcntl::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| fail(format!("open: {e}")))?;
    let st = nix::sys::stat::fstat(&fd).map_err(|e| fail(format!("stat: {e}")))?;
    let me = nix::unistd::geteuid().as_raw();
    if st.st_uid != me {
        return Err(fail(format!(
            "owned by uid {}, not by the server's uid {me}",
            st.st_uid
        )));
    }
    nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(0o700))
        .map_err(|e| fail(format!("cannot set mode 0700: {e}")))?;
    let st = nix::sys::stat::fstat(&fd).map_err(|e| fail(format!("stat: {e}")))?;
    if st.st_mode & 0o7777 != 0o700 {
        return Err(fail(format!(
            "mode is {:o} after setting 0700",
            st.st_mode & 0o7777
        )));
    }
    Ok(())
}

/// Build the router with every service.
pub fn router(
    engine: Arc<Engine>,
    caps: crate::store::SandboxCaps,
    console: Option<Arc<crate::console::Broker>>,
    cluster: Option<Arc<crate::cluster::ClusterNode>>,
    inbound: Option<Arc<crate::inbound::Inbound>>,
) -> connectrpc::Router {
    let files = crate::api::files::FileApi::new(engine.clone());
    let router =
        cleanroom_proto::cleanroom::v1::FileServiceExt::register(files, connectrpc::Router::new());
    let exposures = inbound
        .clone()
        .map(|i| i as Arc<dyn crate::api::ExposureLister>);
    let api = Arc::new(Api {
        engine,
        caps,
        console,
        cluster,
        exposures,
    });
    let router = match inbound {
        Some(i) => crate::inbound::api::register(i, router),
        None => router,
    };
    let router = SandboxServiceExt::register(api.clone(), router);
    let router = ImageServiceExt::register(api.clone(), router);
    let router = cleanroom_proto::cleanroom::v1::ApprovalServiceExt::register(api.clone(), router);
    let router = cleanroom_proto::cleanroom::v1::SnapshotServiceExt::register(api.clone(), router);
    let router = crate::api::pools::register(api.clone(), router);
    let router = ExecutionServiceExt::register(api.clone(), router);
    let router = crate::api::volumes::register(api.clone(), router);
    let router = crate::api::cluster::register(api.clone(), router);
    let router = crate::api::network::register(api.clone(), router);
    let router = crate::api::lifetime::register(api.clone(), router);
    // Seed 001's host-agent API over the same handlers (docs/hostagent.md).
    let router = crate::hostagent::register(api, router);
    reflection(router)
}

/// Server reflection (`grpc.reflection.v1` and `v1alpha`) over every file compiled into
/// the API, so `buf curl` and `grpcurl` work without a local schema. Behind the same
/// authentication as every other route.
fn reflection(router: connectrpc::Router) -> connectrpc::Router {
    match connectrpc_reflection::Reflector::from_descriptor_set_bytes(
        cleanroom_proto::FILE_DESCRIPTOR_SET,
    ) {
        Ok(r) => connectrpc_reflection::install(router, r),
        Err(e) => {
            // Only a broken build gets here (the set is compiled in); serve without it.
            tracing::error!(error = %e, "server reflection disabled: bad descriptor set");
            router
        }
    }
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
    let tokens = match &cfg.auth.tokens_file {
        Some(p) => Some(
            crate::identity::auth::TokenStore::load(p)
                .map_err(|e| ServeError::Auth(e.to_string()))?,
        ),
        None => None,
    };
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
    let secrets =
        crate::identity::secrets::SecretStore::load(cfg.secrets_file.as_deref(), std::env::vars())?;
    if !secrets.ids().is_empty() {
        tracing::info!(ids = ?secrets.ids(), "secrets loaded");
    }
    tune_host(cfg.keep_cgroup_options);
    let backend = Arc::new(LinuxBackend::new(
        cfg.state_dir.join("sandboxes"),
        cfg.init_exe.clone(),
    )?);
    // Until the server serves, a failed start undoes the backend's host state itself.
    let mut start_guard = StartGuard(Some(backend.clone()));
    let backend = runtimes(&cfg, backend).await?;
    reserve_descriptors(cfg.auth.caps.total);
    let images =
        cleanroom_image::ImageStore::open(&cfg.state_dir.join("images"), cfg.registry.clone())?
            .with_limits(cfg.image_limits);
    let hub = crate::engine::registries::RegistryHub::open(&cfg.state_dir, &cfg.package_registries)
        .map_err(|e| ServeError::StateDir(cfg.state_dir.join("registry-cache"), e))?;
    // Named volumes: a killed server's volume mounts are found and kept, half-made
    // volumes removed. Nothing here depends on the sandboxes recovery ends next.
    let volumes_dir = cfg.state_dir.clone();
    let volumes = tokio::task::spawn_blocking(move || crate::volumes::Volumes::open(&volumes_dir))
        .await
        .map_err(|e| crate::model::error::EngineError::internal(format!("volumes: {e}")))??;
    let versions: Vec<(&str, String)> = cleanroom_vocab::Runtime::ALL
        .iter()
        .filter_map(|rt| Some((rt.as_str(), backend.runtime_version(*rt)?)))
        .collect();
    let builder = Engine::builder(&cfg.state_dir, backend)
        .volumes(volumes)
        .images(Some(Arc::new(images)))
        .upstream(Arc::new(upstream))
        .secrets(Arc::new(secrets))
        .registries(hub);
    let (backend_name, capabilities) = builder.backend_facts();
    let mut attestor = crate::identity::attest::Attestor::load_or_create(
        &cfg.state_dir,
        &cfg.init_exe,
        backend_name,
        &capabilities,
    )
    .map_err(|e| crate::model::error::EngineError::internal(format!("attestation key: {e}")))?;
    for (runtime, caps) in builder.runtime_facts() {
        attestor.add_runtime(runtime, &caps);
    }
    for (runtime, version) in &versions {
        attestor.set_runtime_version(runtime, version);
    }
    let engine = builder.attestor(attestor).build()?;
    engine.recover().await?;
    engine.start_pools(cfg.auth.caps)?;
    engine.start_retention(cfg.retention.clone());
    engine.egress.approvals.configure(cfg.approvals);
    engine.start_lifetimes(cfg.lifetimes);
    // Bound only now: a connectable socket means a recovered, ready server. The
    // authentication rules depend on the address actually bound.
    let transport = bind(&cfg.listen, &cfg.auth, tokens.is_some()).await?;
    let ui_transport = match &cfg.ui_listen {
        Some(l) => Some(crate::serve::ui::bind(l, &cfg.auth).await?),
        None => None,
    };
    let metrics_transport = match &cfg.metrics_listen {
        Some(l) => Some(crate::serve::ui::bind_metrics(l, &cfg.auth).await?),
        None => None,
    };
    // Join the cluster once this host can answer (a server that cannot join does not
    // start: fail closed, `cluster_unavailable` / `node_name_taken`).
    // The member link first (mutual TLS with this node's identity: a bad or missing one
    // stops the start), so that the record names its bound address.
    let (cluster, member_link) = match cfg.cluster.clone() {
        Some(c) => {
            let (identity, listener, peer) = crate::cluster::bind_member_link(&c).await?;
            let capacity = u64::from(cfg.auth.caps.total);
            let node = crate::cluster::ClusterNode::join(
                c,
                &identity,
                peer.clone(),
                &engine,
                capacity,
                cfg.auth.caps.per_owner,
            )
            .await?;
            eprintln!(
                "cleanroom: cluster member {:?}, member link {peer}",
                node.node_name()
            );
            (Some(node), Some((identity, listener)))
        }
        None => (None, None),
    };
    let auth = Arc::new(crate::identity::auth::Authenticator {
        tokens,
        insecure_no_auth: cfg.auth.insecure_no_auth,
    });
    // The console endpoint first: the API issues its tickets.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let api_ip = match &cfg.listen {
        Listen::Unix(_) => None,
        Listen::Tcp(a) | Listen::Https(a) => a.parse::<std::net::SocketAddr>().ok().map(|s| s.ip()),
    };
    let console =
        crate::console::quic::start(engine.clone(), &cfg.console, api_ip, stop_rx.clone())
            .map_err(|e| ServeError::Listen("console endpoint".into(), std::io::Error::other(e)))?;
    // Exposures and port-forward (crate::inbound): their URLs on this same listener.
    let preview = match (&cfg.preview_domain, &transport.0) {
        (None, _) => None,
        (Some(d), crate::serve::listener::Transport::Tcp(l, tls)) => {
            let port = l
                .local_addr()
                .map_err(|e| ServeError::Listen("API listener".into(), e))?
                .port();
            Some(d.base(if tls.is_some() { "https" } else { "http" }, port))
        }
        // Refused when the settings were assembled; never a URL no browser can open.
        (Some(_), crate::serve::listener::Transport::Unix(_)) => None,
    };
    let inbound =
        crate::inbound::Inbound::open(&cfg.state_dir, engine.clone(), cfg.inbound, preview)
            .map_err(|e| ServeError::StateDir(cfg.state_dir.clone(), e))?;
    let mut connect = connectrpc::ConnectRpcService::new(router(
        engine.clone(),
        cfg.auth.caps,
        Some(console.broker.clone()),
        cluster.clone(),
        Some(inbound.clone()),
    ))
    .with_interceptor(crate::api::errors::DetailInterceptor)
    .with_interceptor(crate::api::interceptor::AuthInterceptor(auth.clone()));
    // Cluster routing: after authentication, before every handler (the one seam).
    if let Some(node) = &cluster {
        connect = connect.with_interceptor(crate::api::cluster_route::ClusterRoute(node.clone()));
    }
    let service = crate::api::errors::ApiService::new(connect);
    if let Some((identity, listener)) = member_link {
        tokio::spawn(crate::cluster::peer::serve(
            listener,
            identity,
            service.clone(),
            stop_rx.clone(),
        ));
    }
    // REST and /metrics beside Connect on the same listener (crate::rest).
    let api = Arc::new(Api {
        engine: engine.clone(),
        caps: cfg.auth.caps,
        console: Some(console.broker.clone()),
        cluster: cluster.clone(),
        exposures: Some(inbound.clone()),
    });
    let rest = crate::rest::Rest {
        api: api.clone(),
        auth: auth.clone(),
    };
    let inbound_state = Arc::new(crate::inbound::http::State {
        inbound: inbound.clone(),
        auth: auth.clone(),
    });
    let service = crate::inbound::http::InboundRouter::new(
        crate::rest::HttpService::new(service, rest),
        inbound,
        auth.clone(),
    );
    // The web console in front (crate::web): /ui/ pages and browser sessions.
    // Only the console's own listener: see `crate::web::WebService` (origins).
    let urls = ui_transport
        .as_ref()
        .into_iter()
        .filter_map(crate::serve::ui::url_of)
        .collect();
    let web = crate::web::Web {
        api,
        auth,
        sessions: Default::default(),
        urls,
        // Exposure URLs are on the main listener (another origin than the console's).
        exposure_base: crate::serve::ui::url_of(&transport.0),
    };
    let service = crate::web::WebService::new(service, web);
    if let Some(t) = ui_transport {
        tokio::spawn(crate::serve::listener::serve(
            t,
            crate::serve::front::Front::console(service.for_console()),
            cfg.auth.conn,
            stop_rx.clone(),
        ));
    }
    if let Some(t) = metrics_transport {
        tokio::spawn(crate::serve::listener::serve(
            t,
            crate::serve::front::Front::metrics(service.for_metrics()),
            cfg.auth.conn,
            stop_rx.clone(),
        ));
    }

    let (transport, socket_path) = transport;
    // From here on the stop below terminates the sandboxes and closes the backend.
    start_guard.0 = None;
    // The accept loop runs as a task on a runtime worker, not on this (block_on) thread:
    // a new connection then wakes one thread — the worker whose epoll reports it, which
    // accepts and polls the connection's task itself — instead of three (that worker,
    // this thread to accept, and a worker for the connection's task).
    let service =
        crate::serve::front::Front::main(service, inbound_state, cfg.preview_domain.clone());
    let served = tokio::spawn(crate::serve::listener::serve(
        transport,
        service,
        cfg.auth.conn,
        stop_rx,
    ))
    .await
    .unwrap_or_else(|e| Err(std::io::Error::other(format!("accept loop: {e}"))));
    console.shutdown().await;
    if let Some(c) = &cluster {
        c.leave().await;
    }
    if let Some(path) = socket_path {
        let _ = std::fs::remove_file(path);
    }
    if let Err(e) = served {
        tracing::error!(error = %e, "server error");
    }
    // All at once, not one by one: the stop deadline (the CLI's, 10 s after the signal)
    // must not run out while sandboxes wait their turn. Whatever is left when it fires is
    // reclaimed by the next server's recovery.
    engine.stop_pools();
    let sandboxes = engine.list_sandboxes(false).unwrap_or_default();
    futures::future::join_all(sandboxes.iter().map(|s| {
        let engine = engine.clone();
        async move {
            if let Err(e) = engine.terminate_sandbox(&s.id).await {
                tracing::warn!(sandbox_id = %s.id, error = %e, "could not terminate sandbox on shutdown");
            }
        }
    }))
    .await;
    engine.close().await;
    Ok(())
}

/// Bind the listener and check that it authenticates: a unix socket by peer uid (mode
/// 0600, or 0660 for group `cleanroom` when that group exists); TCP by tokens or client
/// certificates, or `--insecure-no-auth` on a loopback address only.
async fn bind(
    listen: &Listen,
    auth: &AuthConfig,
    have_tokens: bool,
) -> Result<(crate::serve::listener::Transport, Option<PathBuf>), ServeError> {
    use crate::serve::listener::Transport;
    let (addr, tls) = match listen {
        Listen::Unix(path) => {
            prepare_socket(path)?;
            // Created with no access for anyone else, then widened (never the reverse).
            use nix::sys::stat::{umask, Mode};
            let old = umask(Mode::from_bits_truncate(0o177));
            let bound = tokio::net::UnixListener::bind(path);
            umask(old);
            let listener = bound.map_err(|e| ServeError::Listen(path.display().to_string(), e))?;
            restrict_socket(path)?;
            tracing::info!(listen = %format!("unix://{}", path.display()), "cleanroom server ready");
            eprintln!("cleanroom: listening on unix://{}", path.display());
            return Ok((Transport::Unix(listener), Some(path.clone())));
        }
        Listen::Tcp(addr) => (addr, None),
        Listen::Https(addr) => {
            let (Some(cert), Some(key)) = (&auth.tls_cert, &auth.tls_key) else {
                return Err(ServeError::Auth(
                    "https:// needs --tls-cert and --tls-key".into(),
                ));
            };
            let acceptor =
                crate::serve::listener::tls_acceptor(cert, key, auth.client_ca.as_deref())
                    .map_err(ServeError::Auth)?;
            (addr, Some(acceptor))
        }
    };
    if auth.client_ca.is_some() && tls.is_none() {
        return Err(ServeError::Auth(
            "--client-ca needs an https:// listener".into(),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Listen(addr.clone(), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| ServeError::Listen(addr.clone(), e))?;
    let has_credentials = have_tokens || auth.client_ca.is_some();
    if auth.insecure_no_auth && !local.ip().is_loopback() {
        return Err(ServeError::Auth(format!(
            "--insecure-no-auth is only allowed on a loopback address, not {local}"
        )));
    }
    if !has_credentials && !auth.insecure_no_auth {
        return Err(ServeError::Auth(format!(
            "refusing to serve {local} without authentication: give --tokens-file (or --client-ca with https://), or --insecure-no-auth on a loopback address"
        )));
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(listen = %format!("{scheme}://{local}"), "cleanroom server ready");
    eprintln!("cleanroom: listening on {scheme}://{local}");
    Ok((Transport::Tcp(listener, tls), None))
}

/// Mode 0600; or 0660 with group `cleanroom` when that group exists, so its members
/// can connect (each still gets their own `uid:<n>` principal).
fn restrict_socket(path: &Path) -> Result<(), ServeError> {
    let fail = |e: std::io::Error| ServeError::Listen(path.display().to_string(), e);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
    if let Ok(Some(g)) = nix::unistd::Group::from_name("cleanroom") {
        // Only widen once the group is really ours to give (a non-root server outside the
        // group cannot chown to it: the socket then stays 0600).
        match std::os::unix::fs::chown(path, None, Some(g.gid.as_raw())) {
            Ok(()) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
                .map_err(fail)?,
            Err(e) => {
                tracing::warn!(error = %e, "socket stays 0600: cannot give it to group cleanroom")
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod state_dir_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_state_dir_is_made_private_or_the_server_does_not_start() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        secure_state_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o700);
        // A link in its place is not followed.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(secure_state_dir(&link).is_err());
        // Someone else's directory is refused (as root: chown it away).
        if nix::unistd::geteuid().is_root() {
            nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let e = secure_state_dir(&dir).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
    }
}
