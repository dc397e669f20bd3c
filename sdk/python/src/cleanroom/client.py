"""Typed Connect clients for the three services over one connection, plus error mapping.

Generated stubs (``cleanroom.v1.cleanroom_connect``) do the Connect protocol (binary
protobuf; server-streaming envelopes); :mod:`cleanroom.transport` carries it over a unix
socket, plain HTTP or TLS. Every call goes through :func:`call`/:func:`stream` so that a
failure surfaces as a typed :class:`~cleanroom.errors.CleanroomError` with a stable code.
"""

from __future__ import annotations

import os
from typing import Iterator, Optional

import httpx
from connectrpc.errors import ConnectError
from pyqwest import Client as PqClient
from pyqwest import SyncClient

from . import errors, transport
from .config import Target, resolve_target
from .ops import Operations
from .v1 import cleanroom_connect as rpc
from .v1 import (
    approvals_connect,
    attestation_connect,
    files_connect,
    inbound_connect,
    lifetime_connect,
    network_connect,
    pools_connect,
    snapshots_connect,
    volumes_connect,
)

_OPTS = dict(send_compression=None, accept_compression=[])


def unreachable(target: Target, cause: object) -> errors.CleanroomError:
    """``server_unreachable`` naming where the SDK looked and what to do: no server (or a
    server elsewhere) is the common case for a new user, so the message says which socket or
    address was tried, from which source it came, and how to fix it."""
    ep = target.endpoint
    where = ep.display()
    if ep.kind == "unix" and not os.path.exists(ep.address):
        what = f"no cleanroom server socket at {ep.address} (the file does not exist)"
    else:
        what = f"cannot reach the cleanroom server at {where}: {cause}"
    return errors.error(
        "server_unreachable",
        f"{what}. Start the server with `cleanroom serve`, or point the SDK at a running one "
        "with host=... or CLEANROOM_HOST (unix:///path, http://host:port, https://host:port).",
        "unavailable",
        {"endpoint": where},
    )


def _mapped(target: Target, e: ConnectError) -> errors.CleanroomError:
    err = errors.from_connect(e)
    if err.code == "server_unreachable":  # a transport failure, never a server's detail
        return unreachable(target, err.message)
    return err


