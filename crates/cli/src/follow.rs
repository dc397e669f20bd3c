//! Following an execution in the terminal: its output byte-for-byte on our stdout and
//! stderr, warnings and the end rendered with their codes, and Ctrl-C wired to the
//! session (once interrupts the guest with SIGINT at once, as a terminal would; twice
//! detaches). The session itself — resume after the last
//! sequence, retries — is the client crate's [`ExecutionOutput`].

use crate::render::{self, EXIT_CLEANROOM_ERROR};
use cleanroom_client::api::{ExecutionExit, ExecutionStatus};
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_client::Client;
use cleanroom_client::ErrorCode;
use std::io::Write;

/// Exit code after the user detached with a second Ctrl-C.
pub const EXIT_DETACHED: i32 = 130;
/// Exit code when our own stdout/stderr is gone (as for SIGPIPE).
const EXIT_OUTPUT_GONE: i32 = 141;

/// What Ctrl-C does while following.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CtrlC {
    /// `exec`: once interrupts (SIGINT now, SIGKILL after the server's grace), twice
    /// detaches (the execution goes on ending; its sandbox stays).
    CancelThenDetach,
    /// `execution logs -f`: we only watch; Ctrl-C stops watching.
    Detach,
}

/// How [`follow`] ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Followed {
    /// The execution ended (or following failed): the code to exit with.
    Exit(i32),
    /// The user detached; the execution was not canceled (`interrupted`: it got the first
    /// Ctrl-C's SIGINT).
    Detached { interrupted: bool },
    /// Without follow: everything retained so far was printed; the execution runs on.
    Caught,
}

/// Where and how to follow.
pub struct FollowOpts {
    /// Resume after this event sequence (0: from the start).
    pub after_sequence: u64,
    /// Tail live output to the exit; `false`: only what is retained now.
    pub follow: bool,
    /// Send the guest's stdout to our stderr too (setup steps, whose output must not mix
    /// into the workload's stdout).
    pub to_stderr: bool,
    /// Print each event as a JSON line with its sequence instead of raw bytes.
    pub json: bool,
    pub ctrl_c: CtrlC,
}

/// Stream output to stdout/stderr byte-for-byte until the exit event and return the
/// guest's exit code. Ctrl-C once cancels, twice detaches. `to_stderr` sends the guest's
/// stdout to our stderr too (setup steps, whose output must not mix into the workload's
/// stdout).
pub async fn stream_until_exit(
    client: &Client,
    sandbox_id: &str,
    exec_id: &str,
    sigint: &mut tokio::signal::unix::Signal,
    to_stderr: bool,
) -> i32 {
    let opts = FollowOpts {
        after_sequence: 0,
        follow: true,
        to_stderr,
        json: false,
        ctrl_c: CtrlC::CancelThenDetach,
    };
    match follow(client, sandbox_id, exec_id, sigint, opts).await {
        Followed::Exit(code) => code,
        Followed::Detached { .. } => {
            eprintln!("cleanroom: detached; {exec_id} continues. re-attach: cleanroom execution logs -f {exec_id}");
            EXIT_DETACHED
        }
        Followed::Caught => 0,
    }
}

/// Follow an execution's output (see [`FollowOpts`]) and say how it ended.
pub async fn follow(
    client: &Client,
    sandbox_id: &str,
    exec_id: &str,
    sigint: &mut tokio::signal::unix::Signal,
    opts: FollowOpts,
) -> Followed {
    let mut output =
        ExecutionOutput::new(client, sandbox_id, exec_id).after_sequence(opts.after_sequence);
    if !opts.follow {
        output = output.without_follow();
    }
    follow_output(&mut output, exec_id, sigint, opts, None).await
}

