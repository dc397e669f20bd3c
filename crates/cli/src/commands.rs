//! Command dispatch and the plain request/response commands (`sandbox`, `image`,
//! `execution`, `policy`). `exec` lives in [`crate::exec`], `serve` in
//! [`crate::serve`]. Each is a thin client of the server.

use crate::cli::{Cli, Command, ExecutionCommand, PolicyCommand, SandboxCommand};
use crate::lazy::Lazy;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use crate::request::{limits_msg, read_policy};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::{self, Target};
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use std::io::Write;

mod images;
pub(crate) mod labels;

pub async fn run(mut cli: Cli) -> i32 {
    crate::toplevel::apply_output(&mut cli);
    match cli.command {
        Command::Serve(Lazy(args)) => crate::serve::run(args, cli.otlp_endpoint).await,
        // Pure validation of a local file with the server's own compiler; nothing runs.
        Command::Policy(Lazy(cmd)) if !matches!(cmd, PolicyCommand::Suggest(_)) => policy(cmd),
        // Local files, and the server they name when a record says a run is still running.
        Command::Status(Lazy(args)) => {
            let current = endpoint::resolve_target(
                cli.host.as_deref(),
                cli.token.as_deref(),
                cli.ca_cert.as_deref(),
                cli.server_cert_sha256.as_deref(),
            )
            .ok();
            crate::retained::status(args, current).await
        }
        // Local files: the cluster identity is made without a server.
        Command::Cluster(Lazy(cmd)) if crate::cluster::is_local(&cmd) => {
            crate::cluster::local(&cmd).unwrap_or(0)
        }
        // Offline: the public key and the file are all it needs.
        Command::Attestation(Lazy(crate::attest::AttestationCommand::Verify(args))) => {
            crate::attest::verify(args)
        }
        other => {
            let mut ep = match endpoint::resolve_target(
                cli.host.as_deref(),
                cli.token.as_deref(),
                cli.ca_cert.as_deref(),
                cli.server_cert_sha256.as_deref(),
            ) {
                Ok(ep) => ep,
                Err(e) => return render::fail(ErrorCode::InvalidArgument, e),
            };
            crate::retained::set_server(&ep.endpoint);
            let trace = match crate::trace::CommandTrace::start(
                cli.otlp_endpoint.as_deref(),
                command_name(&other),
            ) {
                Ok(t) => t,
                Err(e) => return render::fail(ErrorCode::InvalidArgument, e),
            };
            ep.traceparent = Some(trace.traceparent());
            let code = dispatch(&ep, other).await;
            trace.finish(code).await;
            code
        }
    }
}

/// The span name of a client command (`cleanroom <name>`).
fn command_name(c: &Command) -> &'static str {
    match c {
        Command::Serve(_) => "serve",
        Command::Exec(_) => "exec",
        Command::Console(_) => "console",
        Command::Create(_) => "create",
        Command::Inspect(_) => "inspect",
        Command::Status(_) => "status",
        Command::Sandbox(_) => "sandbox",
        Command::Execution(_) => "execution",
        Command::Image(_) => "image",
        Command::Policy(_) => "policy",
        Command::Snapshot(_) => "snapshot",
        Command::Checkpoint(_) => "checkpoint",
        Command::Cp(_) => "cp",
        Command::Pool(_) => "pool",
        Command::Attestation(_) => "attestation",
        Command::Volume(_) => "volume",
        Command::Cluster(_) => "cluster",
        Command::Node(_) => "node",
        Command::PortForward(_) => "port-forward",
        Command::Ui(_) => "ui",
    }
}

/// Run a command that talks to the server at `ep`.
async fn dispatch(ep: &Target, other: Command) -> i32 {
    match other {
        Command::Exec(Lazy(args)) => crate::exec::run(ep, args).await,
        Command::Policy(Lazy(PolicyCommand::Suggest(a))) => crate::approve::suggest(ep, a).await,
        Command::Sandbox(Lazy(SandboxCommand::Approve(a))) => crate::approve::approve(ep, a).await,
        Command::Sandbox(Lazy(SandboxCommand::Requests(a))) => {
            crate::approve::requests(ep, a).await
        }
        Command::Sandbox(Lazy(SandboxCommand::Timeout(a))) => {
            report(crate::lifetime::timeout(ep, a).await)
        }
        Command::Sandbox(Lazy(SandboxCommand::Network(a))) => {
            report(crate::network::run(ep, a).await)
        }
        Command::Sandbox(Lazy(SandboxCommand::Expose(a))) => {
            report(crate::inbound::expose(ep, a).await)
        }
        Command::Sandbox(Lazy(SandboxCommand::Unexpose(a))) => {
            report(crate::inbound::unexpose(ep, a).await)
        }
        Command::PortForward(Lazy(a)) => report(crate::portforward::run(ep, a).await),
        Command::Console(Lazy(args)) => crate::console::run(ep, args).await,
        Command::Create(Lazy(args)) => crate::toplevel::create(ep, args).await,
        Command::Inspect(Lazy(args)) => crate::toplevel::inspect(ep, args).await,
        Command::Sandbox(Lazy(cmd)) => report(sandbox(ep, cmd).await),
        Command::Execution(Lazy(ExecutionCommand::Logs(a))) => crate::logs::run(ep, a).await,
        Command::Execution(Lazy(cmd)) => report(execution(ep, cmd).await),
        Command::Image(Lazy(cmd)) => report(images::run(ep, cmd).await),
        Command::Snapshot(Lazy(cmd)) => crate::snapshots::run(ep, cmd).await,
        Command::Checkpoint(Lazy(cmd)) => crate::checkpoints::run(ep, cmd).await,
        Command::Cp(Lazy(args)) => crate::cp::run(ep, args).await,
        Command::Pool(Lazy(cmd)) => report(crate::pools::run(ep, cmd).await),
        Command::Attestation(Lazy(cmd)) => report(crate::attest::run(ep, cmd).await),
        Command::Volume(Lazy(cmd)) => report(crate::volumes::run(ep, cmd).await),
        Command::Cluster(Lazy(cmd)) => report(crate::cluster::run(ep, cmd).await),
        Command::Node(Lazy(cmd)) => report(crate::node::run(ep, cmd).await),
        Command::Ui(Lazy(args)) => crate::ui::run(ep, args).await,
        Command::Serve(Lazy(_)) | Command::Policy(Lazy(_)) | Command::Status(Lazy(_)) => {
            unreachable!("handled above")
        }
    }
}

