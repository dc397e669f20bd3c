/**
 * Typed errors carrying the stable Cleanroom error code.
 *
 * Every server error carries a `cleanroom.v1.ErrorDetail` whose `code` is one of the stable
 * codes of crates/vocab (`ErrorCode`). {@link fromConnect} turns a Connect error into the
 * subclass registered for that code (`SandboxNotFoundError` for `sandbox_not_found`, ...),
 * or a plain {@link CleanroomError} for a code this SDK does not know (a newer server):
 * callers can always branch on `err.code`. A test checks that every vocab code has a class.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorDetailSchema } from "./gen/cleanroom/v1/cleanroom_pb.js";

/** An API error: `code` is the stable machine code, `connectCode` the Connect code. */
export class CleanroomError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly connectCode: string = "",
    readonly details: Record<string, string> = {},
  ) {
    super(`${code}: ${message}`);
    this.name = new.target.name;
  }
}

/** The `unauthenticated` error. */
export class UnauthenticatedError extends CleanroomError {}
/** The `permission_denied` error. */
export class PermissionDeniedError extends CleanroomError {}
/** The `resource_exhausted` error. */
export class ResourceExhaustedError extends CleanroomError {}
/** The `sandbox_not_found` error. */
export class SandboxNotFoundError extends CleanroomError {}
/** The `execution_not_found` error. */
export class ExecutionNotFoundError extends CleanroomError {}
/** The `invalid_argument` error. */
export class InvalidArgumentError extends CleanroomError {}
/** The `policy_invalid` error. */
export class PolicyInvalidError extends CleanroomError {}
/** The `policy_conflict` error. */
export class PolicyConflictError extends CleanroomError {}
/** The `sandbox_not_ready` error. */
export class SandboxNotReadyError extends CleanroomError {}
/** The `stdin_not_attached` error. */
export class StdinNotAttachedError extends CleanroomError {}
/** The `stdin_closed` error. */
export class StdinClosedError extends CleanroomError {}
/** The `backend_capability_mismatch` error. */
export class BackendCapabilityMismatchError extends CleanroomError {}
/** The `runtime_launch_failed` error. */
export class RuntimeLaunchFailedError extends CleanroomError {}
/** The `backend_unavailable` error. */
export class BackendUnavailableError extends CleanroomError {}
/** The `runtime_unavailable` error. */
export class RuntimeUnavailableError extends CleanroomError {}
/** The `secret_unavailable` error. */
export class SecretUnavailableError extends CleanroomError {}
/** The `file_not_found` error. */
export class FileNotFoundError extends CleanroomError {}
/** The `file_not_readable` error. */
export class FileNotReadableError extends CleanroomError {}
/** The `image_not_found` error. */
export class ImageNotFoundError extends CleanroomError {}
/** The `image_digest_mismatch` error. */
export class ImageDigestMismatchError extends CleanroomError {}
/** The `registry_unavailable` error. */
export class RegistryUnavailableError extends CleanroomError {}
/** The `registry_unauthorized` error. */
export class RegistryUnauthorizedError extends CleanroomError {}
/** The `image_unsupported` error. */
export class ImageUnsupportedError extends CleanroomError {}
/** The `image_layer_unsafe` error. */
export class ImageLayerUnsafeError extends CleanroomError {}
/** The `image_in_use` error. */
export class ImageInUseError extends CleanroomError {}
/** The `image_too_large` error. */
export class ImageTooLargeError extends CleanroomError {}
/** The `output_expired` error. */
export class OutputExpiredError extends CleanroomError {}
/** The `unimplemented` error. */
export class UnimplementedError extends CleanroomError {}
/** The `internal` error. */
export class InternalError extends CleanroomError {}
/** The `file_exists` error. */
export class FileExistsError extends CleanroomError {}
/** The `file_type_mismatch` error. */
export class FileTypeMismatchError extends CleanroomError {}
/** The `directory_not_empty` error. */
export class DirectoryNotEmptyError extends CleanroomError {}
/** The `upload_not_found` error. */
export class UploadNotFoundError extends CleanroomError {}
/** The `upload_offset_mismatch` error. */
export class UploadOffsetMismatchError extends CleanroomError {}
/** The `deadline_exceeded` error. */
export class DeadlineExceededError extends CleanroomError {}
/** The `canceled` error. */
export class CanceledError extends CleanroomError {}
/** The `unavailable` error. */
export class UnavailableError extends CleanroomError {}
/** The `sandbox_paused` error. */
export class SandboxPausedError extends CleanroomError {}
/** The `snapshot_not_found` error. */
export class SnapshotNotFoundError extends CleanroomError {}
/** The `snapshot_in_use` error. */
export class SnapshotInUseError extends CleanroomError {}
/** The `checkpoint_not_found` error (docs/checkpoints.md). */
export class CheckpointNotFoundError extends CleanroomError {}
/** The `checkpoint_corrupt` error. */
export class CheckpointCorruptError extends CleanroomError {}
/** The `checkpoint_incompatible` error. */
export class CheckpointIncompatibleError extends CleanroomError {}
/** The `checkpoint_refused` error. */
export class CheckpointRefusedError extends CleanroomError {}
/** The `volume_not_found` error (docs/volumes.md). */
export class VolumeNotFoundError extends CleanroomError {}
/** The `volume_exists` error. */
export class VolumeExistsError extends CleanroomError {}
/** The `volume_in_use` error. */
export class VolumeInUseError extends CleanroomError {}
/** The `volume_busy` error. */
export class VolumeBusyError extends CleanroomError {}
/** The `volume_mount_invalid` error. */
export class VolumeMountInvalidError extends CleanroomError {}
/** The `cluster_unavailable` error: the cluster's etcd cannot be reached. */
export class ClusterUnavailableError extends CleanroomError {}
/** The `node_name_taken` error. */
export class NodeNameTakenError extends CleanroomError {}
/** The `cluster_disabled` error: the server is not a cluster member. */
export class ClusterDisabledError extends CleanroomError {}
/** The `cluster_identity_invalid` error: a cluster CA or node identity that does not verify. */
export class ClusterIdentityInvalidError extends CleanroomError {}
/** The `host_lost` error: the sandbox's host left the cluster (its lease expired). */
export class HostLostError extends CleanroomError {}
/** The `exposure_not_found` error: no such exposure, or not the caller's. */
export class ExposureNotFoundError extends CleanroomError {}
/** The `exposure_expired` error: the exposure token's expiry passed. */
export class ExposureExpiredError extends CleanroomError {}
/** The `exposure_revoked` error: the exposure was removed. */
export class ExposureRevokedError extends CleanroomError {}
/** The `sandbox_port_closed` error: nothing accepts connections on the sandbox's port. */
export class SandboxPortClosedError extends CleanroomError {}
/** The `pool_not_found` error. */
export class PoolNotFoundError extends CleanroomError {}
/** The `no_ready_sandboxes` error. */
export class NoReadySandboxesError extends CleanroomError {}
/** The `attestation_not_found` error. */
export class AttestationNotFoundError extends CleanroomError {}
/** The `approval_not_found` error. */
export class ApprovalNotFoundError extends CleanroomError {}
/** The `execution_not_interactive` error. */
export class ExecutionNotInteractiveError extends CleanroomError {}
/** The `attestation_invalid` error. */
export class AttestationInvalidError extends CleanroomError {}
/** The `attestation_signature_invalid` error. */
export class AttestationSignatureInvalidError extends CleanroomError {}
/** The `attestation_expired` error. */
export class AttestationExpiredError extends CleanroomError {}
/** The `attestation_not_yet_valid` error. */
export class AttestationNotYetValidError extends CleanroomError {}
/** The `unsafe_archive_entry` error: a tar entry named with `..` or absolutely. */
export class UnsafeArchiveEntryError extends CleanroomError {}
/** The `destination_is_link` error (a download found a link where its destination goes). */
export class DestinationIsLinkError extends CleanroomError {}
/**
 * The `unknown_option` error (SDK-side, never sent by a server): an option name the call
 * does not know, misspelled or from another version; `details.option` names it. An
 * {@link InvalidArgumentError}, so code that catches those catches it too.
 */
