//! `cleanroom node drain NAME [--wait]` and `node undrain NAME`: thin client of the
//! server's `ClusterService` (admins; docs/cluster.md). Draining is the server's (a mark in
//! etcd that placement honours); `--wait` only watches the member's sandbox count, as
//! `cluster status` reports it, until it reaches zero — bounded by `--timeout`, with its
//! progress on stderr. A member rewrites its count within a few seconds of a change, so a
//! zero counts only once it has held for [`SETTLE`]: a sandbox made just before the drain
//! (its count not reported yet) is waited for, not missed.

use crate::render;
use clap::Subcommand;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::ErrorCode;
use cleanroom_client::{ApiError, Client};
use std::time::{Duration, Instant};

#[derive(Debug, Subcommand)]
pub enum NodeCommand {
    /// Stop placing new sandboxes on member NAME (its sandboxes keep running until their
    /// owners end them). The mark stays, across its restarts, until `node undrain`
    Drain {
        /// The member's node name (`cluster status` lists them)
        name: String,
        /// Then wait until the member holds no sandboxes (it reports its count every few
        /// seconds: a zero must hold 5 s); progress goes to stderr
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this many seconds (`deadline_exceeded`; the drain
        /// stays)
        #[arg(long, value_name = "SECS", default_value_t = 600, requires = "wait")]
        timeout: u64,
        /// Print JSON (`-o json` works too): the member as it is at the end
        #[arg(long)]
        json: bool,
    },
    /// Place new sandboxes on member NAME again
    Undrain {
        /// The member's node name
        name: String,
    },
}

/// How often `--wait` asks.
const POLL: Duration = Duration::from_secs(1);

/// How long a reported zero must hold: longer than a member takes to report a change (it
/// checks every 2 s and writes at its next lease renewal, a third of the 5 s TTL).
const SETTLE: Duration = Duration::from_secs(5);

pub async fn run(ep: &Target, cmd: NodeCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        NodeCommand::Undrain { name } => {
            let r = client
                .cluster
                .undrain_node(UndrainNodeRequest {
                    name: name.clone(),
                    ..Default::default()
                })
                .await?
                .into_owned();
            if r.was_draining {
                println!("{name}: undrained (new sandboxes may be placed on it)");
            } else {
                println!("{name}: was not drained");
            }
            Ok(0)
        }
        NodeCommand::Drain {
            name,
            wait,
            timeout,
            json,
        } => {
            let r = client
                .cluster
                .drain_node(DrainNodeRequest {
                    name: name.clone(),
                    ..Default::default()
                })
                .await?
                .into_owned();
            let mut member = r.member.as_option().cloned().unwrap_or_default();
            if !json {
                println!(
                    "{name}: draining (no new placements); {} sandboxes on it",
                    member.sandboxes
                );
            }
            if wait {
                match wait_empty(&client, &name, Duration::from_secs(timeout), member).await? {
                    Ok(m) => member = m,
                    Err(left) => {
                        return Ok(render::fail(
                            ErrorCode::DeadlineExceeded,
                            format!(
                                "{name} still holds {left} sandboxes after {timeout} s (it stays drained)"
                            ),
                        ))
                    }
                }
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&member).unwrap_or_default()
                );
            }
            Ok(0)
        }
    }
}

/// Poll `cluster status` until `name` reports no sandboxes (or is no longer a member):
/// `Ok(member)` then, `Err(left)` at the deadline.
async fn wait_empty(
    client: &Client,
    name: &str,
    timeout: Duration,
    mut last: ClusterMember,
) -> Result<Result<ClusterMember, u64>, ApiError> {
    let deadline = Instant::now() + timeout;
    let mut shown = None;
    let mut zero_since: Option<Instant> = None;
    loop {
        if shown != Some(last.sandboxes) {
            eprintln!("{name}: {} sandboxes left", last.sandboxes);
            shown = Some(last.sandboxes);
        }
        if last.sandboxes == 0 {
            let since = *zero_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= SETTLE {
                return Ok(Ok(last));
            }
        } else {
            zero_since = None;
        }
        if Instant::now() >= deadline {
            return Ok(Err(last.sandboxes));
        }
        tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
        let status = client
            .cluster
            .get_cluster_status(GetClusterStatusRequest::default())
            .await?
            .into_owned();
        match status.members.into_iter().find(|m| m.name == name) {
            Some(m) => last = m,
            None => {
                // It left the cluster (stopped): it holds nothing any more.
                eprintln!("{name}: left the cluster");
                last.sandboxes = 0;
                return Ok(Ok(last));
            }
        }
    }
}
