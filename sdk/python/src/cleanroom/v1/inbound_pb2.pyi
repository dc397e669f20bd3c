from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxExposure(_message.Message):
    __slots__ = ("id", "sandbox_id", "port", "path", "token", "created_at", "expires_at", "created_by", "url")
    ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    id: str
    sandbox_id: str
    port: int
    path: str
    token: str
    created_at: int
    expires_at: int
    created_by: str
    url: str
    def __init__(self, id: _Optional[str] = ..., sandbox_id: _Optional[str] = ..., port: _Optional[int] = ..., path: _Optional[str] = ..., token: _Optional[str] = ..., created_at: _Optional[int] = ..., expires_at: _Optional[int] = ..., created_by: _Optional[str] = ..., url: _Optional[str] = ...) -> None: ...

class ExposeSandboxPortRequest(_message.Message):
    __slots__ = ("sandbox_id", "port", "ttl_seconds")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    port: int
    ttl_seconds: int
    def __init__(self, sandbox_id: _Optional[str] = ..., port: _Optional[int] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class ExposeSandboxPortResponse(_message.Message):
    __slots__ = ("exposure",)
    EXPOSURE_FIELD_NUMBER: _ClassVar[int]
    exposure: SandboxExposure
    def __init__(self, exposure: _Optional[_Union[SandboxExposure, _Mapping]] = ...) -> None: ...

class UnexposeSandboxPortRequest(_message.Message):
    __slots__ = ("sandbox_id", "target")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    target: str
    def __init__(self, sandbox_id: _Optional[str] = ..., target: _Optional[str] = ...) -> None: ...

class UnexposeSandboxPortResponse(_message.Message):
    __slots__ = ("removed",)
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: _containers.RepeatedCompositeFieldContainer[SandboxExposure]
    def __init__(self, removed: _Optional[_Iterable[_Union[SandboxExposure, _Mapping]]] = ...) -> None: ...

class ListSandboxExposuresRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class ListSandboxExposuresResponse(_message.Message):
    __slots__ = ("exposures",)
    EXPOSURES_FIELD_NUMBER: _ClassVar[int]
    exposures: _containers.RepeatedCompositeFieldContainer[SandboxExposure]
    def __init__(self, exposures: _Optional[_Iterable[_Union[SandboxExposure, _Mapping]]] = ...) -> None: ...
