//! Egress approvals from the command line: `cleanroom sandbox approve` (answer a request,
//! for headless agents), `cleanroom sandbox requests` (list open ones), `cleanroom policy
//! suggest --from-sandbox` (a policy from what a sandbox used), and `serve`'s approval
//! settings. `exec`'s prompt is in [`crate::ask`].

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::{Args, ValueEnum};
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::suggest::Suggestion;
use cleanroom_client::{ApiError, Client};
use std::time::Duration;

/// `serve` flags for egress approvals.
#[derive(Debug, Args)]
pub struct ServeApprovalArgs {
    /// How long a connection a policy asks about waits for `cleanroom sandbox approve`
    /// (or an `exec` prompt) before it is denied with approval_timeout, unless the policy
    /// sets sandbox.network.approval_timeout_seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub approval_timeout: u64,
    /// Most open approval requests per sandbox; beyond, connections are denied with
    /// approval_queue_full
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_pending_approvals: usize,
}

impl ServeApprovalArgs {
    pub fn settings(&self) -> cleanroom_server::engine::approvals::ApprovalSettings {
        cleanroom_server::engine::approvals::ApprovalSettings {
            timeout: Duration::from_secs(self.approval_timeout),
            max_pending: self.max_pending_approvals,
        }
    }
}

/// How long an answer holds.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RememberArg {
    /// This request only
    Once,
    /// Every later connection of the sandbox to the same host:port
    Sandbox,
}

/// `cleanroom sandbox approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    pub sandbox_id: String,
    /// Request id from the `egress.pending` event (apr_...)
    pub request_id: String,
    /// Deny instead of allow
    #[arg(long)]
    pub deny: bool,
    /// How long the answer holds
    #[arg(long, value_enum, default_value = "once")]
    pub remember: RememberArg,
    /// Print the answered request as JSON
    #[arg(long)]
    pub json: bool,
}

/// `cleanroom sandbox requests`.
#[derive(Debug, Args)]
pub struct RequestsArgs {
    pub sandbox_id: String,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// `cleanroom policy suggest`.
#[derive(Debug, Args)]
pub struct SuggestArgs {
    /// Sandbox whose recorded egress events show what it used
    #[arg(long, value_name = "SANDBOX_ID")]
    pub from_sandbox: String,
}

/// Answer one request.
pub async fn decide(
    client: &Client,
    sandbox_id: &str,
    request_id: &str,
    allow: bool,
    remember: RememberArg,
) -> Result<EgressRequest, ApiError> {
    let req = decide_request(sandbox_id, request_id, allow, remember);
    let resp = client.approvals.decide_egress(req).await?.into_owned();
    Ok(resp.request.as_option().cloned().unwrap_or_default())
}

/// The `DecideEgress` request for one answer.
pub fn decide_request(
    sandbox_id: &str,
    request_id: &str,
    allow: bool,
    remember: RememberArg,
) -> DecideEgressRequest {
    DecideEgressRequest {
        sandbox_id: sandbox_id.to_string(),
        request_id: request_id.to_string(),
        verdict: if allow {
            EgressVerdict::EGRESS_VERDICT_ALLOW
        } else {
            EgressVerdict::EGRESS_VERDICT_DENY
        }
        .into(),
        remember: match remember {
            RememberArg::Once => EgressRemember::EGRESS_REMEMBER_ONCE,
            RememberArg::Sandbox => EgressRemember::EGRESS_REMEMBER_SANDBOX,
        }
        .into(),
        ..Default::default()
    }
}

fn report(r: Result<i32, ApiError>) -> i32 {
    r.unwrap_or_else(|e| {
        render::error(&e, None);
        EXIT_CLEANROOM_ERROR
    })
}

/// `cleanroom sandbox approve ID REQUEST_ID [--deny] [--remember once|sandbox]`.
pub async fn approve(ep: &Target, a: ApproveArgs) -> i32 {
    report(
        async {
            let client = Client::connect_target(ep).await?;
            let r = decide(&client, &a.sandbox_id, &a.request_id, !a.deny, a.remember).await?;
            let verdict = if a.deny { "denied" } else { "allowed" };
            if a.json {
                println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            } else {
                println!("{verdict} {}:{} ({})", r.host, r.port, r.request_id);
            }
            Ok(0)
        }
        .await,
    )
}

/// `cleanroom sandbox requests ID`: open requests and remembered answers.
pub async fn requests(ep: &Target, a: RequestsArgs) -> i32 {
    report(
        async {
            let client = Client::connect_target(ep).await?;
            let resp = client
                .approvals
                .list_egress_requests(ListEgressRequestsRequest {
                    sandbox_id: a.sandbox_id.clone(),
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
            println!(
                "{:<36}  {:<40}  {:<10}",
                "REQUEST ID", "DESTINATION", "PROTOCOL"
            );
            for r in &resp.requests {
                let dest = format!("{}:{}", r.host, r.port);
                println!("{:<36}  {dest:<40}  {:<10}", r.request_id, r.protocol);
            }
            for d in &resp.approved {
                println!("approved for the sandbox: {d}");
            }
            for d in &resp.refused {
                println!("refused for the sandbox: {d}");
            }
            Ok(0)
        }
        .await,
    )
}

/// The suggested policy for a sandbox, from all of its recorded events.
pub async fn suggestion(client: &Client, sandbox_id: &str) -> Result<String, ApiError> {
    let mut stream = client
        .sandboxes
        .stream_sandbox_events(StreamSandboxEventsRequest {
            sandbox_id: sandbox_id.to_string(),
            follow: false,
            ..Default::default()
        })
        .await?;
    let mut s = Suggestion::default();
    while let Some(m) = stream.message().await? {
        let ev: SandboxEvent = m.to_owned_message();
        if !ev.r#type.starts_with("egress.") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&render::event_json(&ev)).unwrap_or_default();
        s.add(&ev.r#type, &v["attributes"]);
    }
    Ok(s.to_yaml(&format!("sandbox {sandbox_id}")))
}

/// `cleanroom policy suggest --from-sandbox ID`: the policy on stdout.
pub async fn suggest(ep: &Target, a: SuggestArgs) -> i32 {
    report(
        async {
            let client = Client::connect_target(ep).await?;
            print!("{}", suggestion(&client, &a.from_sandbox).await?);
            Ok(0)
        }
        .await,
    )
}