export class UnknownOptionError extends InvalidArgumentError {}
/** The `server_unreachable` error. */
export class ServerUnreachableError extends CleanroomError {}
/** The `stream_ended` error. */
export class StreamEndedError extends CleanroomError {}

const BY_CODE: Record<string, new (code: string, message: string, connectCode?: string, details?: Record<string, string>) => CleanroomError> = {
  unauthenticated: UnauthenticatedError,
  permission_denied: PermissionDeniedError,
  resource_exhausted: ResourceExhaustedError,
  sandbox_not_found: SandboxNotFoundError,
  execution_not_found: ExecutionNotFoundError,
  invalid_argument: InvalidArgumentError,
  policy_invalid: PolicyInvalidError,
  policy_conflict: PolicyConflictError,
  sandbox_not_ready: SandboxNotReadyError,
  stdin_not_attached: StdinNotAttachedError,
  stdin_closed: StdinClosedError,
  backend_capability_mismatch: BackendCapabilityMismatchError,
  runtime_launch_failed: RuntimeLaunchFailedError,
  backend_unavailable: BackendUnavailableError,
  runtime_unavailable: RuntimeUnavailableError,
  secret_unavailable: SecretUnavailableError,
  file_not_found: FileNotFoundError,
  file_not_readable: FileNotReadableError,
  image_not_found: ImageNotFoundError,
  image_digest_mismatch: ImageDigestMismatchError,
  registry_unavailable: RegistryUnavailableError,
  registry_unauthorized: RegistryUnauthorizedError,
  image_unsupported: ImageUnsupportedError,
  image_layer_unsafe: ImageLayerUnsafeError,
  image_in_use: ImageInUseError,
  image_too_large: ImageTooLargeError,
  output_expired: OutputExpiredError,
  unimplemented: UnimplementedError,
  internal: InternalError,
  file_exists: FileExistsError,
  file_type_mismatch: FileTypeMismatchError,
  directory_not_empty: DirectoryNotEmptyError,
  upload_not_found: UploadNotFoundError,
  upload_offset_mismatch: UploadOffsetMismatchError,
  deadline_exceeded: DeadlineExceededError,
  canceled: CanceledError,
  unavailable: UnavailableError,
  sandbox_paused: SandboxPausedError,
  snapshot_not_found: SnapshotNotFoundError,
  snapshot_in_use: SnapshotInUseError,
  checkpoint_not_found: CheckpointNotFoundError,
  checkpoint_corrupt: CheckpointCorruptError,
  checkpoint_incompatible: CheckpointIncompatibleError,
  checkpoint_refused: CheckpointRefusedError,
  volume_not_found: VolumeNotFoundError,
  volume_exists: VolumeExistsError,
  volume_in_use: VolumeInUseError,
  volume_busy: VolumeBusyError,
  volume_mount_invalid: VolumeMountInvalidError,
  cluster_unavailable: ClusterUnavailableError,
  node_name_taken: NodeNameTakenError,
  cluster_disabled: ClusterDisabledError,
  cluster_identity_invalid: ClusterIdentityInvalidError,
  host_lost: HostLostError,
  exposure_not_found: ExposureNotFoundError,
  exposure_expired: ExposureExpiredError,
  exposure_revoked: ExposureRevokedError,
  sandbox_port_closed: SandboxPortClosedError,
  pool_not_found: PoolNotFoundError,
  no_ready_sandboxes: NoReadySandboxesError,
  attestation_not_found: AttestationNotFoundError,
  approval_not_found: ApprovalNotFoundError,
  execution_not_interactive: ExecutionNotInteractiveError,
  attestation_invalid: AttestationInvalidError,
  attestation_signature_invalid: AttestationSignatureInvalidError,
  attestation_expired: AttestationExpiredError,
  attestation_not_yet_valid: AttestationNotYetValidError,
  unsafe_archive_entry: UnsafeArchiveEntryError,
  destination_is_link: DestinationIsLinkError,
  server_unreachable: ServerUnreachableError,
  unknown_option: UnknownOptionError,
  stream_ended: StreamEndedError,
};

