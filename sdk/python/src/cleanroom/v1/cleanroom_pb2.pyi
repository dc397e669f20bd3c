import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from cleanroom.v1 import usage_pb2 as _usage_pb2
from cleanroom.v1 import inbound_pb2 as _inbound_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_STATUS_UNSPECIFIED: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_PROVISIONING: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_READY: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_STOPPING: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_STOPPED: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_FAILED: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_PAUSED: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_CHECKPOINTING: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_CHECKPOINTED: _ClassVar[SandboxStatus]
    SANDBOX_STATUS_LOST: _ClassVar[SandboxStatus]

class ExecutionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXECUTION_STATUS_UNSPECIFIED: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_QUEUED: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_RUNNING: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_SUCCEEDED: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_FAILED: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_CANCELED: _ClassVar[ExecutionStatus]
    EXECUTION_STATUS_TIMED_OUT: _ClassVar[ExecutionStatus]

class ExecutionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXECUTION_KIND_UNSPECIFIED: _ClassVar[ExecutionKind]
    EXECUTION_KIND_BATCH: _ClassVar[ExecutionKind]
    EXECUTION_KIND_INTERACTIVE: _ClassVar[ExecutionKind]

class OutputStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTPUT_STREAM_UNSPECIFIED: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDOUT: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDERR: _ClassVar[OutputStream]
SANDBOX_STATUS_UNSPECIFIED: SandboxStatus
SANDBOX_STATUS_PROVISIONING: SandboxStatus
SANDBOX_STATUS_READY: SandboxStatus
SANDBOX_STATUS_STOPPING: SandboxStatus
SANDBOX_STATUS_STOPPED: SandboxStatus
SANDBOX_STATUS_FAILED: SandboxStatus
SANDBOX_STATUS_PAUSED: SandboxStatus
SANDBOX_STATUS_CHECKPOINTING: SandboxStatus
SANDBOX_STATUS_CHECKPOINTED: SandboxStatus
SANDBOX_STATUS_LOST: SandboxStatus
EXECUTION_STATUS_UNSPECIFIED: ExecutionStatus
EXECUTION_STATUS_QUEUED: ExecutionStatus
EXECUTION_STATUS_RUNNING: ExecutionStatus
EXECUTION_STATUS_SUCCEEDED: ExecutionStatus
EXECUTION_STATUS_FAILED: ExecutionStatus
EXECUTION_STATUS_CANCELED: ExecutionStatus
EXECUTION_STATUS_TIMED_OUT: ExecutionStatus
EXECUTION_KIND_UNSPECIFIED: ExecutionKind
EXECUTION_KIND_BATCH: ExecutionKind
EXECUTION_KIND_INTERACTIVE: ExecutionKind
OUTPUT_STREAM_UNSPECIFIED: OutputStream
OUTPUT_STREAM_STDOUT: OutputStream
OUTPUT_STREAM_STDERR: OutputStream

