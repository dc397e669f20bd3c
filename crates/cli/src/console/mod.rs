//! `cleanroom console`: an interactive terminal in a sandbox. Creates (or reuses, or
//! re-attaches to) an interactive execution, gets a ticket with `AttachExecution`, and
//! joins the local terminal (raw mode) to the guest's PTY over QUIC: keystrokes
//! (Ctrl-C, Ctrl-Z, Ctrl-D included) go to the guest, window-size changes follow, the
//! guest's exit code is returned. Ctrl-] detaches and leaves the command running.

mod term;

use crate::cli::LimitArgs;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use crate::request::{invalid, limits_msg, read_policy};
use clap::Args;
use cleanroom_client::api::*;
use cleanroom_client::console as remote;
use cleanroom_client::endpoint::{Endpoint, Target};
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use cleanroom_console::{read_frame, write_frame, Frame, Mode};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// The detach key: Ctrl-] (like telnet), one byte, never sent to the guest.
pub const DETACH_KEY: u8 = 0x1d;

/// `cleanroom serve` flags of the console endpoint.
#[derive(Debug, Args)]
pub struct ConsoleServeArgs {
    /// UDP address of the interactive console's QUIC endpoint [default: the API
    /// listener's IP (127.0.0.1 for a unix socket) on a free port]
    #[arg(long, value_name = "IP:PORT")]
    pub console_listen: Option<std::net::SocketAddr>,
    /// How long an AttachExecution ticket may wait to be used
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub console_token_ttl_secs: u64,
    /// Most attached console connections; one principal may hold an eighth, and a
    /// quarter more may be connecting without a hello yet (5 s each; docs/limits.md)
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub console_max_connections: usize,
}

impl ConsoleServeArgs {
    pub fn config(&self) -> cleanroom_server::console::ConsoleConfig {
        cleanroom_server::console::ConsoleConfig {
            listen: self.console_listen,
            token_ttl: Duration::from_secs(self.console_token_ttl_secs.max(1)),
            max_connections: self.console_max_connections.max(1),
            ..Default::default()
        }
    }
}

/// `cleanroom console [--in ID | --attach EXE] [--keep] -- CMD`.
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// Run in an existing sandbox (it stays READY afterwards)
    #[arg(long = "in", value_name = "SANDBOX_ID", conflicts_with = "attach")]
    pub in_sandbox: Option<String>,
    /// Re-attach to a running interactive execution instead of starting one
    #[arg(long, value_name = "EXECUTION_ID")]
    pub attach: Option<String>,
    /// Watch only: nothing typed reaches the guest (Ctrl-] still detaches)
    #[arg(long)]
    pub viewer: bool,
    /// Keep the sandbox this command creates (print its id on stderr)
    #[arg(long)]
    pub keep: bool,
    /// Print the execution's trace_id on stderr after it succeeds
    #[arg(long)]
    pub print_trace_id: bool,
    /// KEY inherits the local value; KEY=VALUE sets it explicitly (repeatable)
    #[arg(short = 'e', long = "env", value_name = "KEY[=VALUE]")]
    pub env: Vec<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub volumes: crate::request::VolumeArgs,
    /// Root the sandbox on this OCI image, pinned by digest
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Working directory inside the sandbox [default: the policy's repository.path, else /workspace]
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Policy file [default: ./cleanroom.yaml when present, else the built-in deny-all policy]
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// The command [default: /bin/sh]
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

fn fail(e: &ApiError, hint: Option<String>) -> i32 {
    render::error(e, hint);
    EXIT_CLEANROOM_ERROR
}

fn parse_env(items: &[String]) -> Result<Vec<(String, String)>, ApiError> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => std::env::var(item)
                .map(|v| (item.clone(), v))
                .map_err(|_| invalid(format!("--env {item}: {item} is not set locally"))),
        })
        .collect()
}

/// Create a sandbox from the repository policy and bootstrap it like `exec` (also
/// `cleanroom create`). `Err` is the exit code, the error already printed.
pub(crate) async fn create_sandbox(
    client: &Client,
    policy_file: Option<&PathBuf>,
    image: Option<&str>,
    (limit_args, volumes): (&LimitArgs, &crate::request::VolumeArgs),
) -> Result<(String, Option<String>), i32> {
    let policy = read_policy(policy_file, true).map_err(|e| fail(&e, None))?;
    let limits = limits_msg(limit_args).map_err(|e| fail(&e, None))?;
    let req = CreateSandboxRequest {
        image_ref: image.unwrap_or_default().to_string(),
        limits: limits.into(),
        volumes: crate::request::volume_msgs(volumes).map_err(|e| fail(&e, None))?,
        runtime: limit_args.runtime_wire(),
        ..crate::request::sandbox_request(policy, policy_file.map(PathBuf::as_path))
            .map_err(|e| fail(&e, None))?
    };
    let r = client
        .sandboxes
        .create_sandbox(req)
        .await
        .map_err(|e| fail(&e.into(), None))?
        .into_owned();
    let id = r
        .sandbox
        .as_option()
        .map(|s| s.sandbox_id.clone())
        .unwrap_or_default();
    let mut cwd = None;
    if let Some(plan) = r.bootstrap.as_option() {
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| render::fail(ErrorCode::Internal, format!("cannot handle SIGINT: {e}")))?;
        let file = policy_file
            .cloned()
            .or_else(|| Some(PathBuf::from("cleanroom.yaml")));
        match crate::bootstrap::run(client, &id, plan, file.as_deref(), &mut sigint).await {
            Ok(c) => cwd = c,
            Err(code) => {
                terminate(client, &id).await;
                return Err(code);
            }
        }
    }
    Ok((id, cwd))
}

