//! `cleanroom cluster status`: thin client of the server's `ClusterService` (admins).

use crate::render;
use clap::Subcommand;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The live members: name, API URL, runtimes, sandboxes, when each joined
    Status {
        /// Print JSON (`-o json` works too)
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(ep: &Target, cmd: ClusterCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        ClusterCommand::Status { json } => {
            let r = client
                .cluster
                .get_cluster_status(GetClusterStatusRequest::default())
                .await?
                .into_owned();
            if json {
                println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                return Ok(0);
            }
            println!(
                "{:<2}{:<20} {:<32} {:<14} {:>9}  JOINED",
                "", "NAME", "ADVERTISE", "RUNTIMES", "SANDBOXES"
            );
            for m in &r.members {
                println!(
                    "{:<2}{:<20} {:<32} {:<14} {:>9}  {}",
                    if m.self_ { "*" } else { "" },
                    m.name,
                    m.advertise,
                    m.runtimes.join(","),
                    m.sandboxes,
                    render::time(&m.joined_at)
                );
            }
            Ok(0)
        }
    }
}