/** Every code this SDK has a class for. */
export const KNOWN_CODES: readonly string[] = Object.keys(BY_CODE);

/** The typed error for `code` (plain {@link CleanroomError} if unknown). */
export function errorFor(
  code: string,
  message: string,
  connectCode = "",
  details: Record<string, string> = {},
): CleanroomError {
  const C = BY_CODE[code] ?? CleanroomError;
  return new C(code, message, connectCode, details);
}

/** Connect codes by number, as their wire names (`not_found`...). */
function connectCodeName(code: Code): string {
  return (Code[code] ?? "unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * Map any error thrown by a Connect call to the typed error of its ErrorDetail code.
 * Without a detail the Connect code is used; `unavailable` becomes `server_unreachable`
 * as in the CLI. Errors that are already CleanroomErrors pass through.
 */
export function fromConnect(e: unknown): CleanroomError {
  if (e instanceof CleanroomError) return e;
  const ce = ConnectError.from(e);
  const connectCode = connectCodeName(ce.code);
  const [detail] = ce.findDetails(ErrorDetailSchema);
  if (detail !== undefined) {
    return errorFor(detail.code, detail.message, connectCode, { ...detail.details });
  }
  const code = ce.code === Code.Unavailable ? "server_unreachable" : connectCode;
  return errorFor(code, ce.rawMessage, connectCode);
}
