//! Command implementations. Each is a thin client of the server.

use crate::cli::{
    Cli, Command, ExecArgs, ExecutionCommand, ImageCommand, PolicyCommand, SandboxCommand,
    ServeArgs,
};
use crate::render;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::{self, Endpoint, Target};
use cleanroom_client::{ApiError, Client, ErrorCode};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Exit code for failures of cleanroom itself (before or around the guest command).
pub const EXIT_CLEANROOM_ERROR: i32 = 125;

pub async fn run(cli: Cli) -> i32 {
    match cli.command {
        Command::Serve(args) => serve(args).await,
        // Pure validation of a local file with the server's own compiler; nothing runs.
        Command::Policy(cmd) => policy(cmd),
        other => {
            let ep = match endpoint::resolve_target(
                cli.host.as_deref(),
                cli.token.as_deref(),
                cli.ca_cert.as_deref(),
                cli.server_cert_sha256.as_deref(),
            ) {
                Ok(ep) => ep,
                Err(e) => {
                    eprintln!("cleanroom: error [invalid_argument]: {e}");
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            match other {
                Command::Exec(args) => exec(&ep, args).await,
                Command::Sandbox(cmd) => report(sandbox(&ep, cmd).await),
                Command::Execution(cmd) => report(execution(&ep, cmd).await),
                Command::Image(cmd) => report(image(&ep, cmd).await),
                Command::Serve(_) | Command::Policy(_) => unreachable!("handled above"),
            }
        }
    }
}

fn report(r: Result<i32, ApiError>) -> i32 {
    r.unwrap_or_else(|e| {
        render::error(&e, None);
        EXIT_CLEANROOM_ERROR
    })
}

fn invalid(msg: impl Into<String>) -> ApiError {
    ApiError {
        code: ErrorCode::InvalidArgument.to_string(),
        message: msg.into(),
        connect_code: "invalid_argument".into(),
        details: vec![],
    }
}

fn default_state_dir() -> PathBuf {
    // SAFETY: geteuid never fails.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/lib/cleanroom");
    }
    std::env::var_os("XDG_STATE_HOME")
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("cleanroom")
}

async fn serve(args: ServeArgs) -> i32 {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CLEANROOM_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .try_init();
    let listen = match args
        .listen
        .as_deref()
        .map(Endpoint::parse)
        .unwrap_or_else(|| Ok(endpoint::default_listen()))
    {
        Ok(Endpoint::Unix(p)) => cleanroom_server::serve::Listen::Unix(p),
        Ok(Endpoint::Http(a)) => cleanroom_server::serve::Listen::Tcp(a),
        Ok(Endpoint::Https(a)) => cleanroom_server::serve::Listen::Https(a),
        Err(e) => {
            eprintln!("cleanroom: error [invalid_argument]: {e}");
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let init_exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cleanroom: error [backend_unavailable]: cannot locate own binary: {e}");
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let mut registry = cleanroom_image::RegistryConfig {
        insecure: args.insecure_registry.clone(),
        ..Default::default()
    };
    if let Some(path) = &args.registry_credentials {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(creds) => registry.credentials = creds,
            Err(e) => {
                eprintln!(
                    "cleanroom: error [invalid_argument]: registry credentials {}: {e}",
                    path.display()
                );
                return EXIT_CLEANROOM_ERROR;
            }
        }
    }
    let cfg = cleanroom_server::serve::ServeConfig {
        listen,
        state_dir: args.state_dir.unwrap_or_else(default_state_dir),
        init_exe,
        egress_resolve: args.egress_resolve,
        egress_trust_internal: args.egress_trust_internal,
        registry,
        secrets_file: args.secrets_file,
        upstream_ca: args.upstream_ca,
        retention: args.quotas.retention(),
        image_limits: args.quotas.image_limits(),
        auth: cleanroom_server::serve::AuthConfig {
            tokens_file: args.tokens_file,
            tls_cert: args.tls_cert,
            tls_key: args.tls_key,
            client_ca: args.client_ca,
            insecure_no_auth: args.insecure_no_auth,
            conn: cleanroom_server::listener::ConnLimits {
                header_read_timeout: Duration::from_secs(args.api_header_timeout.max(1)),
                idle_timeout: Duration::from_secs(args.api_idle_timeout.max(1)),
                max_connections: args.api_max_connections.max(1),
                ..Default::default()
            },
            caps: cleanroom_server::store::SandboxCaps {
                per_owner: args.max_sandboxes_per_principal,
                total: args.max_sandboxes,
            },
        },
    };
    // Gateways hold an upstream socket per sandbox connection; budget them against a
    // descriptor limit as high as the server may have.
    cleanroom_egress::limits::raise_fd_limit();
    // Whatever happens to the graceful stop below, a signal ends the process in bounded time.
    if let Err(e) = crate::stop_deadline::arm() {
        eprintln!("cleanroom: error [server_start_failed]: cannot arm the stop deadline: {e}");
        return EXIT_CLEANROOM_ERROR;
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
            let code = match e {
                cleanroom_server::serve::ServeError::Auth(_) => ErrorCode::AuthConfigInvalid,
                _ => ErrorCode::ServerStartFailed,
            };
            eprintln!("cleanroom: error [{code}]: {e}");
            EXIT_CLEANROOM_ERROR
        }
    }
}

fn policy(cmd: PolicyCommand) -> i32 {
    let (file, show) = match cmd {
        PolicyCommand::Check { file } => (file, false),
        PolicyCommand::Show { file } => (file, true),
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "cleanroom: error [policy_invalid]: cannot read {}: {e}",
                file.display()
            );
            return EXIT_CLEANROOM_ERROR;
        }
    };
    match cleanroom_policy::compile(&text) {
        Ok(p) if show => {
            let value: serde_json::Value =
                serde_json::from_str(&p.canonical_json()).unwrap_or_default();
            println!(
                "{}",
                serde_json::to_string_pretty(&value).unwrap_or_default()
            );
            println!("policy_hash: {}", p.policy_hash());
            println!("requires: {}", p.required_capabilities().join(", "));
            0
        }
        Ok(p) => {
            println!("{}: ok {}", file.display(), p.policy_hash());
            0
        }
        Err(e) => {
            eprintln!("cleanroom: error [{}]: {}: {e}", e.code(), file.display());
            EXIT_CLEANROOM_ERROR
        }
    }
}

