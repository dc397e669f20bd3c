"""The blocking, idiomatic layer: :class:`Sandbox` and :class:`CommandHandle`.

    with Sandbox.create(policy=yaml_text) as sbx:
        r = sbx.run("python3", "-c", "print(1)")
        print(r.stdout, r.exit_code)

Leaving the ``with`` block terminates the sandbox. Commands are executions of the server;
their output is retained there, so a background command can be re-attached by id — from this
process (``sbx.attach(id)``) or another one (``Sandbox.connect(sandbox_id).attach(id)``).
"""

from __future__ import annotations

from typing import Iterator, List, Mapping, Optional, Sequence, Union

from . import errors
from ._core import (
    STREAM_RETRIES,
    Collector,
    CommandResult,
    OutputCallback,
    create_request,
    shell_argv,
    stdin_chunks,
)
from .client import Client
from .calls import SandboxCalls
from .events import Approver, EgressAnswerer, Event
from .oneshot import run_execution
from .options import Policy, VolumeSpec, checked, sandbox_request
from .lifetime import Lifetime, Seconds, Usage, seconds, timeout_request
from .v1 import cleanroom_pb2 as pb
from .v1 import pools_pb2 as ppb

Stdin = Union[str, bytes, None]


class CommandHandle:
    """A command running in a sandbox (started with :meth:`Sandbox.start`, or re-attached
    with :meth:`Sandbox.attach`)."""

    def __init__(self, sandbox: "Sandbox", execution_id: str) -> None:
        self.sandbox = sandbox
        self.id = execution_id

    @property
    def execution_id(self) -> str:
        return self.id

    def send_stdin(self, data: Union[str, bytes]) -> None:
        """Write to the command's stdin (it must have been started with ``stdin=True``)."""
        c = self.sandbox.client
        for chunk in stdin_chunks(data):
            c.call(
                c.executions.write_execution_stdin,
                pb.WriteExecutionStdinRequest(
                    sandbox_id=self.sandbox.id, execution_id=self.id, data=chunk
                ),
            )

    def close_stdin(self) -> None:
        """Send EOF to the command's stdin."""
        c = self.sandbox.client
        c.call(
            c.executions.close_execution_stdin,
            pb.CloseExecutionStdinRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )

    @checked
    def wait(
        self,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
    ) -> CommandResult:
        """Stream the command's output from its start until it exits; callbacks receive the
        text as it arrives. Returns the full result (all retained output)."""
        c = self.sandbox.client
        col = Collector(self.id, on_stdout, on_stderr)
        for _ in range(STREAM_RETRIES + 1):
            events = c.stream(c.executions.stream_execution, col.stream_request(self.sandbox.id))
            try:
                for ev in events:
                    col.feed(ev)
                    if col.result is not None:
                        return col.result
            finally:
                events.close()  # release the HTTP response now, not at GC
        raise col.ended_without_exit()

    @checked
    def kill(self, grace_seconds: int = 0) -> None:
        """Cancel the command: SIGTERM, then SIGKILL after ``grace_seconds`` (0 = server
        default)."""
        c = self.sandbox.client
        c.call(
            c.executions.cancel_execution,
            pb.CancelExecutionRequest(
                sandbox_id=self.sandbox.id, execution_id=self.id, grace_seconds=grace_seconds
            ),
        )

    def interrupt(self) -> None:
        """One SIGINT to the command, as a terminal's Ctrl-C: no SIGKILL follows and nothing
        is recorded as canceled (the process decides; :meth:`kill` can still follow)."""
        c = self.sandbox.client
        c.call(
            c.executions.cancel_execution,
            pb.CancelExecutionRequest(
                sandbox_id=self.sandbox.id, execution_id=self.id, interrupt=True
            ),
        )

    def inspect(self) -> "pb.InspectExecutionResponse":
        """The execution's full record: ``execution``, ``message``, the retained output's
        tails (``stdout``/``stderr``, lossy text) and sizes, ``policy_hash``,
        ``output_truncated``/``output_expired``..."""
        c = self.sandbox.client
        return c.call(
            c.executions.inspect_execution,
            pb.InspectExecutionRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )

    def info(self) -> "pb.Execution":
        """The execution as the server reports it now (status, exit code...)."""
        c = self.sandbox.client
        r = c.call(
            c.executions.get_execution,
            pb.GetExecutionRequest(sandbox_id=self.sandbox.id, execution_id=self.id),
        )
        return r.execution


