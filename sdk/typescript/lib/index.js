/** Cleanroom TypeScript/Node SDK: sandboxes, commands, files, snapshots, pools, events, approvals and attestations over the ConnectRPC API. */
export { CERT_PIN_MISMATCH, CleanroomClient, clientFor } from "./client.js";
export { parseEndpoint, parsePin, resolveEndpoint, resolveTarget, } from "./config.js";
export * from "./errors.js";
export { Files } from "./files.js";
export { CommandHandle, Sandbox, withSandbox, } from "./sandbox.js";
export { Snapshot } from "./snapshots.js";
export { Pool } from "./pools.js";
export { ApprovalRequest, } from "./events.js";
export { attestationPublicKey, PAYLOAD_TYPE, verifyAttestation, } from "./attestation.js";
export { listImages, pullImage, removeImage } from "./images.js";
export * as api from "./gen/cleanroom/v1/cleanroom_pb.js";
export * as filesApi from "./gen/cleanroom/v1/files_pb.js";
export * as lifetimeApi from "./gen/cleanroom/v1/lifetime_pb.js";
export * as usageApi from "./gen/cleanroom/v1/usage_pb.js";
export * as snapshotsApi from "./gen/cleanroom/v1/snapshots_pb.js";
export * as poolsApi from "./gen/cleanroom/v1/pools_pb.js";
export * as approvalsApi from "./gen/cleanroom/v1/approvals_pb.js";
export * as attestationApi from "./gen/cleanroom/v1/attestation_pb.js";