/// The request's limits. Bounds are the server's to check (one table, shared with the
/// policy compiler); only an explicit zero is refused here, because zero on the wire means
/// "not requested" and would silently become the default.
fn limits_msg(l: &crate::cli::LimitArgs) -> Result<ResourceLimits, ApiError> {
    for (flag, name, v) in [
        ("--memory-mb", "memory_mb", l.memory_mb),
        ("--pids", "pids", l.pids),
        ("--cpu-millis", "cpu_millis", l.cpu_millis),
        ("--disk-mb", "disk_mb", l.disk_mb),
        ("--output-mb", "output_mb", l.output_mb),
    ] {
        if v == Some(0) {
            let (lo, hi) = cleanroom_policy::resource_bounds(name).unwrap_or((1, u64::MAX));
            return Err(invalid(format!(
                "{flag} 0 is outside the accepted range {lo}..={hi}"
            )));
        }
    }
    let mib = |v: Option<u64>| v.map(|m| m.saturating_mul(1 << 20)).unwrap_or(0);
    Ok(ResourceLimits {
        memory_bytes: mib(l.memory_mb),
        pids: l.pids.unwrap_or(0),
        cpu_millis: l.cpu_millis.unwrap_or(0),
        disk_bytes: mib(l.disk_mb),
        output_bytes: mib(l.output_mb),
        ..Default::default()
    })
}