class Client(Operations):
    """Blocking clients for every service (SandboxService, ExecutionService, ImageService,
    FileService, SandboxLifetimeService, SnapshotService, WarmPoolService, VolumeService,
    ApprovalService, AttestationService), plus the server-wide calls of
    :class:`~cleanroom.ops.Operations` (list sandboxes, snapshots, pools, volumes, the
    attestation key).

    Arguments override the CLI's sources (``CLEANROOM_HOST``/``_TOKEN``/``_CA_CERT``/
    ``_SERVER_CERT_SHA256``, the config file, the default sockets); see
    :mod:`cleanroom.config`. ``traceparent``: a W3C trace context every call carries, so the
    server's spans and the executions' ``trace_id`` join that trace; without it, the active
    OpenTelemetry context's when the application uses OpenTelemetry (docs/traces.md)."""

    def __init__(
        self,
        host: Optional[str] = None,
        *,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
        traceparent: Optional[str] = None,
    ) -> None:
        self.target = resolve_target(host, token, ca_cert, server_cert_sha256)
        # Every call continues this W3C trace (else the active OpenTelemetry context's).
        self.traceparent = transport.check_traceparent(traceparent)
        self._http = transport.sync_client(self.target)
        pq = SyncClient(transport.HttpxSyncTransport(self._http, self.traceparent))
        base = transport.base_url(self.target)
        self.sandboxes = rpc.SandboxServiceClientSync(base, http_client=pq, **_OPTS)
        self.executions = rpc.ExecutionServiceClientSync(base, http_client=pq, **_OPTS)
        self.images = rpc.ImageServiceClientSync(base, http_client=pq, **_OPTS)
        self.files = files_connect.FileServiceClientSync(base, http_client=pq, **_OPTS)
        self.lifetimes = lifetime_connect.SandboxLifetimeServiceClientSync(
            base, http_client=pq, **_OPTS
        )
        self.snapshots = snapshots_connect.SnapshotServiceClientSync(
            base, http_client=pq, **_OPTS
        )
        self.pools = pools_connect.WarmPoolServiceClientSync(base, http_client=pq, **_OPTS)
        self.volumes = volumes_connect.VolumeServiceClientSync(base, http_client=pq, **_OPTS)
        self.approvals = approvals_connect.ApprovalServiceClientSync(
            base, http_client=pq, **_OPTS
        )
        self.network = network_connect.NetworkServiceClientSync(base, http_client=pq, **_OPTS)
        self.inbound = inbound_connect.InboundServiceClientSync(base, http_client=pq, **_OPTS)
        self.attestations = attestation_connect.AttestationServiceClientSync(
            base, http_client=pq, **_OPTS
        )

    def call(self, method, request):
        """Call a unary stub method, mapping failures to typed errors."""
        try:
            return method(request)
        except ConnectError as e:
            raise _mapped(self.target, e) from None
        except (httpx.TransportError, OSError) as e:
            raise unreachable(self.target, e) from None

    def _unary(self, method, request, shape):
        """:meth:`call`, then ``shape`` the response (see :class:`~cleanroom.ops.Operations`)."""
        return shape(self.call(method, request))

    def stream(self, method, request) -> Iterator:
        """Iterate a server-streaming stub method, mapping failures to typed errors."""
        try:
            yield from method(request)
        except ConnectError as e:
            raise _mapped(self.target, e) from None
        except (httpx.TransportError, OSError) as e:
            raise unreachable(self.target, e) from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncClient(Operations):
    """The asyncio twin of :class:`Client` (its :class:`~cleanroom.ops.Operations` are
    coroutines)."""

    def __init__(
        self,
        host: Optional[str] = None,
        *,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
        traceparent: Optional[str] = None,
    ) -> None:
        self.target = resolve_target(host, token, ca_cert, server_cert_sha256)
        # Every call continues this W3C trace (else the active OpenTelemetry context's).
        self.traceparent = transport.check_traceparent(traceparent)
        self._http = transport.async_client(self.target)
        pq = PqClient(transport.HttpxAsyncTransport(self._http, self.traceparent))
        base = transport.base_url(self.target)
        self.sandboxes = rpc.SandboxServiceClient(base, http_client=pq, **_OPTS)
        self.executions = rpc.ExecutionServiceClient(base, http_client=pq, **_OPTS)
        self.images = rpc.ImageServiceClient(base, http_client=pq, **_OPTS)
        self.files = files_connect.FileServiceClient(base, http_client=pq, **_OPTS)
        self.lifetimes = lifetime_connect.SandboxLifetimeServiceClient(
            base, http_client=pq, **_OPTS
        )
        self.snapshots = snapshots_connect.SnapshotServiceClient(base, http_client=pq, **_OPTS)
        self.pools = pools_connect.WarmPoolServiceClient(base, http_client=pq, **_OPTS)
        self.volumes = volumes_connect.VolumeServiceClient(base, http_client=pq, **_OPTS)
        self.approvals = approvals_connect.ApprovalServiceClient(base, http_client=pq, **_OPTS)
        self.network = network_connect.NetworkServiceClient(base, http_client=pq, **_OPTS)
        self.inbound = inbound_connect.InboundServiceClient(base, http_client=pq, **_OPTS)
        self.attestations = attestation_connect.AttestationServiceClient(
            base, http_client=pq, **_OPTS
        )

    async def call(self, method, request):
        try:
            return await method(request)
        except ConnectError as e:
            raise _mapped(self.target, e) from None
        except (httpx.TransportError, OSError) as e:
            raise unreachable(self.target, e) from None

    async def _unary(self, method, request, shape):
        return shape(await self.call(method, request))

    async def stream(self, method, request):
        try:
            async for ev in method(request):
                yield ev
        except ConnectError as e:
            raise _mapped(self.target, e) from None
        except (httpx.TransportError, OSError) as e:
            raise unreachable(self.target, e) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
