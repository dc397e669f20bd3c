//! `cleanroom sandbox network ID --allow HOST[:PORT] | --deny HOST | --reset [--cut]`: live
//! egress rules of a running sandbox (docs/network.md), and their lines in
//! `sandbox inspect`. The server parses and judges; this only sends and prints.

use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

/// `cleanroom sandbox network`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "New connections are judged by the new rules as soon as the command \
returns; --cut also ends established ones the new rules deny. The policy (and its hash) \
never changes: the effective rule set gets its own hash (`sandbox inspect`, the \
`network.rules` event, the attestation). Deny wins over allow: allowing a host a deny \
covers is refused (policy_conflict)."
)]
pub struct NetworkArgs {
    pub sandbox_id: String,
    /// Allow HOST (exact or `*.suffix`) on PORT, or on 80 and 443 (repeatable)
    #[arg(long, value_name = "HOST[:PORT]")]
    pub allow: Vec<String>,
    /// Deny HOST on every port, also where the policy allows it (repeatable)
    #[arg(long, value_name = "HOST")]
    pub deny: Vec<String>,
    /// Drop every live rule first: back to the policy's rules
    #[arg(long)]
    pub reset: bool,
    /// Also end established connections to hosts no longer allowed
    #[arg(long)]
    pub cut: bool,
    /// Print the result as JSON
    #[arg(long)]
    pub json: bool,
}

/// Send the change, print the effective rules' hash and the live rules.
pub async fn run(ep: &Target, a: NetworkArgs) -> Result<i32, ApiError> {
    if a.allow.is_empty() && a.deny.is_empty() && !a.reset {
        return Err(crate::request::invalid(
            "nothing to change: give --allow, --deny or --reset",
        ));
    }
    let client = Client::connect_target(ep).await?;
    let resp = client
        .network
        .update_sandbox_network(UpdateSandboxNetworkRequest {
            sandbox_id: a.sandbox_id,
            allow: a.allow,
            deny: a.deny,
            reset: a.reset,
            cut: a.cut,
            ..Default::default()
        })
        .await?
        .into_owned();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&resp).unwrap_or_default()
        );
        return Ok(0);
    }
    println!("effective_rules_hash: {}", resp.effective_rules_hash);
    println!("policy_hash:          {}", resp.policy_hash);
    for r in &resp.live_allow {
        println!("live_allow:           {r}");
    }
    for r in &resp.live_deny {
        println!("live_deny:            {r}");
    }
    Ok(0)
}

/// The live-rules lines of `sandbox inspect`.
pub fn detail(s: &Sandbox) -> String {
    let mut out = String::new();
    if !s.effective_rules_hash.is_empty() {
        out += &format!("effective_rules_hash: {}\n", s.effective_rules_hash);
    }
    for r in &s.live_allow {
        out += &format!("live_allow:          {r}\n");
    }
    for r in &s.live_deny {
        out += &format!("live_deny:           {r}\n");
    }
    out
}
