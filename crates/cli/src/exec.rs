//! `cleanroom exec`: create (or reuse) a sandbox, bootstrap it as the server says,
//! run the workload with local stdin forwarded, follow its output, return its exit code,
//! tear the sandbox down — unless the user detached (second Ctrl-C): then the execution and
//! the sandbox are left running and the re-attach command is printed.

use crate::cli::ExecArgs;
use crate::follow::{follow, CtrlC, FollowOpts, Followed, EXIT_DETACHED};
use crate::render::{self, Code, EXIT_CLEANROOM_ERROR};
use crate::request::{invalid, limits_msg, read_policy};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::session;
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
        Err(e) => return render::fail(Code::Internal, format!("cannot handle SIGINT: {e}")),
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
    let mut bootstrap = None;
    // Whether the sandbox's policy may ask (unknown for `--in`: the answerer looks it up).
    let mut asks = None;
    let (sandbox_id, created) = match &args.in_sandbox {
        Some(id) => (id.clone(), false),
        None => {
            // A snapshot brings its own policy: the repository's is not read.
            let policy = match args.from.is_some() {
                true => Ok(String::new()),
                false => read_policy(args.policy.as_ref(), true),
            };
            let policy = match policy {
                Ok(p) => p,
                Err(e) => {
                    render::error(&e, None);
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            let limits = match limits_msg(&args.limits) {
                Ok(l) => l,
                Err(e) => {
                    render::error(&e, None);
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            let lockfiles = match crate::lockfiles::read(&policy, args.policy.as_deref()) {
                Ok(l) => l,
                Err(e) => {
                    render::error(&e, None);
                    return EXIT_CLEANROOM_ERROR;
                }
            };
            let req = CreateSandboxRequest {
                lockfiles: lockfiles.into_iter().collect(),
                policy_yaml: policy,
                image_ref: args.image.clone().unwrap_or_default(),
                limits: limits.into(),
                learn: args.ask.learn.is_some(),
                from_snapshot: args.from.clone().unwrap_or_default(),
                ..Default::default()
            };
            match client.sandboxes.create_sandbox(req).await {
                Ok(r) => {
                    let r = r.into_owned();
                    // What the policy asks to do before the workload, as the server
                    // compiled it.
                    bootstrap = r.bootstrap.as_option().cloned();
                    asks = r.sandbox.as_option().map(|s| s.egress_asks);
                    let id = r.sandbox.as_option().map(|s| s.sandbox_id.clone());
                    (id.unwrap_or_default(), true)
                }
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
    // 3. The workload.
    let mut exec_id = None;
    if code == 0 {
        let stdin = std::mem::replace(&mut answerer.guest_stdin, Box::new(tokio::io::empty()));
        match exec_in(
            &client,
            &sandbox_id,
            &args,
            default_cwd,
            env,
            stdin,
            &mut sigint,
        )
        .await
        {
            Ok((c, id)) => {
                code = c;
                exec_id = id;
            }
            Err((exec_id, canceled)) => {
                // Detached: the execution and its sandbox stay as they are (never torn
                // down behind the user's back); say how to come back.
                let state = if canceled {
                    "is being canceled"
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
    // cgroup is gone), so the exit code is not delayed by it.
    let retain = async {
        if let Some(id) = exec_id.as_deref() {
            crate::retained::record(&client, id).await;
        }
    };
    let teardown = async {
        if created && !args.keep {
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

/// Run the workload and follow it to its end. `Ok` carries the exit code to return and the
/// execution to keep a record of (none when it could not even be created); `Err` means the
/// user detached (the execution id, and whether a cancel was sent).
async fn exec_in(
    client: &Client,
    sandbox_id: &str,
    args: &ExecArgs,
    default_cwd: Option<String>,
    env: Vec<(String, String)>,
    stdin: Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    sigint: &mut tokio::signal::unix::Signal,
) -> Result<(i32, Option<String>), (String, bool)> {
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
    let execution = match session::create_execution(client, req).await {
        Ok(e) => e,
        Err(e) => {
            render::error(&e, Some(format!("cleanroom sandbox inspect {sandbox_id}")));
            return Ok((EXIT_CLEANROOM_ERROR, None));
        }
    };
    let exec_id = execution.execution_id.clone();
    if !args.no_stdin {
        // Local stdin to the execution, then EOF for the guest.
        tokio::spawn(session::pump_stdin(
            client.executions.clone(),
            sandbox_id.to_string(),
            exec_id.clone(),
            stdin,
        ));
    }
    let opts = FollowOpts {
        after_sequence: 0,
        follow: true,
        to_stderr: false,
        json: false,
        ctrl_c: CtrlC::CancelThenDetach,
    };
    let code = match follow(client, sandbox_id, &exec_id, sigint, opts).await {
        Followed::Exit(code) => code,
        Followed::Detached { canceled } => return Err((exec_id, canceled)),
        Followed::Caught => 0,
    };
    if args.print_trace_id && code == 0 {
        eprintln!("trace_id: {}", execution.trace_id);
    }
    Ok((code, Some(exec_id)))
}