fn read_policy(path: Option<&PathBuf>, repo_default: bool) -> Result<String, ApiError> {
    let path = match path {
        Some(p) => p.clone(),
        None if repo_default => {
            let p = PathBuf::from("cleanroom.yaml");
            if !p.exists() {
                return Ok(String::new());
            }
            p
        }
        None => return Ok(String::new()),
    };
    std::fs::read_to_string(&path).map_err(|e| ApiError {
        code: ErrorCode::PolicyInvalid.to_string(),
        message: format!("cannot read policy {}: {e}", path.display()),
        connect_code: "invalid_argument".into(),
        details: vec![],
    })
}

async fn sandbox(ep: &Target, cmd: SandboxCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        SandboxCommand::Create {
            policy,
            image,
            limits,
        } => {
            let req = CreateSandboxRequest {
                policy_yaml: read_policy(policy.as_ref(), false)?,
                image_ref: image.unwrap_or_default(),
                limits: limits_msg(&limits)?.into(),
                ..Default::default()
            };
            let s = client.sandboxes.create_sandbox(req).await?.into_owned();
            println!(
                "{}",
                s.sandbox
                    .as_option()
                    .map(|s| s.sandbox_id.as_str())
                    .unwrap_or("")
            );
        }
        SandboxCommand::Ls { all, json } => {
            let resp = client
                .sandboxes
                .list_sandboxes(ListSandboxesRequest {
                    include_stopped: all,
                    ..Default::default()
                })
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&resp.sandboxes).unwrap_or_default()
                );
            } else {
                print!("{}", render::sandbox_table(&resp.sandboxes));
            }
        }
        SandboxCommand::Inspect { sandbox_id, json } => {
            let resp = client
                .sandboxes
                .get_sandbox(GetSandboxRequest {
                    sandbox_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let s = resp.sandbox.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                print!("{}", render::sandbox_detail(&s));
            }
        }
        SandboxCommand::Events {
            sandbox_id,
            follow,
            after,
        } => {
            let mut stream = client
                .sandboxes
                .stream_sandbox_events(StreamSandboxEventsRequest {
                    sandbox_id,
                    after_sequence: after,
                    follow,
                    ..Default::default()
                })
                .await?;
            let mut out = std::io::stdout().lock();
            while let Some(m) = stream.message().await? {
                let ev: SandboxEvent = m.to_owned_message();
                let line = render::event_json(&ev);
                if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
        }
        SandboxCommand::Rm { sandbox_ids } => {
            let mut failed = false;
            for id in sandbox_ids {
                match client
                    .sandboxes
                    .terminate_sandbox(TerminateSandboxRequest {
                        sandbox_id: id.clone(),
                        ..Default::default()
                    })
                    .await
                {
                    Ok(_) => println!("{id}"),
                    Err(e) => {
                        render::error(&e.into(), None);
                        failed = true;
                    }
                }
            }
            return Ok(if failed { EXIT_CLEANROOM_ERROR } else { 0 });
        }
    }
    Ok(0)
}

async fn image(ep: &Target, cmd: ImageCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        ImageCommand::Pull { reference } => {
            let resp = client
                .images
                .pull_image(PullImageRequest {
                    image_ref: reference,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let i = resp.image.as_option().cloned().unwrap_or_default();
            println!("{}", i.digest);
        }
        ImageCommand::Ls { json } => {
            let resp = client
                .images
                .list_images(ListImagesRequest::default())
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&resp.images).unwrap_or_default()
                );
            } else {
                print!("{}", render::image_table(&resp.images));
            }
        }
        ImageCommand::Rm { digests } => {
            let mut failed = false;
            for digest in digests {
                let req = RemoveImageRequest {
                    digest: digest.clone(),
                    ..Default::default()
                };
                match client.images.remove_image(req).await {
                    Ok(_) => println!("{digest}"),
                    Err(e) => {
                        render::error(&e.into(), None);
                        failed = true;
                    }
                }
            }
            return Ok(if failed { EXIT_CLEANROOM_ERROR } else { 0 });
        }
    }
    Ok(0)
}

