import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Sandbox } from "./cleanroom_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/lifetime.proto.
 */
export declare const file_cleanroom_v1_lifetime: GenFile;
/**
 * @generated from message cleanroom.v1.SetSandboxTimeoutRequest
 */
export type SetSandboxTimeoutRequest = Message<"cleanroom.v1.SetSandboxTimeoutRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * The sandbox now expires this many seconds from now (1 .. 366 days); 0 leaves the TTL
     * as it is.
     *
     * @generated from field: uint64 ttl_seconds = 2;
     */
    ttlSeconds: bigint;
    /**
     * New idle timeout in seconds (1 .. 366 days); 0 leaves it as it is.
     *
     * @generated from field: uint64 idle_timeout_seconds = 3;
     */
    idleTimeoutSeconds: bigint;
    /**
     * Remove the TTL (the sandbox lives until removed or idle); ttl_seconds must be 0.
     *
     * @generated from field: bool clear_ttl = 4;
     */
    clearTtl: boolean;
    /**
     * Remove the idle timeout; idle_timeout_seconds must be 0.
     *
     * @generated from field: bool clear_idle_timeout = 5;
     */
    clearIdleTimeout: boolean;
};
/**
 * Describes the message cleanroom.v1.SetSandboxTimeoutRequest.
 * Use `create(SetSandboxTimeoutRequestSchema)` to create a new message.
 */
export declare const SetSandboxTimeoutRequestSchema: GenMessage<SetSandboxTimeoutRequest>;
/**
 * @generated from message cleanroom.v1.SetSandboxTimeoutResponse
 */
export type SetSandboxTimeoutResponse = Message<"cleanroom.v1.SetSandboxTimeoutResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.SetSandboxTimeoutResponse.
 * Use `create(SetSandboxTimeoutResponseSchema)` to create a new message.
 */
export declare const SetSandboxTimeoutResponseSchema: GenMessage<SetSandboxTimeoutResponse>;
/**
 * Sandbox lifetimes: extend (or shorten) a sandbox's TTL for a long job, change its idle
 * timeout. See docs/api.md ("Lifetimes").
 *
 * @generated from service cleanroom.v1.SandboxLifetimeService
 */
export declare const SandboxLifetimeService: GenService<{
    /**
     * @generated from rpc cleanroom.v1.SandboxLifetimeService.SetSandboxTimeout
     */
    setSandboxTimeout: {
        methodKind: "unary";
        input: typeof SetSandboxTimeoutRequestSchema;
        output: typeof SetSandboxTimeoutResponseSchema;
    };
}>;
