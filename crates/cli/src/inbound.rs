//! `cleanroom sandbox expose ID PORT [--ttl S]` and `sandbox unexpose ID PORT|EXPOSURE`:
//! preview URLs served by the Cleanroom server itself (docs/network.md "Inbound"), and
//! their lines in `sandbox inspect`. The server decides; this sends and prints.

use cleanroom_client::api::*;
use cleanroom_client::endpoint::{Endpoint, Target};
use cleanroom_client::{ApiError, Client};

/// `cleanroom sandbox expose`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The URL is served by the Cleanroom server on its own listener: \
/_sandbox/<exposure-id>/… carries HTTP/1.1, HTTP/2, WebSocket and server-sent events to \
the port on the sandbox's loopback. Anyone with the URL (its token) may use it until it \
expires or `sandbox unexpose` removes it; the owner's API credentials work without the \
token. On a unix-socket server: curl --unix-socket SOCKET 'http://localhost<path>'."
)]
pub struct ExposeArgs {
    pub sandbox_id: String,
    /// The TCP port a server in the sandbox listens on
    pub port: u32,
    /// Lifetime of the URL and its token in seconds (default 3600, at most 7 days)
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u64>,
    /// Print the exposure as JSON (with `url`)
    #[arg(long)]
    pub json: bool,
}

/// `cleanroom sandbox unexpose`.
#[derive(Debug, clap::Args)]
pub struct UnexposeArgs {
    pub sandbox_id: String,
    /// The exposed port, or the exposure's id (exp_…)
    #[arg(value_name = "PORT|EXPOSURE")]
    pub target: String,
}

/// The URL of an exposure's `path` on the server `ep` (a unix socket has none: the path
/// is printed for `curl --unix-socket`).
pub fn url(ep: &Endpoint, path: &str) -> String {
    match ep {
        Endpoint::Http(a) => format!("http://{a}{path}"),
        Endpoint::Https(a) => format!("https://{a}{path}"),
        Endpoint::Unix(_) => format!("http://localhost{path}"),
    }
}

pub async fn expose(ep: &Target, a: ExposeArgs) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    let resp = client
        .inbound
        .expose_sandbox_port(ExposeSandboxPortRequest {
            sandbox_id: a.sandbox_id,
            port: a.port,
            ttl_seconds: a.ttl.unwrap_or(0),
            ..Default::default()
        })
        .await?
        .into_owned();
    let e = resp.exposure.into_option().unwrap_or_default();
    // The server's own URL under a preview domain; else the path on this endpoint.
    let url = if e.url.is_empty() {
        url(&ep.endpoint, &e.path)
    } else {
        e.url.clone()
    };
    if a.json {
        let mut v = serde_json::to_value(&e).unwrap_or_default();
        v["url"] = serde_json::Value::String(url);
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(0);
    }
    println!("{url}");
    if let (Endpoint::Unix(p), true) = (&ep.endpoint, e.url.is_empty()) {
        eprintln!(
            "(unix socket server: curl --unix-socket {} '{url}')",
            p.display()
        );
    }
    eprintln!(
        "exposure {} of port {}, expires at {} (unix seconds)",
        e.id, e.port, e.expires_at
    );
    Ok(0)
}

pub async fn unexpose(ep: &Target, a: UnexposeArgs) -> Result<i32, ApiError> {
    let client = Client::connect_target(ep).await?;
    let resp = client
        .inbound
        .unexpose_sandbox_port(UnexposeSandboxPortRequest {
            sandbox_id: a.sandbox_id,
            target: a.target,
            ..Default::default()
        })
        .await?
        .into_owned();
    for e in &resp.removed {
        println!("{} (port {}) removed", e.id, e.port);
    }
    Ok(0)
}

/// The exposure lines of `sandbox inspect`.
pub fn detail(s: &Sandbox) -> String {
    let mut out = String::new();
    for e in &s.exposures {
        out += &format!(
            "exposure:            {} port {} expires {} {}\n",
            e.id,
            e.port,
            e.expires_at,
            if e.url.is_empty() { &e.path } else { &e.url }
        );
    }
    out
}