async fn execution(ep: &Target, cmd: ExecutionCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        ExecutionCommand::Inspect {
            execution_id,
            sandbox_id,
            last,
            json,
        } => {
            let req = InspectExecutionRequest {
                sandbox_id: sandbox_id.unwrap_or_default(),
                execution_id: execution_id.unwrap_or_default(),
                last,
                ..Default::default()
            };
            let resp = client.executions.inspect_execution(req).await?.into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&resp).unwrap_or_default()
                );
                return Ok(0);
            }
            let e = resp.execution.as_option().cloned().unwrap_or_default();
            print!("{}", render::execution_detail(&e));
            println!("policy_hash:  {}", resp.policy_hash);
            if !resp.image_ref.is_empty() {
                println!("image_ref:    {}", resp.image_ref);
                println!("image_digest: {}", resp.image_digest);
            }
            println!("stdout_bytes: {}", resp.stdout_bytes);
            println!("stderr_bytes: {}", resp.stderr_bytes);
            if resp.output_truncated {
                println!(
                    "output_truncated: {} bytes were streamed live but not retained",
                    resp.retained_bytes_dropped
                );
            }
            if resp.output_expired {
                println!("output_expired: the retained output was deleted by the server's retention policy");
            }
            for (name, text) in [("stdout", &resp.stdout), ("stderr", &resp.stderr)] {
                if !text.is_empty() {
                    println!("--- {name} (tail) ---");
                    print!("{text}");
                    if !text.ends_with('\n') {
                        println!();
                    }
                }
            }
        }
    }
    Ok(0)
}

fn parse_env(items: &[String]) -> Result<Vec<(String, String)>, ApiError> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => std::env::var(item).map(|v| (item.clone(), v)).map_err(|_| {
                invalid(format!(
                    "--env {item}: {item} is not set in the local environment"
                ))
            }),
        })
        .collect()
}

