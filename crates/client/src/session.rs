//! One execution as a client sees it: create it, follow its output to the exit
//! (reconnecting and resuming after the last sequence when the stream breaks), feed its
//! stdin, cancel it. The CLI and the SDKs share this; they add only rendering and
//! signal handling (e.g. the CLI's "first Ctrl-C cancels, second detaches").

use crate::api::__buffa::oneof::execution_stream_event::Payload;
use crate::api::__buffa::view::ExecutionStreamEventView;
use crate::api::*;
use crate::{ApiError, Client};
use connectrpc::client::{ClientTransport, ServerStream, SharedHttp2Connection};
use std::time::Duration;

/// The execution service client over the shared connection (cheap to clone, `'static`:
/// it can be moved into a task, e.g. a stdin pump).
pub type Executions = ExecutionServiceClient<SharedHttp2Connection>;

/// Create an execution and return it as the server recorded it.
pub async fn create_execution(
    client: &Client,
    req: CreateExecutionRequest,
) -> Result<Execution, ApiError> {
    let resp = client.executions.create_execution(req).await?.into_owned();
    Ok(resp.execution.as_option().cloned().unwrap_or_default())
}

/// Ask the server to cancel an execution (SIGTERM, SIGKILL after the grace period).
pub async fn cancel_execution(
    client: &Client,
    sandbox_id: &str,
    execution_id: &str,
) -> Result<(), ApiError> {
    signal_cancel(client, sandbox_id, execution_id, false).await
}

/// Cancel with SIGINT first (a Ctrl-C), SIGKILL after the server's grace.
pub async fn interrupt_execution(
    client: &Client,
    sandbox_id: &str,
    execution_id: &str,
) -> Result<(), ApiError> {
    signal_cancel(client, sandbox_id, execution_id, true).await
}

async fn signal_cancel(
    client: &Client,
    sandbox_id: &str,
    execution_id: &str,
    interrupt: bool,
) -> Result<(), ApiError> {
    let req = CancelExecutionRequest {
        sandbox_id: sandbox_id.to_string(),
        execution_id: execution_id.to_string(),
        interrupt,
        ..Default::default()
    };
    client.executions.cancel_execution(req).await?;
    Ok(())
}

/// Copy `input` to an execution's stdin in chunks of up to 64 KiB, then close it (EOF for
/// the guest). `false` when the execution stopped taking input, or `input` failed,
/// before `input` ended.
pub async fn pump_stdin<R: tokio::io::AsyncRead + Unpin>(
    executions: Executions,
    sandbox_id: String,
    execution_id: String,
    mut input: R,
) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut complete = true;
    loop {
        match input.read(&mut buf).await {
            Ok(0) => break,
            Err(_) => {
                complete = false;
                break;
            }
            Ok(n) => {
                let req = WriteExecutionStdinRequest {
                    sandbox_id: sandbox_id.clone(),
                    execution_id: execution_id.clone(),
                    data: buf[..n].to_vec(),
                    ..Default::default()
                };
                if executions.write_execution_stdin(req).await.is_err() {
                    return false; // command exited or closed its stdin
                }
            }
        }
    }
    let req = CloseExecutionStdinRequest {
        sandbox_id,
        execution_id,
        ..Default::default()
    };
    let _ = executions.close_execution_stdin(req).await;
    complete
}

/// One thing an execution's output stream says.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputEvent {
    /// Bytes the guest wrote to stdout.
    Stdout(Vec<u8>),
    /// Bytes the guest wrote to stderr.
    Stderr(Vec<u8>),
    /// A server notice with a stable code (e.g. `output_not_retained`, a deny).
    Warning { code: String, message: String },
    /// The end: status, exit code and, when the guest did not choose it, a code.
    Exit(ExecutionExit),
}

impl OutputEvent {
    /// The event a stream message carries (`None`: an empty payload, skipped).
    pub fn from_message(ev: ExecutionStreamEvent) -> Option<OutputEvent> {
        match ev.payload? {
            Payload::Output(chunk) => Some(if chunk.stream == OutputStream::OUTPUT_STREAM_STDERR {
                OutputEvent::Stderr(chunk.data.clone())
            } else {
                OutputEvent::Stdout(chunk.data.clone())
            }),
            Payload::Warning(w) => Some(OutputEvent::Warning {
                code: w.code.clone(),
                message: w.message.clone(),
            }),
            Payload::Exit(x) => Some(OutputEvent::Exit((*x).clone())),
            // RunExecution's own bookends (see [`ExecutionOutput::run`]).
            Payload::Started(_) | Payload::Finished(_) => None,
        }
    }
}

/// Reconnect budget: up to [`Retry::MAX`] attempts in a row, waiting 200 ms × attempt;
/// any message received resets it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Retry {
    attempts: u32,
}

impl Retry {
    /// Attempts in a row before giving up.
    pub const MAX: u32 = 5;

    /// The wait before the next attempt, or `None` when the budget is spent.
    pub fn next_delay(&mut self) -> Option<Duration> {
        if self.attempts >= Self::MAX {
            return None;
        }
        self.attempts += 1;
        Some(Duration::from_millis(200 * u64::from(self.attempts)))
    }

