from cleanroom.v1 import cleanroom_pb2 as _cleanroom_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SetSandboxTimeoutRequest(_message.Message):
    __slots__ = ("sandbox_id", "ttl_seconds", "idle_timeout_seconds", "clear_ttl", "clear_idle_timeout")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    CLEAR_TTL_FIELD_NUMBER: _ClassVar[int]
    CLEAR_IDLE_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    ttl_seconds: int
    idle_timeout_seconds: int
    clear_ttl: bool
    clear_idle_timeout: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., ttl_seconds: _Optional[int] = ..., idle_timeout_seconds: _Optional[int] = ..., clear_ttl: _Optional[bool] = ..., clear_idle_timeout: _Optional[bool] = ...) -> None: ...

class SetSandboxTimeoutResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _cleanroom_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_cleanroom_pb2.Sandbox, _Mapping]] = ...) -> None: ...
