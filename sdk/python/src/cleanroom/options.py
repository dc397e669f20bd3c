"""What a caller hands the SDK, checked before it reaches the server: option names, resource
limits and policies.

A misspelled option must never be dropped silently (``limits={"memory_mb": 512}`` creating a
sandbox with the default memory is worse than an error): every name is checked against the
names this SDK knows and an unknown one raises :class:`~cleanroom.errors.UnknownOptionError`
(code ``unknown_option``, also a ``TypeError``) naming the closest known one.

Limits take the names and units of the CLI's flags and the policy's ``sandbox.resources``:
``memory_mb``, ``disk_mb``, ``output_mb`` in MiB, ``cpu_millis`` (1000 = one core), ``pids``;
or bytes when the name says so (``memory_bytes``, ``disk_bytes``, ``output_bytes``, the API's
``ResourceLimits`` fields).

Volume mounts take the CLI's ``--volume`` grammar, ``"NAME:/path[:ro]"``, or a mapping
``{"name", "path", "read_only"}``; a malformed one raises ``volume_mount_invalid`` here,
before any request (the server checks the paths' rules again, docs/volumes.md).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Union

from . import errors
from .v1 import cleanroom_pb2 as pb

MIB = 1 << 20

#: Text, a path to the file (``pathlib.Path``, or a ``str`` naming an existing file), or a
#: mapping (the parsed document: sent as JSON, which every YAML parser reads).
Policy = Union[str, "os.PathLike[str]", Mapping[str, Any], None]


def reject_unknown(where: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``unknown_option`` for the first name of ``given`` not in ``known``."""
    known = sorted(known)
    for name in given:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise errors.UnknownOptionError(
                "unknown_option",
                f"{where}: unknown option {name!r}{hint}; known: {', '.join(known)}",
                "invalid_argument",
                {"option": name, "where": where},
            )


def checked(fn):
    """Turn an unknown keyword argument of ``fn`` into ``unknown_option`` (with the closest
    known name) instead of Python's bare ``TypeError``; works on sync and async functions."""
    sig = inspect.signature(fn)
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    known = [n for n, p in sig.parameters.items() if p.kind in kinds and n not in ("self", "cls")]
    where = fn.__qualname__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        unknown = [k for k in kwargs if k not in known]
        if unknown:
            reject_unknown(where, unknown, known)
        return fn(*args, **kwargs)

    return wrapper


# name -> (ResourceLimits field, multiplier)
_LIMITS = {
    "memory_mb": ("memory_bytes", MIB),
    "memory_bytes": ("memory_bytes", 1),
    "pids": ("pids", 1),
    "cpu_millis": ("cpu_millis", 1),
    "disk_mb": ("disk_bytes", MIB),
    "disk_bytes": ("disk_bytes", 1),
    "output_mb": ("output_bytes", MIB),
    "output_bytes": ("output_bytes", 1),
}


def limits_message(limits) -> Optional["pb.ResourceLimits"]:
    """A ``ResourceLimits``, or a mapping of the names above → the message. Unknown names
    raise ``unknown_option``; a value that is not a non-negative integer, or a field given
    twice in two units, raises ``invalid_argument``."""
    if limits is None:
        return None
    if isinstance(limits, pb.ResourceLimits):
        return limits
    if not isinstance(limits, Mapping):
        raise errors.error(
            "invalid_argument", f"limits must be a mapping or ResourceLimits, not {type(limits).__name__}"
        )
    reject_unknown("limits", limits, _LIMITS)
    out: dict = {}
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise errors.error(
                "invalid_argument", f"limits.{name} must be a non-negative integer, not {value!r}"
            )
        field, mult = _LIMITS[name]
        if field in out:
            raise errors.error("invalid_argument", f"limits: {field} given twice ({name})")
        out[field] = value * mult
    return pb.ResourceLimits(**out)


#: A mount in the CLI's ``--volume`` grammar, or a mapping of ``_MOUNT_KEYS``.
VolumeSpec = Union[str, Mapping[str, Any]]

_VOLUME_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")
_MOUNT_KEYS = ("name", "path", "read_only")


def _mount_invalid(spec: object, why: str) -> errors.CleanroomError:
    return errors.error(
        "volume_mount_invalid", f"volumes: {spec!r}: {why}", "invalid_argument", {"mount": str(spec)}
    )


