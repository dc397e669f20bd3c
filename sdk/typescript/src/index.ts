/** Cleanroom TypeScript/Node SDK: sandboxes, commands and files over the ConnectRPC API. */
export { CERT_PIN_MISMATCH, CleanroomClient } from "./client.js";
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
export {
  CommandHandle,
  Sandbox,
  withSandbox,
  type CommandOptions,
  type CommandResult,
  type CreateOptions,
  type OutputCallback,
  type OutputOptions,
} from "./sandbox.js";
export * as api from "./gen/cleanroom/v1/cleanroom_pb.js";
export * as filesApi from "./gen/cleanroom/v1/files_pb.js";
export * as lifetimeApi from "./gen/cleanroom/v1/lifetime_pb.js";
export * as usageApi from "./gen/cleanroom/v1/usage_pb.js";
