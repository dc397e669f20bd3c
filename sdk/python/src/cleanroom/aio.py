"""The asyncio layer: :class:`AsyncSandbox`, the twin of :class:`~cleanroom.Sandbox`.

    async with AsyncSandbox.create() as sbx:
        r = await sbx.run("echo", "hi")
        handles = [await sbx.start("sleep", "1") for _ in range(3)]
        results = await asyncio.gather(*(h.wait() for h in handles))

``AsyncSandbox.create(...)`` can be awaited (you terminate the sandbox yourself) or used
with ``async with`` (terminated on exit).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from . import errors
from ._core import (
    shell_argv,
    STREAM_RETRIES,
    Collector,
    CommandResult,
    OutputCallback,
    create_request,
    stdin_chunks,
)
from .calls import SandboxCalls
from .client import AsyncClient
from .events import AsyncEgressAnswerer, Event
from .files import (
    Data,
    Download,
    FileInfo,
    Uploader,
    _list_request,
    _options,
    _reader,
    _size_of,
)
from .options import Policy, VolumeSpec, checked, limits_message, policy_text, volume_mounts
from .lifetime import Lifetime, Seconds, Usage, seconds, timeout_request
from .v1 import cleanroom_pb2 as pb
from .v1 import files_pb2 as fpb
from .v1 import pools_pb2 as ppb


class AsyncCommandHandle:
    """A command running in a sandbox; see :class:`cleanroom.CommandHandle`."""

    def __init__(self, sandbox: "AsyncSandbox", execution_id: str) -> None:
        self.sandbox = sandbox
        self.id = execution_id

    @property
    def execution_id(self) -> str:
        return self.id

    async def send_stdin(self, data: Union[str, bytes]) -> None:
        c = self.sandbox.client
        for chunk in stdin_chunks(data):
            await c.call(
                c.executions.write_execution_stdin,
                pb.WriteExecutionStdinRequest(
                    sandbox_id=self.sandbox.id, execution_id=self.id, data=chunk
                ),
            )

    async def close_stdin(self) -> None:
        c = self.sandbox.client
        await c.call(
            c.executions.close_execution_stdin,
            pb.CloseExecutionStdinRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )

    @checked
    async def wait(
        self,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
    ) -> CommandResult:
        c = self.sandbox.client
        col = Collector(self.id, on_stdout, on_stderr)
        for _ in range(STREAM_RETRIES + 1):
            events = c.stream(c.executions.stream_execution, col.stream_request(self.sandbox.id))
            try:
                async for ev in events:
                    col.feed(ev)
                    if col.result is not None:
                        return col.result
            finally:
                await events.aclose()  # release the HTTP response now, not at GC
        raise col.ended_without_exit()

    @checked
    async def kill(self, grace_seconds: int = 0) -> None:
        c = self.sandbox.client
        await c.call(
            c.executions.cancel_execution,
            pb.CancelExecutionRequest(
                sandbox_id=self.sandbox.id, execution_id=self.id, grace_seconds=grace_seconds
            ),
        )

    async def interrupt(self) -> None:
        """See :meth:`cleanroom.CommandHandle.interrupt`."""
        c = self.sandbox.client
        await c.call(
            c.executions.cancel_execution,
            pb.CancelExecutionRequest(
                sandbox_id=self.sandbox.id, execution_id=self.id, interrupt=True
            ),
        )

    async def inspect(self) -> "pb.InspectExecutionResponse":
        """See :meth:`cleanroom.CommandHandle.inspect`."""
        c = self.sandbox.client
        return await c.call(
            c.executions.inspect_execution,
            pb.InspectExecutionRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )

    async def info(self) -> "pb.Execution":
        c = self.sandbox.client
        r = await c.call(
            c.executions.get_execution,
            pb.GetExecutionRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )
        return r.execution


class AsyncFiles:
    """``sbx.files`` of an :class:`AsyncSandbox`; see :class:`cleanroom.files.Files`."""

    def __init__(self, sandbox: "AsyncSandbox") -> None:
        self._sbx = sandbox
        self._svc = sandbox.client.files

    @checked
    async def write(
        self,
        path: str,
        data: Data,
        *,
        mode: Optional[int] = None,
        uid: Optional[int] = None,
        gid: Optional[int] = None,
        create_parents: bool = True,
        overwrite: bool = True,
    ) -> FileInfo:
        up = Uploader(
            self._sbx.id,
            path,
            _reader(data),
            _options(mode, uid, gid, create_parents, overwrite, _size_of(data)),
        )
        c = self._sbx.client
        while up.done is None:
            try:
                up.took(await c.call(self._svc.write_sandbox_file, up.next_request()))
            except errors.UploadOffsetMismatchError as e:
                up.mismatch(e)
            except errors.ServerUnreachableError as e:
                await self._resume(up, e)
            except errors.SandboxFileExistsError as e:
                if not up.maybe_committed:
                    raise
                data = await self.read(up.path)
                up.verify_commit(await self.stat(up.path), hashlib.sha256(data).hexdigest(), e)
        return up.done

    async def _resume(self, up: Uploader, e: errors.CleanroomError) -> None:
        """See :meth:`cleanroom.files.Files._resume`."""
        finishing = up.finishing
        while True:
            await asyncio.sleep(up.interrupted(e))
            req = up.status_request()
            if req is None:
                up.restart()
                return
            try:
                r = await self._sbx.client.call(self._svc.get_sandbox_upload, req)
            except errors.ServerUnreachableError as again:
                e = again
                continue
            except errors.UploadNotFoundError:
                if not finishing or up.options.format == fpb.SANDBOX_UPLOAD_FORMAT_TAR:
                    raise
                info = await self.stat(up.path)
                up.verify_commit(info, hashlib.sha256(await self.read(up.path)).hexdigest())
                return
            up.resync(r.upload.offset)
            return

    @checked
    async def read(self, path: str, offset: int = 0, length: int = 0) -> bytes:
        """A file's bytes; a stream that breaks off is re-opened at the offset reached."""
        dl = Download(self._sbx.id, path, offset, length)
        parts = []
        while True:
            try:
                async for m in self._sbx.client.stream(self._svc.read_sandbox_file, dl.request()):
                    data = dl.feed(m)
                    if data:
                        parts.append(data)
            except errors.ServerUnreachableError as e:
                await asyncio.sleep(dl.interrupted(e))
                continue
            if dl.complete or dl.end is None:
                return b"".join(parts)
            await asyncio.sleep(dl.interrupted(dl.short()))

    @checked
    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return (await self.read(path)).decode(encoding)

    @checked
    async def list(self, path: str) -> List[FileInfo]:
        out: List[FileInfo] = []
        after = ""
        while True:
            r = await self._sbx.client.call(
                self._svc.list_sandbox_files, _list_request(self._sbx.id, path, after)
            )
            out.extend(FileInfo.from_proto(e) for e in r.entries)
            if not r.truncated or not r.entries:
                return out
            after = r.entries[-1].name

    @checked
    async def stat(self, path: str, follow_symlinks: bool = False) -> FileInfo:
        r = await self._sbx.client.call(
            self._svc.stat_sandbox_file,
            fpb.StatSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, follow_symlinks=follow_symlinks
            ),
        )
        return FileInfo.from_proto(r.file)

    @checked
    async def mkdir(self, path: str, mode: int = 0, parents: bool = True) -> FileInfo:
        r = await self._sbx.client.call(
            self._svc.make_sandbox_directory,
            fpb.MakeSandboxDirectoryRequest(
                sandbox_id=self._sbx.id, path=path, mode=mode, parents=parents
            ),
        )
        return FileInfo.from_proto(r.directory)

    @checked
    async def remove(self, path: str, recursive: bool = False, missing_ok: bool = False) -> bool:
        r = await self._sbx.client.call(
            self._svc.remove_sandbox_file,
            fpb.RemoveSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, recursive=recursive, missing_ok=missing_ok
            ),
        )
        return r.removed


