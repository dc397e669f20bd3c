//! `cleanroom exec`: create (or reuse) a sandbox, bootstrap it as the server says,
//! run the workload with local stdin forwarded, follow its output, return its exit code,
//! tear the sandbox down — unless the user detached (second Ctrl-C): then the execution and
//! the sandbox are left running and the re-attach command is printed.

use crate::cli::ExecArgs;
use crate::follow::{follow_output, CtrlC, FollowOpts, Followed, EXIT_DETACHED};
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use crate::request::{invalid, limits_msg, read_policy};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::session::{self, ExecutionOutput};
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use std::path::PathBuf;

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
pub async fn run(ep: &Target, args: ExecArgs) -> i32 {
    // Take over SIGINT before anything else so no Ctrl-C is lost or kills us mid-setup.
    let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(s) => s,
        Err(e) => return render::fail(ErrorCode::Internal, format!("cannot handle SIGINT: {e}")),
    };
    let env = match parse_env(&args.env) {
        Ok(e) => e,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    // 1. The sandbox and, unless its policy asks for a bootstrap first, the workload: one
    // RunExecution call (it also tears the sandbox down after the exit unless we keep it).
    let create = match &args.in_sandbox {
        Some(_) => None,
        None => match create_request(&args) {
            Ok(r) => Some(r),
            Err(e) => {
                render::error(&e, None);
                return EXIT_CLEANROOM_ERROR;
            }
        },
    };
    // Connected only once the request is built (the policy file read): the HTTP/2 preface
    // and the request then leave back to back, and the server reads them in one wake-up
    // instead of waking for the preface alone.
    let client = match Client::connect_target(ep).await {
        Ok(c) => c,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let keep_sandbox = args.keep || args.ask.learn.is_some();
    let run_req = RunExecutionRequest {
        terminate_on_exit: create.is_some() && !keep_sandbox,
        create: create.into(),
        execution: execution_request(
            &args,
            args.in_sandbox.as_deref().unwrap_or_default(),
            None,
            env.clone(),
        )
        .into(),
        ..Default::default()
    };
    // With --workdir-from the command must wait for the copy: make (or find) the sandbox
    // alone, and start the command after the copy (step 3).
    let made = match &args.workdir_from {
        None => ExecutionOutput::run(&client, run_req).await,
        Some(_) => sandbox_only(&client, run_req).await,
    };
    let started = match made {
        Ok(s) => s,
        Err(e) => {
            let hint = args
                .in_sandbox
                .as_ref()
                .or(e
                    .details
                    .iter()
                    .find(|(k, _)| k == "sandbox_id")
                    .map(|(_, v)| v))
                .map(|id| format!("cleanroom sandbox inspect {id}"));
            render::error(&e, hint);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    // The local record's pruning, while the command starts (not before the request: it
    // would delay it).
    crate::retained::make_room();
    // And the record itself, while the command runs (see `record_started`).
    let record = started
        .execution
        .as_ref()
        .and_then(|(e, _)| crate::retained::record_started(e));
    let sandbox_id = started.sandbox.sandbox_id.clone();
    let created = started.created;
    let bootstrap = started.bootstrap;
    let asks = Some(started.sandbox.egress_asks);
    let mut running = started.execution;
    if args.print_sandbox_id || (args.keep && created) {
        eprintln!("{sandbox_id}");
    }
    // Answer the policy's approval requests (prompt, --approve, --on-ask) from here on:
    // the dependencies step may ask too.
    let mut answerer = crate::ask::start(&client, &sandbox_id, asks, &args.ask, !args.no_stdin);
    // 2. Repository checkout and dependencies, for sandboxes made from repository policy.
    let mut default_cwd = None;
    let mut code = 0;
    if let Some(plan) = &bootstrap {
        let file = args
            .policy
            .clone()
            .or_else(|| Some(PathBuf::from("cleanroom.yaml")));
        match crate::bootstrap::run(&client, &sandbox_id, plan, file.as_deref(), &mut sigint).await
        {
            Ok(cwd) => default_cwd = cwd,
            Err(c) => code = c,
        }
    }
    // 2b. The local directory the user asked for, where the workload will run.
    if let (0, Some(dir)) = (code, &args.workdir_from) {
        let dest = args
            .cwd
            .clone()
            .or(default_cwd.clone())
            // Neither --cwd nor repository.path: the guest layout's workspace, where the
            // server runs a command by default.
            .unwrap_or_else(|| cleanroom_backend::WORKSPACE_PATH.to_string());
        match crate::bootstrap::copy_dir(&client, &sandbox_id, dir, &dest, &mut sigint).await {
            Ok(()) => default_cwd = Some(dest),
            Err(c) => code = c,
        }
    }
    // 3. The workload (already running unless a bootstrap or a copy came first).
    let mut ran = Ran::default();
    if code == 0 {
        let stdin = std::mem::replace(&mut answerer.guest_stdin, Box::new(tokio::io::empty()));
        let work = Workload {
            sandbox_id: &sandbox_id,
            default_cwd,
            env,
            stdin,
            running: running.take(),
        };
        match exec_in(&client, &args, work, &mut sigint).await {
            Ok(r) => {
                code = r.code;
                ran = r;
            }
            Err((exec_id, interrupted)) => {
                // Detached: the execution and its sandbox stay as they are (never torn
                // down behind the user's back); say how to come back.
                let state = if interrupted {
                    "got SIGINT; unless that ends it, it keeps running"
                } else {
                    "keeps running"
                };
                eprintln!(
                    "cleanroom: detached; {exec_id} {state} in {sandbox_id}\n  re-attach: cleanroom execution logs -f {exec_id}\n  remove:    cleanroom sandbox rm {sandbox_id}"
                );
                return EXIT_DETACHED;
            }
        }
    }
    drop(answerer);
    if let Some(dest) = &args.ask.learn {
        let c = crate::ask::print_learned(&client, &sandbox_id, dest).await;
        if code == 0 {
            code = c;
        }
    }
    // 4. Keep the run's record locally and tear the sandbox down, at the same time: the
    // teardown finishes in the server (STOPPING now, STOPPED once every process, mount and
    // cgroup is gone), so the exit code is not delayed by it. RunExecution already did both
    // halves' server side when its stream lasted to the end: its final record came with it
    // and it started the teardown itself.
    let server_tore_down = ran.finished.is_some() && created && !keep_sandbox;
    let retain = async {
        match (ran.finished.take(), ran.exec_id.as_deref()) {
            (Some(f), _) => crate::retained::record_finished(f, &ran.tails, record),
            (None, Some(id)) => crate::retained::record(&client, id).await,
            (None, None) => {}
        }
    };
    let teardown = async {
        if created && !args.keep && !server_tore_down {
            let req = TerminateSandboxRequest {
                sandbox_id: sandbox_id.clone(),
                background: true,
                ..Default::default()
            };
            if let Err(e) = client.sandboxes.terminate_sandbox(req).await {
                render::error(
                    &e.into(),
                    Some(format!("cleanroom sandbox inspect {sandbox_id}")),
                );
            }
        }
    };
    tokio::join!(retain, teardown);
    code
}

/// The sandbox of a RunExecution request without starting its command: CreateSandbox for
/// `create`, else the named sandbox (GetSandbox checks that it is the caller's).
async fn sandbox_only<'c>(
    client: &'c Client,
    req: RunExecutionRequest,
) -> Result<session::RunStarted<'c>, ApiError> {
    if let Some(create) = req.create.as_option() {
        let made = client
            .sandboxes
            .create_sandbox(create.clone())
            .await?
            .into_owned();
        return Ok(session::RunStarted {
            sandbox: made.sandbox.as_option().cloned().unwrap_or_default(),
            created: true,
            bootstrap: made.bootstrap.as_option().cloned(),
            execution: None,
        });
    }
    let sandbox_id = req
        .execution
        .as_option()
        .map(|e| e.sandbox_id.clone())
        .unwrap_or_default();
    let got = client
        .sandboxes
        .get_sandbox(GetSandboxRequest {
            sandbox_id,
            ..Default::default()
        })
        .await?
        .into_owned();
    Ok(session::RunStarted {
        sandbox: got.sandbox.as_option().cloned().unwrap_or_default(),
        created: false,
        bootstrap: None,
        execution: None,
    })
}

/// The sandbox's side of the CLI's `exec`: what CreateSandbox (or RunExecution) is asked for.
fn create_request(args: &ExecArgs) -> Result<CreateSandboxRequest, ApiError> {
    // A snapshot brings its own policy: the repository's is not read.
    let policy = match args.from.is_some() {
        true => String::new(),
        false => read_policy(args.policy.as_ref(), true)?,
    };
    let limits = limits_msg(&args.limits)?;
    Ok(CreateSandboxRequest {
        image_ref: args.image.clone().unwrap_or_default(),
        limits: limits.into(),
        learn: args.ask.learn.is_some(),
        from_snapshot: crate::checkpoints::from_fields(args.from.as_deref()).0,
        from_checkpoint: crate::checkpoints::from_fields(args.from.as_deref()).1,
        volumes: crate::request::volume_msgs(&args.volumes)?,
        runtime: args.limits.runtime_wire(),
        ..crate::request::sandbox_request(policy, args.policy.as_deref())?
    })
}

/// The workload as CreateExecution (or RunExecution) is asked for it.
fn execution_request(
    args: &ExecArgs,
    sandbox_id: &str,
    default_cwd: Option<String>,
    env: Vec<(String, String)>,
) -> CreateExecutionRequest {
    CreateExecutionRequest {
        sandbox_id: sandbox_id.to_string(),
        command: args.command.clone(),
        env: env.into_iter().collect(),
        cwd: args.cwd.clone().or(default_cwd).unwrap_or_default(),
        timeout_seconds: args.timeout.unwrap_or(0),
        kind: ExecutionKind::EXECUTION_KIND_BATCH.into(),
        attach_stdin: !args.no_stdin,
        ..Default::default()
    }
}

/// What [`exec_in`] runs: in which sandbox, how, and — when RunExecution started it
/// already — the running execution and its output.
struct Workload<'c> {
    sandbox_id: &'c str,
    default_cwd: Option<String>,
    env: Vec<(String, String)>,
    stdin: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    running: Option<(Execution, ExecutionOutput<'c>)>,
}

/// How the workload ended.
#[derive(Default)]
struct Ran {
    /// The exit code to return.
    code: i32,
    /// The execution to keep a record of (none when it could not even be created).
    exec_id: Option<String>,
    /// RunExecution's final record, when its stream lasted to the end.
    finished: Option<InspectExecutionResponse>,
    /// The output's tails, for that record.
    tails: crate::retained::Tails,
}

/// Run the workload (unless it runs already) and follow it to its end. `Err` means the
/// user detached (the execution id, and whether a cancel was sent).
async fn exec_in<'c>(
    client: &'c Client,
    args: &ExecArgs,
    work: Workload<'c>,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<Ran, (String, bool)> {
    let sandbox_id = work.sandbox_id;
    let (execution, mut output) = match work.running {
        Some(running) => running,
        None => {
            let req = execution_request(args, sandbox_id, work.default_cwd, work.env);
            match session::create_execution(client, req).await {
                Ok(e) => {
                    let output = ExecutionOutput::new(client, sandbox_id, &e.execution_id);
                    (e, output)
                }
                Err(e) => {
                    render::error(&e, Some(format!("cleanroom sandbox inspect {sandbox_id}")));
                    return Ok(Ran {
                        code: EXIT_CLEANROOM_ERROR,
                        ..Default::default()
                    });
                }
            }
        }
    };
    let exec_id = execution.execution_id.clone();
    if !args.no_stdin {
        // Local stdin to the execution, then EOF for the guest.
        tokio::spawn(session::pump_stdin(
            client.executions.clone(),
            sandbox_id.to_string(),
            exec_id.clone(),
            work.stdin,
        ));
    }
    let opts = FollowOpts {
        after_sequence: 0,
        follow: true,
        to_stderr: false,
        json: false,
        ctrl_c: CtrlC::CancelThenDetach,
    };
    let mut tails = crate::retained::Tails::default();
    let code = match follow_output(&mut output, &exec_id, sigint, opts, Some(&mut tails)).await {
        Followed::Exit(code) => code,
        Followed::Detached { interrupted } => return Err((exec_id, interrupted)),
        Followed::Caught => 0,
    };
    if args.print_trace_id && code == 0 {
        eprintln!("trace_id: {}", execution.trace_id);
    }
    Ok(Ran {
        code,
        finished: output.finished().await,
        exec_id: Some(exec_id),
        tails,
    })
}
