//! `cleanroom sandbox pause|resume` and `cleanroom snapshot create|ls|inspect|rm`: thin
//! clients of the server's `SnapshotService`. Restoring is `--from snap_…` on
//! `sandbox create` and `exec`.

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::{Args, Subcommand};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

/// `sandbox pause|resume` arguments.
#[derive(Debug, Args)]
pub struct PauseArgs {
    /// Sandboxes to pause (or resume)
    #[arg(required = true)]
    pub sandbox_ids: Vec<String>,
    /// Print the sandboxes as JSON (also the global `-o json`)
    #[arg(long)]
    pub json: bool,
}

/// Filesystem snapshots of sandboxes.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Capture a sandbox's writable files (image layer, /workspace, /tmp, /root) with its
    /// policy, image and limits; prints the snapshot id. The sandbox is frozen meanwhile.
    Create {
        sandbox_id: String,
        /// Print the snapshot as JSON
        #[arg(long)]
        json: bool,
    },
    /// List your snapshots
    Ls {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Show one snapshot (size, files, parent, source sandbox, created_at)
    Inspect {
        snapshot_id: String,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Delete snapshots (refused while a live sandbox uses one)
    Rm {
        #[arg(required = true)]
        snapshot_ids: Vec<String>,
    },
    /// Checkpoint a sandbox's memory and processes (same as `sandbox checkpoint ID
    /// --leave-running=false`); refused with backend_capability_mismatch on a runtime
    /// without checkpoint_restore (linux)
    Checkpoint { sandbox_id: String },
}

fn print_sandbox(s: &Sandbox, json: bool) {
    if json {
        println!("{}", serde_json::to_string(s).unwrap_or_default());
    } else {
        let status = s
            .status
            .as_known()
            .map(|k| format!("{k:?}"))
            .unwrap_or_default();
        println!(
            "{} {}",
            s.sandbox_id,
            status.trim_start_matches("SANDBOX_STATUS_")
        );
    }
}

/// `cleanroom sandbox pause` (`resume = false`) or `resume`.
pub async fn pause(client: &Client, args: PauseArgs, resume: bool) -> i32 {
    let json = args.json;
    let mut failed = false;
    for id in args.sandbox_ids {
        let result = if resume {
            client
                .snapshots
                .resume_sandbox(ResumeSandboxRequest {
                    sandbox_id: id,
                    ..Default::default()
                })
                .await
                .map(|r| r.into_owned().sandbox.as_option().cloned())
        } else {
            client
                .snapshots
                .pause_sandbox(PauseSandboxRequest {
                    sandbox_id: id,
                    ..Default::default()
                })
                .await
                .map(|r| r.into_owned().sandbox.as_option().cloned())
        };
        match result {
            Ok(s) => print_sandbox(&s.unwrap_or_default(), json),
            Err(e) => {
                render::error(&e.into(), None);
                failed = true;
            }
        }
    }
    if failed {
        EXIT_CLEANROOM_ERROR
    } else {
        0
    }
}

fn detail(s: &Snapshot) -> String {
    let l = s.limits.as_option().cloned().unwrap_or_default();
    let created = crate::render::time(&s.created_at);
    format!(
        "snapshot_id:     {}\nsource_sandbox:  {}\nparent:          {}\nsize_bytes:      {}\nfiles:           {}\ncontent_digest:  {}\npolicy_hash:     {}\nimage:           {}\nlimits:          memory={}MiB pids={} cpu={}m disk={}MiB\ncreated_at:      {}\n{}",
        s.snapshot_id,
        s.source_sandbox_id,
        if s.parent_snapshot_id.is_empty() { "-" } else { &s.parent_snapshot_id },
        s.size_bytes,
        s.file_count,
        s.content_digest,
        s.policy_hash,
        if s.image_ref.is_empty() { "-" } else { &s.image_ref },
        l.memory_bytes >> 20,
        l.pids,
        l.cpu_millis,
        l.disk_bytes >> 20,
        created,
        volumes_line(&s.volumes_not_captured),
    )
}

/// Named volumes are never captured (docs/volumes.md): said on every snapshot that had
/// some.
fn volumes_line(v: &[VolumeMount]) -> String {
    if v.is_empty() {
        return String::new();
    }
    let list: Vec<String> = v
        .iter()
        .map(|m| {
            format!(
                "{}:{}{}",
                m.name,
                m.path,
                if m.read_only { ":ro" } else { "" }
            )
        })
        .collect();
    format!(
        "volumes:         {} (not captured: a restore mounts them again as they are then)\n",
        list.join(", ")
    )
}

/// `cleanroom snapshot …`.
pub async fn run(ep: &Target, cmd: SnapshotCommand) -> i32 {
    match snapshot(ep, cmd).await {
        Ok(code) => code,
        Err(e) => {
            render::error(&e, None);
            EXIT_CLEANROOM_ERROR
        }
    }
}

async fn snapshot(ep: &Target, cmd: SnapshotCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        SnapshotCommand::Create { sandbox_id, json } => {
            let r = client
                .snapshots
                .create_snapshot(CreateSnapshotRequest {
                    sandbox_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let s = r.snapshot.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                println!("{}", s.snapshot_id);
            }
        }
        SnapshotCommand::Ls { json } => {
            let r = client
                .snapshots
                .list_snapshots(ListSnapshotsRequest::default())
                .await?
                .into_owned();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r.snapshots).unwrap_or_default()
                );
            } else {
                println!(
                    "{:<38} {:<38} {:>12} {:>8}",
                    "SNAPSHOT", "SOURCE", "BYTES", "FILES"
                );
                for s in &r.snapshots {
                    println!(
                        "{:<38} {:<38} {:>12} {:>8}",
                        s.snapshot_id, s.source_sandbox_id, s.size_bytes, s.file_count
                    );
                }
            }
        }
        SnapshotCommand::Inspect { snapshot_id, json } => {
            let r = client
                .snapshots
                .get_snapshot(GetSnapshotRequest {
                    snapshot_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let s = r.snapshot.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                print!("{}", detail(&s));
            }
        }
        SnapshotCommand::Rm { snapshot_ids } => {
            let client = &client;
            return Ok(render::each_id(snapshot_ids, |id| async move {
                client
                    .snapshots
                    .remove_snapshot(RemoveSnapshotRequest {
                        snapshot_id: id,
                        ..Default::default()
                    })
                    .await
                    .map(drop)
                    .map_err(Into::into)
            })
            .await);
        }
        SnapshotCommand::Checkpoint { sandbox_id } => {
            let r = client
                .snapshots
                .checkpoint_sandbox(CheckpointSandboxRequest {
                    sandbox_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            println!("{}", r.checkpoint_id);
        }
    }
    Ok(0)
}