async fn terminate(client: &Client, sandbox_id: &str) {
    let req = TerminateSandboxRequest {
        sandbox_id: sandbox_id.to_string(),
        ..Default::default()
    };
    if let Err(e) = client.sandboxes.terminate_sandbox(req).await {
        render::error(
            &e.into(),
            Some(format!("cleanroom sandbox rm {sandbox_id}")),
        );
    }
}

/// `cleanroom console`.
pub async fn run(ep: &Target, args: ConsoleArgs) -> i32 {
    let client = match Client::connect_target(ep).await {
        Ok(c) => c,
        Err(e) => return fail(&e, None),
    };
    let (cols, rows) = term::size().unwrap_or((80, 24));
    // 1. The execution: re-attach, or start one (in a given or a new sandbox).
    let (sandbox_id, execution_id, created) = if let Some(exe) = &args.attach {
        (String::new(), exe.clone(), false)
    } else {
        let mut env = match parse_env(&args.env) {
            Ok(e) => e,
            Err(e) => return fail(&e, None),
        };
        // Full-screen programs need to know the terminal: the local one's TERM.
        if !env.iter().any(|(k, _)| k == "TERM") {
            let term = std::env::var("TERM").unwrap_or_default();
            let term = if term.is_empty() {
                "xterm".to_string()
            } else {
                term
            };
            env.push(("TERM".into(), term));
        }
        let (sandbox_id, created, cwd) = match &args.in_sandbox {
            Some(id) => (id.clone(), false, None),
            None => match create_sandbox(
                &client,
                args.policy.as_ref(),
                args.image.as_deref(),
                (&args.limits, &args.volumes),
            )
            .await
            {
                Ok((id, cwd)) => (id, true, cwd),
                Err(code) => return code,
            },
        };
        if created && args.keep {
            eprintln!("{sandbox_id}");
        }
        let command = if args.command.is_empty() {
            vec!["/bin/sh".to_string()]
        } else {
            args.command.clone()
        };
        let req = CreateExecutionRequest {
            sandbox_id: sandbox_id.clone(),
            command,
            env: env.into_iter().collect(),
            cwd: args.cwd.clone().or(cwd).unwrap_or_default(),
            kind: ExecutionKind::EXECUTION_KIND_INTERACTIVE.into(),
            tty: true,
            tty_cols: cols.into(),
            tty_rows: rows.into(),
            ..Default::default()
        };
        match client.executions.create_execution(req).await {
            Ok(r) => {
                let id = r
                    .into_owned()
                    .execution
                    .as_option()
                    .map(|e| e.execution_id.clone())
                    .unwrap_or_default();
                (sandbox_id, id, created)
            }
            Err(e) => {
                if created {
                    terminate(&client, &sandbox_id).await;
                }
                return fail(&e.into(), None);
            }
        }
    };
    // 2. Attach and run the terminal.
    let end = attach_and_run(&client, &sandbox_id, &execution_id, args.viewer, cols, rows).await;
    let code = match end {
        End::Exited(code) => {
            crate::retained::record(&client, &execution_id).await;
            if args.print_trace_id && code == 0 {
                print_trace_id(&client, &execution_id).await;
            }
            code
        }
        End::Detached => {
            eprintln!(
                "\ncleanroom: detached; {execution_id} keeps running. Re-attach: cleanroom console --attach {execution_id}"
            );
            if created && !args.keep {
                eprintln!("cleanroom: its sandbox {sandbox_id} stays until `cleanroom sandbox rm {sandbox_id}`");
            }
            return 0;
        }
        End::Failed(e) => {
            let hint = Some(format!("cleanroom console --attach {execution_id}"));
            render::error(&e, hint);
            // The execution may still run: keep its sandbox for a re-attach.
            return EXIT_CLEANROOM_ERROR;
        }
    };
    if created && !args.keep {
        terminate(&client, &sandbox_id).await;
    }
    code
}

async fn print_trace_id(client: &Client, execution_id: &str) {
    let req = GetExecutionRequest {
        execution_id: execution_id.to_string(),
        ..Default::default()
    };
    if let Ok(r) = client.executions.get_execution(req).await {
        if let Some(e) = r.into_owned().execution.as_option() {
            eprintln!("trace_id: {}", e.trace_id);
        }
    }
}

