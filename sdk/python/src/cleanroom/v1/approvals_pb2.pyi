import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EgressVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EGRESS_VERDICT_UNSPECIFIED: _ClassVar[EgressVerdict]
    EGRESS_VERDICT_ALLOW: _ClassVar[EgressVerdict]
    EGRESS_VERDICT_DENY: _ClassVar[EgressVerdict]

class EgressRemember(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EGRESS_REMEMBER_UNSPECIFIED: _ClassVar[EgressRemember]
    EGRESS_REMEMBER_ONCE: _ClassVar[EgressRemember]
    EGRESS_REMEMBER_SANDBOX: _ClassVar[EgressRemember]
EGRESS_VERDICT_UNSPECIFIED: EgressVerdict
EGRESS_VERDICT_ALLOW: EgressVerdict
EGRESS_VERDICT_DENY: EgressVerdict
EGRESS_REMEMBER_UNSPECIFIED: EgressRemember
EGRESS_REMEMBER_ONCE: EgressRemember
EGRESS_REMEMBER_SANDBOX: EgressRemember

class EgressRequest(_message.Message):
    __slots__ = ("request_id", "sandbox_id", "host", "port", "protocol", "created_at", "expires_at")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    sandbox_id: str
    host: str
    port: int
    protocol: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, request_id: _Optional[str] = ..., sandbox_id: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., protocol: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListEgressRequestsRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class ListEgressRequestsResponse(_message.Message):
    __slots__ = ("requests", "approved", "refused")
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.RepeatedCompositeFieldContainer[EgressRequest]
    approved: _containers.RepeatedScalarFieldContainer[str]
    refused: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, requests: _Optional[_Iterable[_Union[EgressRequest, _Mapping]]] = ..., approved: _Optional[_Iterable[str]] = ..., refused: _Optional[_Iterable[str]] = ...) -> None: ...

class DecideEgressRequest(_message.Message):
    __slots__ = ("sandbox_id", "request_id", "verdict", "remember")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    REMEMBER_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    request_id: str
    verdict: EgressVerdict
    remember: EgressRemember
    def __init__(self, sandbox_id: _Optional[str] = ..., request_id: _Optional[str] = ..., verdict: _Optional[_Union[EgressVerdict, str]] = ..., remember: _Optional[_Union[EgressRemember, str]] = ...) -> None: ...

class DecideEgressResponse(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: EgressRequest
    def __init__(self, request: _Optional[_Union[EgressRequest, _Mapping]] = ...) -> None: ...
