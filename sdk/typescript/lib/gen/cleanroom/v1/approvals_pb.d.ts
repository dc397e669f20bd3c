import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/approvals.proto.
 */
export declare const file_cleanroom_v1_approvals: GenFile;
/**
 * @generated from message cleanroom.v1.EgressRequest
 */
export type EgressRequest = Message<"cleanroom.v1.EgressRequest"> & {
    /**
     * @generated from field: string request_id = 1;
     */
    requestId: string;
    /**
     * @generated from field: string sandbox_id = 2;
     */
    sandboxId: string;
    /**
     * @generated from field: string host = 3;
     */
    host: string;
    /**
     * @generated from field: uint32 port = 4;
     */
    port: number;
    /**
     * `tcp`, `connect`, `http-proxy`.
     *
     * @generated from field: string protocol = 5;
     */
    protocol: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 6;
     */
    createdAt?: Timestamp | undefined;
    /**
     * When the request is denied with `approval_timeout` unless answered.
     *
     * @generated from field: google.protobuf.Timestamp expires_at = 7;
     */
    expiresAt?: Timestamp | undefined;
};
/**
 * Describes the message cleanroom.v1.EgressRequest.
 * Use `create(EgressRequestSchema)` to create a new message.
 */
export declare const EgressRequestSchema: GenMessage<EgressRequest>;
/**
 * @generated from message cleanroom.v1.ListEgressRequestsRequest
 */
export type ListEgressRequestsRequest = Message<"cleanroom.v1.ListEgressRequestsRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.ListEgressRequestsRequest.
 * Use `create(ListEgressRequestsRequestSchema)` to create a new message.
 */
export declare const ListEgressRequestsRequestSchema: GenMessage<ListEgressRequestsRequest>;
/**
 * @generated from message cleanroom.v1.ListEgressRequestsResponse
 */
export type ListEgressRequestsResponse = Message<"cleanroom.v1.ListEgressRequestsResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.EgressRequest requests = 1;
     */
    requests: EgressRequest[];
    /**
     * host:port answered with remember=sandbox.
     *
     * @generated from field: repeated string approved = 2;
     */
    approved: string[];
    /**
     * @generated from field: repeated string refused = 3;
     */
    refused: string[];
};
/**
 * Describes the message cleanroom.v1.ListEgressRequestsResponse.
 * Use `create(ListEgressRequestsResponseSchema)` to create a new message.
 */
export declare const ListEgressRequestsResponseSchema: GenMessage<ListEgressRequestsResponse>;
/**
 * @generated from message cleanroom.v1.DecideEgressRequest
 */
export type DecideEgressRequest = Message<"cleanroom.v1.DecideEgressRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string request_id = 2;
     */
    requestId: string;
    /**
     * @generated from field: cleanroom.v1.EgressVerdict verdict = 3;
     */
    verdict: EgressVerdict;
    /**
     * @generated from field: cleanroom.v1.EgressRemember remember = 4;
     */
    remember: EgressRemember;
};
/**
 * Describes the message cleanroom.v1.DecideEgressRequest.
 * Use `create(DecideEgressRequestSchema)` to create a new message.
 */
export declare const DecideEgressRequestSchema: GenMessage<DecideEgressRequest>;
/**
 * @generated from message cleanroom.v1.DecideEgressResponse
 */
export type DecideEgressResponse = Message<"cleanroom.v1.DecideEgressResponse"> & {
    /**
     * The request that was answered.
     *
     * @generated from field: cleanroom.v1.EgressRequest request = 1;
     */
    request?: EgressRequest | undefined;
};
/**
 * Describes the message cleanroom.v1.DecideEgressResponse.
 * Use `create(DecideEgressResponseSchema)` to create a new message.
 */
export declare const DecideEgressResponseSchema: GenMessage<DecideEgressResponse>;
/**
 * @generated from enum cleanroom.v1.EgressVerdict
 */
export declare enum EgressVerdict {
    /**
     * @generated from enum value: EGRESS_VERDICT_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: EGRESS_VERDICT_ALLOW = 1;
     */
    ALLOW = 1,
    /**
     * @generated from enum value: EGRESS_VERDICT_DENY = 2;
     */
    DENY = 2
}
/**
 * Describes the enum cleanroom.v1.EgressVerdict.
 */
export declare const EgressVerdictSchema: GenEnum<EgressVerdict>;
/**
 * @generated from enum cleanroom.v1.EgressRemember
 */
export declare enum EgressRemember {
    /**
     * Same as ONCE.
     *
     * @generated from enum value: EGRESS_REMEMBER_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * This request only (and the connections waiting on it).
     *
     * @generated from enum value: EGRESS_REMEMBER_ONCE = 1;
     */
    ONCE = 1,
    /**
     * Every later connection of the sandbox to the same host:port gets the same answer
     * without asking; shown in GetSandbox as approved/refused egress.
     *
     * @generated from enum value: EGRESS_REMEMBER_SANDBOX = 2;
     */
    SANDBOX = 2
}
/**
 * Describes the enum cleanroom.v1.EgressRemember.
 */
export declare const EgressRememberSchema: GenEnum<EgressRemember>;
/**
 * @generated from service cleanroom.v1.ApprovalService
 */
export declare const ApprovalService: GenService<{
    /**
     * Open approval requests of a sandbox, oldest first, and its remembered answers.
     *
     * @generated from rpc cleanroom.v1.ApprovalService.ListEgressRequests
     */
    listEgressRequests: {
        methodKind: "unary";
        input: typeof ListEgressRequestsRequestSchema;
        output: typeof ListEgressRequestsResponseSchema;
    };
    /**
     * Answer one request. Errors: `sandbox_not_found`, `approval_not_found` (never asked,
     * already answered, or timed out), `invalid_argument` (no verdict).
     *
     * @generated from rpc cleanroom.v1.ApprovalService.DecideEgress
     */
    decideEgress: {
        methodKind: "unary";
        input: typeof DecideEgressRequestSchema;
        output: typeof DecideEgressResponseSchema;
    };
}>;
