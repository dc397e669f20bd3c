import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxFileType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_FILE_TYPE_UNSPECIFIED: _ClassVar[SandboxFileType]
    SANDBOX_FILE_TYPE_REGULAR: _ClassVar[SandboxFileType]
    SANDBOX_FILE_TYPE_DIRECTORY: _ClassVar[SandboxFileType]
    SANDBOX_FILE_TYPE_SYMLINK: _ClassVar[SandboxFileType]
    SANDBOX_FILE_TYPE_OTHER: _ClassVar[SandboxFileType]

class SandboxUploadFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_UPLOAD_FORMAT_UNSPECIFIED: _ClassVar[SandboxUploadFormat]
    SANDBOX_UPLOAD_FORMAT_FILE: _ClassVar[SandboxUploadFormat]
    SANDBOX_UPLOAD_FORMAT_TAR: _ClassVar[SandboxUploadFormat]
SANDBOX_FILE_TYPE_UNSPECIFIED: SandboxFileType
SANDBOX_FILE_TYPE_REGULAR: SandboxFileType
SANDBOX_FILE_TYPE_DIRECTORY: SandboxFileType
SANDBOX_FILE_TYPE_SYMLINK: SandboxFileType
SANDBOX_FILE_TYPE_OTHER: SandboxFileType
SANDBOX_UPLOAD_FORMAT_UNSPECIFIED: SandboxUploadFormat
SANDBOX_UPLOAD_FORMAT_FILE: SandboxUploadFormat
SANDBOX_UPLOAD_FORMAT_TAR: SandboxUploadFormat

class SandboxFileInfo(_message.Message):
    __slots__ = ("path", "name", "type", "size", "mode", "uid", "gid", "modified_at", "symlink_target")
    PATH_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_AT_FIELD_NUMBER: _ClassVar[int]
    SYMLINK_TARGET_FIELD_NUMBER: _ClassVar[int]
    path: str
    name: str
    type: SandboxFileType
    size: int
    mode: int
    uid: int
    gid: int
    modified_at: _timestamp_pb2.Timestamp
    symlink_target: str
    def __init__(self, path: _Optional[str] = ..., name: _Optional[str] = ..., type: _Optional[_Union[SandboxFileType, str]] = ..., size: _Optional[int] = ..., mode: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., modified_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., symlink_target: _Optional[str] = ...) -> None: ...

class SandboxFileWriteOptions(_message.Message):
    __slots__ = ("format", "mode", "uid", "gid", "create_parents", "no_overwrite", "expected_size")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    CREATE_PARENTS_FIELD_NUMBER: _ClassVar[int]
    NO_OVERWRITE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_SIZE_FIELD_NUMBER: _ClassVar[int]
    format: SandboxUploadFormat
    mode: int
    uid: int
    gid: int
    create_parents: bool
    no_overwrite: bool
    expected_size: int
    def __init__(self, format: _Optional[_Union[SandboxUploadFormat, str]] = ..., mode: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., create_parents: _Optional[bool] = ..., no_overwrite: _Optional[bool] = ..., expected_size: _Optional[int] = ...) -> None: ...

class WriteSandboxFileRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "upload_id", "offset", "data", "finish", "options", "sha256")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    upload_id: str
    offset: int
    data: bytes
    finish: bool
    options: SandboxFileWriteOptions
    sha256: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., upload_id: _Optional[str] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ..., finish: _Optional[bool] = ..., options: _Optional[_Union[SandboxFileWriteOptions, _Mapping]] = ..., sha256: _Optional[str] = ...) -> None: ...

class WriteSandboxFileResponse(_message.Message):
    __slots__ = ("upload_id", "offset", "finished", "file", "sha256", "max_chunk_bytes")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    offset: int
    finished: bool
    file: SandboxFileInfo
    sha256: str
    max_chunk_bytes: int
    def __init__(self, upload_id: _Optional[str] = ..., offset: _Optional[int] = ..., finished: _Optional[bool] = ..., file: _Optional[_Union[SandboxFileInfo, _Mapping]] = ..., sha256: _Optional[str] = ..., max_chunk_bytes: _Optional[int] = ...) -> None: ...

class SandboxUpload(_message.Message):
    __slots__ = ("upload_id", "sandbox_id", "path", "format", "offset", "created_at", "expires_at", "max_chunk_bytes")
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    upload_id: str
    sandbox_id: str
    path: str
    format: SandboxUploadFormat
    offset: int
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    max_chunk_bytes: int
    def __init__(self, upload_id: _Optional[str] = ..., sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., format: _Optional[_Union[SandboxUploadFormat, str]] = ..., offset: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_chunk_bytes: _Optional[int] = ...) -> None: ...

class GetSandboxUploadRequest(_message.Message):
    __slots__ = ("sandbox_id", "upload_id")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    upload_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., upload_id: _Optional[str] = ...) -> None: ...

class GetSandboxUploadResponse(_message.Message):
    __slots__ = ("upload",)
    UPLOAD_FIELD_NUMBER: _ClassVar[int]
    upload: SandboxUpload
    def __init__(self, upload: _Optional[_Union[SandboxUpload, _Mapping]] = ...) -> None: ...

class CancelSandboxUploadRequest(_message.Message):
    __slots__ = ("sandbox_id", "upload_id")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    UPLOAD_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    upload_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., upload_id: _Optional[str] = ...) -> None: ...

class CancelSandboxUploadResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReadSandboxFileRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "offset", "length")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    offset: int
    length: int
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class ReadSandboxFileResponse(_message.Message):
    __slots__ = ("file", "offset", "data")
    FILE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    file: SandboxFileInfo
    offset: int
    data: bytes
    def __init__(self, file: _Optional[_Union[SandboxFileInfo, _Mapping]] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class StatSandboxFileRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "follow_symlinks")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_SYMLINKS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    follow_symlinks: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., follow_symlinks: _Optional[bool] = ...) -> None: ...

class StatSandboxFileResponse(_message.Message):
    __slots__ = ("file",)
    FILE_FIELD_NUMBER: _ClassVar[int]
    file: SandboxFileInfo
    def __init__(self, file: _Optional[_Union[SandboxFileInfo, _Mapping]] = ...) -> None: ...

class ListSandboxFilesRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "start_after", "max_entries")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    START_AFTER_FIELD_NUMBER: _ClassVar[int]
    MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    start_after: str
    max_entries: int
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., start_after: _Optional[str] = ..., max_entries: _Optional[int] = ...) -> None: ...

class ListSandboxFilesResponse(_message.Message):
    __slots__ = ("entries", "truncated")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[SandboxFileInfo]
    truncated: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[SandboxFileInfo, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class MakeSandboxDirectoryRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "mode", "parents")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    mode: int
    parents: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., mode: _Optional[int] = ..., parents: _Optional[bool] = ...) -> None: ...

class MakeSandboxDirectoryResponse(_message.Message):
    __slots__ = ("directory",)
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    directory: SandboxFileInfo
    def __init__(self, directory: _Optional[_Union[SandboxFileInfo, _Mapping]] = ...) -> None: ...

class RemoveSandboxFileRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "recursive", "missing_ok")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    MISSING_OK_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    recursive: bool
    missing_ok: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., recursive: _Optional[bool] = ..., missing_ok: _Optional[bool] = ...) -> None: ...

class RemoveSandboxFileResponse(_message.Message):
    __slots__ = ("removed",)
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: bool
    def __init__(self, removed: _Optional[bool] = ...) -> None: ...

class ReadSandboxArchiveRequest(_message.Message):
    __slots__ = ("sandbox_id", "path")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ReadSandboxArchiveResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...
