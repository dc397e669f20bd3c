//! `cleanroom sandbox checkpoint ID [--leave-running]` and `cleanroom checkpoint
//! ls|inspect|rm`: thin clients of the server's memory checkpoints (docs/checkpoints.md).
//! Restoring is `--from ckpt_…` on `sandbox create` and `exec`.

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::{Args, Subcommand};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

/// `sandbox checkpoint` arguments.
#[derive(Debug, Args)]
pub struct CheckpointArgs {
    pub sandbox_id: String,
    /// Keep the sandbox running afterwards (without: it is stopped once checkpointed)
    #[arg(long)]
    pub leave_running: bool,
    /// Print the checkpoint as JSON (also the global `-o json`)
    #[arg(long)]
    pub json: bool,
}

/// Memory checkpoints of sandboxes (restore with `sandbox create --from ckpt_…`).
#[derive(Debug, Subcommand)]
pub enum CheckpointCommand {
    /// List your checkpoints
    Ls {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one checkpoint (size, runtime version, digest, what a restore drops)
    Inspect {
        checkpoint_id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Delete checkpoints (sandboxes restored from one keep running)
    Rm {
        #[arg(required = true)]
        checkpoint_ids: Vec<String>,
    },
}

/// `--from ID` as the request's (`from_snapshot`, `from_checkpoint`) pair: a `ckpt_…`
/// id is a checkpoint, anything else a snapshot.
pub fn from_fields(from: Option<&str>) -> (String, String) {
    match from {
        Some(id) if id.starts_with("ckpt_") => (String::new(), id.to_string()),
        Some(id) => (id.to_string(), String::new()),
        None => (String::new(), String::new()),
    }
}

fn detail(c: &Checkpoint) -> String {
    let l = c.limits.as_option().cloned().unwrap_or_default();
    let dropped = if c.dropped.is_empty() {
        "-".to_string()
    } else {
        c.dropped
            .iter()
            .map(|d| format!("\n  - {d}"))
            .collect::<String>()
    };
    format!(
        "checkpoint_id:   {}\nsource_sandbox:  {}\nruntime:         {} ({})\nsize_bytes:      {}\nfiles:           {}\ncontent_digest:  {}\npolicy_hash:     {}\nimage:           {}\nlimits:          memory={}MiB pids={} cpu={}m disk={}MiB\ncreated_at:      {}\ndropped:         {}\n",
        c.checkpoint_id,
        c.source_sandbox_id,
        c.runtime,
        c.runtime_version,
        c.size_bytes,
        c.file_count,
        c.content_digest,
        c.policy_hash,
        if c.image_ref.is_empty() { "-" } else { &c.image_ref },
        l.memory_bytes >> 20,
        l.pids,
        l.cpu_millis,
        l.disk_bytes >> 20,
        crate::render::time(&c.created_at),
        dropped,
    )
}

/// `cleanroom sandbox checkpoint`.
pub async fn checkpoint(client: &Client, args: CheckpointArgs) -> Result<i32, ApiError> {
    let r = client
        .snapshots
        .checkpoint_sandbox(CheckpointSandboxRequest {
            sandbox_id: args.sandbox_id,
            leave_running: args.leave_running,
            ..Default::default()
        })
        .await?
        .into_owned();
    if args.json {
        let c = r.checkpoint.as_option().cloned().unwrap_or_default();
        println!("{}", serde_json::to_string_pretty(&c).unwrap_or_default());
    } else {
        println!("{}", r.checkpoint_id);
    }
    Ok(0)
}

/// `cleanroom checkpoint …`.
pub async fn run(ep: &Target, cmd: CheckpointCommand) -> i32 {
    match command(ep, cmd).await {
        Ok(code) => code,
        Err(e) => {
            render::error(&e, None);
            EXIT_CLEANROOM_ERROR
        }
    }
}

async fn command(ep: &Target, cmd: CheckpointCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        CheckpointCommand::Ls { json } => {
            let r = client
                .snapshots
                .list_checkpoints(ListCheckpointsRequest::default())
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r.checkpoints).unwrap_or_default()
                );
            } else {
                println!(
                    "{:<38} {:<38} {:>12} {:<8}",
                    "CHECKPOINT", "SOURCE", "BYTES", "RUNTIME"
                );
                for c in &r.checkpoints {
                    println!(
                        "{:<38} {:<38} {:>12} {:<8}",
                        c.checkpoint_id, c.source_sandbox_id, c.size_bytes, c.runtime
                    );
                }
            }
        }
        CheckpointCommand::Inspect {
            checkpoint_id,
            json,
        } => {
            let r = client
                .snapshots
                .get_checkpoint(GetCheckpointRequest {
                    checkpoint_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let c = r.checkpoint.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&c).unwrap_or_default());
            } else {
                print!("{}", detail(&c));
            }
        }
        CheckpointCommand::Rm { checkpoint_ids } => {
            let client = &client;
            return Ok(render::each_id(checkpoint_ids, |id| async move {
                client
                    .snapshots
                    .delete_checkpoint(DeleteCheckpointRequest {
                        checkpoint_id: id,
                        ..Default::default()
                    })
                    .await
                    .map(drop)
                    .map_err(Into::into)
            })
            .await);
        }
    }
    Ok(0)
}
