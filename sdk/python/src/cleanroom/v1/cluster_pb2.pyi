import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClusterMember(_message.Message):
    __slots__ = ("name", "advertise", "version", "runtimes", "sandboxes", "capacity", "joined_at", "lease_id", "self", "draining", "draining_since", "drained_by", "load_average")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADVERTISE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RUNTIMES_FIELD_NUMBER: _ClassVar[int]
    SANDBOXES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    JOINED_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    SELF_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    DRAINING_SINCE_FIELD_NUMBER: _ClassVar[int]
    DRAINED_BY_FIELD_NUMBER: _ClassVar[int]
    LOAD_AVERAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    advertise: str
    version: str
    runtimes: _containers.RepeatedScalarFieldContainer[str]
    sandboxes: int
    capacity: int
    joined_at: _timestamp_pb2.Timestamp
    lease_id: int
    self: bool
    draining: bool
    draining_since: _timestamp_pb2.Timestamp
    drained_by: str
    load_average: float
    def __init__(self_, name: _Optional[str] = ..., advertise: _Optional[str] = ..., version: _Optional[str] = ..., runtimes: _Optional[_Iterable[str]] = ..., sandboxes: _Optional[int] = ..., capacity: _Optional[int] = ..., joined_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_id: _Optional[int] = ..., self: _Optional[bool] = ..., draining: _Optional[bool] = ..., draining_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., drained_by: _Optional[str] = ..., load_average: _Optional[float] = ...) -> None: ...

class GetClusterStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterStatusResponse(_message.Message):
    __slots__ = ("node_name", "members")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    def __init__(self, node_name: _Optional[str] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ...) -> None: ...

class DrainNodeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DrainNodeResponse(_message.Message):
    __slots__ = ("member",)
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    member: ClusterMember
    def __init__(self, member: _Optional[_Union[ClusterMember, _Mapping]] = ...) -> None: ...

class UndrainNodeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UndrainNodeResponse(_message.Message):
    __slots__ = ("was_draining",)
    WAS_DRAINING_FIELD_NUMBER: _ClassVar[int]
    was_draining: bool
    def __init__(self, was_draining: _Optional[bool] = ...) -> None: ...
