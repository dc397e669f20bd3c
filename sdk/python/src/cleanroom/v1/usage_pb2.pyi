import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SandboxUsage(_message.Message):
    __slots__ = ("sampled_at", "cpu_usec", "memory_bytes", "memory_peak_bytes", "pids", "filesystems", "network_tx_bytes", "network_rx_bytes")
    SAMPLED_AT_FIELD_NUMBER: _ClassVar[int]
    CPU_USEC_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PEAK_BYTES_FIELD_NUMBER: _ClassVar[int]
    PIDS_FIELD_NUMBER: _ClassVar[int]
    FILESYSTEMS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_TX_BYTES_FIELD_NUMBER: _ClassVar[int]
    NETWORK_RX_BYTES_FIELD_NUMBER: _ClassVar[int]
    sampled_at: _timestamp_pb2.Timestamp
    cpu_usec: int
    memory_bytes: int
    memory_peak_bytes: int
    pids: int
    filesystems: _containers.RepeatedCompositeFieldContainer[FilesystemUsage]
    network_tx_bytes: int
    network_rx_bytes: int
    def __init__(self, sampled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cpu_usec: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., memory_peak_bytes: _Optional[int] = ..., pids: _Optional[int] = ..., filesystems: _Optional[_Iterable[_Union[FilesystemUsage, _Mapping]]] = ..., network_tx_bytes: _Optional[int] = ..., network_rx_bytes: _Optional[int] = ...) -> None: ...

class FilesystemUsage(_message.Message):
    __slots__ = ("path", "used_bytes", "size_bytes")
    PATH_FIELD_NUMBER: _ClassVar[int]
    USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    path: str
    used_bytes: int
    size_bytes: int
    def __init__(self, path: _Optional[str] = ..., used_bytes: _Optional[int] = ..., size_bytes: _Optional[int] = ...) -> None: ...