class ErrorDetail(_message.Message):
    __slots__ = ("code", "message", "details")
    class DetailsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    details: _containers.ScalarMap[str, str]
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., details: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Sandbox(_message.Message):
    __slots__ = ("sandbox_id", "status", "backend", "policy_hash", "created_at", "updated_at", "last_execution_id", "active_execution_id", "message", "image_ref", "image_digest", "backend_info", "labels", "egress_approved", "egress_refused", "egress_asks", "expires_at", "ttl_seconds", "idle_timeout_seconds", "last_activity_at", "stop_reason", "suspend_after_seconds", "suspended_at", "usage", "agent_public_key", "delegation_chain", "pool_id", "volumes", "effective_rules_hash", "live_allow", "live_deny", "exposures", "owner")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    BACKEND_INFO_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    EGRESS_APPROVED_FIELD_NUMBER: _ClassVar[int]
    EGRESS_REFUSED_FIELD_NUMBER: _ClassVar[int]
    EGRESS_ASKS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_AT_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_AFTER_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUSPENDED_AT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    AGENT_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_CHAIN_FIELD_NUMBER: _ClassVar[int]
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_RULES_HASH_FIELD_NUMBER: _ClassVar[int]
    LIVE_ALLOW_FIELD_NUMBER: _ClassVar[int]
    LIVE_DENY_FIELD_NUMBER: _ClassVar[int]
    EXPOSURES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    status: SandboxStatus
    backend: str
    policy_hash: str
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    last_execution_id: str
    active_execution_id: str
    message: str
    image_ref: str
    image_digest: str
    backend_info: _struct_pb2.Struct
    labels: _containers.ScalarMap[str, str]
    egress_approved: _containers.RepeatedScalarFieldContainer[str]
    egress_refused: _containers.RepeatedScalarFieldContainer[str]
    egress_asks: bool
    expires_at: _timestamp_pb2.Timestamp
    ttl_seconds: int
    idle_timeout_seconds: int
    last_activity_at: _timestamp_pb2.Timestamp
    stop_reason: str
    suspend_after_seconds: int
    suspended_at: _timestamp_pb2.Timestamp
    usage: _usage_pb2.SandboxUsage
    agent_public_key: str
    delegation_chain: _containers.RepeatedScalarFieldContainer[str]
    pool_id: str
    volumes: _containers.RepeatedCompositeFieldContainer[VolumeMount]
    effective_rules_hash: str
    live_allow: _containers.RepeatedScalarFieldContainer[str]
    live_deny: _containers.RepeatedScalarFieldContainer[str]
    exposures: _containers.RepeatedCompositeFieldContainer[_inbound_pb2.SandboxExposure]
    owner: str
    def __init__(self, sandbox_id: _Optional[str] = ..., status: _Optional[_Union[SandboxStatus, str]] = ..., backend: _Optional[str] = ..., policy_hash: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_execution_id: _Optional[str] = ..., active_execution_id: _Optional[str] = ..., message: _Optional[str] = ..., image_ref: _Optional[str] = ..., image_digest: _Optional[str] = ..., backend_info: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., egress_approved: _Optional[_Iterable[str]] = ..., egress_refused: _Optional[_Iterable[str]] = ..., egress_asks: _Optional[bool] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl_seconds: _Optional[int] = ..., idle_timeout_seconds: _Optional[int] = ..., last_activity_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., stop_reason: _Optional[str] = ..., suspend_after_seconds: _Optional[int] = ..., suspended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., usage: _Optional[_Union[_usage_pb2.SandboxUsage, _Mapping]] = ..., agent_public_key: _Optional[str] = ..., delegation_chain: _Optional[_Iterable[str]] = ..., pool_id: _Optional[str] = ..., volumes: _Optional[_Iterable[_Union[VolumeMount, _Mapping]]] = ..., effective_rules_hash: _Optional[str] = ..., live_allow: _Optional[_Iterable[str]] = ..., live_deny: _Optional[_Iterable[str]] = ..., exposures: _Optional[_Iterable[_Union[_inbound_pb2.SandboxExposure, _Mapping]]] = ..., owner: _Optional[str] = ...) -> None: ...

