/** An API error: `code` is the stable machine code, `connectCode` the Connect code. */
export declare class CleanroomError extends Error {
    readonly code: string;
    readonly connectCode: string;
    readonly details: Record<string, string>;
    constructor(code: string, message: string, connectCode?: string, details?: Record<string, string>);
}
/** The `unauthenticated` error. */
export declare class UnauthenticatedError extends CleanroomError {
}
/** The `permission_denied` error. */
export declare class PermissionDeniedError extends CleanroomError {
}
/** The `resource_exhausted` error. */
export declare class ResourceExhaustedError extends CleanroomError {
}
/** The `sandbox_not_found` error. */
export declare class SandboxNotFoundError extends CleanroomError {
}
/** The `execution_not_found` error. */
export declare class ExecutionNotFoundError extends CleanroomError {
}
/** The `invalid_argument` error. */
export declare class InvalidArgumentError extends CleanroomError {
}
/** The `policy_invalid` error. */
export declare class PolicyInvalidError extends CleanroomError {
}
/** The `policy_conflict` error. */
export declare class PolicyConflictError extends CleanroomError {
}
/** The `sandbox_not_ready` error. */
export declare class SandboxNotReadyError extends CleanroomError {
}
/** The `stdin_not_attached` error. */
export declare class StdinNotAttachedError extends CleanroomError {
}
/** The `stdin_closed` error. */
export declare class StdinClosedError extends CleanroomError {
}
/** The `backend_capability_mismatch` error. */
export declare class BackendCapabilityMismatchError extends CleanroomError {
}
/** The `runtime_launch_failed` error. */
export declare class RuntimeLaunchFailedError extends CleanroomError {
}
/** The `backend_unavailable` error. */
export declare class BackendUnavailableError extends CleanroomError {
}
/** The `runtime_unavailable` error. */
export declare class RuntimeUnavailableError extends CleanroomError {
}
/** The `secret_unavailable` error. */
export declare class SecretUnavailableError extends CleanroomError {
}
/** The `file_not_found` error. */
export declare class FileNotFoundError extends CleanroomError {
}
/** The `file_not_readable` error. */
export declare class FileNotReadableError extends CleanroomError {
}
/** The `image_not_found` error. */
export declare class ImageNotFoundError extends CleanroomError {
}
/** The `image_digest_mismatch` error. */
export declare class ImageDigestMismatchError extends CleanroomError {
}
/** The `registry_unavailable` error. */
export declare class RegistryUnavailableError extends CleanroomError {
}
/** The `registry_unauthorized` error. */
export declare class RegistryUnauthorizedError extends CleanroomError {
}
/** The `image_unsupported` error. */
export declare class ImageUnsupportedError extends CleanroomError {
}
/** The `image_layer_unsafe` error. */
export declare class ImageLayerUnsafeError extends CleanroomError {
}
/** The `image_in_use` error. */
export declare class ImageInUseError extends CleanroomError {
}
/** The `image_too_large` error. */
export declare class ImageTooLargeError extends CleanroomError {
}
/** The `output_expired` error. */
export declare class OutputExpiredError extends CleanroomError {
}
/** The `unimplemented` error. */
export declare class UnimplementedError extends CleanroomError {
}
/** The `internal` error. */
export declare class InternalError extends CleanroomError {
}
/** The `file_exists` error. */
export declare class FileExistsError extends CleanroomError {
}
/** The `file_type_mismatch` error. */
export declare class FileTypeMismatchError extends CleanroomError {
}
/** The `directory_not_empty` error. */
export declare class DirectoryNotEmptyError extends CleanroomError {
}
/** The `upload_not_found` error. */
export declare class UploadNotFoundError extends CleanroomError {
}
/** The `upload_offset_mismatch` error. */
export declare class UploadOffsetMismatchError extends CleanroomError {
}
/** The `deadline_exceeded` error. */
export declare class DeadlineExceededError extends CleanroomError {
}
/** The `canceled` error. */
export declare class CanceledError extends CleanroomError {
}
/** The `unavailable` error. */
export declare class UnavailableError extends CleanroomError {
}
/** The `sandbox_paused` error. */
export declare class SandboxPausedError extends CleanroomError {
}
/** The `snapshot_not_found` error. */
export declare class SnapshotNotFoundError extends CleanroomError {
}
/** The `snapshot_in_use` error. */
export declare class SnapshotInUseError extends CleanroomError {
}
/** The `checkpoint_not_found` error (docs/checkpoints.md). */
export declare class CheckpointNotFoundError extends CleanroomError {
}
/** The `checkpoint_corrupt` error. */
export declare class CheckpointCorruptError extends CleanroomError {
}
/** The `checkpoint_incompatible` error. */
export declare class CheckpointIncompatibleError extends CleanroomError {
}
/** The `checkpoint_refused` error. */
export declare class CheckpointRefusedError extends CleanroomError {
}
/** The `volume_not_found` error (docs/volumes.md). */
export declare class VolumeNotFoundError extends CleanroomError {
}
/** The `volume_exists` error. */
export declare class VolumeExistsError extends CleanroomError {
}
/** The `volume_in_use` error. */
export declare class VolumeInUseError extends CleanroomError {
}
/** The `volume_busy` error. */
export declare class VolumeBusyError extends CleanroomError {
}
/** The `volume_mount_invalid` error. */
export declare class VolumeMountInvalidError extends CleanroomError {
}
/** The `cluster_unavailable` error: the cluster's etcd cannot be reached. */
export declare class ClusterUnavailableError extends CleanroomError {
}
/** The `node_name_taken` error. */
export declare class NodeNameTakenError extends CleanroomError {
}
/** The `cluster_disabled` error: the server is not a cluster member. */
export declare class ClusterDisabledError extends CleanroomError {
}
/** The `cluster_identity_invalid` error: a cluster CA or node identity that does not verify. */
export declare class ClusterIdentityInvalidError extends CleanroomError {
}
/** The `host_lost` error: the sandbox's host left the cluster (its lease expired). */
export declare class HostLostError extends CleanroomError {
}
/** The `exposure_not_found` error: no such exposure, or not the caller's. */
export declare class ExposureNotFoundError extends CleanroomError {
}
/** The `exposure_expired` error: the exposure token's expiry passed. */
export declare class ExposureExpiredError extends CleanroomError {
}
/** The `exposure_revoked` error: the exposure was removed. */
export declare class ExposureRevokedError extends CleanroomError {
}
/** The `sandbox_port_closed` error: nothing accepts connections on the sandbox's port. */
export declare class SandboxPortClosedError extends CleanroomError {
}
/** The `pool_not_found` error. */
export declare class PoolNotFoundError extends CleanroomError {
}
/** The `no_ready_sandboxes` error. */
export declare class NoReadySandboxesError extends CleanroomError {
}
/** The `attestation_not_found` error. */
export declare class AttestationNotFoundError extends CleanroomError {
}
/** The `approval_not_found` error. */
export declare class ApprovalNotFoundError extends CleanroomError {
}
/** The `execution_not_interactive` error. */
export declare class ExecutionNotInteractiveError extends CleanroomError {
}
/** The `attestation_invalid` error. */
export declare class AttestationInvalidError extends CleanroomError {
}
/** The `attestation_signature_invalid` error. */
export declare class AttestationSignatureInvalidError extends CleanroomError {
}
/** The `attestation_expired` error. */
export declare class AttestationExpiredError extends CleanroomError {
}
/** The `attestation_not_yet_valid` error. */
export declare class AttestationNotYetValidError extends CleanroomError {
}
/** The `unsafe_archive_entry` error: a tar entry named with `..` or absolutely. */
export declare class UnsafeArchiveEntryError extends CleanroomError {
}
/** The `destination_is_link` error (a download found a link where its destination goes). */
export declare class DestinationIsLinkError extends CleanroomError {
}
/**
 * The `unknown_option` error (SDK-side, never sent by a server): an option name the call
 * does not know, misspelled or from another version; `details.option` names it. An
 * {@link InvalidArgumentError}, so code that catches those catches it too.
 */
export declare class UnknownOptionError extends InvalidArgumentError {
}
/** The `server_unreachable` error. */
export declare class ServerUnreachableError extends CleanroomError {
}
/** The `stream_ended` error. */
export declare class StreamEndedError extends CleanroomError {
}
/** Every code this SDK has a class for. */
export declare const KNOWN_CODES: readonly string[];
/** The typed error for `code` (plain {@link CleanroomError} if unknown). */
export declare function errorFor(code: string, message: string, connectCode?: string, details?: Record<string, string>): CleanroomError;
/**
 * Map any error thrown by a Connect call to the typed error of its ErrorDetail code.
 * Without a detail the Connect code is used; `unavailable` becomes `server_unreachable`
 * as in the CLI. Errors that are already CleanroomErrors pass through.
 */
export declare function fromConnect(e: unknown): CleanroomError;