class _Opening:
    """What ``AsyncSandbox.create``/``connect`` return: await it for the sandbox, or use it
    with ``async with`` to have the sandbox terminated on exit."""

    def __init__(self, make: Callable[[], Awaitable["AsyncSandbox"]]) -> None:
        self._make = make
        self._sbx: Optional[AsyncSandbox] = None

    def __await__(self) -> Generator[Any, None, "AsyncSandbox"]:
        return self._make().__await__()

    async def __aenter__(self) -> "AsyncSandbox":
        self._sbx = await self._make()
        return self._sbx

    async def __aexit__(self, *exc) -> None:
        if self._sbx is not None:
            await self._sbx.__aexit__(*exc)


class AsyncSandbox(SandboxCalls):
    """A sandbox driven from asyncio; methods mirror :class:`cleanroom.Sandbox` (the calls
    of :class:`~cleanroom.calls.SandboxCalls` — pause, snapshot, approvals... — are
    awaited)."""

    def __init__(self, client: AsyncClient, sandbox: "pb.Sandbox", owns_client: bool) -> None:
        self.client = client
        self.id: str = sandbox.sandbox_id
        self._info = sandbox
        self._owns_client = owns_client
        self.claim_latency_us = 0
        self.files = AsyncFiles(self)

    @classmethod
    def _opening(cls, call, client, host, token, ca_cert, server_cert_sha256) -> _Opening:
        """``call(c)`` → (awaitable response, how to get the ``pb.Sandbox`` out of it)."""

        async def make() -> AsyncSandbox:
            owns = client is None
            c = client or AsyncClient(
                host, token=token, ca_cert=ca_cert, server_cert_sha256=server_cert_sha256
            )
            try:
                r = await call(c)
            except BaseException:
                if owns:
                    await c.aclose()
                raise
            sbx = cls(c, r.sandbox, owns)
            sbx.claim_latency_us = getattr(r, "claim_latency_us", 0)
            return sbx

        return _Opening(make)

    @classmethod
    @checked
    def create(
        cls,
        policy: Policy = None,
        image: Optional[str] = None,
        *,
        labels: Optional[Mapping[str, str]] = None,
        limits=None,
        idempotency_key: str = "",
        ttl: Optional[Seconds] = None,
        idle_timeout: Optional[Seconds] = None,
        suspend_after: Optional[Seconds] = None,
        from_snapshot: str = "",
        no_pool: bool = False,
        agent_public_key: str = "",
        delegation_chain: Sequence[str] = (),
        runtime: str = "",
        volumes: Optional[Sequence[VolumeSpec]] = None,
        from_checkpoint: str = "",
        client: Optional[AsyncClient] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> _Opening:
        """See :meth:`cleanroom.Sandbox.create`."""
        req = pb.CreateSandboxRequest(
            policy_yaml=policy_text(policy),
            image_ref=image or "",
            idempotency_key=idempotency_key,
            labels=dict(labels or {}),
            limits=limits_message(limits),
            ttl_seconds=seconds(ttl, "ttl"),
            idle_timeout_seconds=seconds(idle_timeout, "idle_timeout"),
            suspend_after_seconds=seconds(suspend_after, "suspend_after"),
            from_snapshot=from_snapshot,
            no_pool=no_pool,
            agent_public_key=agent_public_key,
            delegation_chain=list(delegation_chain),
            runtime=runtime,
            volumes=volume_mounts(volumes),
            from_checkpoint=from_checkpoint,
        )
        return cls._opening(
            lambda c: c.call(c.sandboxes.create_sandbox, req),
            client, host, token, ca_cert, server_cert_sha256,
        )

    @classmethod
    @checked
    def fork(
        cls,
        snapshot_id: str,
        *,
        labels: Optional[Mapping[str, str]] = None,
        client: Optional[AsyncClient] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> _Opening:
        """See :meth:`cleanroom.Sandbox.fork`."""
        return cls.create(
            from_snapshot=snapshot_id, labels=labels, client=client, host=host, token=token,
            ca_cert=ca_cert, server_cert_sha256=server_cert_sha256,
        )

    @classmethod
    @checked
    def claim(
        cls,
        pool_id: str,
        *,
        agent_public_key: str = "",
        delegation_chain: Sequence[str] = (),
        runtime: str = "",
        client: Optional[AsyncClient] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> _Opening:
        """See :meth:`cleanroom.Sandbox.claim`."""
        req = ppb.ClaimSandboxRequest(
            pool_id=pool_id, agent_public_key=agent_public_key,
            delegation_chain=list(delegation_chain),
        )
        return cls._opening(
            lambda c: c.call(c.pools.claim_sandbox, req),
            client, host, token, ca_cert, server_cert_sha256,
        )

    @classmethod
    @checked
    def connect(
        cls,
        sandbox_id: str,
        *,
        client: Optional[AsyncClient] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> _Opening:
        return cls._opening(
            lambda c: c.call(c.sandboxes.get_sandbox, pb.GetSandboxRequest(sandbox_id=sandbox_id)),
            client, host, token, ca_cert, server_cert_sha256,
        )

    async def labels(self) -> dict:
        """The sandbox's labels, as the server reports them now (a coroutine here)."""
        return dict((await self.info()).labels)

    @checked
    async def events(self, after_sequence: int = 0, follow: bool = False) -> AsyncIterator[Event]:
        """See :meth:`cleanroom.Sandbox.events` (``async for``)."""
        c = self.client
        stream = c.stream(
            c.sandboxes.stream_sandbox_events,
            pb.StreamSandboxEventsRequest(
                sandbox_id=self.id, after_sequence=after_sequence, follow=follow
            ),
        )
        try:
            async for e in stream:
                yield Event.from_proto(e)
        finally:
            await stream.aclose()

    @checked
    def answer_egress(self, callback, *, interval: float = 0.1) -> AsyncEgressAnswerer:
        """See :meth:`cleanroom.Sandbox.answer_egress`; ``callback`` may be a coroutine
        function. Runs as a task until ``await w.stop()`` / the end of ``async with``."""
        return AsyncEgressAnswerer(self, callback, interval)

    async def info(self) -> "pb.Sandbox":
        r = await self.client.call(
            self.client.sandboxes.get_sandbox, pb.GetSandboxRequest(sandbox_id=self.id)
        )
        self._info = r.sandbox
        return r.sandbox

    async def lifetime(self) -> Lifetime:
        """See :meth:`cleanroom.Sandbox.lifetime`."""
        return Lifetime.from_proto(await self.info())

    async def usage(self) -> Optional[Usage]:
        """See :meth:`cleanroom.Sandbox.usage`."""
        return Usage.from_proto(await self.info())

    @checked
    async def set_timeout(
        self,
        ttl: Optional[Seconds] = None,
        idle_timeout: Optional[Seconds] = None,
        *,
        clear_ttl: bool = False,
        clear_idle_timeout: bool = False,
    ) -> Lifetime:
        """See :meth:`cleanroom.Sandbox.set_timeout`."""
        c = self.client
        r = await c.call(
            c.lifetimes.set_sandbox_timeout,
            timeout_request(self.id, ttl, idle_timeout, clear_ttl, clear_idle_timeout),
        )
        return Lifetime.from_proto(r.sandbox)

    @checked
    async def start(
        self,
        *command: str,
        stdin: Union[bool, str, bytes] = False,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        shell: bool = False,
    ) -> AsyncCommandHandle:
        c = self.client
        r = await c.call(
            c.executions.create_execution,
            create_request(
                self.id,
                shell_argv(command) if shell else command,
                env=env,
                cwd=cwd,
                timeout=timeout,
                attach_stdin=stdin is not False and stdin is not None,
            ),
        )
        h = AsyncCommandHandle(self, r.execution.execution_id)
        if isinstance(stdin, (str, bytes)):
            await h.send_stdin(stdin)
            await h.close_stdin()
        return h

    @checked
    async def run(
        self,
        *command: str,
        stdin: Union[str, bytes, None] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        shell: bool = False,
    ) -> CommandResult:
        h = await self.start(
            *command, stdin=stdin if stdin is not None else False, env=env, cwd=cwd,
            timeout=timeout, shell=shell,
        )
        return await h.wait(on_stdout=on_stdout, on_stderr=on_stderr)

    @checked
    async def run_shell(
        self,
        script: str,
        *,
        stdin: Union[str, bytes, None] = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
    ) -> CommandResult:
        """``await run(script, shell=True)``."""
        return await self.run(
            script, stdin=stdin, env=env, cwd=cwd, timeout=timeout, on_stdout=on_stdout,
            on_stderr=on_stderr, shell=True,
        )

    async def attach(self, execution_id: str) -> AsyncCommandHandle:
        h = AsyncCommandHandle(self, execution_id)
        await h.info()
        return h

    async def terminate(self, background: bool = False) -> None:
        """See :meth:`cleanroom.Sandbox.terminate`."""
        await self.client.call(
            self.client.sandboxes.terminate_sandbox,
            pb.TerminateSandboxRequest(sandbox_id=self.id, background=background),
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self.terminate()
        except errors.SandboxNotFoundError:
            pass
        finally:
            await self.aclose()
