/** Cleanroom TypeScript/Node SDK: sandboxes, commands, files, snapshots, pools, volumes, events, approvals and attestations over the ConnectRPC API. */
export { CERT_PIN_MISMATCH, CleanroomClient, clientFor, type ClientOptions } from "./client.js";
export {
  parseEndpoint,
  parsePin,
  resolveEndpoint,
  resolveTarget,
  type ConnectOptions,
  type Endpoint,
  type Target,
} from "./config.js";
export * from "./errors.js";
export { Files, type FileInfo, type WriteOptions } from "./files.js";
export type { FilesystemUsage, Lifetime, TimeoutOptions, Usage } from "./lifetime.js";
export type { Limits, LimitsInfo, PolicyInput } from "./options.js";
export type { SandboxInfo } from "./info.js";
export type { ExecutionReport } from "./command.js";
export {
  CommandHandle,
  Sandbox,
  withSandbox,
  type CommandOptions,
  type CommandResult,
  type CreateOptions,
  type ExecOptions,
  type ListOptions,
  type NetworkRules,
  type NetworkUpdate,
  type OutputCallback,
  type OutputOptions,
} from "./sandbox.js";
export { Snapshot, type SnapshotInfo } from "./snapshots.js";
export { Pool, type PoolInfo, type PoolOptions, type PoolStats } from "./pools.js";
export {
  ApprovalRequest,
  type ApprovalAnswer,
  type ApprovalAnswerer,
  type EventOptions,
  type Remember,
  type SandboxEventInfo,
} from "./events.js";
export {
  attestationPublicKey,
  PAYLOAD_TYPE,
  verifyAttestation,
  type Attestation,
  type AttestationStatement,
} from "./attestation.js";
export { listImages, pullImage, removeImage, type ImageInfo } from "./images.js";
export { createVolume, getVolume, listVolumes, removeVolume, type VolumeInfo, type VolumeOptions } from "./volumes.js";
export { type VolumeSpec } from "./options.js";
export * as api from "./gen/cleanroom/v1/cleanroom_pb.js";
export * as filesApi from "./gen/cleanroom/v1/files_pb.js";
export * as lifetimeApi from "./gen/cleanroom/v1/lifetime_pb.js";
export * as usageApi from "./gen/cleanroom/v1/usage_pb.js";
export * as snapshotsApi from "./gen/cleanroom/v1/snapshots_pb.js";
export * as poolsApi from "./gen/cleanroom/v1/pools_pb.js";
export * as volumesApi from "./gen/cleanroom/v1/volumes_pb.js";
export * as approvalsApi from "./gen/cleanroom/v1/approvals_pb.js";
export * as attestationApi from "./gen/cleanroom/v1/attestation_pb.js";
