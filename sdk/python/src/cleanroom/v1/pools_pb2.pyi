import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from cleanroom.v1 import cleanroom_pb2 as _cleanroom_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PoolTemplate(_message.Message):
    __slots__ = ("policy_yaml", "image_ref", "limits", "runtime")
    POLICY_YAML_FIELD_NUMBER: _ClassVar[int]
    IMAGE_REF_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    policy_yaml: str
    image_ref: str
    limits: _cleanroom_pb2.ResourceLimits
    runtime: str
    def __init__(self, policy_yaml: _Optional[str] = ..., image_ref: _Optional[str] = ..., limits: _Optional[_Union[_cleanroom_pb2.ResourceLimits, _Mapping]] = ..., runtime: _Optional[str] = ...) -> None: ...

class Autoscaling(_message.Message):
    __slots__ = ("enabled", "headroom_factor", "interval_seconds")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    HEADROOM_FACTOR_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    headroom_factor: float
    interval_seconds: int
    def __init__(self, enabled: _Optional[bool] = ..., headroom_factor: _Optional[float] = ..., interval_seconds: _Optional[int] = ...) -> None: ...

class Pool(_message.Message):
    __slots__ = ("pool_id", "name", "owner", "template", "min_ready", "max_ready", "max_age_seconds", "reusable", "autoscaling", "policy_hash", "image_digest", "created_at")
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_FIELD_NUMBER: _ClassVar[int]
    MAX_READY_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REUSABLE_FIELD_NUMBER: _ClassVar[int]
    AUTOSCALING_FIELD_NUMBER: _ClassVar[int]
    POLICY_HASH_FIELD_NUMBER: _ClassVar[int]
    IMAGE_DIGEST_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    pool_id: str
    name: str
    owner: str
    template: PoolTemplate
    min_ready: int
    max_ready: int
    max_age_seconds: int
    reusable: bool
    autoscaling: Autoscaling
    policy_hash: str
    image_digest: str
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, pool_id: _Optional[str] = ..., name: _Optional[str] = ..., owner: _Optional[str] = ..., template: _Optional[_Union[PoolTemplate, _Mapping]] = ..., min_ready: _Optional[int] = ..., max_ready: _Optional[int] = ..., max_age_seconds: _Optional[int] = ..., reusable: _Optional[bool] = ..., autoscaling: _Optional[_Union[Autoscaling, _Mapping]] = ..., policy_hash: _Optional[str] = ..., image_digest: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PoolStats(_message.Message):
    __slots__ = ("ready", "claimed", "warming", "claims_per_minute", "avg_claim_latency_us", "p99_claim_latency_us", "claims_total", "misses_total", "target_ready", "replaced_dead_total")
    READY_FIELD_NUMBER: _ClassVar[int]
    CLAIMED_FIELD_NUMBER: _ClassVar[int]
    WARMING_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    AVG_CLAIM_LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    P99_CLAIM_LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    MISSES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    TARGET_READY_FIELD_NUMBER: _ClassVar[int]
    REPLACED_DEAD_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ready: int
    claimed: int
    warming: int
    claims_per_minute: float
    avg_claim_latency_us: int
    p99_claim_latency_us: int
    claims_total: int
    misses_total: int
    target_ready: int
    replaced_dead_total: int
    def __init__(self, ready: _Optional[int] = ..., claimed: _Optional[int] = ..., warming: _Optional[int] = ..., claims_per_minute: _Optional[float] = ..., avg_claim_latency_us: _Optional[int] = ..., p99_claim_latency_us: _Optional[int] = ..., claims_total: _Optional[int] = ..., misses_total: _Optional[int] = ..., target_ready: _Optional[int] = ..., replaced_dead_total: _Optional[int] = ...) -> None: ...