/// How an attach ended.
enum End {
    /// The guest exited with this code.
    Exited(i32),
    /// Ctrl-] or a hang-up/termination signal: the guest keeps running.
    Detached,
    /// The attach failed or the connection was lost.
    Failed(ApiError),
}

fn api_host(ep: &Endpoint) -> Option<std::net::IpAddr> {
    let auth = match ep {
        Endpoint::Unix(_) => return None,
        Endpoint::Http(a) | Endpoint::Https(a) => a,
    };
    use std::net::ToSocketAddrs;
    let with_port = if auth.contains(':') {
        auth.clone()
    } else {
        format!("{auth}:443")
    };
    with_port.to_socket_addrs().ok()?.next().map(|a| a.ip())
}

/// Read stdin on a thread of its own (a blocking read must not hold the runtime, and
/// the process exits without joining it).
fn stdin_reader() -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: read(2) into a buffer we own, of its length.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 || tx.blocking_send(buf[..n as usize].to_vec()).is_err() {
                break;
            }
        }
    });
    rx
}

async fn attach_and_run(
    client: &Client,
    sandbox_id: &str,
    execution_id: &str,
    viewer: bool,
    cols: u16,
    rows: u16,
) -> End {
    let ticket = match remote::ticket(client, sandbox_id, execution_id, cols, rows).await {
        Ok(t) => t,
        Err(e) => return End::Failed(e),
    };
    let addr = match remote::console_addr(&ticket, api_host(&client.endpoint)) {
        Ok(a) => a,
        Err(e) => return End::Failed(e),
    };
    let mode = if viewer { Mode::Viewer } else { Mode::Driver };
    let console = match remote::connect(&ticket, execution_id, addr, mode, cols, rows).await {
        Ok(c) => c,
        Err(e) => return End::Failed(e),
    };
    let mut raw = match term::RawMode::enter() {
        Ok(r) => r,
        Err(e) => {
            console.close().await;
            return End::Failed(render::local(ErrorCode::Internal, format!("raw mode: {e}")));
        }
    };
    let end = pump(console, &raw, viewer).await;
    raw.restore();
    end
}

/// The terminal session proper: stdin → Input frames (until the detach key), SIGWINCH →
/// Resize, Output frames → stdout, Exit → the end.
async fn pump(console: remote::Console, raw: &term::RawMode, viewer: bool) -> End {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut send, mut recv, closer) = console.split();
    let (done_tx, mut done_rx) = oneshot::channel::<End>();
    let reader = tokio::spawn(async move {
        let mut out = std::io::stdout();
        let end = loop {
            match read_frame(&mut recv).await {
                Ok(Some(Frame::Output(d))) => {
                    if out.write_all(&d).and_then(|_| out.flush()).is_err() {
                        break End::Detached;
                    }
                }
                Ok(Some(Frame::Exit { exit_code, .. })) => break End::Exited(exit_code),
                Ok(Some(Frame::Error { code, message })) => {
                    break End::Failed(ApiError {
                        code,
                        message,
                        connect_code: String::new(),
                        details: Vec::new(),
                    })
                }
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => {
                    break End::Failed(render::local(
                        ErrorCode::StreamEnded,
                        "the console connection was lost",
                    ))
                }
            }
        };
        let _ = done_tx.send(end);
    });
    let mut input = stdin_reader();
    let mut input_open = true;
    let (mut winch, mut term_sig, mut hup, mut int) = match (
        signal(SignalKind::window_change()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(a), Ok(b), Ok(c), Ok(d)) => (a, b, c, d),
        _ => {
            reader.abort();
            closer.close(send).await;
            return End::Failed(render::local(ErrorCode::Internal, "cannot handle signals"));
        }
    };
    let end = loop {
        tokio::select! {
            e = &mut done_rx => break e.unwrap_or(End::Detached),
            chunk = input.recv(), if input_open => match chunk {
                Some(mut data) => {
                    let detach = data.iter().position(|b| *b == DETACH_KEY);
                    if let Some(i) = detach {
                        data.truncate(i);
                    }
                    if !viewer && !data.is_empty() {
                        let _ = write_frame(&mut send, &Frame::Input(data)).await;
                    }
                    if detach.is_some() {
                        break End::Detached;
                    }
                }
                // Local EOF (a pipe ran dry): keep showing output until the guest ends.
                None => input_open = false,
            },
            _ = winch.recv() => {
                if let (Some((cols, rows)), false) = (term::size(), viewer) {
                    let _ = write_frame(&mut send, &Frame::Resize { cols, rows }).await;
                }
            }
            // Without raw mode (stdin not a terminal) Ctrl-C reaches us as SIGINT: pass it on.
            _ = int.recv() => {
                if !raw.active() && !viewer {
                    let _ = write_frame(&mut send, &Frame::Signal(libc::SIGINT as u8)).await;
                }
            }
            _ = term_sig.recv() => break End::Detached,
            _ = hup.recv() => break End::Detached,
        }
    };
    reader.abort();
    closer.close(send).await;
    end
}
