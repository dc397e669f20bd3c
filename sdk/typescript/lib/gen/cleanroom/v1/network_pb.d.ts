import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/network.proto.
 */
export declare const file_cleanroom_v1_network: GenFile;
/**
 * @generated from message cleanroom.v1.UpdateSandboxNetworkRequest
 */
export type UpdateSandboxNetworkRequest = Message<"cleanroom.v1.UpdateSandboxNetworkRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * `HOST[:PORT]` (no port: 80 and 443); HOST exact or `*.suffix`, as in the policy.
     *
     * @generated from field: repeated string allow = 2;
     */
    allow: string[];
    /**
     * `HOST` (every port).
     *
     * @generated from field: repeated string deny = 3;
     */
    deny: string[];
    /**
     * Drop every live rule first: back to the policy's rules.
     *
     * @generated from field: bool reset = 4;
     */
    reset: boolean;
    /**
     * Also end established connections to destinations no longer allowed.
     *
     * @generated from field: bool cut = 5;
     */
    cut: boolean;
};
/**
 * Describes the message cleanroom.v1.UpdateSandboxNetworkRequest.
 * Use `create(UpdateSandboxNetworkRequestSchema)` to create a new message.
 */
export declare const UpdateSandboxNetworkRequestSchema: GenMessage<UpdateSandboxNetworkRequest>;
/**
 * @generated from message cleanroom.v1.UpdateSandboxNetworkResponse
 */
export type UpdateSandboxNetworkResponse = Message<"cleanroom.v1.UpdateSandboxNetworkResponse"> & {
    /**
     * `sha256:<hex>` of the effective rule set (policy plus live rules).
     *
     * @generated from field: string effective_rules_hash = 1;
     */
    effectiveRulesHash: string;
    /**
     * The live rules now: allow as `host:port[,port]`, deny as hosts.
     *
     * @generated from field: repeated string live_allow = 2;
     */
    liveAllow: string[];
    /**
     * @generated from field: repeated string live_deny = 3;
     */
    liveDeny: string[];
    /**
     * The compiled policy's hash (unchanged).
     *
     * @generated from field: string policy_hash = 4;
     */
    policyHash: string;
};
/**
 * Describes the message cleanroom.v1.UpdateSandboxNetworkResponse.
 * Use `create(UpdateSandboxNetworkResponseSchema)` to create a new message.
 */
export declare const UpdateSandboxNetworkResponseSchema: GenMessage<UpdateSandboxNetworkResponse>;
/**
 * @generated from service cleanroom.v1.NetworkService
 */
export declare const NetworkService: GenService<{
    /**
     * Change the live rules of a sandbox the caller owns (or any, for an admin; others get
     * `sandbox_not_found`). Applied in order: `reset`, then `deny`, then `allow`; every new
     * connection is judged by the result once this returns; with `cut`, established
     * connections to destinations the result denies are ended too. Deny wins over allow: an
     * allow that a deny covers is refused. Errors: `sandbox_not_found`, `sandbox_not_ready`
     * (no running network), `policy_invalid` (a malformed host or port), `policy_conflict`
     * (an allow a deny covers, or under dangerously_allow_all), `invalid_argument` (nothing
     * to change, too many rules).
     *
     * @generated from rpc cleanroom.v1.NetworkService.UpdateSandboxNetwork
     */
    updateSandboxNetwork: {
        methodKind: "unary";
        input: typeof UpdateSandboxNetworkRequestSchema;
        output: typeof UpdateSandboxNetworkResponseSchema;
    };
}>;
