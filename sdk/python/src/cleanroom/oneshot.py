"""``Sandbox.exec``: RunExecution, one call that makes (or claims) a sandbox, starts a command
in it and streams its output — what ``cleanroom exec`` does, without a round trip per step.

The stream's first event (``started``) names the sandbox and the execution; then come the
execution's own events, as StreamExecution sends them; ``finished`` ends it. The stream is read
to its end so that the server sees the caller stay (a caller gone before ``finished`` counts as
detached: the sandbox is kept). A stream that breaks before the exit is resumed with
StreamExecution after the last sequence seen.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from . import errors
from ._core import STREAM_RETRIES, Collector, CommandResult, stdin_chunks
from .v1 import cleanroom_pb2 as pb


def _send_stdin(c, sandbox_id: str, execution_id: str, data) -> None:
    for chunk in stdin_chunks(data):
        c.call(
            c.executions.write_execution_stdin,
            pb.WriteExecutionStdinRequest(
                sandbox_id=sandbox_id, execution_id=execution_id, data=chunk
            ),
        )
    c.call(
        c.executions.close_execution_stdin,
        pb.CloseExecutionStdinRequest(sandbox_id=sandbox_id, execution_id=execution_id),
    )


def run_execution(c, req: "pb.RunExecutionRequest", stdin, on_stdout, on_stderr) -> CommandResult:
    """Run ``req`` on client ``c``; the command's result with its ``sandbox_id``."""
    col: Optional[Collector] = None
    sandbox_id = ""
    events = c.stream(c.executions.run_execution, req)
    try:
        for ev in events:
            if ev.WhichOneof("payload") == "started":
                st = ev.started
                if st.HasField("bootstrap"):
                    raise errors.error(
                        "invalid_argument",
                        "the policy asks for a repository bootstrap: use Sandbox.create and "
                        "run its steps, then the command",
                    )
                sandbox_id = st.sandbox.sandbox_id
                col = Collector(st.execution.execution_id, on_stdout, on_stderr)
                if stdin is not None:
                    _send_stdin(c, sandbox_id, col.execution_id, stdin)
            elif col is not None:
                col.feed(ev)
    finally:
        events.close()
    if col is None:
        raise errors.error("stream_ended", "RunExecution ended before the command started")
    for _ in range(STREAM_RETRIES):
        if col.result is not None:
            break
        resumed = c.stream(c.executions.stream_execution, col.stream_request(sandbox_id))
        try:
            for ev in resumed:
                col.feed(ev)
                if col.result is not None:
                    break
        finally:
            resumed.close()
    if col.result is None:
        raise col.ended_without_exit()
    return dataclasses.replace(col.result, sandbox_id=sandbox_id)