class CreatePoolRequest(_message.Message):
    __slots__ = ("name", "template", "min_ready", "max_ready", "max_age_seconds", "reusable", "autoscaling")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MIN_READY_FIELD_NUMBER: _ClassVar[int]
    MAX_READY_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REUSABLE_FIELD_NUMBER: _ClassVar[int]
    AUTOSCALING_FIELD_NUMBER: _ClassVar[int]
    name: str
    template: PoolTemplate
    min_ready: int
    max_ready: int
    max_age_seconds: int
    reusable: bool
    autoscaling: Autoscaling
    def __init__(self, name: _Optional[str] = ..., template: _Optional[_Union[PoolTemplate, _Mapping]] = ..., min_ready: _Optional[int] = ..., max_ready: _Optional[int] = ..., max_age_seconds: _Optional[int] = ..., reusable: _Optional[bool] = ..., autoscaling: _Optional[_Union[Autoscaling, _Mapping]] = ...) -> None: ...

class CreatePoolResponse(_message.Message):
    __slots__ = ("pool",)
    POOL_FIELD_NUMBER: _ClassVar[int]
    pool: Pool
    def __init__(self, pool: _Optional[_Union[Pool, _Mapping]] = ...) -> None: ...

class ListPoolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPoolsResponse(_message.Message):
    __slots__ = ("pools", "stats")
    POOLS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    pools: _containers.RepeatedCompositeFieldContainer[Pool]
    stats: _containers.RepeatedCompositeFieldContainer[PoolStats]
    def __init__(self, pools: _Optional[_Iterable[_Union[Pool, _Mapping]]] = ..., stats: _Optional[_Iterable[_Union[PoolStats, _Mapping]]] = ...) -> None: ...

class GetPoolStatsRequest(_message.Message):
    __slots__ = ("pool_id",)
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    pool_id: str
    def __init__(self, pool_id: _Optional[str] = ...) -> None: ...

class GetPoolStatsResponse(_message.Message):
    __slots__ = ("pool", "stats")
    POOL_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    pool: Pool
    stats: PoolStats
    def __init__(self, pool: _Optional[_Union[Pool, _Mapping]] = ..., stats: _Optional[_Union[PoolStats, _Mapping]] = ...) -> None: ...

class ClaimSandboxRequest(_message.Message):
    __slots__ = ("pool_id", "agent_public_key", "delegation_chain")
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_CHAIN_FIELD_NUMBER: _ClassVar[int]
    pool_id: str
    agent_public_key: str
    delegation_chain: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pool_id: _Optional[str] = ..., agent_public_key: _Optional[str] = ..., delegation_chain: _Optional[_Iterable[str]] = ...) -> None: ...

class ClaimSandboxResponse(_message.Message):
    __slots__ = ("sandbox", "claim_latency_us", "attestation_envelope_json")
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    CLAIM_LATENCY_US_FIELD_NUMBER: _ClassVar[int]
    ATTESTATION_ENVELOPE_JSON_FIELD_NUMBER: _ClassVar[int]
    sandbox: _cleanroom_pb2.Sandbox
    claim_latency_us: int
    attestation_envelope_json: str
    def __init__(self, sandbox: _Optional[_Union[_cleanroom_pb2.Sandbox, _Mapping]] = ..., claim_latency_us: _Optional[int] = ..., attestation_envelope_json: _Optional[str] = ...) -> None: ...

class ReleaseSandboxRequest(_message.Message):
    __slots__ = ("sandbox_id", "reusable")
    SANDBOX_ID_FIELD_NUMBER: _ClassVar[int]
    REUSABLE_FIELD_NUMBER: _ClassVar[int]
    sandbox_id: str
    reusable: bool
    def __init__(self, sandbox_id: _Optional[str] = ..., reusable: _Optional[bool] = ...) -> None: ...

class ReleaseSandboxResponse(_message.Message):
    __slots__ = ("sandbox",)
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    sandbox: _cleanroom_pb2.Sandbox
    def __init__(self, sandbox: _Optional[_Union[_cleanroom_pb2.Sandbox, _Mapping]] = ...) -> None: ...

class DestroyPoolRequest(_message.Message):
    __slots__ = ("pool_id",)
    POOL_ID_FIELD_NUMBER: _ClassVar[int]
    pool_id: str
    def __init__(self, pool_id: _Optional[str] = ...) -> None: ...

class DestroyPoolResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
