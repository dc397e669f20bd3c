//! `cleanroom pool create|ls|stats|claim|release|rm`: warm pools of READY sandboxes.

use crate::attest::key_arg;
use crate::cli::LimitArgs;
use crate::request::{limits_msg, read_policy};
use clap::Subcommand;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// Create a pool from a template and start warming it; prints the pool id. A
    /// `CreateSandbox` (so `cleanroom exec`) with exactly this template (policy hash, image
    /// digest, limits, runtime) then takes a READY sandbox from it.
    Create {
        /// Policy file (cleanroom.yaml v1); default is the built-in deny-all policy
        #[arg(long, value_name = "FILE")]
        policy: Option<PathBuf>,
        /// OCI image, pinned by digest
        #[arg(long, value_name = "REF")]
        image: Option<String>,
        #[command(flatten)]
        limits: LimitArgs,
        /// Free-form name
        #[arg(long, default_value = "")]
        name: String,
        /// READY sandboxes kept at least
        #[arg(long, default_value_t = 1)]
        min_ready: u32,
        /// READY sandboxes kept at most (autoscaling's ceiling) [default: min-ready]
        #[arg(long, default_value_t = 0)]
        max_ready: u32,
        /// Replace READY sandboxes older than this many seconds (0 = never)
        #[arg(long, value_name = "SECS", default_value_t = 0)]
        max_age: u32,
        /// Released sandboxes' slots are re-warmed at once
        #[arg(long)]
        reusable: bool,
        /// Keep ready >= claims in the last interval x headroom (within min..max)
        #[arg(long)]
        autoscale: bool,
        #[arg(long, default_value_t = 1.5)]
        headroom: f64,
        #[arg(long, value_name = "SECS", default_value_t = 10)]
        interval: u32,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// List pools with their statistics
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Ready/claimed/warming counts, claims per minute, avg and p99 claim latency
    Stats {
        pool_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Claim a READY sandbox; prints its id
    Claim {
        pool_id: String,
        /// Agent identity: ed25519 PUBLIC key (`ed25519:<base64>`, base64, or @FILE with a
        /// public-key PEM); a private key is refused locally and never sent
        #[arg(long, value_name = "KEY")]
        agent_key: Option<String>,
        /// Delegation chain, agent first towards the human (repeatable; same forms)
        #[arg(long, value_name = "KEY")]
        delegation: Vec<String>,
        /// Write the claim's attestation (DSSE envelope) to this file
        #[arg(long, value_name = "FILE")]
        attestation_out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Give a claimed sandbox back (it is destroyed; the pool re-warms a pristine one)
    Release {
        sandbox_id: String,
        /// Do not offer the slot for reuse
        #[arg(long)]
        no_reuse: bool,
    },
    /// Destroy pools and their READY sandboxes (claimed ones stay)
    Rm {
        #[arg(required = true)]
        pool_ids: Vec<String>,
    },
}

fn stats_line(p: &Pool, s: &PoolStats) -> String {
    format!(
        "{:<37}  {:<12}  {:>5}  {:>7}  {:>7}  {:>8.1}  {:>9}  {:>9}\n",
        p.pool_id,
        if p.name.is_empty() { "-" } else { &p.name },
        s.ready,
        s.claimed,
        s.warming,
        s.claims_per_minute,
        s.avg_claim_latency_us,
        s.p99_claim_latency_us
    )
}

const HEADER: &str = "POOL                                   NAME          READY  CLAIMED  WARMING  CLAIMS/M  AVG_US     P99_US\n";

/// Agent key and chain arguments as the request carries them: each parsed and normalised
/// here, so that a private key given by mistake never leaves the machine (see [`key_arg`]).
pub fn identity_args(
    agent_key: Option<&str>,
    delegation: &[String],
) -> Result<(String, Vec<String>), ApiError> {
    let agent = agent_key
        .map(|k| key_arg("--agent-key", k))
        .transpose()?
        .unwrap_or_default();
    let chain = delegation
        .iter()
        .map(|k| key_arg("--delegation", k))
        .collect::<Result<_, _>>()?;
    Ok((agent, chain))
}

pub async fn run(ep: &Target, cmd: PoolCommand) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    match cmd {
        PoolCommand::Create {
            policy,
            image,
            limits,
            name,
            min_ready,
            max_ready,
            max_age,
            reusable,
            autoscale,
            headroom,
            interval,
            json,
        } => {
            let req = CreatePoolRequest {
                name,
                template: PoolTemplate {
                    policy_yaml: read_policy(policy.as_ref(), false)?,
                    image_ref: image.unwrap_or_default(),
                    limits: limits_msg(&limits)?.into(),
                    runtime: limits.runtime_wire(),
                    ..Default::default()
                }
                .into(),
                min_ready,
                max_ready,
                max_age_seconds: max_age,
                reusable,
                autoscaling: Autoscaling {
                    enabled: autoscale,
                    headroom_factor: headroom,
                    interval_seconds: interval,
                    ..Default::default()
                }
                .into(),
                ..Default::default()
            };
            let r = client.pools.create_pool(req).await?.into_owned();
            let p = r.pool.as_option().cloned().unwrap_or_default();
            if json {
                println!("{}", serde_json::to_string_pretty(&p).unwrap_or_default());
            } else {
                println!("{}", p.pool_id);
            }
        }
        PoolCommand::Ls { json } => {
            let r = client
                .pools
                .list_pools(ListPoolsRequest::default())
                .await?
                .into_owned();
            if json {
                let rows: Vec<serde_json::Value> = r
                    .pools
                    .iter()
                    .zip(r.stats.iter())
                    .map(|(p, s)| serde_json::json!({"pool": p, "stats": s}))
                    .collect();
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                );
            } else {
                let mut out = HEADER.to_string();
                for (p, s) in r.pools.iter().zip(r.stats.iter()) {
                    out += &stats_line(p, s);
                }
                print!("{out}");
            }
        }
        PoolCommand::Stats { pool_id, json } => {
            let r = client
                .pools
                .get_pool_stats(GetPoolStatsRequest {
                    pool_id,
                    ..Default::default()
                })
                .await?
                .into_owned();
            let p = r.pool.as_option().cloned().unwrap_or_default();
            let s = r.stats.as_option().cloned().unwrap_or_default();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({"pool": p, "stats": s}))
                        .unwrap_or_default()
                );
            } else {
                print!("{HEADER}{}", stats_line(&p, &s));
            }
        }
        PoolCommand::Claim {
            pool_id,
            agent_key,
            delegation,
            attestation_out,
            json,
        } => {
            let (agent_public_key, delegation_chain) =
                identity_args(agent_key.as_deref(), &delegation)?;
            let r = client
                .pools
                .claim_sandbox(ClaimSandboxRequest {
                    pool_id,
                    agent_public_key,
                    delegation_chain,
                    ..Default::default()
                })
                .await?
                .into_owned();
            if let Some(path) = attestation_out {
                std::fs::write(&path, &r.attestation_envelope_json)
                    .map_err(|e| crate::request::invalid(format!("{}: {e}", path.display())))?;
            }
            let s = r.sandbox.as_option().cloned().unwrap_or_default();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "sandbox": s, "claimLatencyUs": r.claim_latency_us
                    }))
                    .unwrap_or_default()
                );
            } else {
                println!("{}", s.sandbox_id);
            }
        }
        PoolCommand::Release {
            sandbox_id,
            no_reuse,
        } => {
            client
                .pools
                .release_sandbox(ReleaseSandboxRequest {
                    sandbox_id: sandbox_id.clone(),
                    reusable: !no_reuse,
                    ..Default::default()
                })
                .await?;
            println!("{sandbox_id}");
        }
        PoolCommand::Rm { pool_ids } => {
            for pool_id in pool_ids {
                client
                    .pools
                    .destroy_pool(DestroyPoolRequest {
                        pool_id: pool_id.clone(),
                        ..Default::default()
                    })
                    .await?;
                println!("{pool_id}");
            }
        }
    }
    Ok(0)
}