class Execution(_message.Message):
    __slots__ = ("execution_id", "sandbox_id", "status", "command", "exit_code", "started_at", "finished_at", "tty", "kind", "message", "cwd", "created_at", "trace_id")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    sandbox_id: str
    status: ExecutionStatus
    command: _containers.RepeatedScalarFieldContainer[str]
    exit_code: int
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    tty: bool
    kind: ExecutionKind
    message: str
    cwd: str
    created_at: _timestamp_pb2.Timestamp
    trace_id: str
    def __init__(self, execution_id: _Optional[str] = ..., sandbox_id: _Optional[str] = ..., status: _Optional[_Union[ExecutionStatus, str]] = ..., command: _Optional[_Iterable[str]] = ..., exit_code: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tty: _Optional[bool] = ..., kind: _Optional[_Union[ExecutionKind, str]] = ..., message: _Optional[str] = ..., cwd: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class CreateSandboxRequest(_message.Message):
    __slots__ = ("policy_yaml", "image_ref", "idempotency_key", "labels", "limits", "learn", "lockfiles", "ttl_seconds", "idle_timeout_seconds", "suspend_after_seconds", "from_snapshot", "from_checkpoint", "agent_public_key", "delegation_chain", "no_pool", "runtime", "volumes")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class LockfilesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    POLICY_YAML_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    LEARN_FIELD_NUMBER: _ClassVar[int]
    LOCKFILES_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SUSPEND_AFTER_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FROM_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    FROM_CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    AGENT_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_CHAIN_FIELD_NUMBER: _ClassVar[int]
    NO_POOL_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    VOLUMES_FIELD_NUMBER: _ClassVar[int]
    policy_yaml: str
    image_ref: str
    idempotency_key: str
    labels: _containers.ScalarMap[str, str]
    limits: ResourceLimits
    learn: bool
    lockfiles: _containers.ScalarMap[str, bytes]
    ttl_seconds: int
    idle_timeout_seconds: int
    suspend_after_seconds: int
    from_snapshot: str
    from_checkpoint: str
    agent_public_key: str
    delegation_chain: _containers.RepeatedScalarFieldContainer[str]
    no_pool: bool
    runtime: str
    volumes: _containers.RepeatedCompositeFieldContainer[VolumeMount]
    def __init__(self, policy_yaml: _Optional[str] = ..., image_ref: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., limits: _Optional[_Union[ResourceLimits, _Mapping]] = ..., learn: _Optional[bool] = ..., lockfiles: _Optional[_Mapping[str, bytes]] = ..., ttl_seconds: _Optional[int] = ..., idle_timeout_seconds: _Optional[int] = ..., suspend_after_seconds: _Optional[int] = ..., from_snapshot: _Optional[str] = ..., from_checkpoint: _Optional[str] = ..., agent_public_key: _Optional[str] = ..., delegation_chain: _Optional[_Iterable[str]] = ..., no_pool: _Optional[bool] = ..., runtime: _Optional[str] = ..., volumes: _Optional[_Iterable[_Union[VolumeMount, _Mapping]]] = ...) -> None: ...

class VolumeMount(_message.Message):
    __slots__ = ("name", "path", "read_only")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    name: str
    path: str
    read_only: bool
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., read_only: _Optional[bool] = ...) -> None: ...

class ResourceLimits(_message.Message):
    __slots__ = ("memory_bytes", "pids", "cpu_millis", "disk_bytes", "output_bytes")
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PIDS_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLIS_FIELD_NUMBER: _ClassVar[int]
    DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    memory_bytes: int
    pids: int
    cpu_millis: int
    disk_bytes: int
    output_bytes: int
    def __init__(self, memory_bytes: _Optional[int] = ..., pids: _Optional[int] = ..., cpu_millis: _Optional[int] = ..., disk_bytes: _Optional[int] = ..., output_bytes: _Optional[int] = ...) -> None: ...

class CreateSandboxResponse(_message.Message):
    __slots__ = ("sandbox", "bootstrap")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_FIELD_NUMBER: _ClassVar[int]
    sandbox: Sandbox
    bootstrap: Bootstrap
    def __init__(self, sandbox: _Optional[_Union[Sandbox, _Mapping]] = ..., bootstrap: _Optional[_Union[Bootstrap, _Mapping]] = ...) -> None: ...

class Bootstrap(_message.Message):
    __slots__ = ("repository_path", "dependencies_command")
    REPOSITORY_PATH_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_COMMAND_FIELD_NUMBER: _ClassVar[int]
    repository_path: str
    dependencies_command: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, repository_path: _Optional[str] = ..., dependencies_command: _Optional[_Iterable[str]] = ...) -> None: ...

class GetSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class GetSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: Sandbox
    def __init__(self, sandbox: _Optional[_Union[Sandbox, _Mapping]] = ...) -> None: ...

