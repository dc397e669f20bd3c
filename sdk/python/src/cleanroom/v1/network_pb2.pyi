from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class UpdateSandboxNetworkRequest(_message.Message):
    __slots__ = ("sandbox_id", "allow", "deny", "reset", "cut")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOW_FIELD_NUMBER: _ClassVar[int]
    DENY_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    CUT_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    allow: _containers.RepeatedScalarFieldContainer[str]
    deny: _containers.RepeatedScalarFieldContainer[str]
    reset: bool
    cut: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., allow: _Optional[_Iterable[str]] = ..., deny: _Optional[_Iterable[str]] = ..., reset: _Optional[bool] = ..., cut: _Optional[bool] = ...) -> None: ...

class UpdateSandboxNetworkResponse(_message.Message):
    __slots__ = ("effective_rules_hash", "live_allow", "live_deny", "policy_hash")
    EFFECTIVE_RULES_HASH_FIELD_NUMBER: _ClassVar[int]
    LIVE_ALLOW_FIELD_NUMBER: _ClassVar[int]
    LIVE_DENY_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    effective_rules_hash: str
    live_allow: _containers.RepeatedScalarFieldContainer[str]
    live_deny: _containers.RepeatedScalarFieldContainer[str]
    policy_hash: str
    def __init__(self, effective_rules_hash: _Optional[str] = ..., live_allow: _Optional[_Iterable[str]] = ..., live_deny: _Optional[_Iterable[str]] = ..., policy_hash: _Optional[str] = ...) -> None: ...