/// [`follow`] with an output already open (e.g. RunExecution's), keeping the output's
/// tails in `tails` when given (the local record of the run).
pub async fn follow_output(
    output: &mut ExecutionOutput<'_>,
    exec_id: &str,
    sigint: &mut tokio::signal::unix::Signal,
    opts: FollowOpts,
    mut tails: Option<&mut crate::retained::Tails>,
) -> Followed {
    let mut interrupts = 0;
    let mut interrupted = false;
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    let inspect = || Some(format!("cleanroom execution inspect {exec_id}"));
    loop {
        let next = tokio::select! {
            n = output.next() => n,
            _ = sigint.recv() => {
                interrupts += 1;
                if interrupts == 1 && opts.ctrl_c == CtrlC::CancelThenDetach {
                    eprintln!("cleanroom: interrupting {exec_id} (SIGINT; Ctrl-C again to detach)");
                    interrupted = true;
                    if let Err(e) = output.interrupt().await {
                        render::error(&e, None);
                    }
                    continue;
                }
                return Followed::Detached { interrupted };
            }
        };
        let seq = output.last_sequence();
        if let (Some(t), Ok(Some(OutputEvent::Stdout(d) | OutputEvent::Stderr(d)))) =
            (tails.as_deref_mut(), &next)
        {
            t.push(matches!(next, Ok(Some(OutputEvent::Stdout(_)))), d);
        }
        let written = match next {
            Ok(Some(ev)) if opts.json => {
                if let OutputEvent::Exit(x) = &ev {
                    let _ = json_line(&mut out, seq, &ev);
                    return Followed::Exit(exit_code(x, exec_id));
                }
                json_line(&mut out, seq, &ev)
            }
            Ok(Some(OutputEvent::Stdout(data))) if !opts.to_stderr => {
                out.write_all(&data).and_then(|_| out.flush())
            }
            Ok(Some(OutputEvent::Stdout(data) | OutputEvent::Stderr(data))) => {
                err.write_all(&data).and_then(|_| err.flush())
            }
            Ok(Some(OutputEvent::Warning { code, message })) => {
                render::warning(&code, &message);
                Ok(())
            }
            Ok(Some(OutputEvent::Exit(x))) => return Followed::Exit(exit_code(&x, exec_id)),
            Ok(None) if !opts.follow => return Followed::Caught,
            Ok(None) => {
                let e = render::local(
                    ErrorCode::StreamEnded,
                    "output stream ended without an exit status",
                );
                render::error(&e, inspect());
                return Followed::Exit(EXIT_CLEANROOM_ERROR);
            }
            Err(e) => {
                render::error(&e, inspect());
                return Followed::Exit(EXIT_CLEANROOM_ERROR);
            }
        };
        if written.is_err() {
            // Our stdout/stderr is gone (e.g. closed pipe): nothing to show anymore.
            return Followed::Exit(EXIT_OUTPUT_GONE);
        }
    }
}

/// One event as a JSON line: `{"sequence":N,"stdout":"…"}` (text, lossy UTF-8),
/// `{"sequence":N,"warning":{"code","message"}}` or `{"sequence":N,"exit":{…}}`.
fn json_line(out: &mut impl Write, sequence: u64, ev: &OutputEvent) -> std::io::Result<()> {
    let v = match ev {
        OutputEvent::Stdout(d) => {
            serde_json::json!({"sequence": sequence, "stdout": String::from_utf8_lossy(d)})
        }
        OutputEvent::Stderr(d) => {
            serde_json::json!({"sequence": sequence, "stderr": String::from_utf8_lossy(d)})
        }
        OutputEvent::Warning { code, message } => serde_json::json!({
            "sequence": sequence, "warning": {"code": code, "message": message}
        }),
        OutputEvent::Exit(x) => serde_json::json!({
            "sequence": sequence,
            "exit": {
                "status": render::execution_status_name(x.status.to_i32()),
                "exitCode": x.exit_code,
                "code": x.code,
                "message": x.message,
            }
        }),
    };
    writeln!(out, "{v}").and_then(|_| out.flush())
}

/// The guest's exit code; a notice only when the end was not the guest's own doing.
fn exit_code(x: &ExecutionExit, exec_id: &str) -> i32 {
    let name = render::execution_status_name(x.status.to_i32());
    let guest_ended = matches!(
        x.status.as_known(),
        Some(ExecutionStatus::EXECUTION_STATUS_SUCCEEDED)
            | Some(ExecutionStatus::EXECUTION_STATUS_FAILED)
    ) && x.exit_code >= 0;
    let inspect = Some(format!("cleanroom execution inspect {exec_id}"));
    if !x.code.is_empty() {
        // An end the guest did not choose but that kept its exit code (e.g. an OOM kill:
        // 128+9): say so, with the stable code.
        render::report(&x.code, &x.message, inspect);
    } else if !guest_ended {
        render::ended(name, &x.message, inspect);
    }
    if x.exit_code < 0 {
        EXIT_CLEANROOM_ERROR
    } else {
        x.exit_code
    }
}