class ListSandboxesRequest(_message.Message):
    __slots__ = ("include_stopped", "labels", "only_own", "owner", "changed_since")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INCLUDE_STOPPED_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    ONLY_OWN_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CHANGED_SINCE_FIELD_NUMBER: _ClassVar[int]
    include_stopped: bool
    labels: _containers.ScalarMap[str, str]
    only_own: bool
    owner: str
    changed_since: _timestamp_pb2.Timestamp
    def __init__(self, include_stopped: _Optional[bool] = ..., labels: _Optional[_Mapping[str, str]] = ..., only_own: _Optional[bool] = ..., owner: _Optional[str] = ..., changed_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListSandboxesResponse(_message.Message):
    __slots__ = ("sandboxes", "cursor", "complete", "unlisted_sandbox_ids")
    SANDBOXES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    UNLISTED_SANDBOX_IDS_FIELD_NUMBER: _ClassVar[int]
    sandboxes: _containers.RepeatedCompositeFieldContainer[Sandbox]
    cursor: _timestamp_pb2.Timestamp
    complete: bool
    unlisted_sandbox_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, sandboxes: _Optional[_Iterable[_Union[Sandbox, _Mapping]]] = ..., cursor: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., complete: _Optional[bool] = ..., unlisted_sandbox_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DownloadSandboxFileRequest(_message.Message):
    __slots__ = ("sandbox_id", "path", "max_bytes")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    path: str
    max_bytes: int
    def __init__(self, sandbox_id: _Optional[str] = ..., path: _Optional[str] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class DownloadSandboxFileResponse(_message.Message):
    __slots__ = ("path", "content", "size", "truncated")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    path: str
    content: bytes
    size: int
    truncated: bool
    def __init__(self, path: _Optional[str] = ..., content: _Optional[bytes] = ..., size: _Optional[int] = ..., truncated: _Optional[bool] = ...) -> None: ...

class TerminateSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id", "background")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    background: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., background: _Optional[bool] = ...) -> None: ...

class TerminateSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: Sandbox
    def __init__(self, sandbox: _Optional[_Union[Sandbox, _Mapping]] = ...) -> None: ...

class StreamSandboxEventsRequest(_message.Message):
    __slots__ = ("sandbox_id", "after_sequence", "follow")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    after_sequence: int
    follow: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., after_sequence: _Optional[int] = ..., follow: _Optional[bool] = ...) -> None: ...

class SandboxEvent(_message.Message):
    __slots__ = ("sequence", "sandbox_id", "execution_id", "type", "at", "sandbox_status", "execution_status", "message", "attributes")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_STATUS_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    sandbox_id: str
    execution_id: str
    type: str
    at: _timestamp_pb2.Timestamp
    sandbox_status: SandboxStatus
    execution_status: ExecutionStatus
    message: str
    attributes: _struct_pb2.Struct
    def __init__(self, sequence: _Optional[int] = ..., sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., type: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sandbox_status: _Optional[_Union[SandboxStatus, str]] = ..., execution_status: _Optional[_Union[ExecutionStatus, str]] = ..., message: _Optional[str] = ..., attributes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CreateExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "command", "env", "cwd", "timeout_seconds", "kind", "tty", "attach_stdin", "tty_cols", "tty_rows")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    ATTACH_STDIN_FIELD_NUMBER: _ClassVar[int]
    TTY_COLS_FIELD_NUMBER: _ClassVar[int]
    TTY_ROWS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    command: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cwd: str
    timeout_seconds: int
    kind: ExecutionKind
    tty: bool
    attach_stdin: bool
    tty_cols: int
    tty_rows: int
    def __init__(self, sandbox_id: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cwd: _Optional[str] = ..., timeout_seconds: _Optional[int] = ..., kind: _Optional[_Union[ExecutionKind, str]] = ..., tty: _Optional[bool] = ..., attach_stdin: _Optional[bool] = ..., tty_cols: _Optional[int] = ..., tty_rows: _Optional[int] = ...) -> None: ...

class CreateExecutionResponse(_message.Message):
    __slots__ = ("execution",)
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    execution: Execution
    def __init__(self, execution: _Optional[_Union[Execution, _Mapping]] = ...) -> None: ...

class AttachExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id", "initial_cols", "initial_rows")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    INITIAL_COLS_FIELD_NUMBER: _ClassVar[int]
    INITIAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    initial_cols: int
    initial_rows: int
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., initial_cols: _Optional[int] = ..., initial_rows: _Optional[int] = ...) -> None: ...

class AttachExecutionResponse(_message.Message):
    __slots__ = ("session_id", "session_token", "expires_at", "quic_endpoint", "alpn", "server_cert_pin_sha256")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    QUIC_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    ALPN_FIELD_NUMBER: _ClassVar[int]
    SERVER_CERT_PIN_SHA256_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    session_token: str
    expires_at: _timestamp_pb2.Timestamp
    quic_endpoint: str
    alpn: str
    server_cert_pin_sha256: str
    def __init__(self, session_id: _Optional[str] = ..., session_token: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., quic_endpoint: _Optional[str] = ..., alpn: _Optional[str] = ..., server_cert_pin_sha256: _Optional[str] = ...) -> None: ...

class GetExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ...) -> None: ...

