//! `cleanroom exec` and verdicts that ask: follow the sandbox's `egress.pending` events
//! while the workload runs and answer them — on a terminal by prompting
//! (`allow api.example.com:443? [y/N/always]`: y = once, always = for the sandbox,
//! anything else = deny), otherwise as `--on-ask` says (`wait`: print how to answer and
//! let the server's approval timeout deny; `deny`: deny at once) — with `--approve
//! HOST:PORT` answered yes without asking. Also `--learn`: print the policy the run would
//! have needed.
//!
//! On a terminal the prompt and the workload share stdin: one reader takes it, and a line
//! typed while a prompt is open answers the prompt instead of reaching the workload.

use crate::approve::{decide_request, RememberArg};
use clap::{Args, ValueEnum};
use cleanroom_client::api::*;
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What `exec` does when the policy asks about a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnAsk {
    /// Ask on the terminal: allow HOST:PORT? [y/N/always]
    Prompt,
    /// Print how to answer (`cleanroom sandbox approve`) and wait; the server's approval
    /// timeout denies what nobody answers
    Wait,
    /// Deny at once
    Deny,
}

/// `exec` flags for verdicts that ask and learn mode.
#[derive(Debug, Args)]
pub struct ExecAskArgs {
    /// When the policy asks about a connection: prompt (default when stdin and stderr are
    /// terminals), wait (default otherwise: print the `cleanroom sandbox approve` command,
    /// the approval timeout denies), or deny at once
    #[arg(long, value_enum, value_name = "MODE")]
    pub on_ask: Option<OnAsk>,
    /// Allow (once) requests for exactly HOST:PORT without asking (repeatable)
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_destination)]
    pub approve: Vec<String>,
    /// Learn mode: allow every destination by name (internal addresses and IP literals stay
    /// refused), record what was used, and print a minimal cleanroom.yaml network section
    /// allowing exactly that on stderr (or write it to FILE with --learn=FILE)
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "-",
        conflicts_with = "in_sandbox"
    )]
    pub learn: Option<PathBuf>,
}

/// `HOST:PORT` as requests name it: a host name (lower case) and a port 1-65535.
fn parse_destination(s: &str) -> Result<String, String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?} is not HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("{port:?} is not a TCP port"))?;
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        return Err(format!("{host:?} is not a host name"));
    }
    Ok(format!("{host}:{port}"))
}

impl ExecAskArgs {
    /// The mode in force: the flag, else prompt on a terminal, else wait.
    fn mode(&self) -> OnAsk {
        self.on_ask.unwrap_or_else(|| {
            if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
                OnAsk::Prompt
            } else {
                OnAsk::Wait
            }
        })
    }
}

/// Answers typed on the terminal, one line each (`None`: stdin ended: deny).
type Lines = mpsc::Receiver<String>;

/// The running answerer of one `exec`, and the stdin its workload gets.
pub struct Answerer {
    task: Option<tokio::task::JoinHandle<()>>,
    /// What the workload reads (all of stdin, or what the prompts do not take).
    pub guest_stdin: Box<dyn AsyncRead + Unpin + Send>,
}

