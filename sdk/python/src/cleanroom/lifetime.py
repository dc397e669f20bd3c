"""Lifetimes and usage as typed values: a sandbox's TTL and idle timeout (set at create,
changed later with ``SetSandboxTimeout``) and its live resource usage (``GetSandbox``).

Durations are whole seconds (``int``) or :class:`datetime.timedelta`; the server accepts
1 s .. 366 days and refuses anything else with ``invalid_argument`` naming the field.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import List, Optional, Union

from . import errors
from .v1 import cleanroom_pb2 as pb
from .v1 import lifetime_pb2 as lpb

Seconds = Union[int, float, _dt.timedelta]


def seconds(v: Optional[Seconds], name: str) -> int:
    """``v`` as whole seconds (``None``: 0, i.e. "not given"); negative or fractional
    values below a second are refused here rather than rounded to something unintended."""
    if v is None:
        return 0
    if isinstance(v, _dt.timedelta):
        v = v.total_seconds()
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 1 or v != int(v):
        raise errors.error(
            "invalid_argument", f"{name}: expected whole seconds >= 1 (or a timedelta), got {v!r}"
        )
    return int(v)


def _time(m, name: str) -> Optional[_dt.datetime]:
    return getattr(m, name).ToDatetime(_dt.timezone.utc) if m.HasField(name) else None


@dataclass(frozen=True)
class Lifetime:
    """When a sandbox expires. ``ttl_seconds``/``idle_timeout_seconds`` are 0 when unset;
    ``expires_at`` is when the TTL ends (``None``: no TTL); ``stop_reason`` says why a
    stopped sandbox stopped (``ttl_expired``, ``idle_timeout``, ``terminated``…);
    ``suspend_after_seconds`` (0: never) and ``suspended_at`` (``None``: not suspended)
    describe suspend on idle."""

    ttl_seconds: int
    expires_at: Optional[_dt.datetime]
    idle_timeout_seconds: int
    last_activity_at: Optional[_dt.datetime]
    stop_reason: str
    suspend_after_seconds: int = 0
    suspended_at: Optional[_dt.datetime] = None

    @staticmethod
    def from_proto(s: "pb.Sandbox") -> "Lifetime":
        return Lifetime(
            ttl_seconds=s.ttl_seconds,
            expires_at=_time(s, "expires_at"),
            idle_timeout_seconds=s.idle_timeout_seconds,
            last_activity_at=_time(s, "last_activity_at"),
            stop_reason=s.stop_reason,
            suspend_after_seconds=s.suspend_after_seconds,
            suspended_at=_time(s, "suspended_at"),
        )


@dataclass(frozen=True)
class FilesystemUsage:
    """One writable filesystem of the sandbox, by its path inside the sandbox."""

    path: str
    used_bytes: int
    size_bytes: int


@dataclass(frozen=True)
class Usage:
    """A live sandbox's resource usage, sampled at ``sampled_at``: CPU time of all its
    processes, memory charged now and the peak, processes now, each writable filesystem,
    and bytes through the egress gateway (``network_tx_bytes`` sent, ``_rx_`` received)."""

    sampled_at: Optional[_dt.datetime]
    cpu_usec: int
    memory_bytes: int
    memory_peak_bytes: int
    pids: int
    network_tx_bytes: int
    network_rx_bytes: int
    filesystems: List[FilesystemUsage] = field(default_factory=list)

    @property
    def cpu_seconds(self) -> float:
        return self.cpu_usec / 1e6

    def filesystem(self, path: str) -> Optional[FilesystemUsage]:
        """The entry for ``path`` (``/workspace``, ``/tmp``…), if it is a writable fs."""
        return next((f for f in self.filesystems if f.path == path), None)

    @staticmethod
    def from_proto(s: "pb.Sandbox") -> Optional["Usage"]:
        """``None`` when the server reports none (a sandbox that is not live)."""
        if not s.HasField("usage"):
            return None
        u = s.usage
        return Usage(
            sampled_at=_time(u, "sampled_at"),
            cpu_usec=u.cpu_usec,
            memory_bytes=u.memory_bytes,
            memory_peak_bytes=u.memory_peak_bytes,
            pids=u.pids,
            network_tx_bytes=u.network_tx_bytes,
            network_rx_bytes=u.network_rx_bytes,
            filesystems=[
                FilesystemUsage(f.path, f.used_bytes, f.size_bytes) for f in u.filesystems
            ],
        )


def timeout_request(
    sandbox_id: str,
    ttl: Optional[Seconds],
    idle_timeout: Optional[Seconds],
    clear_ttl: bool,
    clear_idle_timeout: bool,
) -> "lpb.SetSandboxTimeoutRequest":
    """The ``SetSandboxTimeout`` request; at least one change must be asked for."""
    if ttl is not None and clear_ttl:
        raise errors.error("invalid_argument", "ttl and clear_ttl exclude each other")
    if idle_timeout is not None and clear_idle_timeout:
        raise errors.error(
            "invalid_argument", "idle_timeout and clear_idle_timeout exclude each other"
        )
    if ttl is None and idle_timeout is None and not clear_ttl and not clear_idle_timeout:
        raise errors.error(
            "invalid_argument",
            "set_timeout needs ttl, idle_timeout, clear_ttl or clear_idle_timeout",
        )
    return lpb.SetSandboxTimeoutRequest(
        sandbox_id=sandbox_id,
        ttl_seconds=seconds(ttl, "ttl"),
        idle_timeout_seconds=seconds(idle_timeout, "idle_timeout"),
        clear_ttl=clear_ttl,
        clear_idle_timeout=clear_idle_timeout,
    )
