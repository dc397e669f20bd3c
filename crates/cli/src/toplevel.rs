//! Seed 000's top-level verbs beside `exec`/`console`: `cleanroom create` (repo-aware,
//! keeps the sandbox), `cleanroom inspect <typeid>` (dispatch on the id's prefix), and the
//! global `-o json` of read commands.

use crate::attest::AttestationCommand;
use crate::cli::{Cli, Command, ExecutionCommand, ImageCommand, LimitArgs, SandboxCommand};
use crate::lazy::Lazy;
use crate::pools::PoolCommand;
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use crate::snapshots::SnapshotCommand;
use clap::Args;
use cleanroom_client::endpoint::Target;
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;
use std::path::PathBuf;

/// The built-in policy of `sandbox create --dangerously-allow-all`.
pub const ALLOW_ALL_POLICY: &str =
    "version: 1\nsandbox:\n  network:\n    dangerously_allow_all: true\n";

/// `--docker`: this backend cannot, so it is refused before anything is created (fail
/// closed: no sandbox without the service the caller asked for).
pub fn docker_refused() -> cleanroom_client::ApiError {
    cleanroom_client::ApiError {
        code: cleanroom_client::ErrorCode::BackendCapabilityMismatch.to_string(),
        message: "--docker: the linux backend has no guest Docker service (it runs no daemons in sandboxes, and a nested container runtime needs mounts and namespaces the sandbox's seccomp filter denies)".into(),
        connect_code: String::new(),
        details: vec![("capability".into(), "guest_docker".into())],
    }
}

/// `-o FORMAT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Human-readable tables and details (the default)
    Text,
    /// JSON, for scripts
    Json,
}

/// `-o json` turns on the `--json` of whichever read command runs.
pub fn apply_output(cli: &mut Cli) {
    if cli.output != Some(OutputFormat::Json) {
        return;
    }
    match &mut cli.command {
        Command::Sandbox(Lazy(SandboxCommand::Ls { json, .. }))
        | Command::Sandbox(Lazy(SandboxCommand::Inspect { json, .. }))
        | Command::Execution(Lazy(ExecutionCommand::Inspect { json, .. }))
        | Command::Image(Lazy(ImageCommand::Ls { json, .. }))
        | Command::Image(Lazy(ImageCommand::Pull { json, .. })) => *json = true,
        Command::Inspect(Lazy(a)) => a.json = true,
        Command::Status(Lazy(a)) => a.json = true,
        Command::Cp(Lazy(a)) => a.json = true,
        Command::Sandbox(Lazy(SandboxCommand::Pause(a)))
        | Command::Sandbox(Lazy(SandboxCommand::Resume(a))) => a.json = true,
        Command::Sandbox(Lazy(SandboxCommand::Checkpoint(a))) => a.json = true,
        Command::Checkpoint(Lazy(
            crate::checkpoints::CheckpointCommand::Ls { json }
            | crate::checkpoints::CheckpointCommand::Inspect { json, .. },
        )) => *json = true,
        Command::Execution(Lazy(ExecutionCommand::Logs(a))) => a.json = true,
        Command::Snapshot(Lazy(
            SnapshotCommand::Create { json, .. }
            | SnapshotCommand::Ls { json }
            | SnapshotCommand::Inspect { json, .. },
        )) => *json = true,
        Command::Pool(Lazy(
            PoolCommand::Create { json, .. }
            | PoolCommand::Ls { json }
            | PoolCommand::Stats { json, .. }
            | PoolCommand::Claim { json, .. },
        )) => *json = true,
        Command::Attestation(Lazy(AttestationCommand::Verify(a))) => a.json = true,
        Command::Volume(Lazy(
            crate::volumes::VolumeCommand::Create { json, .. }
            | crate::volumes::VolumeCommand::Ls { json }
            | crate::volumes::VolumeCommand::Inspect { json, .. },
        )) => *json = true,
        Command::Cluster(Lazy(crate::cluster::ClusterCommand::Status { json })) => *json = true,
        Command::Node(Lazy(crate::node::NodeCommand::Drain { json, .. })) => *json = true,
        _ => {}
    }
}

/// `cleanroom create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Policy file [default: ./cleanroom.yaml when present, else the built-in deny-all policy]
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Root the sandbox on this OCI image, pinned by digest
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub volumes: crate::request::VolumeArgs,
}

/// Create, bootstrap (repository checkout, dependencies), keep; print the id on stdout.
pub async fn create(ep: &Target, args: CreateArgs) -> i32 {
    let client = match Client::connect_target(ep).await {
        Ok(c) => c,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    match crate::console::create_sandbox(
        &client,
        args.policy.as_ref(),
        args.image.as_deref(),
        (&args.limits, &args.volumes),
    )
    .await
    {
        Ok((id, _cwd)) => {
            println!("{id}");
            0
        }
        Err(code) => code,
    }
}

/// `cleanroom inspect <typeid>`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// A typed id: sbx_… or exe_…
    pub id: String,
    /// Print JSON (same as -o json)
    #[arg(long)]
    pub json: bool,
}

/// Dispatch on the id's prefix to the canonical inspect of that kind.
pub async fn inspect(ep: &Target, args: InspectArgs) -> i32 {
    let r = match args.id.split_once('_').map(|(p, _)| p) {
        Some("sbx") => {
            crate::commands::sandbox(
                ep,
                SandboxCommand::Inspect {
                    sandbox_id: args.id,
                    json: args.json,
                },
            )
            .await
        }
        Some("exe") => {
            crate::commands::execution(
                ep,
                ExecutionCommand::Inspect {
                    execution_id: Some(args.id),
                    sandbox_id: None,
                    last: false,
                    json: args.json,
                },
            )
            .await
        }
        _ => {
            return render::fail(
                ErrorCode::InvalidArgument,
                format!(
                    "cannot inspect {:?}: not a sandbox (sbx_…) or execution (exe_…) id",
                    args.id
                ),
            )
        }
    };
    r.unwrap_or_else(|e| {
        render::error(&e, None);
        EXIT_CLEANROOM_ERROR
    })
}