impl Drop for Answerer {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// Start answering `sandbox_id`'s approval requests. `asks`: the sandbox's policy may ask
/// (`None`: unknown, e.g. `--in`: looked up first). `guest_wants_stdin`: the workload's
/// stdin is attached (then a prompt shares it).
pub fn start(
    client: &Client,
    sandbox_id: &str,
    asks: Option<bool>,
    args: &ExecAskArgs,
    guest_wants_stdin: bool,
) -> Answerer {
    let mode = args.mode();
    // A policy that never asks: stdin is the workload's alone, and nothing is followed.
    let prompting = mode == OnAsk::Prompt && asks != Some(false);
    let (lines, guest_stdin): (Option<Lines>, Box<dyn AsyncRead + Unpin + Send>) =
        match (prompting, guest_wants_stdin) {
            (true, true) => {
                let (lines, guest) = route_stdin();
                (Some(lines), Box::new(guest))
            }
            (true, false) => {
                let (tx, rx) = mpsc::channel(4);
                tokio::spawn(read_lines(tokio::io::stdin(), tx));
                (Some(rx), Box::new(tokio::io::empty()))
            }
            _ => (None, Box::new(tokio::io::stdin())),
        };
    if asks == Some(false) {
        return Answerer {
            task: None,
            guest_stdin,
        };
    }
    let f = Follower {
        sandboxes: client.sandboxes.clone(),
        approvals: client.approvals.clone(),
        sandbox_id: sandbox_id.to_string(),
        mode,
        approve: args
            .approve
            .iter()
            .map(|s| s.to_ascii_lowercase())
            .collect(),
        lines,
        asks,
    };
    Answerer {
        task: Some(tokio::spawn(f.run())),
        guest_stdin,
    }
}

struct Follower {
    sandboxes: SandboxServiceClient<cleanroom_client::Transport>,
    approvals: ApprovalServiceClient<cleanroom_client::Transport>,
    sandbox_id: String,
    mode: OnAsk,
    approve: HashSet<String>,
    lines: Option<Lines>,
    asks: Option<bool>,
}

impl Follower {
    async fn run(mut self) {
        if self.asks.is_none() {
            let req = GetSandboxRequest {
                sandbox_id: self.sandbox_id.clone(),
                ..Default::default()
            };
            let asks = match self.sandboxes.get_sandbox(req).await {
                Ok(r) => r
                    .into_owned()
                    .sandbox
                    .as_option()
                    .is_some_and(|s| s.egress_asks),
                Err(_) => false,
            };
            if !asks {
                return;
            }
        }
        let req = StreamSandboxEventsRequest {
            sandbox_id: self.sandbox_id.clone(),
            follow: true,
            ..Default::default()
        };
        let Ok(mut stream) = self.sandboxes.stream_sandbox_events(req).await else {
            return;
        };
        let mut seen = HashSet::new();
        while let Ok(Some(m)) = stream.message().await {
            let ev: SandboxEvent = m.to_owned_message();
            if ev.r#type != "egress.pending" {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(&crate::render::event_json(&ev)).unwrap_or_default();
            let a = &v["attributes"];
            let id = a["request_id"].as_str().unwrap_or_default().to_string();
            if id.is_empty() || !seen.insert(id.clone()) || !self.still_open(&id).await {
                continue;
            }
            let dest = format!("{}:{}", a["host"].as_str().unwrap_or_default(), a["port"]);
            self.answer(&id, &dest).await;
        }
    }

    /// Is the request still waiting (events from before this `exec` may be old)?
    async fn still_open(&self, id: &str) -> bool {
        let req = ListEgressRequestsRequest {
            sandbox_id: self.sandbox_id.clone(),
            ..Default::default()
        };
        match self.approvals.list_egress_requests(req).await {
            Ok(r) => r.into_owned().requests.iter().any(|r| r.request_id == id),
            Err(_) => false,
        }
    }

    async fn answer(&mut self, id: &str, dest: &str) {
        let (allow, remember) = if self.approve.contains(&dest.to_ascii_lowercase()) {
            eprintln!("cleanroom: allowing {dest} (--approve)");
            (true, RememberArg::Once)
        } else {
            match self.mode {
                OnAsk::Deny => {
                    eprintln!("cleanroom: denying {dest} (--on-ask deny)");
                    (false, RememberArg::Once)
                }
                OnAsk::Wait => {
                    eprintln!(
                        "cleanroom: {dest} waits for approval: cleanroom sandbox approve {} {id} [--deny] [--remember sandbox]",
                        self.sandbox_id
                    );
                    return;
                }
                OnAsk::Prompt => self.prompt(dest).await,
            }
        };
        let r = self.decide(id, allow, remember).await;
        if let Err(e) = r {
            crate::render::error(&e, None);
        }
    }