/// `cleanroom exec`: create (or reuse) a sandbox, run, stream, return the exit code.
async fn exec(ep: &Target, args: ExecArgs) -> i32 {
    // Take over SIGINT before anything else so no Ctrl-C is lost or kills us mid-setup.
    let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cleanroom: error [internal]: cannot handle SIGINT: {e}");
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let client = match Client::connect_target(ep).await {
        Ok(c) => c,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let env = match parse_env(&args.env) {
        Ok(e) => e,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    // 1. The sandbox.
    let mut compiled = None;
    let (sandbox_id, created) = match &args.in_sandbox {
        Some(id) => (id.clone(), false),
        None => {
            let policy = match read_policy(args.policy.as_ref(), true) {
                Ok(p) => p,
                Err(e) => {
                    render::error(&e, None);
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            // The server compiles the same text with the same compiler; the client reads
            // only the bootstrap fields from its own copy.
            compiled = cleanroom_policy::compile(&policy).ok();
            let limits = match limits_msg(&args.limits) {
                Ok(l) => l,
                Err(e) => {
                    render::error(&e, None);
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            let req = CreateSandboxRequest {
                policy_yaml: policy,
                image_ref: args.image.clone().unwrap_or_default(),
                limits: limits.into(),
                ..Default::default()
            };
            match client.sandboxes.create_sandbox(req).await {
                Ok(r) => (
                    r.into_owned()
                        .sandbox
                        .as_option()
                        .map(|s| s.sandbox_id.clone())
                        .unwrap_or_default(),
                    true,
                ),
                Err(e) => {
                    render::error(&e.into(), None);
                    return EXIT_CLEANROOM_ERROR;
                }
            }
        }
    };
    if args.print_sandbox_id || (args.keep && created) {
        eprintln!("{sandbox_id}");
    }
    // 2. Repository checkout and dependencies, for sandboxes made from repository policy.
    let mut default_cwd = None;
    let mut code = 0;
    if let Some(policy) = &compiled {
        let file = args
            .policy
            .clone()
            .or_else(|| Some(PathBuf::from("cleanroom.yaml")));
        match crate::bootstrap::run(&client, &sandbox_id, policy, file.as_deref(), &mut sigint)
            .await
        {
            Ok(cwd) => default_cwd = cwd,
            Err(c) => code = c,
        }
    }
    // 3. The workload.
    if code == 0 {
        code = exec_in(&client, &sandbox_id, &args, default_cwd, env, &mut sigint).await;
    }
    if created && !args.keep {
        let req = TerminateSandboxRequest {
            sandbox_id: sandbox_id.clone(),
            ..Default::default()
        };
        if let Err(e) = client.sandboxes.terminate_sandbox(req).await {
            render::error(
                &e.into(),
                Some(format!("cleanroom sandbox inspect {sandbox_id}")),
            );
        }
    }
    code
}

async fn exec_in(
    client: &Client,
    sandbox_id: &str,
    args: &ExecArgs,
    default_cwd: Option<String>,
    env: Vec<(String, String)>,
    sigint: &mut tokio::signal::unix::Signal,
) -> i32 {
    let req = CreateExecutionRequest {
        sandbox_id: sandbox_id.to_string(),
        command: args.command.clone(),
        env: env.into_iter().collect(),
        cwd: args.cwd.clone().or(default_cwd).unwrap_or_default(),
        timeout_seconds: args.timeout.unwrap_or(0),
        kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
        attach_stdin: !args.no_stdin,
        ..Default::default()
    };
    let execution = match client.executions.create_execution(req).await {
        Ok(r) => r
            .into_owned()
            .execution
            .as_option()
            .cloned()
            .unwrap_or_default(),
        Err(e) => {
            render::error(
                &e.into(),
                Some(format!("cleanroom sandbox inspect {sandbox_id}")),
            );
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let exec_id = execution.execution_id.clone();
    if !args.no_stdin {
        tokio::spawn(forward_stdin(
            client.executions.clone(),
            sandbox_id.to_string(),
            exec_id.clone(),
        ));
    }
    let code = stream_until_exit(client, sandbox_id, &exec_id, sigint, false).await;
    if args.print_trace_id && code == 0 {
        eprintln!("trace_id: {}", execution.trace_id);
    }
    code
}

/// Copy local stdin to the execution, then close it (EOF for the guest).
async fn forward_stdin(
    client: ExecutionServiceClient<connectrpc::client::SharedHttp2Connection>,
    sandbox_id: String,
    exec_id: String,
) {
    pump_stdin(client, sandbox_id, exec_id, tokio::io::stdin()).await;
}

/// Copy `input` to an execution's stdin, then close it. `false` when the execution stopped
/// taking input before `input` ended.
pub(crate) async fn pump_stdin<R: tokio::io::AsyncRead + Unpin>(
    client: ExecutionServiceClient<connectrpc::client::SharedHttp2Connection>,
    sandbox_id: String,
    exec_id: String,
    mut input: R,
) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut complete = true;
    loop {
        match input.read(&mut buf).await {
            Ok(0) => break,
            Err(_) => {
                complete = false;
                break;
            }
            Ok(n) => {
                let req = WriteExecutionStdinRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: exec_id.clone(),
                    data: buf[..n].to_vec(),
                    ..Default::default()
                };
                if client.write_execution_stdin(req).await.is_err() {
                    return false; // command exited or closed its stdin
                }
            }
        }
    }
    let req = CloseExecutionStdinRequest {
        sandbox_id,
        execution_id: exec_id,
        ..Default::default()
    };
    let _ = client.close_execution_stdin(req).await;
    complete
}

/// Stream output to stdout/stderr byte-for-byte until the exit event; reconnect and
/// resume from the last sequence if the stream breaks. Ctrl-C once cancels, twice detaches.
/// `to_stderr` sends the guest's stdout to our stderr too (setup steps, whose output must
/// not mix into the workload's stdout).
pub(crate) async fn stream_until_exit(
    client: &Client,
    sandbox_id: &str,
    exec_id: &str,
    sigint: &mut tokio::signal::unix::Signal,
    to_stderr: bool,
) -> i32 {
    let mut last_seq = 0u64;
    let mut retries = 0;
    let mut interrupts = 0;
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    loop {
        let req = StreamExecutionRequest {
            sandbox_id: sandbox_id.to_string(),
            execution_id: exec_id.to_string(),
            after_sequence: last_seq,
            ..Default::default()
        };
        let mut stream = match client.executions.stream_execution(req).await {
            Ok(s) => s,
            Err(e) => {
                let e: ApiError = e.into();
                if e.connect_code == "unavailable" && retries < 5 {
                    retries += 1;
                    tokio::time::sleep(Duration::from_millis(200 * retries)).await;
                    continue;
                }
                render::error(&e, Some(format!("cleanroom execution inspect {exec_id}")));
                return EXIT_CLEANROOM_ERROR;
            }
        };
        loop {
            let msg = tokio::select! {
                m = stream.message() => m,
                _ = sigint.recv() => {
                    interrupts += 1;
                    if interrupts == 1 {
                        eprintln!("cleanroom: canceling {exec_id} (Ctrl-C again to detach)");
                        let req = CancelExecutionRequest {
                            sandbox_id: sandbox_id.to_string(),
                            execution_id: exec_id.to_string(),
                            ..Default::default()
                        };
                        if let Err(e) = client.executions.cancel_execution(req).await {
                            render::error(&e.into(), None);
                        }
                        continue;
                    }
                    eprintln!("cleanroom: detached; the execution continues. inspect: cleanroom execution inspect {exec_id}");
                    return 130;
                }
            };
            match msg {
                Ok(Some(m)) => {
                    let ev: ExecutionStreamEvent = m.to_owned_message();
                    last_seq = ev.sequence;
                    retries = 0;
                    use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
                    match ev.payload {
                        Some(Payload::Output(chunk)) => {
                            let res = if to_stderr
                                || chunk.stream == OutputStream::OUTPUT_STREAM_STDERR
                            {
                                err.write_all(&chunk.data).and_then(|_| err.flush())
                            } else {
                                out.write_all(&chunk.data).and_then(|_| out.flush())
                            };
                            if res.is_err() {
                                // Our stdout/stderr is gone (e.g. closed pipe): nothing to show anymore.
                                return 141;
                            }
                        }
                        Some(Payload::Warning(w)) => {
                            eprintln!("cleanroom: warning [{}]: {}", w.code, w.message)
                        }
                        Some(Payload::Exit(x)) => return exit_code(&x, exec_id),
                        None => {}
                    }
                }
                Ok(None) => {
                    eprintln!("cleanroom: error [stream_ended]: output stream ended without an exit status");
                    eprintln!("  inspect: cleanroom execution inspect {exec_id}");
                    return EXIT_CLEANROOM_ERROR;
                }
                Err(e) => {
                    let e: ApiError = e.into();
                    if retries < 5 {
                        retries += 1;
                        tokio::time::sleep(Duration::from_millis(200 * retries)).await;
                        break; // reconnect, resuming after last_seq
                    }
                    render::error(&e, Some(format!("cleanroom execution inspect {exec_id}")));
                    return EXIT_CLEANROOM_ERROR;
                }
            }
        }
    }
}

/// The guest's exit code; a notice only when the end was not the guest's own doing.
fn exit_code(x: &ExecutionExit, exec_id: &str) -> i32 {
    let status = x.status.to_i32();
    let name = render::execution_status_name(status);
    let guest_ended = matches!(
        x.status.as_known(),
        Some(ExecutionStatus::EXECUTION_STATUS_SUCCEEDED)
            | Some(ExecutionStatus::EXECUTION_STATUS_FAILED)
    ) && x.exit_code >= 0;
    if !x.code.is_empty() {
        // An end the guest did not choose but that kept its exit code (e.g. an OOM kill:
        // 128+9): say so, with the stable code.
        eprintln!("cleanroom: error [{}]: {}", x.code, x.message);
        eprintln!("  inspect: cleanroom execution inspect {exec_id}");
    } else if !guest_ended {
        eprintln!("cleanroom: execution {name}: {}", x.message);
        eprintln!("  inspect: cleanroom execution inspect {exec_id}");
    }
    if x.exit_code < 0 {
        EXIT_CLEANROOM_ERROR
    } else {
        x.exit_code
    }
}