    /// Progress was made: the budget is whole again.
    pub fn reset(&mut self) {
        self.attempts = 0;
    }
}

type EventStream = ServerStream<
    <SharedHttp2Connection as ClientTransport>::ResponseBody,
    ExecutionStreamEventView<'static>,
>;

/// An execution's output from the start to the exit, surviving broken streams: when the
/// stream fails it reconnects and resumes after the last sequence it delivered, so no
/// event is lost or repeated.
///
/// [`ExecutionOutput::next`] may be dropped mid-wait (e.g. in a `select!` with a signal)
/// and called again: the open stream is kept, or reopened after the last sequence.
pub struct ExecutionOutput<'c> {
    client: &'c Client,
    sandbox_id: String,
    execution_id: String,
    last_sequence: u64,
    retry: Retry,
    stream: Option<EventStream>,
    /// `false`: only what the server retains now, then the stream ends (no live tail).
    follow: bool,
    /// `stream` is the RunExecution stream that started the execution (its `finished`
    /// record comes after the exit); `false` once it was replaced by a StreamExecution.
    run: bool,
    /// RunExecution's `finished` record, when it arrived.
    finished: Option<InspectExecutionResponse>,
    /// The server's own time for the RunExecution call, from its `finished` event.
    server_time_us: Option<u64>,
}

/// What a RunExecution made: the sandbox (`created`: by this call) and either the
/// started execution, followed by an [`ExecutionOutput`], or the bootstrap to perform
/// first (then nothing was started).
pub struct RunStarted<'c> {
    pub sandbox: Sandbox,
    pub created: bool,
    pub bootstrap: Option<Bootstrap>,
    /// The started execution and its output (`None` with a bootstrap).
    pub execution: Option<(Execution, ExecutionOutput<'c>)>,
}

impl<'c> ExecutionOutput<'c> {
    /// Follow `execution_id` from its first event.
    pub fn new(client: &'c Client, sandbox_id: &str, execution_id: &str) -> Self {
        ExecutionOutput {
            client,
            sandbox_id: sandbox_id.to_string(),
            execution_id: execution_id.to_string(),
            last_sequence: 0,
            retry: Retry::default(),
            stream: None,
            follow: true,
            run: false,
            finished: None,
            server_time_us: None,
        }
    }