    /// Ask on the terminal; anything but y/yes/always (or no answer: stdin ended) denies.
    async fn prompt(&mut self, dest: &str) -> (bool, RememberArg) {
        let mut err = tokio::io::stderr();
        let _ = err
            .write_all(format!("cleanroom: allow {dest}? [y/N/always] ").as_bytes())
            .await;
        let _ = err.flush().await;
        let line = match &mut self.lines {
            Some(l) => {
                PROMPTING.store(true, Ordering::SeqCst);
                let line = l.recv().await;
                PROMPTING.store(false, Ordering::SeqCst);
                line
            }
            None => None,
        };
        match line
            .as_deref()
            .map(|l| l.trim().to_ascii_lowercase())
            .as_deref()
        {
            Some("y" | "yes") => (true, RememberArg::Once),
            Some("a" | "always") => (true, RememberArg::Sandbox),
            _ => (false, RememberArg::Once),
        }
    }

    async fn decide(
        &self,
        id: &str,
        allow: bool,
        remember: RememberArg,
    ) -> Result<(), cleanroom_client::ApiError> {
        let req = decide_request(&self.sandbox_id, id, allow, remember);
        self.approvals.decide_egress(req).await?;
        Ok(())
    }
}

/// A prompt is waiting for a line of stdin.
static PROMPTING: AtomicBool = AtomicBool::new(false);

/// One reader of stdin: lines typed while a prompt waits go to the prompt, everything else
/// to the workload (through the returned reader).
fn route_stdin() -> (Lines, tokio::io::DuplexStream) {
    let (lines_tx, lines_rx) = mpsc::channel(4);
    let (guest_reader, mut guest_writer) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        let mut buf = vec![0u8; 16 * 1024];
        let mut line = Vec::new();
        loop {
            let n = match stdin.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut data = &buf[..n];
            while !data.is_empty() {
                if PROMPTING.load(Ordering::SeqCst) {
                    match data.iter().position(|b| *b == b'\n') {
                        Some(i) => {
                            line.extend_from_slice(&data[..i]);
                            let text = String::from_utf8_lossy(&line).into_owned();
                            line.clear();
                            PROMPTING.store(false, Ordering::SeqCst);
                            let _ = lines_tx.send(text).await;
                            data = &data[i + 1..];
                        }
                        None => {
                            line.extend_from_slice(data);
                            data = &[];
                        }
                    }
                } else {
                    if guest_writer.write_all(data).await.is_err() {
                        // The workload stopped reading; prompts still get their lines.
                    }
                    data = &[];
                }
            }
        }
        // EOF: the workload gets EOF (writer dropped), an open prompt gets no answer.
    });
    (lines_rx, guest_reader)
}

/// Lines of `input` to `tx` (the prompt owns stdin: the workload has none).
async fn read_lines<R: AsyncRead + Unpin>(input: R, tx: mpsc::Sender<String>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(input).lines();
    while let Ok(Some(l)) = lines.next_line().await {
        if tx.send(l).await.is_err() {
            break;
        }
    }
}

/// `exec --learn`: print (or write) the suggested policy for the sandbox.
pub async fn print_learned(client: &Client, sandbox_id: &str, dest: &std::path::Path) -> i32 {
    let text = match crate::approve::suggestion(client, sandbox_id).await {
        Ok(t) => t,
        Err(e) => {
            crate::render::error(&e, None);
            return crate::render::EXIT_CLEANROOM_ERROR;
        }
    };
    if dest.as_os_str() == "-" {
        eprint!("{text}");
        return 0;
    }
    match std::fs::write(dest, text) {
        Ok(()) => {
            eprintln!("cleanroom: suggested policy written to {}", dest.display());
            0
        }
        Err(e) => crate::render::fail(
            ErrorCode::InvalidArgument,
            format!("cannot write {}: {e}", dest.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_destination;

    #[test]
    fn approve_destinations() {
        assert_eq!(parse_destination("API.test.:443").unwrap(), "api.test:443");
        for bad in [
            "api.test",
            "api.test:0",
            "api.test:99999",
            ":443",
            "a b:1",
            "api.test:x",
        ] {
            assert!(parse_destination(bad).is_err(), "{bad}");
        }
    }
}
