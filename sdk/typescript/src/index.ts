/** Cleanroom TypeScript/Node SDK: sandboxes, commands and files over the ConnectRPC API. */
export { CleanroomClient } from "./client.js";
export {
  parseEndpoint,
  resolveEndpoint,
  resolveTarget,
  type ConnectOptions,
  type Endpoint,
  type Target,
} from "./config.js";
export * from "./errors.js";
export { Files, type FileInfo, type WriteOptions } from "./files.js";
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
