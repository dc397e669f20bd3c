"""Cleanroom Python SDK: sandboxes, commands and files over the Cleanroom ConnectRPC API.

    from cleanroom import Sandbox
    with Sandbox.create() as sbx:
        print(sbx.run("echo", "hi").stdout)
"""

from ._core import CommandResult
from .aio import AsyncCommandHandle, AsyncSandbox
from .client import AsyncClient, Client
from .config import Endpoint, Target, resolve, resolve_target
from .errors import CleanroomError
from .files import FileInfo
from .lifetime import FilesystemUsage, Lifetime, Usage
from .sandbox import CommandHandle, Sandbox

__all__ = [
    "AsyncClient",
    "AsyncCommandHandle",
    "AsyncSandbox",
    "CleanroomError",
    "Client",
    "CommandHandle",
    "CommandResult",
    "Endpoint",
    "FileInfo",
    "FilesystemUsage",
    "Lifetime",
    "Sandbox",
    "Target",
    "Usage",
    "resolve",
    "resolve_target",
]
__version__ = "0.1.0"
