"""A sandbox's event stream, its egress approvals and its attestation, as Python values.

Events (``sbx.events(follow=True)``) are the server's ``SandboxEvent`` records: status
changes, executions, every egress decision (``egress.allow``/``egress.deny`` with the reason
code), ``egress.pending`` when a policy that asks holds a connection.

Approvals: a sandbox whose policy says ``network.unknown: ask`` (or has ask rules) holds a
new connection until its owner answers, at most the approval timeout. A program answers with
:meth:`cleanroom.Sandbox.answer_egress` — a callback run for every open request in a
background thread — or by listing ``sbx.pending_egress()`` and calling
``sbx.decide_egress(...)`` itself. A callback that raises denies (fail closed).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import inspect
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from google.protobuf import json_format

from . import errors
from .v1 import approvals_pb2 as apb
from .v1 import cleanroom_pb2 as pb


def _time(ts) -> Optional[_dt.datetime]:
    if ts.seconds == 0 and ts.nanos == 0:
        return None
    return ts.ToDatetime(tzinfo=_dt.timezone.utc)


def _number(v):
    """A Struct holds every number as a double: give integral ones (ports...) back as int."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


@dataclass(frozen=True)
class Event:
    """One sandbox event. ``type`` is e.g. ``sandbox.status``, ``execution.status``,
    ``egress.allow``, ``egress.deny``, ``egress.pending``; ``attributes`` its structured
    fields (host, port, decision, code, request_id...); ``sequence`` the resume point."""

    sequence: int
    type: str
    sandbox_id: str
    execution_id: str
    at: Optional[_dt.datetime]
    message: str
    attributes: Dict[str, Any]
    #: ``ready``, ``paused``, ``stopped``... for ``sandbox.status`` events, else empty.
    sandbox_status: str

    @staticmethod
    def from_proto(e: "pb.SandboxEvent") -> "Event":
        status = ""
        if e.sandbox_status:
            status = pb.SandboxStatus.Name(e.sandbox_status).removeprefix("SANDBOX_STATUS_").lower()
        return Event(
            sequence=e.sequence,
            type=e.type,
            sandbox_id=e.sandbox_id,
            execution_id=e.execution_id,
            at=_time(e.at),
            message=e.message,
            attributes={k: _number(v) for k, v in json_format.MessageToDict(e.attributes).items()},
            sandbox_status=status,
        )


@dataclass(frozen=True)
class Decision:
    """An answer to an egress request: ``allow`` or not; ``remember`` makes it the answer
    for every later connection of the sandbox to the same host:port (else this request
    only)."""

    allow: bool
    remember: bool = False


#: What an approval callback returns: ``True``/``False``, ``"allow"``/``"deny"``, a
#: :class:`Decision`, or ``None`` to leave the request open (it times out unless answered).
Answer = Union[bool, str, Decision, None]
Approver = Callable[["apb.EgressRequest"], Answer]


def decision_of(answer: Answer) -> Optional[Decision]:
    """Normalise a callback's answer; anything else is ``invalid_argument``."""
    if answer is None or isinstance(answer, Decision):
        return answer
    if isinstance(answer, bool):
        return Decision(answer)
    if answer in ("allow", "deny"):
        return Decision(answer == "allow")
    raise errors.error(
        "invalid_argument",
        f"an egress answer is True/False, 'allow'/'deny', a Decision or None, not {answer!r}",
    )


def decide_request(sandbox_id: str, request_id: str, d: Decision) -> "apb.DecideEgressRequest":
    return apb.DecideEgressRequest(
        sandbox_id=sandbox_id,
        request_id=request_id,
        verdict=apb.EGRESS_VERDICT_ALLOW if d.allow else apb.EGRESS_VERDICT_DENY,
        remember=apb.EGRESS_REMEMBER_SANDBOX if d.remember else apb.EGRESS_REMEMBER_ONCE,
    )


class EgressAnswerer:
    """Answers a sandbox's egress requests with a callback, in a background thread, until
    :meth:`stop` (or the end of a ``with`` block, or the sandbox stopping). Open requests are
    read every ``interval`` seconds; each is handed to the callback once.

    ``answered`` lists ``(request, Decision)`` in order; ``failures`` the exceptions the
    callback raised (each such request was denied)."""

    def __init__(self, sandbox, callback: Approver, interval: float = 0.1) -> None:
        self._sbx = sandbox
        self._cb = callback
        self._interval = interval
        self._stop = threading.Event()
        self._seen: set = set()
        self.answered: List[tuple] = []
        self.failures: List[BaseException] = []
        self._thread = threading.Thread(
            target=self._loop, name=f"cleanroom-approvals-{sandbox.id}", daemon=True
        )
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                for req in self._sbx.pending_egress():
                    if req.request_id not in self._seen:
                        self._seen.add(req.request_id)
                        self._answer(req)
            except errors.SandboxNotFoundError:
                return
            except errors.CleanroomError as e:
                self.failures.append(e)
            self._stop.wait(self._interval)

    def _answer(self, req: "apb.EgressRequest") -> None:
        try:
            d = decision_of(self._cb(req))
        except Exception as e:  # the caller's code: fail closed
            self.failures.append(e)
            d = Decision(False)
        if d is None:
            return
        try:
            self._sbx.decide_egress(req.request_id, d.allow, remember=d.remember)
            self.answered.append((req, d))
        except errors.ApprovalNotFoundError:
            pass  # timed out or answered by someone else meanwhile

    def stop(self, timeout: Optional[float] = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def __enter__(self) -> "EgressAnswerer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class AsyncEgressAnswerer:
    """The asyncio twin of :class:`EgressAnswerer`: a task on the running loop; the
    callback may be a coroutine function. ``await w.stop()`` or ``async with``."""

    def __init__(self, sandbox, callback, interval: float = 0.1) -> None:
        self._sbx = sandbox
        self._cb = callback
        self._interval = interval
        self._seen: set = set()
        self.answered: List[tuple] = []
        self.failures: List[BaseException] = []
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            try:
                for req in await self._sbx.pending_egress():
                    if req.request_id not in self._seen:
                        self._seen.add(req.request_id)
                        await self._answer(req)
            except errors.SandboxNotFoundError:
                return
            except errors.CleanroomError as e:
                self.failures.append(e)
            await asyncio.sleep(self._interval)

    async def _answer(self, req) -> None:
        try:
            a = self._cb(req)
            if inspect.isawaitable(a):
                a = await a
            d = decision_of(a)
        except Exception as e:  # the caller's code: fail closed
            self.failures.append(e)
            d = Decision(False)
        if d is None:
            return
        try:
            await self._sbx.decide_egress(req.request_id, d.allow, remember=d.remember)
            self.answered.append((req, d))
        except errors.ApprovalNotFoundError:
            pass

    async def stop(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    async def __aenter__(self) -> "AsyncEgressAnswerer":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()


@dataclass(frozen=True)
class Attestation:
    """The statement the server signed when the sandbox was created or claimed.
    ``envelope_json`` is the DSSE envelope to verify offline (``cleanroom attestation
    verify --key <pem>``); ``statement`` is its decoded payload, for display only."""

    envelope_json: str
    key_id: str
    statement: Dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_proto(r) -> "Attestation":
        try:
            statement = json.loads(r.statement_json) if r.statement_json else {}
        except ValueError:
            statement = {}
        return Attestation(r.envelope_json, r.key_id, statement)