    /// Make (or take) a sandbox, start a command and follow its output in one call
    /// (`RunExecution`). The returned output resumes with StreamExecution if the stream
    /// breaks, like any [`ExecutionOutput`]; after its exit event, [`Self::finished`]
    /// gives the server's final record when the RunExecution stream lasted that long.
    pub async fn run(
        client: &'c Client,
        req: RunExecutionRequest,
    ) -> Result<RunStarted<'c>, ApiError> {
        let mut stream = client.executions.run_execution(req).await?;
        let first: ExecutionStreamEvent = match stream.message().await? {
            Some(m) => m.to_owned_message(),
            None => {
                return Err(ApiError::local(
                    cleanroom_vocab::ErrorCode::StreamEnded,
                    "RunExecution ended before saying what it started",
                ))
            }
        };
        let Some(Payload::Started(started)) = first.payload else {
            return Err(ApiError::local(
                cleanroom_vocab::ErrorCode::StreamEnded,
                "RunExecution did not start with what it made",
            ));
        };
        let started = *started;
        let sandbox = started.sandbox.as_option().cloned().unwrap_or_default();
        let execution = started.execution.as_option().cloned().map(|e| {
            let mut output = ExecutionOutput::new(client, &sandbox.sandbox_id, &e.execution_id);
            output.stream = Some(stream);
            output.run = true;
            (e, output)
        });
        Ok(RunStarted {
            created: started.created,
            bootstrap: started.bootstrap.as_option().cloned(),
            sandbox,
            execution,
        })
    }

    /// RunExecution's final record of the execution (after the exit event): `None` when
    /// this output did not come from RunExecution, or its stream broke (ask
    /// InspectExecution then).
    pub async fn finished(&mut self) -> Option<InspectExecutionResponse> {
        while self.finished.is_none() && self.run {
            let m = self.stream.as_mut()?.message().await.ok()??;
            let ev: ExecutionStreamEvent = m.to_owned_message();
            self.take_finished(ev);
        }
        self.finished.take()
    }

    /// The server's own time for the RunExecution call (µs, from the handler's entry to
    /// its final record), once [`Self::finished`] has it: what a caller's round trip
    /// spent in the server rather than in the client and the transport. `None` from a
    /// server that does not send it.
    pub fn server_time_us(&self) -> Option<u64> {
        self.server_time_us
    }

    /// Keep a `finished` event's record and server time; hand any other event back.
    fn take_finished(&mut self, ev: ExecutionStreamEvent) -> Option<ExecutionStreamEvent> {
        match ev.payload {
            Some(Payload::Finished(f)) => {
                self.finished = Some(*f);
                // 0: a server that does not measure it (older than the field).
                self.server_time_us = (ev.server_time_us > 0).then_some(ev.server_time_us);
                None
            }
            _ => Some(ev),
        }
    }

    /// Start after event `sequence` instead of from the first event (re-attach at an
    /// offset: `cleanroom execution logs --since-seq N`).
    pub fn after_sequence(mut self, sequence: u64) -> Self {
        self.last_sequence = sequence;
        self
    }

    /// Replay only what is retained now; [`ExecutionOutput::next`] then answers `Ok(None)`
    /// at the end of it when the execution is still running.
    pub fn without_follow(mut self) -> Self {
        self.follow = false;
        self
    }

    /// Sequence of the last event delivered (0: none yet).
    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// The next event. `Ok(None)`: the server ended the stream without an exit event.
    /// `Err`: the stream could not be (re)opened or kept failing past the [`Retry`]
    /// budget. Opening is retried only while the server is unreachable; any other
    /// refusal (not found, unauthenticated, output expired) is final.
    pub async fn next(&mut self) -> Result<Option<OutputEvent>, ApiError> {
        loop {
            let stream = match &mut self.stream {
                Some(s) => s,
                None => {
                    let req = StreamExecutionRequest {
                        sandbox_id: self.sandbox_id.clone(),
                        execution_id: self.execution_id.clone(),
                        after_sequence: self.last_sequence,
                        no_follow: !self.follow,
                        ..Default::default()
                    };
                    match self.client.executions.stream_execution(req).await {
                        Ok(s) => self.stream.insert(s),
                        Err(e) => {
                            let e: ApiError = e.into();
                            match self.retry.next_delay() {
                                Some(d) if e.connect_code == "unavailable" => {
                                    tokio::time::sleep(d).await;
                                    continue;
                                }
                                _ => return Err(e),
                            }
                        }
                    }
                }
            };
            match stream.message().await {
                Ok(Some(m)) => {
                    let ev: ExecutionStreamEvent = m.to_owned_message();
                    let Some(ev) = self.take_finished(ev) else {
                        continue;
                    };
                    if let Some(Payload::Started(_)) = ev.payload {
                        continue; // RunExecution's first event, read by `run`
                    }
                    self.last_sequence = ev.sequence;
                    self.retry.reset();
                    if let Some(event) = OutputEvent::from_message(ev) {
                        return Ok(Some(event));
                    }
                }
                Ok(None) => return Ok(None),
                Err(e) => {
                    self.stream = None;
                    self.run = false;
                    match self.retry.next_delay() {
                        // Reconnect, resuming after last_sequence.
                        Some(d) => tokio::time::sleep(d).await,
                        None => return Err(e.into()),
                    }
                }
            }
        }
    }

    /// Cancel the execution being followed; its exit still arrives on this stream.
    pub async fn cancel(&self) -> Result<(), ApiError> {
        cancel_execution(self.client, &self.sandbox_id, &self.execution_id).await
    }

    /// [`interrupt_execution`] of this execution.
    pub async fn interrupt(&self) -> Result<(), ApiError> {
        interrupt_execution(self.client, &self.sandbox_id, &self.execution_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_budget_grows_then_stops_and_resets() {
        let mut r = Retry::default();
        let delays: Vec<_> = std::iter::from_fn(|| r.next_delay()).collect();
        assert_eq!(
            delays,
            [200, 400, 600, 800, 1000]
                .map(Duration::from_millis)
                .to_vec()
        );
        assert_eq!(r.next_delay(), None);
        r.reset();
        assert_eq!(r.next_delay(), Some(Duration::from_millis(200)));
    }

    fn event(payload: Option<Payload>) -> ExecutionStreamEvent {
        ExecutionStreamEvent {
            sequence: 7,
            payload,
            ..Default::default()
        }
    }

    #[test]
    fn stream_messages_become_events() {
        let chunk = |stream: OutputStream, data: &[u8]| {
            Payload::Output(Box::new(OutputChunk {
                stream: stream.into(),
                data: data.to_vec(),
                ..Default::default()
            }))
        };
        assert_eq!(
            OutputEvent::from_message(event(Some(chunk(OutputStream::OUTPUT_STREAM_STDOUT, b"o")))),
            Some(OutputEvent::Stdout(b"o".to_vec()))
        );
        assert_eq!(
            OutputEvent::from_message(event(Some(chunk(OutputStream::OUTPUT_STREAM_STDERR, b"e")))),
            Some(OutputEvent::Stderr(b"e".to_vec()))
        );
        let warning = Payload::Warning(Box::new(Warning {
            code: "output_not_retained".into(),
            message: "m".into(),
            ..Default::default()
        }));
        assert_eq!(
            OutputEvent::from_message(event(Some(warning))),
            Some(OutputEvent::Warning {
                code: "output_not_retained".into(),
                message: "m".into()
            })
        );
        let exit = ExecutionExit {
            exit_code: 3,
            ..Default::default()
        };
        assert_eq!(
            OutputEvent::from_message(event(Some(Payload::Exit(Box::new(exit.clone()))))),
            Some(OutputEvent::Exit(exit))
        );
        assert_eq!(OutputEvent::from_message(event(None)), None);
    }
}