class GetExecutionResponse(_message.Message):
    __slots__ = ("execution",)
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    execution: Execution
    def __init__(self, execution: _Optional[_Union[Execution, _Mapping]] = ...) -> None: ...

class InspectExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id", "last")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    last: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., last: _Optional[bool] = ...) -> None: ...

class InspectExecutionResponse(_message.Message):
    __slots__ = ("execution", "message", "stdout", "stderr", "image_ref", "image_digest", "artifacts_dir", "plan_path", "launched_vm", "observability", "trace_id", "trace_url", "policy_hash", "stdout_bytes", "stderr_bytes", "retained_bytes_dropped", "output_truncated", "output_expired")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    ARTIFACTS_DIR_FIELD_NUMBER: _ClassVar[int]
    PLAN_PATH_FIELD_NUMBER: _ClassVar[int]
    LAUNCHED_VM_FIELD_NUMBER: _ClassVar[int]
    OBSERVABILITY_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_URL_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    STDOUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    STDERR_BYTES_FIELD_NUMBER: _ClassVar[int]
    RETAINED_BYTES_DROPPED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    execution: Execution
    message: str
    stdout: str
    stderr: str
    image_ref: str
    image_digest: str
    artifacts_dir: str
    plan_path: str
    launched_vm: bool
    observability: _struct_pb2.Struct
    trace_id: str
    trace_url: str
    policy_hash: str
    stdout_bytes: int
    stderr_bytes: int
    retained_bytes_dropped: int
    output_truncated: bool
    output_expired: bool
    def __init__(self, execution: _Optional[_Union[Execution, _Mapping]] = ..., message: _Optional[str] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ..., image_ref: _Optional[str] = ..., image_digest: _Optional[str] = ..., artifacts_dir: _Optional[str] = ..., plan_path: _Optional[str] = ..., launched_vm: _Optional[bool] = ..., observability: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., trace_id: _Optional[str] = ..., trace_url: _Optional[str] = ..., policy_hash: _Optional[str] = ..., stdout_bytes: _Optional[int] = ..., stderr_bytes: _Optional[int] = ..., retained_bytes_dropped: _Optional[int] = ..., output_truncated: _Optional[bool] = ..., output_expired: _Optional[bool] = ...) -> None: ...

class CancelExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id", "grace_seconds", "interrupt")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    GRACE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    grace_seconds: int
    interrupt: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., grace_seconds: _Optional[int] = ..., interrupt: _Optional[bool] = ...) -> None: ...

class CancelExecutionResponse(_message.Message):
    __slots__ = ("execution",)
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    execution: Execution
    def __init__(self, execution: _Optional[_Union[Execution, _Mapping]] = ...) -> None: ...

class WriteExecutionStdinRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id", "data")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    data: bytes
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class WriteExecutionStdinResponse(_message.Message):
    __slots__ = ("bytes_written",)
    BYTES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    bytes_written: int
    def __init__(self, bytes_written: _Optional[int] = ...) -> None: ...

class CloseExecutionStdinRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ...) -> None: ...

class CloseExecutionStdinResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StreamExecutionRequest(_message.Message):
    __slots__ = ("sandbox_id", "execution_id", "after_sequence", "stdout_offset", "stderr_offset", "no_follow")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STDOUT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    STDERR_OFFSET_FIELD_NUMBER: _ClassVar[int]
    NO_FOLLOW_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    execution_id: str
    after_sequence: int
    stdout_offset: int
    stderr_offset: int
    no_follow: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., execution_id: _Optional[str] = ..., after_sequence: _Optional[int] = ..., stdout_offset: _Optional[int] = ..., stderr_offset: _Optional[int] = ..., no_follow: _Optional[bool] = ...) -> None: ...

