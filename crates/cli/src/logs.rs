//! `cleanroom execution logs [-f] [--since-seq N] exe_…`: replay an execution's retained
//! output from the start (or after an event sequence) and, with `-f`, follow it live to
//! the end and exit with the execution's exit code — the way back to an execution after
//! `exec` detached, or to one started in the background through the API.

use crate::follow::{follow, CtrlC, FollowOpts, Followed, EXIT_DETACHED};
use crate::render::{self, EXIT_CLEANROOM_ERROR};
use cleanroom_client::endpoint::Target;
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;

/// Arguments of `cleanroom execution logs`.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// Execution id (exe_...)
    pub execution_id: String,
    /// Follow live output until the execution ends, then exit with its exit code
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Start after this event sequence (0: from the start; `--json` prints sequences)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub since_seq: u64,
    /// Sandbox the execution belongs to (optional)
    #[arg(long, value_name = "SANDBOX_ID")]
    pub sandbox_id: Option<String>,
    /// One JSON object per event with its sequence: {"sequence":N,"stdout"|"stderr":TEXT},
    /// {"sequence":N,"exit":{...}}
    #[arg(long)]
    pub json: bool,
}

/// Run `execution logs`; the process exit code. Ctrl-C stops watching (the execution is
/// not touched).
pub async fn run(ep: &Target, args: LogsArgs) -> i32 {
    let mut sigint = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(s) => s,
        Err(e) => return render::fail(ErrorCode::Internal, format!("cannot handle SIGINT: {e}")),
    };
    let client = match Client::connect_target(ep).await {
        Ok(c) => c,
        Err(e) => {
            render::error(&e, None);
            return EXIT_CLEANROOM_ERROR;
        }
    };
    let opts = FollowOpts {
        after_sequence: args.since_seq,
        follow: args.follow,
        to_stderr: false,
        json: args.json,
        ctrl_c: CtrlC::Detach,
    };
    let sandbox_id = args.sandbox_id.unwrap_or_default();
    match follow(&client, &sandbox_id, &args.execution_id, &mut sigint, opts).await {
        Followed::Exit(code) if args.follow => code,
        // Without -f this is a replay: the exit status is the replay's, not the guest's.
        Followed::Exit(code) if code == EXIT_CLEANROOM_ERROR => code,
        Followed::Exit(_) | Followed::Caught => 0,
        Followed::Detached { .. } => EXIT_DETACHED,
    }
}