fn report(r: Result<i32, ApiError>) -> i32 {
    r.unwrap_or_else(|e| {
        render::error(&e, None);
        EXIT_CLEANROOM_ERROR
    })
}

fn policy(cmd: PolicyCommand) -> i32 {
    let (file, show) = match cmd {
        PolicyCommand::Check { file } => (file, false),
        PolicyCommand::Show { file } => (file, true),
        PolicyCommand::Suggest(_) => unreachable!("needs the server: dispatched in run"),
    };
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => {
            return render::fail(
                ErrorCode::PolicyInvalid,
                format!("cannot read {}: {e}", file.display()),
            )
        }
    };
    match cleanroom_client::policy::compile(&text) {
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
            render::report(e.code().as_str(), &format!("{}: {e}", file.display()), None);
            EXIT_CLEANROOM_ERROR
        }
    }
}

pub(crate) async fn sandbox(ep: &Target, cmd: SandboxCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        SandboxCommand::Create {
            policy,
            image,
            limits,
            lifetime,
            from,
            dangerously_allow_all,
            docker,
            agent_key,
            delegation,
            no_pool,
            labels,
            volumes,
        } => {
            if docker {
                return Err(crate::toplevel::docker_refused());
            }
            let policy_yaml = if dangerously_allow_all {
                crate::toplevel::ALLOW_ALL_POLICY.to_string()
            } else {
                read_policy(policy.as_ref(), false)?
            };
            let (agent_public_key, delegation_chain) =
                crate::pools::identity_args(agent_key.as_deref(), &delegation)?;
            let req = CreateSandboxRequest {
                image_ref: image.unwrap_or_default(),
                limits: limits_msg(&limits)?.into(),
                ttl_seconds: lifetime.ttl.unwrap_or(0),
                idle_timeout_seconds: lifetime.idle_timeout.unwrap_or(0),
                suspend_after_seconds: lifetime.suspend_after.unwrap_or(0),
                from_snapshot: crate::checkpoints::from_fields(from.as_deref()).0,
                from_checkpoint: crate::checkpoints::from_fields(from.as_deref()).1,
                agent_public_key,
                delegation_chain,
                no_pool,
                labels: labels.into_iter().collect(),
                volumes: crate::request::volume_msgs(&volumes)?,
                runtime: limits.runtime_wire(),
                ..crate::request::sandbox_request(policy_yaml, policy.as_deref())?
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
        SandboxCommand::Ls {
            all,
            labels,
            owner,
            json,
        } => {
            let resp = client
                .sandboxes
                .list_sandboxes(ListSandboxesRequest {
                    include_stopped: all,
                    labels: labels.into_iter().collect(),
                    owner: owner.unwrap_or_default(),
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
        SandboxCommand::Approve(_) | SandboxCommand::Requests(_) => {
            unreachable!("dispatched in run")
        }
        SandboxCommand::Checkpoint(a) => return crate::checkpoints::checkpoint(&client, a).await,
        SandboxCommand::Pause(a) => return Ok(crate::snapshots::pause(&client, a, false).await),
        SandboxCommand::Resume(a) => return Ok(crate::snapshots::pause(&client, a, true).await),
        SandboxCommand::Rm {
            sandbox_ids,
            labels,
            all,
        } => {
            if all || !labels.is_empty() {
                return labels::rm_matching(&client, labels).await;
            }
            let client = &client;
            return Ok(render::each_id(sandbox_ids, |id| async move {
                client
                    .sandboxes
                    .terminate_sandbox(TerminateSandboxRequest {
                        sandbox_id: id,
                        ..Default::default()
                    })
                    .await
                    .map(drop)
                    .map_err(Into::into)
            })
            .await);
        }
        SandboxCommand::Timeout(_)
        | SandboxCommand::Network(_)
        | SandboxCommand::Expose(_)
        | SandboxCommand::Unexpose(_) => {
            unreachable!("dispatched in run()")
        }
        SandboxCommand::Attest { sandbox_id, out } => {
            return crate::attest::sandbox_attest(ep, sandbox_id, out).await;
        }
    }
    Ok(0)
}

pub(crate) async fn execution(ep: &Target, cmd: ExecutionCommand) -> Result<i32, ApiError> {
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
        ExecutionCommand::Logs(_) => unreachable!("dispatched in run()"),
    }
    Ok(0)
}
