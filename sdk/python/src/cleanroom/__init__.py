"""Cleanroom Python SDK: sandboxes, commands, files, snapshots, pools, events, egress
approvals and attestations over the Cleanroom ConnectRPC API.

    from cleanroom import Sandbox
    with Sandbox.create() as sbx:
        print(sbx.run("echo", "hi").stdout)
"""

from ._core import CommandResult
from .aio import AsyncCommandHandle, AsyncSandbox
from .client import AsyncClient, Client
from .config import Endpoint, Target, resolve, resolve_target
from .errors import CleanroomError, UnknownOptionError
from .events import Attestation, Decision, EgressAnswerer, Event
from .files import FileInfo
from .lifetime import FilesystemUsage, Lifetime, Usage
from .ops import PoolInfo, PublicKey
from .sandbox import CommandHandle, Sandbox

__all__ = [
    "AsyncClient",
    "AsyncCommandHandle",
    "AsyncSandbox",
    "Attestation",
    "CleanroomError",
    "Client",
    "CommandHandle",
    "CommandResult",
    "Decision",
    "EgressAnswerer",
    "Endpoint",
    "Event",
    "FileInfo",
    "FilesystemUsage",
    "Lifetime",
    "PoolInfo",
    "PublicKey",
    "Sandbox",
    "Target",
    "UnknownOptionError",
    "Usage",
    "resolve",
    "resolve_target",
]
__version__ = "0.1.0"