class Sandbox(SandboxCalls):
    """A sandbox on a Cleanroom server. Create one with :meth:`create`, or connect to an
    existing one with :meth:`connect`."""

    def __init__(self, client: Client, sandbox: "pb.Sandbox", owns_client: bool) -> None:
        self.client = client
        self.id: str = sandbox.sandbox_id
        self._info = sandbox
        self._owns_client = owns_client
        #: Server time of the claim in µs (:meth:`claim` only; 0 otherwise).
        self.claim_latency_us = 0
        from .files import Files

        #: File operations in the sandbox (run with the sandbox's own identity).
        self.files = Files(self)

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
        lockfiles: Optional[Mapping[str, Union[str, bytes]]] = None,
        learn: bool = False,
        runtime: str = "",
        volumes: Optional[Sequence[VolumeSpec]] = None,
        from_checkpoint: str = "",
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> "Sandbox":
        """Create a sandbox. ``policy`` is cleanroom.yaml text, a path to the file
        (``pathlib.Path``, or a one-line ``str`` naming an existing file) or a mapping (the
        parsed document); empty: the built-in deny-by-default policy. ``image`` a
        digest-pinned OCI reference (empty: host-view root); ``limits`` a ``ResourceLimits``
        or a dict (``memory_mib``/``memory_bytes``, ``cpus``/``cpu_millis``, ``pids``,
        ``disk_mib``/``disk_bytes``, ``output_mib``/``output_bytes``); ``ttl``/
        ``idle_timeout`` (seconds or timedelta) end the sandbox that long after creation /
        without activity (default: the policy's, else the server's); ``suspend_after``
        freezes it (memory kept) after that long idle instead, and its next exec or file
        call resumes it (default: the policy's, else never; docs/api.md "Suspend on idle"). ``from_snapshot``
        restores (forks) a snapshot: its policy, image and limits are used (give no
        ``policy``/``image``). ``no_pool`` never takes a ready sandbox from a matching warm
        pool. ``agent_public_key``/``delegation_chain`` bind an agent identity into the
        attestation. ``lockfiles`` are the lock files a ``sandbox.registries`` policy names
        (path relative to the policy file → content; the policy hash covers them); ``learn``
        compiles the policy in learn mode (``cleanroom exec --learn``: unknown destinations
        allowed and recorded as ``egress.learn`` events). ``runtime`` is the isolation
        runtime, ``linux`` or ``gvisor`` (default: the policy's, else the server's; one the
        server lacks raises ``RuntimeUnavailableError``). ``volumes`` mounts named volumes
        (``Client.create_volume``): a list of ``"NAME:/path[:ro]"`` (the CLI's
        ``--volume``) or ``{"name", "path", "read_only"}``; a malformed one raises
        ``VolumeMountInvalidError``, a volume held read-write elsewhere ``VolumeBusyError``
        (docs/volumes.md). Without ``client``, one is built from ``host``/``token``/``ca_cert``/
        ``server_cert_sha256`` or the CLI's sources. An unknown option raises
        ``UnknownOptionError``. ``from_checkpoint`` restores (forks) a memory checkpoint
        (``Sandbox.checkpoint``): every process continues as saved; give no other options
        that shape the sandbox."""
        req = sandbox_request(
            policy, image, labels, limits, idempotency_key, ttl, idle_timeout, from_snapshot,
            no_pool, agent_public_key, delegation_chain, lockfiles, learn, runtime, volumes,
            suspend_after=suspend_after,
        )
        req.from_checkpoint = from_checkpoint
        return cls._open(
            lambda c: c.call(c.sandboxes.create_sandbox, req).sandbox,
            client, host, token, ca_cert, server_cert_sha256,
        )

    @classmethod
    def _open(cls, make, client, host, token, ca_cert, server_cert_sha256) -> "Sandbox":
        owns = client is None
        c = client or Client(
            host, token=token, ca_cert=ca_cert, server_cert_sha256=server_cert_sha256
        )
        try:
            info = make(c)
        except BaseException:
            if owns:
                c.close()
            raise
        return cls(c, info, owns)

    @classmethod
    @checked
    def connect(
        cls,
        sandbox_id: str,
        *,
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> "Sandbox":
        """An existing sandbox by id (raises ``SandboxNotFoundError`` when it is not there
        or belongs to someone else)."""
        return cls._open(
            lambda c: c.get_sandbox(sandbox_id),
            client, host, token, ca_cert, server_cert_sha256,
        )

    @classmethod
    @checked
    def exec(
        cls,
        *command: str,
        policy: Policy = None,
        image: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
        limits=None,
        ttl: Optional[Seconds] = None,
        idle_timeout: Optional[Seconds] = None,
        from_snapshot: str = "",
        no_pool: bool = False,
        lockfiles: Optional[Mapping[str, Union[str, bytes]]] = None,
        learn: bool = False,
        runtime: str = "",
        volumes: Optional[Sequence[VolumeSpec]] = None,
        in_sandbox: str = "",
        keep: bool = False,
        stdin: Stdin = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        shell: bool = False,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> CommandResult:
        """One call (RunExecution, what ``cleanroom exec`` does): make a sandbox (or claim
        one from a matching pool; ``in_sandbox``: use that existing one), run the command,
        stream its output, and tear the sandbox down after the exit unless ``keep``. The
        result's ``sandbox_id`` names the sandbox. Create options as :meth:`create`."""
        creating = not in_sandbox
        if not creating and any(
            (policy, image, labels, limits, ttl, idle_timeout, from_snapshot, no_pool, keep,
             lockfiles, learn, runtime, volumes)
        ):
            raise errors.error(
                "invalid_argument", "Sandbox.exec: in_sandbox excludes the create options"
            )
        req = pb.RunExecutionRequest(
            execution=create_request(
                in_sandbox,
                shell_argv(command) if shell else command,
                env=env,
                cwd=cwd,
                timeout=timeout,
                attach_stdin=stdin is not None,
            ),
            create=sandbox_request(
                policy, image, labels, limits, "", ttl, idle_timeout, from_snapshot, no_pool,
                "", (), lockfiles, learn, runtime, volumes,
            ) if creating else None,
            terminate_on_exit=creating and not keep,
        )
        c = client or Client(
            host, token=token, ca_cert=ca_cert, server_cert_sha256=server_cert_sha256
        )
        try:
            return run_execution(c, req, stdin, on_stdout, on_stderr)
        finally:
            if client is None:
                c.close()

    @classmethod
    @checked
    def fork(
        cls,
        snapshot_id: str,
        *,
        labels: Optional[Mapping[str, str]] = None,
        ttl: Optional[Seconds] = None,
        idle_timeout: Optional[Seconds] = None,
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> "Sandbox":
        """A new sandbox restored from a snapshot (``Sandbox.create(from_snapshot=...)``);
        several forks of one snapshot share it read-only."""
        return cls.create(
            from_snapshot=snapshot_id, labels=labels, ttl=ttl, idle_timeout=idle_timeout,
            client=client, host=host, token=token, ca_cert=ca_cert,
            server_cert_sha256=server_cert_sha256,
        )

    @classmethod
    @checked
    def claim(
        cls,
        pool_id: str,
        *,
        agent_public_key: str = "",
        delegation_chain: Sequence[str] = (),
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> "Sandbox":
        """Take a READY sandbox from a warm pool (``NoReadySandboxesError`` when none is);
        it becomes the caller's; ``claim_latency_us`` holds the server's time for it. Give
        it back with :meth:`release` (or terminate it)."""
        req = ppb.ClaimSandboxRequest(
            pool_id=pool_id,
            agent_public_key=agent_public_key,
            delegation_chain=list(delegation_chain),
        )
        latency = []

        def make(c):
            r = c.call(c.pools.claim_sandbox, req)
            latency.append(r.claim_latency_us)
            return r.sandbox

        sbx = cls._open(make, client, host, token, ca_cert, server_cert_sha256)
        sbx.claim_latency_us = latency[0]
        return sbx

    @classmethod
    @checked
    def list(
        cls,
        *,
        labels: Optional[Mapping[str, str]] = None,
        include_stopped: bool = False,
        only_own: bool = False,
        client: Optional[Client] = None,
        host: Optional[str] = None,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> List["pb.Sandbox"]:
        """The sandboxes the caller sees that carry every one of ``labels`` (records; open
        one with :meth:`connect`). See :meth:`cleanroom.Client.list_sandboxes`."""
        c = client or Client(
            host, token=token, ca_cert=ca_cert, server_cert_sha256=server_cert_sha256
        )
        try:
            return c.list_sandboxes(
                labels=labels, include_stopped=include_stopped, only_own=only_own
            )
        finally:
            if client is None:
                c.close()

    def info(self) -> "pb.Sandbox":
        """The sandbox as the server reports it now."""
        r = self.client.call(
            self.client.sandboxes.get_sandbox, pb.GetSandboxRequest(sandbox_id=self.id)
        )
        self._info = r.sandbox
        return r.sandbox

    @property
    def labels(self) -> dict:
        """The sandbox's labels, as the server reports them now."""
        return dict(self.info().labels)

    @property
    def status(self) -> str:
        """``ready``, ``paused``, ``stopped``... as of the last call that returned the
        sandbox (:meth:`info` refreshes it)."""
        return pb.SandboxStatus.Name(self._info.status).removeprefix("SANDBOX_STATUS_").lower()

    def lifetime(self) -> Lifetime:
        """The sandbox's TTL, idle timeout and (once stopped) why it stopped."""
        return Lifetime.from_proto(self.info())

    def usage(self) -> Optional[Usage]:
        """Live resource usage (CPU, memory now/peak, pids, disk per writable filesystem,
        network bytes); ``None`` when the sandbox is not live."""
        return Usage.from_proto(self.info())

    @checked
    def set_timeout(
        self,
        ttl: Optional[Seconds] = None,
        idle_timeout: Optional[Seconds] = None,
        *,
        clear_ttl: bool = False,
        clear_idle_timeout: bool = False,
    ) -> Lifetime:
        """Extend (or shorten) the sandbox's life for a long job: it now expires ``ttl``
        from now; ``idle_timeout`` replaces the idle timeout; ``clear_*`` removes one.
        Only a READY sandbox (``SandboxNotReadyError`` otherwise)."""
        c = self.client
        r = c.call(
            c.lifetimes.set_sandbox_timeout,
            timeout_request(self.id, ttl, idle_timeout, clear_ttl, clear_idle_timeout),
        )
        self._info = r.sandbox
        return Lifetime.from_proto(r.sandbox)

    @checked
    def start(
        self,
        *command: str,
        stdin: Union[bool, str, bytes] = False,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        shell: bool = False,
    ) -> CommandHandle:
        """Start a command in the background. ``stdin=True`` keeps stdin open for
        :meth:`CommandHandle.send_stdin`; str/bytes are written and stdin closed.
        ``shell=True``: one string, run by ``/bin/sh -c`` in the sandbox."""
        c = self.client
        r = c.call(
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
        h = CommandHandle(self, r.execution.execution_id)
        if isinstance(stdin, (str, bytes)):
            h.send_stdin(stdin)
            h.close_stdin()
        return h

    @checked
    def run(
        self,
        *command: str,
        stdin: Stdin = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        shell: bool = False,
    ) -> CommandResult:
        """Run a command to completion. A non-zero exit is not an exception: look at
        ``result.exit_code`` (API failures — no such sandbox, bad policy... — raise).
        ``shell=True``: ``command`` is one string for ``/bin/sh -c`` (pipes, globs, ``&&``)."""
        h = self.start(
            *command, stdin=stdin if stdin is not None else False, env=env, cwd=cwd,
            timeout=timeout, shell=shell,
        )
        return h.wait(on_stdout=on_stdout, on_stderr=on_stderr)

    @checked
    def run_shell(
        self,
        script: str,
        *,
        stdin: Stdin = None,
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[int] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
    ) -> CommandResult:
        """``run(script, shell=True)``: the string runs under ``/bin/sh -c``."""
        return self.run(
            script, stdin=stdin, env=env, cwd=cwd, timeout=timeout, on_stdout=on_stdout,
            on_stderr=on_stderr, shell=True,
        )

    def attach(self, execution_id: str) -> CommandHandle:
        """Re-attach to an execution of this sandbox by id (checks that it exists)."""
        h = CommandHandle(self, execution_id)
        h.info()
        return h

    # ---- events, approvals, attestation ------------------------------------------------

    @checked
    def events(self, after_sequence: int = 0, follow: bool = False) -> Iterator[Event]:
        """The sandbox's events after ``after_sequence``; with ``follow`` the iterator
        tails new ones until the sandbox stops (``break`` or ``.close()`` it to stop)."""
        c = self.client
        stream = c.stream(
            c.sandboxes.stream_sandbox_events,
            pb.StreamSandboxEventsRequest(
                sandbox_id=self.id, after_sequence=after_sequence, follow=follow
            ),
        )
        try:
            for e in stream:
                yield Event.from_proto(e)
        finally:
            stream.close()

    @checked
    def answer_egress(self, callback: Approver, *, interval: float = 0.1) -> EgressAnswerer:
        """Answer this sandbox's egress requests with ``callback(request)`` → ``True``/
        ``False``/``"allow"``/``"deny"``/``Decision(allow, remember)``/``None`` (leave
        open), in a background thread, until ``.stop()`` or the end of a ``with`` block.
        A callback that raises denies (fail closed)."""
        return EgressAnswerer(self, callback, interval)

    def terminate(self, background: bool = False) -> None:
        """Stop the sandbox and everything in it. ``background``: return once it is
        STOPPING (executions canceled, teardown started), not STOPPED."""
        self.client.call(
            self.client.sandboxes.terminate_sandbox,
            pb.TerminateSandboxRequest(sandbox_id=self.id, background=background),
        )

    def close(self) -> None:
        """Release the connection (the sandbox keeps running)."""
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.terminate()
        except errors.SandboxNotFoundError:
            pass
        finally:
            self.close()
