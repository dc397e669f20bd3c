from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class GetAttestationRequest(_message.Message):
    __slots__ = ("sandbox_id",)
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    def __init__(self, sandbox_id: _Optional[str] = ...) -> None: ...

class GetAttestationResponse(_message.Message):
    __slots__ = ("envelope_json", "statement_json", "key_id")
    ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    STATEMENT_JSON_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    envelope_json: str
    statement_json: str
    key_id: str
    def __init__(self, envelope_json: _Optional[str] = ..., statement_json: _Optional[str] = ..., key_id: _Optional[str] = ...) -> None: ...

class GetAttestationPublicKeyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetAttestationPublicKeyResponse(_message.Message):
    __slots__ = ("public_key_pem", "key_id")
    PUBLIC_KEY_PEM_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    public_key_pem: str
    key_id: str
    def __init__(self, public_key_pem: _Optional[str] = ..., key_id: _Optional[str] = ...) -> None: ...