def volume_mount(spec: VolumeSpec) -> "pb.VolumeMount":
    """One ``VolumeMount`` of ``"NAME:/path[:ro|:rw]"`` or ``{"name", "path", "read_only"}``."""
    if isinstance(spec, pb.VolumeMount):
        return spec
    if isinstance(spec, str):
        name, sep, rest = spec.partition(":")
        if not sep:
            raise _mount_invalid(spec, "expected NAME:/path[:ro]")
        path, read_only = rest, False
        head, sep, opt = rest.rpartition(":")
        if sep:
            if opt not in ("ro", "rw"):
                raise _mount_invalid(spec, f"unknown mount option {opt!r} (ro or rw)")
            path, read_only = head, opt == "ro"
    elif isinstance(spec, Mapping):
        unknown = [k for k in spec if k not in _MOUNT_KEYS]
        if unknown:
            raise _mount_invalid(spec, f"unknown key {unknown[0]!r}; known: {', '.join(_MOUNT_KEYS)}")
        name, path, read_only = spec.get("name"), spec.get("path"), spec.get("read_only", False)
        if not isinstance(name, str) or not isinstance(path, str) or not isinstance(read_only, bool):
            raise _mount_invalid(spec, "name and path are strings, read_only a bool")
    else:
        raise _mount_invalid(spec, f"a mount is a str or a mapping, not {type(spec).__name__}")
    if not _VOLUME_NAME.fullmatch(name):
        raise _mount_invalid(
            spec, f"volume name {name!r} must be 1-63 of a-z 0-9 . _ - starting with a letter or digit"
        )
    if not path.startswith("/"):
        raise _mount_invalid(spec, f"{path!r} must be an absolute path inside the sandbox")
    return pb.VolumeMount(name=name, path=path, read_only=read_only)


def volume_mounts(volumes: Optional[Iterable[VolumeSpec]]) -> list:
    """The ``CreateSandboxRequest.volumes`` of a ``volumes=`` option (see :func:`volume_mount`)."""
    if volumes is None:
        return []
    if isinstance(volumes, (str, Mapping)):
        raise _mount_invalid(volumes, "volumes is a list of mounts")
    return [volume_mount(v) for v in volumes]


def sandbox_request(
    policy: Policy,
    image: Optional[str],
    labels,
    limits,
    idempotency_key: str,
    ttl,
    idle_timeout,
    from_snapshot: str,
    no_pool: bool,
    agent_public_key: str,
    delegation_chain,
    lockfiles=None,
    learn: bool = False,
    runtime: str = "",
    volumes: Optional[Iterable[VolumeSpec]] = None,
    suspend_after=None,
) -> "pb.CreateSandboxRequest":
    """The ``CreateSandboxRequest`` of ``Sandbox.create``'s options (also ``Sandbox.exec``'s)."""
    from .lifetime import seconds

    return pb.CreateSandboxRequest(
        policy_yaml=policy_text(policy),
        image_ref=image or "",
        idempotency_key=idempotency_key,
        labels=dict(labels or {}),
        limits=limits_message(limits),
        ttl_seconds=seconds(ttl, "ttl"),
        idle_timeout_seconds=seconds(idle_timeout, "idle_timeout"),
        suspend_after_seconds=seconds(suspend_after, "suspend_after"),
        from_snapshot=from_snapshot,
        no_pool=no_pool,
        agent_public_key=agent_public_key,
        delegation_chain=list(delegation_chain),
        lockfiles={k: v.encode() if isinstance(v, str) else bytes(v) for k, v in (lockfiles or {}).items()},
        learn=learn,
        runtime=runtime,
        volumes=volume_mounts(volumes),
    )


def policy_text(policy: Policy) -> str:
    """cleanroom.yaml text for ``policy`` (see :data:`Policy`); empty for none.

    A ``str`` is read as a path when it is one line naming an existing file, else it is the
    policy text itself. A path that cannot be read raises ``policy_invalid``."""
    if policy is None:
        return ""
    if isinstance(policy, Mapping):
        try:
            return json.dumps(policy)
        except (TypeError, ValueError) as e:
            raise errors.error("policy_invalid", f"the policy mapping is not JSON data: {e}") from None
    if isinstance(policy, os.PathLike):
        return _read(Path(policy))
    if isinstance(policy, str):
        if policy and "\n" not in policy and os.path.isfile(policy):
            return _read(Path(policy))
        return policy
    raise errors.error(
        "invalid_argument",
        f"policy must be text, a path or a mapping, not {type(policy).__name__}",
    )


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise errors.error("policy_invalid", f"cannot read the policy file {path}: {e}") from None