class OutputChunk(_message.Message):
    __slots__ = ("stream", "offset", "data")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    stream: OutputStream
    offset: int
    data: bytes
    def __init__(self, stream: _Optional[_Union[OutputStream, str]] = ..., offset: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class ExecutionExit(_message.Message):
    __slots__ = ("status", "exit_code", "message", "code")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    status: ExecutionStatus
    exit_code: int
    message: str
    code: str
    def __init__(self, status: _Optional[_Union[ExecutionStatus, str]] = ..., exit_code: _Optional[int] = ..., message: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...

class Warning(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ExecutionStreamEvent(_message.Message):
    __slots__ = ("execution_id", "sequence", "output", "exit", "warning", "started", "finished", "server_time_us")
    EXECUTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EXIT_FIELD_NUMBER: _ClassVar[int]
    WARNING_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_US_FIELD_NUMBER: _ClassVar[int]
    execution_id: str
    sequence: int
    output: OutputChunk
    exit: ExecutionExit
    warning: Warning
    started: RunStarted
    finished: InspectExecutionResponse
    server_time_us: int
    def __init__(self, execution_id: _Optional[str] = ..., sequence: _Optional[int] = ..., output: _Optional[_Union[OutputChunk, _Mapping]] = ..., exit: _Optional[_Union[ExecutionExit, _Mapping]] = ..., warning: _Optional[_Union[Warning, _Mapping]] = ..., started: _Optional[_Union[RunStarted, _Mapping]] = ..., finished: _Optional[_Union[InspectExecutionResponse, _Mapping]] = ..., server_time_us: _Optional[int] = ...) -> None: ...

class RunExecutionRequest(_message.Message):
    __slots__ = ("execution", "create", "terminate_on_exit")
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    CREATE_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_ON_EXIT_FIELD_NUMBER: _ClassVar[int]
    execution: CreateExecutionRequest
    create: CreateSandboxRequest
    terminate_on_exit: bool
    def __init__(self, execution: _Optional[_Union[CreateExecutionRequest, _Mapping]] = ..., create: _Optional[_Union[CreateSandboxRequest, _Mapping]] = ..., terminate_on_exit: _Optional[bool] = ...) -> None: ...

class RunStarted(_message.Message):
    __slots__ = ("sandbox", "created", "bootstrap", "execution")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_FIELD_NUMBER: _ClassVar[int]
    sandbox: Sandbox
    created: bool
    bootstrap: Bootstrap
    execution: Execution
    def __init__(self, sandbox: _Optional[_Union[Sandbox, _Mapping]] = ..., created: _Optional[bool] = ..., bootstrap: _Optional[_Union[Bootstrap, _Mapping]] = ..., execution: _Optional[_Union[Execution, _Mapping]] = ...) -> None: ...

class Image(_message.Message):
    __slots__ = ("digest", "reference", "manifest_digest", "config_digest", "layers", "size", "pulled_at")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CONFIG_DIGEST_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    PULLED_AT_FIELD_NUMBER: _ClassVar[int]
    digest: str
    reference: str
    manifest_digest: str
    config_digest: str
    layers: _containers.RepeatedScalarFieldContainer[str]
    size: int
    pulled_at: _timestamp_pb2.Timestamp
    def __init__(self, digest: _Optional[str] = ..., reference: _Optional[str] = ..., manifest_digest: _Optional[str] = ..., config_digest: _Optional[str] = ..., layers: _Optional[_Iterable[str]] = ..., size: _Optional[int] = ..., pulled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PullImageRequest(_message.Message):
    __slots__ = ("image_ref",)
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    image_ref: str
    def __init__(self, image_ref: _Optional[str] = ...) -> None: ...

class PullImageResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: Image
    def __init__(self, image: _Optional[_Union[Image, _Mapping]] = ...) -> None: ...

class ResolveImageRequest(_message.Message):
    __slots__ = ("image_ref",)
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    image_ref: str
    def __init__(self, image_ref: _Optional[str] = ...) -> None: ...

class ResolveImageResponse(_message.Message):
    __slots__ = ("reference", "digest")
    REFERENCE_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    reference: str
    digest: str
    def __init__(self, reference: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class ListImagesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListImagesResponse(_message.Message):
    __slots__ = ("images",)
    IMAGES_FIELD_NUMBER: _ClassVar[int]
    images: _containers.RepeatedCompositeFieldContainer[Image]
    def __init__(self, images: _Optional[_Iterable[_Union[Image, _Mapping]]] = ...) -> None: ...

class RemoveImageRequest(_message.Message):
    __slots__ = ("digest",)
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    digest: str
    def __init__(self, digest: _Optional[str] = ...) -> None: ...

class RemoveImageResponse(_message.Message):
    __slots__ = ("image",)
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    image: Image
    def __init__(self, image: _Optional[_Union[Image, _Mapping]] = ...) -> None: ...
