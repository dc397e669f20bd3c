"""Pieces shared by the sync and asyncio layers: building clients for a target, folding an
execution's event stream into a result, and the result type."""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from . import errors
from .v1 import cleanroom_pb2 as pb

#: WriteExecutionStdin accepts at most 4 MiB a call; stay well below.
STDIN_CHUNK = 1 << 20
#: Re-open an output stream that ended without an exit status this many times (resuming at
#: the last sequence seen) before giving up with ``stream_ended``.
STREAM_RETRIES = 3

OutputCallback = Callable[[str], None]

_STATUS_NAMES = {
    v.number: v.name.removeprefix("EXECUTION_STATUS_").lower()
    for v in pb.ExecutionStatus.DESCRIPTOR.values
}


def status_name(status: int) -> str:
    """``EXECUTION_STATUS_SUCCEEDED`` → ``succeeded``."""
    return _STATUS_NAMES.get(status, "unspecified")


@dataclass
class CommandResult:
    """What a finished command produced. ``stdout``/``stderr`` are UTF-8 decoded (invalid
    bytes replaced); the ``*_bytes`` fields hold the exact bytes."""

    execution_id: str
    exit_code: int
    status: str
    stdout_bytes: bytes = b""
    stderr_bytes: bytes = b""
    #: Why the execution ended the way it did (``exited with code 3``, ``timed out``...).
    message: str = ""
    #: Stable code when the end is an error to report (``oom_killed``), else empty.
    error_code: str = ""
    warnings: List[str] = field(default_factory=list)
    #: The sandbox it ran in (set by ``Sandbox.exec``, which may have made it).
    sandbox_id: str = ""

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        """True when the command exited 0."""
        return self.status == "succeeded" and self.exit_code == 0


class Collector:
    """Folds ``ExecutionStreamEvent``s: buffers output, feeds the callbacks incrementally
    decoded text, remembers the resume point, and builds the :class:`CommandResult`."""

    def __init__(
        self,
        execution_id: str,
        on_stdout: Optional[OutputCallback],
        on_stderr: Optional[OutputCallback],
    ) -> None:
        self.execution_id = execution_id
        self._out: List[bytes] = []
        self._err: List[bytes] = []
        self._cb = {pb.OUTPUT_STREAM_STDOUT: on_stdout, pb.OUTPUT_STREAM_STDERR: on_stderr}
        self._dec = {
            pb.OUTPUT_STREAM_STDOUT: codecs.getincrementaldecoder("utf-8")("replace"),
            pb.OUTPUT_STREAM_STDERR: codecs.getincrementaldecoder("utf-8")("replace"),
        }
        self.last_sequence = 0
        self.warnings: List[str] = []
        self.result: Optional[CommandResult] = None

    def feed(self, ev: "pb.ExecutionStreamEvent") -> None:
        if ev.sequence <= self.last_sequence:
            return  # a resumed stream never repeats, but be exact if it does
        self.last_sequence = ev.sequence
        kind = ev.WhichOneof("payload")
        if kind == "output":
            chunk = ev.output
            (self._out if chunk.stream == pb.OUTPUT_STREAM_STDOUT else self._err).append(
                chunk.data
            )
            cb = self._cb.get(chunk.stream)
            if cb is not None:
                text = self._dec[chunk.stream].decode(chunk.data)
                if text:
                    cb(text)
        elif kind == "warning":
            self.warnings.append(f"{ev.warning.code}: {ev.warning.message}")
        elif kind == "exit":
            for stream, dec in self._dec.items():
                tail = dec.decode(b"", final=True)
                cb = self._cb.get(stream)
                if tail and cb is not None:
                    cb(tail)
            x = ev.exit
            self.result = CommandResult(
                execution_id=self.execution_id,
                exit_code=x.exit_code,
                status=status_name(x.status),
                stdout_bytes=b"".join(self._out),
                stderr_bytes=b"".join(self._err),
                message=x.message,
                error_code=x.code,
                warnings=self.warnings,
            )

    def stream_request(self, sandbox_id: str) -> "pb.StreamExecutionRequest":
        return pb.StreamExecutionRequest(
            sandbox_id=sandbox_id,
            execution_id=self.execution_id,
            after_sequence=self.last_sequence,
        )

    def ended_without_exit(self) -> errors.CleanroomError:
        return errors.error(
            "stream_ended",
            f"the output stream of {self.execution_id} ended without an exit status",
        )


def create_request(
    sandbox_id: str,
    command: Sequence[str],
    *,
    env=None,
    cwd: Optional[str] = None,
    timeout: Optional[int] = None,
    attach_stdin: bool = False,
) -> "pb.CreateExecutionRequest":
    """A batch ``CreateExecutionRequest``."""
    if not command:
        raise errors.error("invalid_argument", "a command needs at least one argument")
    return pb.CreateExecutionRequest(
        sandbox_id=sandbox_id,
        command=[str(c) for c in command],
        env=dict(env or {}),
        cwd=cwd or "",
        timeout_seconds=int(timeout or 0),
        kind=pb.EXECUTION_KIND_BATCH,
        attach_stdin=attach_stdin,
    )


def stdin_chunks(data) -> List[bytes]:
    """``data`` (str or bytes) in WriteExecutionStdin-sized chunks."""
    if isinstance(data, str):
        data = data.encode()
    return [bytes(data[i : i + STDIN_CHUNK]) for i in range(0, len(data), STDIN_CHUNK)]


def shell_argv(command: Sequence[str]) -> List[str]:
    """``("echo $HOME | wc -c",)`` → ``["/bin/sh", "-c", "echo $HOME | wc -c"]``."""
    if len(command) != 1 or not isinstance(command[0], str):
        raise errors.error("invalid_argument", "shell=True takes exactly one command string")
    return ["/bin/sh", "-c", command[0]]
