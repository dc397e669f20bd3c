//! `cleanroom status`: browse the retained runs. Runs are per user, servers are many: a
//! run is shown with the server it ran on, `--last` is the newest run of the server this
//! CLI talks to, and a run recorded as RUNNING is never shown as running from the record
//! alone — its server is asked, or its status is "unknown".

use super::{ids, is_execution_id, root, SERVER_FILE};
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use clap::Args;
use cleanroom_client::api::*;
use cleanroom_client::endpoint::Target;
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;

/// `cleanroom status [--last | --execution-id ID]`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The newest retained execution of the server this CLI talks to (--host,
    /// $CLEANROOM_HOST, …)
    #[arg(long, conflicts_with = "execution_id")]
    pub last: bool,
    /// This retained execution
    #[arg(long, value_name = "EXECUTION_ID")]
    pub execution_id: Option<String>,
    /// Print JSON (same as -o json)
    #[arg(long)]
    pub json: bool,
}

/// The server a retained run ran on (`None`: recorded before servers were recorded).
fn server_of(id: &str) -> Option<String> {
    std::fs::read_to_string(root().join(id).join(SERVER_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// What is known about a run the record says is RUNNING or QUEUED.
enum Live {
    /// Its server answered now.
    Asked(Box<Execution>),
    /// Nobody can say: why.
    Unknown(String),
}

async fn ask(target: &Target, id: &str) -> Result<Execution, String> {
    let call = async {
        let client = Client::connect_target(target).await?;
        let resp = client
            .executions
            .get_execution(GetExecutionRequest {
                execution_id: id.to_string(),
                ..Default::default()
            })
            .await?
            .into_owned();
        Ok::<_, cleanroom_client::ApiError>(resp.execution.as_option().cloned().unwrap_or_default())
    };
    match tokio::time::timeout(std::time::Duration::from_secs(3), call).await {
        Ok(Ok(e)) => Ok(e),
        Ok(Err(e)) => Err(format!("[{}] {}", e.code, e.message)),
        Err(_) => Err("no answer within 3 s".into()),
    }
}

async fn live(id: &str, recorded: &str, server: Option<&str>, current: Option<&Target>) -> Live {
    let here = current.map(|t| t.endpoint.display());
    match (server, current) {
        (Some(s), Some(t)) if Some(s) == here.as_deref() => match ask(t, id).await {
            Ok(e) => Live::Asked(Box::new(e)),
            Err(why) => Live::Unknown(format!(
                "unknown — recorded {recorded} on the server at {s}, which cannot say now: {why}"
            )),
        },
        (Some(s), _) => Live::Unknown(format!(
            "unknown — recorded {recorded} on the server at {s}, not the one this CLI talks to ({}); ask it with `cleanroom --host {s} execution inspect {id}`",
            here.as_deref().unwrap_or("none resolved")
        )),
        (None, _) => Live::Unknown(format!(
            "unknown — recorded {recorded} on a server this record does not name (kept by an older cleanroom)"
        )),
    }
}

/// Show one retained run (or list them all).
pub async fn status(args: StatusArgs, current: Option<Target>) -> i32 {
    let here = current.as_ref().map(|t| t.endpoint.display());
    let id = match (&args.execution_id, args.last) {
        (Some(id), _) => {
            if !is_execution_id(id) {
                return render::fail(
                    ErrorCode::InvalidArgument,
                    format!("not an execution id: {id:?}"),
                );
            }
            id.clone()
        }
        (None, true) => {
            let all = ids();
            let mine = all
                .iter()
                .rev()
                .find(|id| here.is_none() || server_of(id) == here);
            match mine {
                Some(id) => id.clone(),
                None if all.is_empty() => {
                    return render::fail(
                        ErrorCode::InvalidArgument,
                        format!("no retained executions under {}", root().display()),
                    )
                }
                None => {
                    return render::fail(
                        ErrorCode::InvalidArgument,
                        format!(
                            "no retained executions of the server at {} under {} ({} of other servers: `cleanroom status` lists them, `--execution-id` shows one)",
                            here.as_deref().unwrap_or("?"),
                            root().display(),
                            all.len()
                        ),
                    )
                }
            }
        }
        (None, false) => {
            let ids = ids();
            if args.json {
                println!("{}", serde_json::to_string_pretty(&ids).unwrap_or_default());
            } else {
                for id in ids.iter().rev() {
                    match server_of(id) {
                        s if s == here => println!("{id}"),
                        Some(s) => println!("{id}  (server {s})"),
                        None => println!("{id}  (server not recorded)"),
                    }
                }
            }
            return 0;
        }
    };
    show(&id, args.json, current.as_ref()).await
}

async fn show(id: &str, json: bool, current: Option<&Target>) -> i32 {
    let dir = root().join(id);
    let text = match std::fs::read_to_string(dir.join("execution.json")) {
        Ok(t) => t,
        Err(e) => {
            return render::fail(
                ErrorCode::InvalidArgument,
                format!("no retained execution {id} under {}: {e}", root().display()),
            )
        }
    };
    // A record finished in place may end in padding (see `finish`).
    let mut v: serde_json::Value = match serde_json::from_str(text.trim_end()) {
        Ok(v) => v,
        Err(e) => {
            render::report("internal", &format!("{}: {e}", dir.display()), None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let server = server_of(id);
    let recorded = s(&v["execution"]["status"]);
    let mut status = recorded.clone();
    if recorded == "EXECUTION_STATUS_RUNNING" || recorded == "EXECUTION_STATUS_QUEUED" {
        match live(id, &recorded, server.as_deref(), current).await {
            Live::Asked(e) => {
                if let Ok(e) = serde_json::to_value(&*e) {
                    v["execution"] = e;
                }
                status = format!("{} (asked the server now)", s(&v["execution"]["status"]));
            }
            Live::Unknown(why) => {
                v["execution"]["status"] = "EXECUTION_STATUS_UNSPECIFIED".into();
                v["statusUnknown"] = why.clone().into();
                status = why;
            }
        }
    }
    v["server"] = server.clone().into();
    if json {
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return 0;
    }
    let e = &v["execution"];
    println!("execution_id: {}", s(&e["executionId"]));
    println!("sandbox_id:   {}", s(&e["sandboxId"]));
    println!(
        "server:       {}",
        server.as_deref().unwrap_or("not recorded")
    );
    println!("command:      {}", e["command"]);
    println!("status:       {status}");
    println!("exit_code:    {}", e["exitCode"].as_i64().unwrap_or(0));
    if !s(&v["message"]).is_empty() {
        println!("message:      {}", s(&v["message"]));
    }
    println!("trace_id:     {}", s(&e["traceId"]));
    if !s(&v["traceUrl"]).is_empty() {
        println!("trace_url:    {}", s(&v["traceUrl"]));
    }
    println!("artifacts:    {}", dir.display());
    for name in ["stdout", "stderr"] {
        let t = s(&v[name]);
        if !t.is_empty() {
            println!("--- {name} (tail) ---");
            print!("{t}");
            if !t.ends_with('\n') {
                println!();
            }
        }
    }
    0
}
