import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/inbound.proto.
 */
export declare const file_cleanroom_v1_inbound: GenFile;
/**
 * One exposed port.
 *
 * @generated from message cleanroom.v1.SandboxExposure
 */
export type SandboxExposure = Message<"cleanroom.v1.SandboxExposure"> & {
    /**
     * `exp_<32 hex>`.
     *
     * @generated from field: string id = 1;
     */
    id: string;
    /**
     * @generated from field: string sandbox_id = 2;
     */
    sandboxId: string;
    /**
     * @generated from field: uint32 port = 3;
     */
    port: number;
    /**
     * The path to append to the server's base URL, token included:
     * `/_sandbox/<id>/?cleanroom_token=<token>`.
     *
     * @generated from field: string path = 4;
     */
    path: string;
    /**
     * The signed token (`<expires_unix>.<mac>`); also accepted as the `x-cleanroom-token`
     * header.
     *
     * @generated from field: string token = 5;
     */
    token: string;
    /**
     * Unix seconds.
     *
     * @generated from field: int64 created_at = 6;
     */
    createdAt: bigint;
    /**
     * @generated from field: int64 expires_at = 7;
     */
    expiresAt: bigint;
    /**
     * The principal who exposed it.
     *
     * @generated from field: string created_by = 8;
     */
    createdBy: string;
    /**
     * The complete URL, token included, when the server serves exposures at host names
     * of their own (`serve --preview-domain`: `http://exp-<32 hex>.<domain>:<port>/?…`):
     * open it as is. Empty otherwise: append `path` to the server's base URL.
     *
     * @generated from field: string url = 9;
     */
    url: string;
};
/**
 * Describes the message cleanroom.v1.SandboxExposure.
 * Use `create(SandboxExposureSchema)` to create a new message.
 */
export declare const SandboxExposureSchema: GenMessage<SandboxExposure>;
/**
 * @generated from message cleanroom.v1.ExposeSandboxPortRequest
 */
export type ExposeSandboxPortRequest = Message<"cleanroom.v1.ExposeSandboxPortRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: uint32 port = 2;
     */
    port: number;
    /**
     * Lifetime of the exposure and its token (0: the server's default, one hour).
     *
     * @generated from field: uint64 ttl_seconds = 3;
     */
    ttlSeconds: bigint;
};
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortRequest.
 * Use `create(ExposeSandboxPortRequestSchema)` to create a new message.
 */
export declare const ExposeSandboxPortRequestSchema: GenMessage<ExposeSandboxPortRequest>;
/**
 * @generated from message cleanroom.v1.ExposeSandboxPortResponse
 */
export type ExposeSandboxPortResponse = Message<"cleanroom.v1.ExposeSandboxPortResponse"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxExposure exposure = 1;
     */
    exposure?: SandboxExposure | undefined;
};
/**
 * Describes the message cleanroom.v1.ExposeSandboxPortResponse.
 * Use `create(ExposeSandboxPortResponseSchema)` to create a new message.
 */
export declare const ExposeSandboxPortResponseSchema: GenMessage<ExposeSandboxPortResponse>;
/**
 * @generated from message cleanroom.v1.UnexposeSandboxPortRequest
 */
export type UnexposeSandboxPortRequest = Message<"cleanroom.v1.UnexposeSandboxPortRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * A port number or an exposure id.
     *
     * @generated from field: string target = 2;
     */
    target: string;
};
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortRequest.
 * Use `create(UnexposeSandboxPortRequestSchema)` to create a new message.
 */
export declare const UnexposeSandboxPortRequestSchema: GenMessage<UnexposeSandboxPortRequest>;
/**
 * @generated from message cleanroom.v1.UnexposeSandboxPortResponse
 */
export type UnexposeSandboxPortResponse = Message<"cleanroom.v1.UnexposeSandboxPortResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.SandboxExposure removed = 1;
     */
    removed: SandboxExposure[];
};
/**
 * Describes the message cleanroom.v1.UnexposeSandboxPortResponse.
 * Use `create(UnexposeSandboxPortResponseSchema)` to create a new message.
 */
export declare const UnexposeSandboxPortResponseSchema: GenMessage<UnexposeSandboxPortResponse>;
/**
 * @generated from message cleanroom.v1.ListSandboxExposuresRequest
 */
export type ListSandboxExposuresRequest = Message<"cleanroom.v1.ListSandboxExposuresRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresRequest.
 * Use `create(ListSandboxExposuresRequestSchema)` to create a new message.
 */
export declare const ListSandboxExposuresRequestSchema: GenMessage<ListSandboxExposuresRequest>;
/**
 * @generated from message cleanroom.v1.ListSandboxExposuresResponse
 */
export type ListSandboxExposuresResponse = Message<"cleanroom.v1.ListSandboxExposuresResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.SandboxExposure exposures = 1;
     */
    exposures: SandboxExposure[];
};
/**
 * Describes the message cleanroom.v1.ListSandboxExposuresResponse.
 * Use `create(ListSandboxExposuresResponseSchema)` to create a new message.
 */
export declare const ListSandboxExposuresResponseSchema: GenMessage<ListSandboxExposuresResponse>;
/**
 * @generated from service cleanroom.v1.InboundService
 */
export declare const InboundService: GenService<{
    /**
     * Expose `port` of a sandbox the caller owns (or any, for an admin; others get
     * `sandbox_not_found`). Exposing a port that is already exposed returns that exposure.
     * Errors: `sandbox_not_found`, `sandbox_not_ready` (ended), `invalid_argument` (port,
     * ttl), `backend_capability_mismatch` (the runtime cannot open connections into the
     * sandbox: `inbound_connections`), `resource_exhausted` (too many exposures).
     *
     * @generated from rpc cleanroom.v1.InboundService.ExposeSandboxPort
     */
    exposeSandboxPort: {
        methodKind: "unary";
        input: typeof ExposeSandboxPortRequestSchema;
        output: typeof ExposeSandboxPortResponseSchema;
    };
    /**
     * Remove exposures of a sandbox by port or exposure id: their tokens stop working at
     * once (`exposure_revoked`). Errors: `sandbox_not_found`, `exposure_not_found`.
     *
     * @generated from rpc cleanroom.v1.InboundService.UnexposeSandboxPort
     */
    unexposeSandboxPort: {
        methodKind: "unary";
        input: typeof UnexposeSandboxPortRequestSchema;
        output: typeof UnexposeSandboxPortResponseSchema;
    };
    /**
     * The exposures of a sandbox, with their tokens.
     *
     * @generated from rpc cleanroom.v1.InboundService.ListSandboxExposures
     */
    listSandboxExposures: {
        methodKind: "unary";
        input: typeof ListSandboxExposuresRequestSchema;
        output: typeof ListSandboxExposuresResponseSchema;
    };
}>;
