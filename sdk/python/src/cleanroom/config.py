"""Where the server is and how to authenticate to it — the same sources, in the same order,
as the `cleanroom` CLI (crates/client/src/endpoint.rs), so a program and the CLI on the same
machine talk to the same server with the same credentials.

Endpoint: argument > ``CLEANROOM_HOST`` > config ``control_host`` > the system socket
(``/var/run/cleanroom/cleanroom.sock``) when it exists > the per-user socket
(``$XDG_RUNTIME_DIR/cleanroom/cleanroom.sock``, else ``/tmp/cleanroom-$UID/cleanroom.sock``).
Token: argument > ``CLEANROOM_TOKEN`` > config ``token`` (sent only on TCP endpoints).
CA: argument > ``CLEANROOM_CA_CERT`` > config ``ca_cert``.
Certificate pin (instead of a CA: the server's certificate must be exactly this one, by the
hex sha256 of its DER): argument > ``CLEANROOM_SERVER_CERT_SHA256`` > config
``server_cert_sha256``.
The config file is ``$XDG_CONFIG_HOME/cleanroom/config.json`` (else ``~/.config/…``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import errors

SYSTEM_SOCKET = "/var/run/cleanroom/cleanroom.sock"


@dataclass(frozen=True)
class Endpoint:
    """A parsed server address: ``kind`` is ``unix``, ``http`` or ``https``; ``address`` is
    the socket path (unix) or ``host:port``."""

    kind: str
    address: str

    @staticmethod
    def parse(s: str) -> "Endpoint":
        """Parse ``unix:///path``, a bare absolute socket path, ``http://host:port`` or
        ``https://host:port`` (a trailing ``/`` is allowed; any other path is not)."""
        s = s.strip()
        if s.startswith("unix://"):
            p = s[len("unix://") :]
            if p.startswith("/"):
                return Endpoint("unix", p)
        elif s.startswith("/"):
            return Endpoint("unix", s)
        else:
            for scheme in ("http", "https"):
                prefix = scheme + "://"
                if s.startswith(prefix):
                    auth = s[len(prefix) :].rstrip("/")
                    if auth and "/" not in auth:
                        return Endpoint(scheme, auth)
        raise errors.error(
            "invalid_argument",
            f"invalid endpoint {s!r}: expected unix:///path, http://host:port or https://host:port",
        )

    def display(self) -> str:
        """The ``unix://``/``http://`` form, for messages."""
        return f"{self.kind}://{self.address}"


def user_socket() -> str:
    """Per-user socket path, as the server computes it for a non-root user."""
    d = os.environ.get("XDG_RUNTIME_DIR")
    if d:
        return os.path.join(d, "cleanroom/cleanroom.sock")
    return f"/tmp/cleanroom-{os.getuid()}/cleanroom.sock"


def _config_field(name: str) -> Optional[str]:
    d = os.environ.get("XDG_CONFIG_HOME")
    if d:
        base = Path(d)
    elif "HOME" in os.environ:
        base = Path(os.environ["HOME"]) / ".config"
    else:
        return None
    try:
        v = json.loads((base / "cleanroom/config.json").read_text())
    except (OSError, ValueError):
        return None
    field = v.get(name) if isinstance(v, dict) else None
    return field if isinstance(field, str) else None


def resolve(host: Optional[str] = None) -> Endpoint:
    """The endpoint, in the CLI's order (see the module doc)."""
    if host:
        return Endpoint.parse(host)
    env = os.environ.get("CLEANROOM_HOST")
    if env:
        return Endpoint.parse(env)
    cfg = _config_field("control_host")
    if cfg is not None:
        return Endpoint.parse(cfg)
    if os.path.exists(SYSTEM_SOCKET):
        return Endpoint("unix", SYSTEM_SOCKET)
    return Endpoint("unix", user_socket())


@dataclass(frozen=True)
class Target:
    """A server plus the credentials to present to it."""

    endpoint: Endpoint
    token: Optional[str] = None
    ca_cert: Optional[str] = None
    #: 32 bytes: the sha256 of the server certificate (DER) to accept, and only it.
    server_cert_sha256: Optional[bytes] = None


def parse_pin(pin: str) -> bytes:
    """``sha256:``-prefixed or bare, any case, 64 hex digits (as the CLI's
    ``--server-cert-sha256``) → the 32 digest bytes."""
    h = pin.strip()
    if h.lower().startswith("sha256:"):
        h = h[len("sha256:") :]
    try:
        if len(h) != 64:
            raise ValueError
        return bytes.fromhex(h)
    except ValueError:
        raise errors.error(
            "invalid_argument", "server_cert_sha256 must be 64 hex digits"
        ) from None


def resolve_target(
    host: Optional[str] = None,
    token: Optional[str] = None,
    ca_cert: Optional[str] = None,
    server_cert_sha256: Optional[str] = None,
) -> Target:
    """:func:`resolve` plus the token, CA and pin: argument > environment > config file."""

    def pick(arg: Optional[str], env: str, field: str) -> Optional[str]:
        if arg:
            return arg
        v = os.environ.get(env)
        if v:
            return v
        return _config_field(field)

    t = pick(token, "CLEANROOM_TOKEN", "token")
    pin = pick(server_cert_sha256, "CLEANROOM_SERVER_CERT_SHA256", "server_cert_sha256")
    return Target(
        endpoint=resolve(host),
        token=t.strip() if t is not None else None,
        ca_cert=pick(ca_cert, "CLEANROOM_CA_CERT", "ca_cert"),
        server_cert_sha256=parse_pin(pin) if pin else None,
    )
