"""Typed Connect clients for the three services over one connection, plus error mapping.

Generated stubs (``cleanroom.v1.cleanroom_connect``) do the Connect protocol (binary
protobuf; server-streaming envelopes); :mod:`cleanroom.transport` carries it over a unix
socket, plain HTTP or TLS. Every call goes through :func:`call`/:func:`stream` so that a
failure surfaces as a typed :class:`~cleanroom.errors.CleanroomError` with a stable code.
"""

from __future__ import annotations

from typing import Iterator, Optional

import httpx
from connectrpc.errors import ConnectError
from pyqwest import Client as PqClient
from pyqwest import SyncClient

from . import errors, transport
from .config import Target, resolve_target
from .v1 import cleanroom_connect as rpc
from .v1 import files_connect, lifetime_connect

_OPTS = dict(send_compression=None, accept_compression=[])


def _unreachable(target: Target, e: Exception) -> errors.CleanroomError:
    return errors.error(
        "server_unreachable",
        f"cannot reach the cleanroom server at {target.endpoint.display()}: {e}. "
        "Start it with `cleanroom serve`.",
        "unavailable",
    )


class Client:
    """Blocking clients for SandboxService, ExecutionService, ImageService, FileService and
    SandboxLifetimeService.

    Arguments override the CLI's sources (``CLEANROOM_HOST``/``_TOKEN``/``_CA_CERT``/
    ``_SERVER_CERT_SHA256``, the config file, the default sockets); see
    :mod:`cleanroom.config`."""

    def __init__(
        self,
        host: Optional[str] = None,
        *,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> None:
        self.target = resolve_target(host, token, ca_cert, server_cert_sha256)
        self._http = transport.sync_client(self.target)
        pq = SyncClient(transport.HttpxSyncTransport(self._http))
        base = transport.base_url(self.target)
        self.sandboxes = rpc.SandboxServiceClientSync(base, http_client=pq, **_OPTS)
        self.executions = rpc.ExecutionServiceClientSync(base, http_client=pq, **_OPTS)
        self.images = rpc.ImageServiceClientSync(base, http_client=pq, **_OPTS)
        self.files = files_connect.FileServiceClientSync(base, http_client=pq, **_OPTS)
        self.lifetimes = lifetime_connect.SandboxLifetimeServiceClientSync(
            base, http_client=pq, **_OPTS
        )

    def call(self, method, request):
        """Call a unary stub method, mapping failures to typed errors."""
        try:
            return method(request)
        except ConnectError as e:
            raise errors.from_connect(e) from None
        except (httpx.TransportError, OSError) as e:
            raise _unreachable(self.target, e) from None

    def stream(self, method, request) -> Iterator:
        """Iterate a server-streaming stub method, mapping failures to typed errors."""
        try:
            yield from method(request)
        except ConnectError as e:
            raise errors.from_connect(e) from None
        except (httpx.TransportError, OSError) as e:
            raise _unreachable(self.target, e) from None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncClient:
    """The asyncio twin of :class:`Client`."""

    def __init__(
        self,
        host: Optional[str] = None,
        *,
        token: Optional[str] = None,
        ca_cert: Optional[str] = None,
        server_cert_sha256: Optional[str] = None,
    ) -> None:
        self.target = resolve_target(host, token, ca_cert, server_cert_sha256)
        self._http = transport.async_client(self.target)
        pq = PqClient(transport.HttpxAsyncTransport(self._http))
        base = transport.base_url(self.target)
        self.sandboxes = rpc.SandboxServiceClient(base, http_client=pq, **_OPTS)
        self.executions = rpc.ExecutionServiceClient(base, http_client=pq, **_OPTS)
        self.images = rpc.ImageServiceClient(base, http_client=pq, **_OPTS)
        self.files = files_connect.FileServiceClient(base, http_client=pq, **_OPTS)
        self.lifetimes = lifetime_connect.SandboxLifetimeServiceClient(
            base, http_client=pq, **_OPTS
        )

    async def call(self, method, request):
        try:
            return await method(request)
        except ConnectError as e:
            raise errors.from_connect(e) from None
        except (httpx.TransportError, OSError) as e:
            raise _unreachable(self.target, e) from None

    async def stream(self, method, request):
        try:
            async for ev in method(request):
                yield ev
        except ConnectError as e:
            raise errors.from_connect(e) from None
        except (httpx.TransportError, OSError) as e:
            raise _unreachable(self.target, e) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
