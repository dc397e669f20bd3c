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

import hashlib
import re
import ssl
import sys
from typing import AsyncIterator, Iterator, Optional

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


_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")


def check_traceparent(value: Optional[str]) -> Optional[str]:
    """A W3C ``traceparent`` given to a client, checked (``ValueError`` when malformed)."""
    if value is not None and not _TRACEPARENT.fullmatch(value):
        raise ValueError(f"traceparent {value!r} is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
    return value


def trace_headers(traceparent: Optional[str]) -> list:
    """The W3C trace context one call carries (docs/traces.md): the client's
    ``traceparent`` when it was given one, else the active OpenTelemetry context's when the
    application uses OpenTelemetry (``opentelemetry`` already imported; nothing is imported
    otherwise), else none."""
    if traceparent:
        return [("traceparent", traceparent)]
    if "opentelemetry" not in sys.modules:
        return []
    try:
        from opentelemetry import propagate
    except ImportError:
        return []
    carrier: dict = {}
    propagate.inject(carrier)
    return [(k, v) for k, v in carrier.items() if k in ("traceparent", "tracestate")]


def _check_pin(pin: bytes, der) -> None:
    if der is None or hashlib.sha256(der).digest() != pin:
        raise ssl.SSLCertVerificationError(
            "the server's certificate does not match server_cert_sha256"
        )


def pinned_context(pin: bytes) -> ssl.SSLContext:
    """A client context that accepts exactly the certificate whose DER hashes to ``pin``
    (name and chain are not consulted, as the CLI's ``--server-cert-sha256``). The TLS
    handshake still proves the server holds that certificate's key. The check runs inside
    the handshake of every connection (sync sockets and asyncio memory BIOs alike), before
    any request byte — the bearer token included — is sent."""

    class _Socket(ssl.SSLSocket):
        def do_handshake(self, *a, **kw):
            super().do_handshake(*a, **kw)
            try:
                _check_pin(pin, self.getpeercert(binary_form=True))
            except ssl.SSLError:
                self.close()
                raise

    class _Object(ssl.SSLObject):
        def do_handshake(self):
            super().do_handshake()  # SSLWantReadError until complete: propagates
            _check_pin(pin, self.getpeercert(binary_form=True))

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.sslsocket_class = _Socket
    ctx.sslobject_class = _Object
    return ctx


def _verify(target: Target):
    if target.endpoint.kind != "https":
        return True
    if target.server_cert_sha256 is not None:
        return pinned_context(target.server_cert_sha256)
    if target.ca_cert:
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

    def __init__(self, client: httpx.Client, traceparent: Optional[str] = None) -> None:
        self._client = client
        self._traceparent = traceparent

    def execute_sync(self, request: SyncRequest) -> SyncResponse:
        req = self._client.build_request(
            request.method,
            request.url,
            headers=list(request.headers.items()) + trace_headers(self._traceparent),
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

    def __init__(self, client: httpx.AsyncClient, traceparent: Optional[str] = None) -> None:
        self._client = client
        self._traceparent = traceparent

    async def execute(self, request: Request) -> Response:
        req = self._client.build_request(
            request.method,
            request.url,
            headers=list(request.headers.items()) + trace_headers(self._traceparent),
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
