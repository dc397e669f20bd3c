//! `cleanroom cluster status`: thin client of the server's `ClusterService` (admins).
//! `cleanroom cluster init|issue`: the cluster identity, made locally (no server): a CA
//! and the per-node certificates members authenticate each other with (docs/cluster.md).

use crate::render;
use clap::Subcommand;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Make a cluster CA in DIR (ca.key and ca.crt, mode 0600; never over existing ones).
    /// Keep ca.key off the members: it only issues node identities
    Init {
        /// Where the CA goes (made 0700 if missing)
        dir: std::path::PathBuf,
    },
    /// Issue a node identity signed by the cluster CA into OUT (node.key, node.crt and a
    /// copy of ca.crt, 0600): what `serve --cluster-tls OUT` reads. Its first DNS name is
    /// the node name, which must equal the node's --node-name
    Issue {
        /// The CA directory (`cluster init`)
        #[arg(long, value_name = "DIR")]
        ca: std::path::PathBuf,
        /// The node's name (1-63 of a-z 0-9 -)
        #[arg(long, value_name = "NAME")]
        node: String,
        /// Further DNS names or IP addresses for the certificate (repeatable)
        #[arg(long = "san", value_name = "NAME|IP")]
        sans: Vec<String>,
        /// Where the identity goes (made 0700 if missing)
        out: std::path::PathBuf,
    },
    /// The live members: name, API URL, runtimes, sandboxes, when each joined, and whether it
    /// is drained (`node drain`)
    Status {
        /// Print JSON (`-o json` works too)
        #[arg(long)]
        json: bool,
    },
}

/// Is this a command on local files (no server)?
pub fn is_local(cmd: &ClusterCommand) -> bool {
    !matches!(cmd, ClusterCommand::Status { .. })
}

/// `cluster init` and `cluster issue`: local files only.
pub fn local(cmd: &ClusterCommand) -> Option<i32> {
    use cleanroom_server::cluster::identity;
    let done = match cmd {
        ClusterCommand::Init { dir } => identity::init_ca(dir).map(|()| {
            println!("cluster CA written to {}", dir.display());
        }),
        ClusterCommand::Issue {
            ca,
            node,
            sans,
            out,
        } => cleanroom_server::cluster::NodeName::parse(node)
            .and_then(|n| identity::issue(ca, &n, sans, out))
            .map(|()| println!("node identity for {node} written to {}", out.display())),
        ClusterCommand::Status { .. } => return None,
    };
    Some(match done {
        Ok(()) => 0,
        Err(e) => {
            render::report(e.code().as_str(), &e.to_string(), None);
            render::EXIT_CLEANROOM_ERROR
        }
    })
}

pub async fn run(ep: &Target, cmd: ClusterCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        ClusterCommand::Init { .. } | ClusterCommand::Issue { .. } => Ok(local(&cmd).unwrap_or(0)),
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
                "{:<2}{:<20} {:<32} {:<14} {:>9}  {:<20}  STATE",
                "", "NAME", "ADVERTISE", "RUNTIMES", "SANDBOXES", "JOINED"
            );
            for m in &r.members {
                println!(
                    "{:<2}{:<20} {:<32} {:<14} {:>9}  {:<20}  {}",
                    if m.self_ { "*" } else { "" },
                    m.name,
                    m.advertise,
                    m.runtimes.join(","),
                    m.sandboxes,
                    render::time(&m.joined_at),
                    if m.draining { "draining" } else { "ready" }
                );
            }
            Ok(0)
        }
    }
}
