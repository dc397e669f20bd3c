//! Following an execution in the terminal: its output byte-for-byte on our stdout and
//! stderr, warnings and the end rendered with their codes, and Ctrl-C wired to the
//! session (once cancels, twice detaches). The session itself — resume after the last
//! sequence, retries — is the client crate's [`ExecutionOutput`].

use crate::render::{self, Code, EXIT_CLEANROOM_ERROR};
use cleanroom_client::api::{ExecutionExit, ExecutionStatus};
use cleanroom_client::session::{ExecutionOutput, OutputEvent};
use cleanroom_client::Client;
use std::io::Write;

/// Exit code after the user detached with a second Ctrl-C.
const EXIT_DETACHED: i32 = 130;
/// Exit code when our own stdout/stderr is gone (as for SIGPIPE).
const EXIT_OUTPUT_GONE: i32 = 141;

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
    let mut output = ExecutionOutput::new(client, sandbox_id, exec_id);
    let mut interrupts = 0;
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr();
    let inspect = || Some(format!("cleanroom execution inspect {exec_id}"));
    loop {
        let next = tokio::select! {
            n = output.next() => n,
            _ = sigint.recv() => {
                interrupts += 1;
                if interrupts == 1 {
                    eprintln!("cleanroom: canceling {exec_id} (Ctrl-C again to detach)");
                    if let Err(e) = output.cancel().await {
                        render::error(&e, None);
                    }
                    continue;
                }
                eprintln!("cleanroom: detached; the execution continues. inspect: cleanroom execution inspect {exec_id}");
                return EXIT_DETACHED;
            }
        };
        let written = match next {
            Ok(Some(OutputEvent::Stdout(data))) if !to_stderr => {
                out.write_all(&data).and_then(|_| out.flush())
            }
            Ok(Some(OutputEvent::Stdout(data) | OutputEvent::Stderr(data))) => {
                err.write_all(&data).and_then(|_| err.flush())
            }
            Ok(Some(OutputEvent::Warning { code, message })) => {
                render::warning(&code, &message);
                Ok(())
            }
            Ok(Some(OutputEvent::Exit(x))) => return exit_code(&x, exec_id),
            Ok(None) => {
                let e = render::local(
                    Code::StreamEnded,
                    "output stream ended without an exit status",
                );
                render::error(&e, inspect());
                return EXIT_CLEANROOM_ERROR;
            }
            Err(e) => {
                render::error(&e, inspect());
                return EXIT_CLEANROOM_ERROR;
            }
        };
        if written.is_err() {
            // Our stdout/stderr is gone (e.g. closed pipe): nothing to show anymore.
            return EXIT_OUTPUT_GONE;
        }
    }
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
