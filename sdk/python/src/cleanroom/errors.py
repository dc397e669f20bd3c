"""Typed exceptions carrying the stable Cleanroom error code.

Every server error carries a ``cleanroom.v1.ErrorDetail`` whose ``code`` is one of the stable
codes of ``crates/vocab`` (``ErrorCode``). :func:`from_connect` turns a Connect error into the
subclass registered for that code (``SandboxNotFoundError`` for ``sandbox_not_found``, ...), or
into a plain :class:`CleanroomError` for a code this SDK does not know yet (a newer server):
callers can always branch on ``err.code``. A test checks that every code of the vocab crate
has its class here.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional, Type


class CleanroomError(Exception):
    """An API error. ``code`` is the stable machine code (``sandbox_not_found``, ...),
    ``connect_code`` the Connect protocol code (``not_found``, ...), ``details`` the
    ErrorDetail's structured fields."""

    code: str = ""

    def __init__(
        self,
        code: str,
        message: str,
        connect_code: str = "",
        details: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.connect_code = connect_code
        self.details: Dict[str, str] = dict(details or {})


_BY_CODE: Dict[str, Type[CleanroomError]] = {}


def _register(code: str, name: str) -> Type[CleanroomError]:
    cls = type(name, (CleanroomError,), {"code": code, "__doc__": f"The ``{code}`` error."})
    _BY_CODE[code] = cls
    return cls


# One class per stable code (crates/vocab/src/error_code.rs, same order).
UnauthenticatedError = _register("unauthenticated", "UnauthenticatedError")
PermissionDeniedError = _register("permission_denied", "PermissionDeniedError")
ResourceExhaustedError = _register("resource_exhausted", "ResourceExhaustedError")
SandboxNotFoundError = _register("sandbox_not_found", "SandboxNotFoundError")
ExecutionNotFoundError = _register("execution_not_found", "ExecutionNotFoundError")
InvalidArgumentError = _register("invalid_argument", "InvalidArgumentError")
PolicyInvalidError = _register("policy_invalid", "PolicyInvalidError")
PolicyConflictError = _register("policy_conflict", "PolicyConflictError")
SandboxNotReadyError = _register("sandbox_not_ready", "SandboxNotReadyError")
StdinNotAttachedError = _register("stdin_not_attached", "StdinNotAttachedError")
StdinClosedError = _register("stdin_closed", "StdinClosedError")
BackendCapabilityMismatchError = _register(
    "backend_capability_mismatch", "BackendCapabilityMismatchError"
)
RuntimeLaunchFailedError = _register("runtime_launch_failed", "RuntimeLaunchFailedError")
BackendUnavailableError = _register("backend_unavailable", "BackendUnavailableError")
RuntimeUnavailableError = _register("runtime_unavailable", "RuntimeUnavailableError")
SecretUnavailableError = _register("secret_unavailable", "SecretUnavailableError")
SandboxFileNotFoundError = _register("file_not_found", "SandboxFileNotFoundError")
FileNotReadableError = _register("file_not_readable", "FileNotReadableError")
ImageNotFoundError = _register("image_not_found", "ImageNotFoundError")
ImageDigestMismatchError = _register("image_digest_mismatch", "ImageDigestMismatchError")
RegistryUnavailableError = _register("registry_unavailable", "RegistryUnavailableError")
RegistryUnauthorizedError = _register("registry_unauthorized", "RegistryUnauthorizedError")
ImageUnsupportedError = _register("image_unsupported", "ImageUnsupportedError")
ImageLayerUnsafeError = _register("image_layer_unsafe", "ImageLayerUnsafeError")
ImageInUseError = _register("image_in_use", "ImageInUseError")
ImageTooLargeError = _register("image_too_large", "ImageTooLargeError")
OutputExpiredError = _register("output_expired", "OutputExpiredError")
UnimplementedError = _register("unimplemented", "UnimplementedError")
InternalError = _register("internal", "InternalError")
# Files API.
SandboxFileExistsError = _register("file_exists", "SandboxFileExistsError")
FileTypeMismatchError = _register("file_type_mismatch", "FileTypeMismatchError")
DirectoryNotEmptyError = _register("directory_not_empty", "DirectoryNotEmptyError")
UploadNotFoundError = _register("upload_not_found", "UploadNotFoundError")
UploadOffsetMismatchError = _register("upload_offset_mismatch", "UploadOffsetMismatchError")
# Framework-level conditions the server reports with a stable code too.
DeadlineExceededError = _register("deadline_exceeded", "DeadlineExceededError")
CanceledError = _register("canceled", "CanceledError")
UnavailableError = _register("unavailable", "UnavailableError")
# Pause/snapshots, pools/attestation, egress approvals, console.
SandboxPausedError = _register("sandbox_paused", "SandboxPausedError")
SnapshotNotFoundError = _register("snapshot_not_found", "SnapshotNotFoundError")
SnapshotInUseError = _register("snapshot_in_use", "SnapshotInUseError")
CheckpointNotFoundError = _register("checkpoint_not_found", "CheckpointNotFoundError")
CheckpointCorruptError = _register("checkpoint_corrupt", "CheckpointCorruptError")
CheckpointIncompatibleError = _register("checkpoint_incompatible", "CheckpointIncompatibleError")
CheckpointRefusedError = _register("checkpoint_refused", "CheckpointRefusedError")
PoolNotFoundError = _register("pool_not_found", "PoolNotFoundError")
NoReadySandboxesError = _register("no_ready_sandboxes", "NoReadySandboxesError")
AttestationNotFoundError = _register("attestation_not_found", "AttestationNotFoundError")
ApprovalNotFoundError = _register("approval_not_found", "ApprovalNotFoundError")
ExecutionNotInteractiveError = _register("execution_not_interactive", "ExecutionNotInteractiveError")
AttestationInvalidError = _register("attestation_invalid", "AttestationInvalidError")
AttestationSignatureInvalidError = _register("attestation_signature_invalid", "AttestationSignatureInvalidError")
AttestationExpiredError = _register("attestation_expired", "AttestationExpiredError")
AttestationNotYetValidError = _register("attestation_not_yet_valid", "AttestationNotYetValidError")
# Archives are hostile data (docs/files.md): the server refuses such a tar upload entry, and
# this SDK's download_dir refuses it (and a link where the destination would be) too.
UnsafeArchiveEntryError = _register("unsafe_archive_entry", "UnsafeArchiveEntryError")
DestinationIsLinkError = _register("destination_is_link", "DestinationIsLinkError")
# Named volumes (docs/volumes.md).
VolumeNotFoundError = _register("volume_not_found", "VolumeNotFoundError")
VolumeExistsError = _register("volume_exists", "VolumeExistsError")
VolumeInUseError = _register("volume_in_use", "VolumeInUseError")
VolumeBusyError = _register("volume_busy", "VolumeBusyError")
VolumeMountInvalidError = _register("volume_mount_invalid", "VolumeMountInvalidError")
# Cluster (docs/cluster.md).
ClusterUnavailableError = _register("cluster_unavailable", "ClusterUnavailableError")
NodeNameTakenError = _register("node_name_taken", "NodeNameTakenError")
ClusterDisabledError = _register("cluster_disabled", "ClusterDisabledError")
ClusterIdentityInvalidError = _register("cluster_identity_invalid", "ClusterIdentityInvalidError")
HostLostError = _register("host_lost", "HostLostError")
# Inbound: preview URLs and port-forward (docs/network.md "Inbound").
ExposureNotFoundError = _register("exposure_not_found", "ExposureNotFoundError")
ExposureExpiredError = _register("exposure_expired", "ExposureExpiredError")
ExposureRevokedError = _register("exposure_revoked", "ExposureRevokedError")
SandboxPortClosedError = _register("sandbox_port_closed", "SandboxPortClosedError")
# Client side only (never in an ErrorDetail), produced by this SDK.
ServerUnreachableError = _register("server_unreachable", "ServerUnreachableError")
StreamEndedError = _register("stream_ended", "StreamEndedError")


class UnknownOptionError(CleanroomError, TypeError):
    """An option name this SDK does not know (a misspelling: ``limits={"memory_mb": …}``),
    raised before anything is sent; also a ``TypeError``, as Python's own for an unknown
    keyword argument. ``details["option"]`` is the name."""

    code = "unknown_option"


_BY_CODE["unknown_option"] = UnknownOptionError

#: Every code this SDK has a class for.
KNOWN_CODES = frozenset(_BY_CODE)


def error(code: str, message: str, connect_code: str = "", details=None) -> CleanroomError:
    """The typed exception for ``code`` (plain :class:`CleanroomError` if unknown)."""
    return _BY_CODE.get(code, CleanroomError)(code, message, connect_code, details)


def from_connect(e: Exception) -> CleanroomError:
    """Map a ``connectrpc.errors.ConnectError`` to the typed exception of its ErrorDetail code.

    Without a detail (a proxy or a framework error) the Connect code is used, and
    ``unavailable`` becomes ``server_unreachable`` as in the CLI."""
    from .v1.cleanroom_pb2 import ErrorDetail

    connect_code = getattr(getattr(e, "code", None), "value", "") or ""
    message = getattr(e, "message", None) or str(e)
    for d in getattr(e, "details", ()) or ():
        if d.type_name == "cleanroom.v1.ErrorDetail":
            try:
                det = ErrorDetail.FromString(d.message_bytes)
            except Exception:  # a malformed detail: fall back to the Connect code
                break
            return error(det.code, det.message, connect_code, dict(det.details))
    code = "server_unreachable" if connect_code == "unavailable" else (connect_code or "internal")
    return error(code, message, connect_code)
