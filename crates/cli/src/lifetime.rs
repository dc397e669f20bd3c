//! Sandbox lifetimes and usage in the CLI: `sandbox create --ttl/--idle-timeout/--suspend-after`,
//! `sandbox timeout sbx_… --ttl N` (extend for a long job), and the lifetime and usage
//! lines of `sandbox inspect`.

use crate::render;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::{ApiError, Client};

/// `--ttl` / `--idle-timeout` of `sandbox create`.
#[derive(Debug, clap::Args)]
pub struct LifetimeArgs {
    /// Terminate the sandbox this many seconds after creation [default: the policy's
    /// sandbox.lifetime.ttl_seconds, else `serve --sandbox-ttl`]
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u64>,
    /// Terminate it after this many seconds with no running execution and no API use
    /// [default: the policy's, else `serve --sandbox-idle-timeout`]
    #[arg(long, value_name = "SECONDS")]
    pub idle_timeout: Option<u64>,
    /// Suspend (freeze, memory kept) instead of terminate after this many idle seconds;
    /// the next exec or file call resumes it [default: the policy's
    /// sandbox.lifetime.suspend_after_seconds, else never]
    #[arg(long, value_name = "SECONDS")]
    pub suspend_after: Option<u64>,
}

/// `cleanroom sandbox timeout`.
#[derive(Debug, clap::Args)]
pub struct TimeoutArgs {
    pub sandbox_id: String,
    /// The sandbox now expires this many seconds from now
    #[arg(long, value_name = "SECONDS", conflicts_with = "clear_ttl")]
    pub ttl: Option<u64>,
    /// New idle timeout in seconds
    #[arg(long, value_name = "SECONDS", conflicts_with = "clear_idle_timeout")]
    pub idle_timeout: Option<u64>,
    /// Remove the TTL
    #[arg(long)]
    pub clear_ttl: bool,
    /// Remove the idle timeout
    #[arg(long)]
    pub clear_idle_timeout: bool,
    /// Print the sandbox as JSON
    #[arg(long)]
    pub json: bool,
}

/// `sandbox timeout`: change the TTL / idle timeout, print the new expiry.
pub async fn timeout(ep: &Target, a: TimeoutArgs) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    if a.ttl == Some(0) || a.idle_timeout == Some(0) {
        return Err(crate::request::invalid(
            "--ttl/--idle-timeout must be at least 1 second (use --clear-ttl/--clear-idle-timeout to remove one)",
        ));
    }
    let req = SetSandboxTimeoutRequest {
        sandbox_id: a.sandbox_id,
        ttl_seconds: a.ttl.unwrap_or(0),
        idle_timeout_seconds: a.idle_timeout.unwrap_or(0),
        clear_ttl: a.clear_ttl,
        clear_idle_timeout: a.clear_idle_timeout,
        ..Default::default()
    };
    let resp = client
        .lifetimes
        .set_sandbox_timeout(req)
        .await?
        .into_owned();
    let s = resp.sandbox.as_option().cloned().unwrap_or_default();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
    } else {
        print!("{}", detail(&s));
    }
    Ok(0)
}

fn seconds(n: u64) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{n}s")
    }
}

/// The lifetime and usage lines of `sandbox inspect`.
pub fn detail(s: &Sandbox) -> String {
    let mut out = String::new();
    out += &format!("ttl:                 {}\n", seconds(s.ttl_seconds));
    if s.expires_at.is_set() {
        out += &format!("expires_at:          {}\n", render::time(&s.expires_at));
    }
    out += &format!("idle_timeout:        {}\n", seconds(s.idle_timeout_seconds));
    if s.last_activity_at.is_set() {
        out += &format!(
            "last_activity_at:    {}\n",
            render::time(&s.last_activity_at)
        );
    }
    if s.suspend_after_seconds > 0 {
        out += &format!(
            "suspend_after:       {}\n",
            seconds(s.suspend_after_seconds)
        );
    }
    if s.suspended_at.is_set() {
        out += &format!("suspended_at:        {}\n", render::time(&s.suspended_at));
    }
    if !s.stop_reason.is_empty() {
        out += &format!("stop_reason:         {}\n", s.stop_reason);
    }
    if let Some(u) = s.usage.as_option() {
        out += &format!("usage.cpu_seconds:   {:.3}\n", u.cpu_usec as f64 / 1e6);
        out += &format!("usage.memory_bytes:  {}\n", u.memory_bytes);
        out += &format!("usage.memory_peak:   {}\n", u.memory_peak_bytes);
        out += &format!("usage.pids:          {}\n", u.pids);
        for f in &u.filesystems {
            out += &format!(
                "usage.disk {:<10} {} of {} bytes\n",
                f.path, f.used_bytes, f.size_bytes
            );
        }
        out += &format!("usage.network_tx:    {}\n", u.network_tx_bytes);
        out += &format!("usage.network_rx:    {}\n", u.network_rx_bytes);
    }
    out
}
