"""HTTP under the Connect client: httpx, so one code path reaches a unix socket, h2c-less
plain HTTP/1.1 and TLS with a private CA.

connectrpc (the Connect project's Python runtime) sends requests through a pyqwest
transport, which speaks TCP only. Its transports are pluggable (``SyncTransport.execute_sync``
/ ``Transport.execute``), so these adapters hand each request to an httpx client built for the
resolved :class:`~cleanroom.config.Target` (``uds=`` for a socket, ``verify=`` for a CA) and
stream the response body back unbuffered — server-streaming RPCs (execution output) arrive
as they are produced.
"""

from __future__ import annotations

import ssl
from typing import AsyncIterator, Iterator

import httpx
from pyqwest import Headers, Request, Response, SyncRequest, SyncResponse

from .config import Target

# Output streams stay open as long as a command runs: no read timeout.
_TIMEOUT = httpx.Timeout(connect=30.0, read=None, write=120.0, pool=None)


def base_url(target: Target) -> str:
    """The URL prefix RPC paths are appended to."""
    ep = target.endpoint
    if ep.kind == "unix":
        return "http://localhost"
    return f"{ep.kind}://{ep.address}"


def _headers(target: Target) -> dict:
    # The token goes to TCP endpoints only: on the unix socket the kernel's peer
    # credentials identify the caller (as in the CLI).
    if target.token and target.endpoint.kind != "unix":
        return {"authorization": f"Bearer {target.token}"}
    return {}


def _verify(target: Target):
    if target.endpoint.kind == "https" and target.ca_cert:
        return ssl.create_default_context(cafile=target.ca_cert)
    return True


def sync_client(target: Target) -> httpx.Client:
    """An httpx client for ``target`` (socket, plain or TLS)."""
    transport = (
        httpx.HTTPTransport(uds=target.endpoint.address)
        if target.endpoint.kind == "unix"
        else httpx.HTTPTransport(verify=_verify(target))
    )
    return httpx.Client(transport=transport, timeout=_TIMEOUT, headers=_headers(target))


def async_client(target: Target) -> httpx.AsyncClient:
    """The asyncio twin of :func:`sync_client`."""
    transport = (
        httpx.AsyncHTTPTransport(uds=target.endpoint.address)
        if target.endpoint.kind == "unix"
        else httpx.AsyncHTTPTransport(verify=_verify(target))
    )
    return httpx.AsyncClient(transport=transport, timeout=_TIMEOUT, headers=_headers(target))


class HttpxSyncTransport:
    """A pyqwest ``SyncTransport`` that sends through an httpx client."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def execute_sync(self, request: SyncRequest) -> SyncResponse:
        req = self._client.build_request(
            request.method,
            request.url,
            headers=list(request.headers.items()),
            content=request.content,
        )
        resp = self._client.send(req, stream=True)

        def body() -> Iterator[bytes]:
            try:
                yield from resp.iter_raw()
            finally:
                resp.close()

        return SyncResponse(
            status=resp.status_code,
            headers=Headers(resp.headers.multi_items()),
            content=body(),
        )


class HttpxAsyncTransport:
    """A pyqwest ``Transport`` that sends through an httpx ``AsyncClient``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def execute(self, request: Request) -> Response:
        req = self._client.build_request(
            request.method,
            request.url,
            headers=list(request.headers.items()),
            content=request.content,
        )
        resp = await self._client.send(req, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
            finally:
                await resp.aclose()

        return Response(
            status=resp.status_code,
            headers=Headers(resp.headers.multi_items()),
            content=body(),
        )
