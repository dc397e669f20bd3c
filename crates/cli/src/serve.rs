//! `cleanroom serve`: flags to [`ServeSettings`] (the server crate assembles the
//! configuration), logging, the stop deadline and the shutdown signals.

use crate::cli::ServeArgs;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use cleanroom_client::endpoint::{self, Endpoint};
use cleanroom_client::ErrorCode;
use cleanroom_server::serve::assemble::{self, ServeSettings};
use cleanroom_server::serve::Listen;

/// The flags as plain settings.
fn settings(
    args: ServeArgs,
    listen: Listen,
    ui_listen: Option<Listen>,
    metrics_listen: Option<Listen>,
    cluster: Option<(String, String, String)>,
) -> ServeSettings {
    let q = args.quotas;
    ServeSettings {
        cluster,
        cluster_tls: args.cluster_tls,
        cluster_listen: args.cluster_listen,
        listen,
        ui_listen,
        metrics_listen,
        state_dir: args.state_dir,
        egress_resolve: args.egress_resolve,
        egress_trust_internal: args.egress_trust_internal,
        insecure_registry: args.insecure_registry,
        registry_credentials: args.registry_credentials,
        secrets_file: args.secrets_file,
        upstream_ca: args.upstream_ca,
        registry_upstream: args.registry_upstream,
        registry_cache_mb: args.registry_cache_mb,
        output_log_max_mb: q.output_log_max_mb,
        output_log_min_free_mb: q.output_log_min_free_mb,
        output_log_max_age_secs: q.output_log_max_age_secs,
        output_log_gc_interval_secs: q.output_log_gc_interval_secs,
        image_max_mb: q.image_max_mb,
        image_max_entries: q.image_max_entries,
        image_cache_max_mb: q.image_cache_max_mb,
        tokens_file: args.tokens_file,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        client_ca: args.client_ca,
        insecure_no_auth: args.insecure_no_auth,
        api_header_timeout_secs: args.api_header_timeout,
        api_idle_timeout_secs: args.api_idle_timeout,
        api_max_connections: args.api_max_connections,
        api_preauth_connections: args.api_preauth_connections,
        api_preauth_timeout_secs: args.api_preauth_timeout,
        inbound_max_connections: args.inbound_max_connections,
        preview_domain: args.preview_domain.clone(),
        max_sandboxes_per_principal: args.max_sandboxes_per_principal,
        max_sandboxes: args.max_sandboxes,
        approvals: args.approvals.settings(),
        sandbox_ttl_secs: args.sandbox_ttl,
        sandbox_idle_timeout_secs: args.sandbox_idle_timeout,
        console: args.console.config(),
        keep_cgroup_options: args.keep_cgroup_options,
        runtimes: cleanroom_server::serve::RuntimeSettings {
            default: args.default_runtime,
            runsc: args.runsc,
            gvisor_platform: args.gvisor_platform,
            egress_plane: Some(args.egress_plane.into()),
        },
    }
}

/// Run the server until SIGINT/SIGTERM, exporting traces to `otlp_endpoint` when given.
pub async fn run(args: ServeArgs, otlp_endpoint: Option<String>) -> i32 {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let exporter = match otlp_endpoint.as_deref().filter(|e| !e.trim().is_empty()) {
        None => None,
        Some(e) => match cleanroom_server::telemetry::Exporter::start(e, "cleanroom-server") {
            Ok(x) => Some(x),
            Err(e) => return render::fail(ErrorCode::InvalidArgument, e),
        },
    };
    let log_filter = cleanroom_server::telemetry::without_export_spans(
        tracing_subscriber::EnvFilter::try_from_env("CLEANROOM_LOG")
            .unwrap_or_else(|_| "info".into()),
    );
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // Colour only on a terminal: a log file or journal gets plain text (NO_COLOR too).
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .with_filter(log_filter);
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(exporter.as_ref().map(|x| x.layer()))
        .try_init();
    if exporter.is_some() {
        // Not the URL: it may carry credentials.
        eprintln!("cleanroom: exporting traces over OTLP/HTTP");
    }
    let code = serve(args).await;
    if let Some(x) = exporter {
        x.shutdown().await;
    }
    code
}

async fn serve(args: ServeArgs) -> i32 {
    let to_listen = |e: Endpoint| match e {
        Endpoint::Unix(p) => Listen::Unix(p),
        Endpoint::Http(a) => Listen::Tcp(a),
        Endpoint::Https(a) => Listen::Https(a),
    };
    let listen = match args
        .listen
        .as_deref()
        .map(Endpoint::parse)
        .unwrap_or_else(|| Ok(endpoint::default_listen()))
    {
        Ok(e) => to_listen(e),
        Err(e) => return render::fail(ErrorCode::InvalidArgument, e),
    };
    let ui_listen = match args.ui_listen.as_deref().map(Endpoint::parse) {
        None => None,
        Some(Ok(e)) => Some(to_listen(e)),
        Some(Err(e)) => return render::fail(ErrorCode::InvalidArgument, e),
    };
    let metrics_listen = match args.metrics_listen.as_deref().map(Endpoint::parse) {
        None => None,
        Some(Ok(e)) => Some(to_listen(e)),
        Some(Err(e)) => return render::fail(ErrorCode::InvalidArgument, e),
    };
    let cluster = args.cluster.clone().map(|c| {
        (
            c,
            args.node_name.clone().unwrap_or_default(),
            args.advertise.clone().unwrap_or_default(),
        )
    });
    let cfg = match settings(args, listen, ui_listen, metrics_listen, cluster).into_config() {
        Ok(c) => c,
        Err(e) => {
            render::report(e.code(), &e.to_string(), None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    assemble::raise_fd_limit();
    // Whatever happens to the graceful stop below, a signal ends the process in bounded time.
    if let Err(e) = crate::stop_deadline::arm() {
        return render::fail(
            ErrorCode::ServerStartFailed,
            format!("cannot arm the stop deadline: {e}"),
        );
    }
    let shutdown = async {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        eprintln!("cleanroom: shutting down");
    };
    match cleanroom_server::serve::run(cfg, shutdown).await {
        Ok(()) => 0,
        Err(e) => {
            render::report(e.code(), &e.to_string(), None);
            EXIT_CLEANROOM_ERROR
        }
    }
}
