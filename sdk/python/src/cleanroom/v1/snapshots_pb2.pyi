import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from cleanroom.v1 import cleanroom_pb2 as _cleanroom_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Checkpoint(_message.Message):
    __slots__ = ("checkpoint_id", "source_sandbox_id", "runtime", "runtime_version", "policy_hash", "image_ref", "image_digest", "limits", "size_bytes", "file_count", "content_digest", "created_at", "dropped")
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    checkpoint_id: str
    source_sandbox_id: str
    runtime: str
    runtime_version: str
    policy_hash: str
    image_ref: str
    image_digest: str
    limits: _cleanroom_pb2.ResourceLimits
    size_bytes: int
    file_count: int
    content_digest: str
    created_at: _timestamp_pb2.Timestamp
    dropped: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, checkpoint_id: _Optional[str] = ..., source_sandbox_id: _Optional[str] = ..., runtime: _Optional[str] = ..., runtime_version: _Optional[str] = ..., policy_hash: _Optional[str] = ..., image_ref: _Optional[str] = ..., image_digest: _Optional[str] = ..., limits: _Optional[_Union[_cleanroom_pb2.ResourceLimits, _Mapping]] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ..., content_digest: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dropped: _Optional[_Iterable[str]] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ("snapshot_id", "source_sandbox_id", "parent_snapshot_id", "policy_hash", "image_ref", "image_digest", "limits", "size_bytes", "file_count", "content_digest", "created_at", "volumes_not_captured")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_NOT_CAPTURED_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    source_sandbox_id: str
    parent_snapshot_id: str
    policy_hash: str
    image_ref: str
    image_digest: str
    limits: _cleanroom_pb2.ResourceLimits
    size_bytes: int
    file_count: int
    content_digest: str
    created_at: _timestamp_pb2.Timestamp
    volumes_not_captured: _containers.RepeatedCompositeFieldContainer[_cleanroom_pb2.VolumeMount]
    def __init__(self, snapshot_id: _Optional[str] = ..., source_sandbox_id: _Optional[str] = ..., parent_snapshot_id: _Optional[str] = ..., policy_hash: _Optional[str] = ..., image_ref: _Optional[str] = ..., image_digest: _Optional[str] = ..., limits: _Optional[_Union[_cleanroom_pb2.ResourceLimits, _Mapping]] = ..., size_bytes: _Optional[int] = ..., file_count: _Optional[int] = ..., content_digest: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., volumes_not_captured: _Optional[_Iterable[_Union[_cleanroom_pb2.VolumeMount, _Mapping]]] = ...) -> None: ...

class PauseSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class PauseSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _cleanroom_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_cleanroom_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class ResumeSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class ResumeSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _cleanroom_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_cleanroom_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class CreateSnapshotRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class CreateSnapshotResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: Snapshot
    def __init__(self, snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class GetSnapshotRequest(_message.Message):
    __slots__ = ("snapshot_id",)
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    def __init__(self, snapshot_id: _Optional[str] = ...) -> None: ...

class GetSnapshotResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: Snapshot
    def __init__(self, snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class ListSnapshotsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSnapshotsResponse(_message.Message):
    __slots__ = ("snapshots",)
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    snapshots: _containers.RepeatedCompositeFieldContainer[Snapshot]
    def __init__(self, snapshots: _Optional[_Iterable[_Union[Snapshot, _Mapping]]] = ...) -> None: ...

class RemoveSnapshotRequest(_message.Message):
    __slots__ = ("snapshot_id",)
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: str
    def __init__(self, snapshot_id: _Optional[str] = ...) -> None: ...

class RemoveSnapshotResponse(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: Snapshot
    def __init__(self, snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class CheckpointSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id", "leave_running")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    LEAVE_RUNNING_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    leave_running: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., leave_running: _Optional[bool] = ...) -> None: ...

class CheckpointSandboxResponse(_message.Message):
    __slots__ = ("checkpoint_id", "size_bytes", "checkpoint")
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint_id: str
    size_bytes: int
    checkpoint: Checkpoint
    def __init__(self, checkpoint_id: _Optional[str] = ..., size_bytes: _Optional[int] = ..., checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class GetCheckpointRequest(_message.Message):
    __slots__ = ("checkpoint_id",)
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoint_id: str
    def __init__(self, checkpoint_id: _Optional[str] = ...) -> None: ...

class GetCheckpointResponse(_message.Message):
    __slots__ = ("checkpoint",)
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...

class ListCheckpointsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints",)
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ...) -> None: ...

class DeleteCheckpointRequest(_message.Message):
    __slots__ = ("checkpoint_id",)
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoint_id: str
    def __init__(self, checkpoint_id: _Optional[str] = ...) -> None: ...

class DeleteCheckpointResponse(_message.Message):
    __slots__ = ("checkpoint",)
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    checkpoint: Checkpoint
    def __init__(self, checkpoint: _Optional[_Union[Checkpoint, _Mapping]] = ...) -> None: ...
