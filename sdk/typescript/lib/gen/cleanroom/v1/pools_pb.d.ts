import type { GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { ResourceLimits, Sandbox } from "./cleanroom_pb.js";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/pools.proto.
 */
export declare const file_cleanroom_v1_pools: GenFile;
/**
 * What every sandbox of the pool is made from. A CreateSandbox whose compiled policy hash,
 * image digest, effective limits and runtime equal a pool's is served from that pool.
 *
 * @generated from message cleanroom.v1.PoolTemplate
 */
export type PoolTemplate = Message<"cleanroom.v1.PoolTemplate"> & {
    /**
     * cleanroom.yaml contents; empty = the built-in deny-all policy.
     *
     * @generated from field: string policy_yaml = 1;
     */
    policyYaml: string;
    /**
     * @generated from field: string image_ref = 2;
     */
    imageRef: string;
    /**
     * @generated from field: cleanroom.v1.ResourceLimits limits = 3;
     */
    limits?: ResourceLimits | undefined;
    /**
     * Isolation runtime (`linux`, `gvisor`), applied to the policy as `sandbox.runtime`;
     * empty = the policy's, else the server's default. One the server lacks (or an unknown
     * name): runtime_unavailable.
     *
     * @generated from field: string runtime = 4;
     */
    runtime: string;
};
/**
 * Describes the message cleanroom.v1.PoolTemplate.
 * Use `create(PoolTemplateSchema)` to create a new message.
 */
export declare const PoolTemplateSchema: GenMessage<PoolTemplate>;
/**
 * @generated from message cleanroom.v1.Autoscaling
 */
export type Autoscaling = Message<"cleanroom.v1.Autoscaling"> & {
    /**
     * @generated from field: bool enabled = 1;
     */
    enabled: boolean;
    /**
     * Keep ready >= ceil(claims in the last interval * headroom_factor), within [min_ready, max_ready].
     *
     * @generated from field: double headroom_factor = 2;
     */
    headroomFactor: number;
    /**
     * @generated from field: uint32 interval_seconds = 3;
     */
    intervalSeconds: number;
};
/**
 * Describes the message cleanroom.v1.Autoscaling.
 * Use `create(AutoscalingSchema)` to create a new message.
 */
export declare const AutoscalingSchema: GenMessage<Autoscaling>;
/**
 * @generated from message cleanroom.v1.Pool
 */
export type Pool = Message<"cleanroom.v1.Pool"> & {
    /**
     * @generated from field: string pool_id = 1;
     */
    poolId: string;
    /**
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: string owner = 3;
     */
    owner: string;
    /**
     * @generated from field: cleanroom.v1.PoolTemplate template = 4;
     */
    template?: PoolTemplate | undefined;
    /**
     * @generated from field: uint32 min_ready = 5;
     */
    minReady: number;
    /**
     * @generated from field: uint32 max_ready = 6;
     */
    maxReady: number;
    /**
     * READY sandboxes older than this are replaced (0 = never).
     *
     * @generated from field: uint32 max_age_seconds = 7;
     */
    maxAgeSeconds: number;
    /**
     * @generated from field: bool reusable = 8;
     */
    reusable: boolean;
    /**
     * @generated from field: cleanroom.v1.Autoscaling autoscaling = 9;
     */
    autoscaling?: Autoscaling | undefined;
    /**
     * @generated from field: string policy_hash = 10;
     */
    policyHash: string;
    /**
     * @generated from field: string image_digest = 11;
     */
    imageDigest: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 12;
     */
    createdAt?: Timestamp | undefined;
};
/**
 * Describes the message cleanroom.v1.Pool.
 * Use `create(PoolSchema)` to create a new message.
 */
export declare const PoolSchema: GenMessage<Pool>;
/**
 * @generated from message cleanroom.v1.PoolStats
 */
export type PoolStats = Message<"cleanroom.v1.PoolStats"> & {
    /**
     * @generated from field: uint32 ready = 1;
     */
    ready: number;
    /**
     * @generated from field: uint32 claimed = 2;
     */
    claimed: number;
    /**
     * @generated from field: uint32 warming = 3;
     */
    warming: number;
    /**
     * @generated from field: double claims_per_minute = 4;
     */
    claimsPerMinute: number;
    /**
     * Server-side claim latency (handler entry to answer built), microseconds.
     *
     * @generated from field: uint64 avg_claim_latency_us = 5;
     */
    avgClaimLatencyUs: bigint;
    /**
     * @generated from field: uint64 p99_claim_latency_us = 6;
     */
    p99ClaimLatencyUs: bigint;
    /**
     * @generated from field: uint64 claims_total = 7;
     */
    claimsTotal: bigint;
    /**
     * @generated from field: uint64 misses_total = 8;
     */
    missesTotal: bigint;
    /**
     * The autoscaler's current target of READY sandboxes.
     *
     * @generated from field: uint32 target_ready = 9;
     */
    targetReady: number;
    /**
     * READY sandboxes found dead (pid 1 gone) at claim, skipped and replaced.
     *
     * @generated from field: uint64 replaced_dead_total = 10;
     */
    replacedDeadTotal: bigint;
};
/**
 * Describes the message cleanroom.v1.PoolStats.
 * Use `create(PoolStatsSchema)` to create a new message.
 */
export declare const PoolStatsSchema: GenMessage<PoolStats>;
/**
 * @generated from message cleanroom.v1.CreatePoolRequest
 */
export type CreatePoolRequest = Message<"cleanroom.v1.CreatePoolRequest"> & {
    /**
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * @generated from field: cleanroom.v1.PoolTemplate template = 2;
     */
    template?: PoolTemplate | undefined;
    /**
     * @generated from field: uint32 min_ready = 3;
     */
    minReady: number;
    /**
     * @generated from field: uint32 max_ready = 4;
     */
    maxReady: number;
    /**
     * @generated from field: uint32 max_age_seconds = 5;
     */
    maxAgeSeconds: number;
    /**
     * @generated from field: bool reusable = 6;
     */
    reusable: boolean;
    /**
     * @generated from field: cleanroom.v1.Autoscaling autoscaling = 7;
     */
    autoscaling?: Autoscaling | undefined;
};
/**
 * Describes the message cleanroom.v1.CreatePoolRequest.
 * Use `create(CreatePoolRequestSchema)` to create a new message.
 */
export declare const CreatePoolRequestSchema: GenMessage<CreatePoolRequest>;
/**
 * @generated from message cleanroom.v1.CreatePoolResponse
 */
export type CreatePoolResponse = Message<"cleanroom.v1.CreatePoolResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Pool pool = 1;
     */
    pool?: Pool | undefined;
};
/**
 * Describes the message cleanroom.v1.CreatePoolResponse.
 * Use `create(CreatePoolResponseSchema)` to create a new message.
 */
export declare const CreatePoolResponseSchema: GenMessage<CreatePoolResponse>;
/**
 * @generated from message cleanroom.v1.ListPoolsRequest
 */
export type ListPoolsRequest = Message<"cleanroom.v1.ListPoolsRequest"> & {};
/**
 * Describes the message cleanroom.v1.ListPoolsRequest.
 * Use `create(ListPoolsRequestSchema)` to create a new message.
 */
export declare const ListPoolsRequestSchema: GenMessage<ListPoolsRequest>;
/**
 * @generated from message cleanroom.v1.ListPoolsResponse
 */
export type ListPoolsResponse = Message<"cleanroom.v1.ListPoolsResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Pool pools = 1;
     */
    pools: Pool[];
    /**
     * @generated from field: repeated cleanroom.v1.PoolStats stats = 2;
     */
    stats: PoolStats[];
};
/**
 * Describes the message cleanroom.v1.ListPoolsResponse.
 * Use `create(ListPoolsResponseSchema)` to create a new message.
 */
export declare const ListPoolsResponseSchema: GenMessage<ListPoolsResponse>;
/**
 * @generated from message cleanroom.v1.GetPoolStatsRequest
 */
export type GetPoolStatsRequest = Message<"cleanroom.v1.GetPoolStatsRequest"> & {
    /**
     * @generated from field: string pool_id = 1;
     */
    poolId: string;
};
/**
 * Describes the message cleanroom.v1.GetPoolStatsRequest.
 * Use `create(GetPoolStatsRequestSchema)` to create a new message.
 */
export declare const GetPoolStatsRequestSchema: GenMessage<GetPoolStatsRequest>;
/**
 * @generated from message cleanroom.v1.GetPoolStatsResponse
 */
export type GetPoolStatsResponse = Message<"cleanroom.v1.GetPoolStatsResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Pool pool = 1;
     */
    pool?: Pool | undefined;
    /**
     * @generated from field: cleanroom.v1.PoolStats stats = 2;
     */
    stats?: PoolStats | undefined;
};
/**
 * Describes the message cleanroom.v1.GetPoolStatsResponse.
 * Use `create(GetPoolStatsResponseSchema)` to create a new message.
 */
export declare const GetPoolStatsResponseSchema: GenMessage<GetPoolStatsResponse>;
/**
 * @generated from message cleanroom.v1.ClaimSandboxRequest
 */
export type ClaimSandboxRequest = Message<"cleanroom.v1.ClaimSandboxRequest"> & {
    /**
     * @generated from field: string pool_id = 1;
     */
    poolId: string;
    /**
     * Agent identity and delegation chain (see CreateSandboxRequest).
     *
     * @generated from field: string agent_public_key = 2;
     */
    agentPublicKey: string;
    /**
     * @generated from field: repeated string delegation_chain = 3;
     */
    delegationChain: string[];
};
/**
 * Describes the message cleanroom.v1.ClaimSandboxRequest.
 * Use `create(ClaimSandboxRequestSchema)` to create a new message.
 */
export declare const ClaimSandboxRequestSchema: GenMessage<ClaimSandboxRequest>;
/**
 * @generated from message cleanroom.v1.ClaimSandboxResponse
 */
export type ClaimSandboxResponse = Message<"cleanroom.v1.ClaimSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
    /**
     * Server-side time from request to bound sandbox, microseconds.
     *
     * @generated from field: uint64 claim_latency_us = 2;
     */
    claimLatencyUs: bigint;
    /**
     * The DSSE envelope signed at claim.
     *
     * @generated from field: string attestation_envelope_json = 3;
     */
    attestationEnvelopeJson: string;
};
/**
 * Describes the message cleanroom.v1.ClaimSandboxResponse.
 * Use `create(ClaimSandboxResponseSchema)` to create a new message.
 */
export declare const ClaimSandboxResponseSchema: GenMessage<ClaimSandboxResponse>;
/**
 * @generated from message cleanroom.v1.ReleaseSandboxRequest
 */
export type ReleaseSandboxRequest = Message<"cleanroom.v1.ReleaseSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * Ask for the slot to be reused (honoured when the pool is reusable).
     *
     * @generated from field: bool reusable = 2;
     */
    reusable: boolean;
};
/**
 * Describes the message cleanroom.v1.ReleaseSandboxRequest.
 * Use `create(ReleaseSandboxRequestSchema)` to create a new message.
 */
export declare const ReleaseSandboxRequestSchema: GenMessage<ReleaseSandboxRequest>;
/**
 * @generated from message cleanroom.v1.ReleaseSandboxResponse
 */
export type ReleaseSandboxResponse = Message<"cleanroom.v1.ReleaseSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.ReleaseSandboxResponse.
 * Use `create(ReleaseSandboxResponseSchema)` to create a new message.
 */
export declare const ReleaseSandboxResponseSchema: GenMessage<ReleaseSandboxResponse>;
/**
 * @generated from message cleanroom.v1.DestroyPoolRequest
 */
export type DestroyPoolRequest = Message<"cleanroom.v1.DestroyPoolRequest"> & {
    /**
     * @generated from field: string pool_id = 1;
     */
    poolId: string;
};
/**
 * Describes the message cleanroom.v1.DestroyPoolRequest.
 * Use `create(DestroyPoolRequestSchema)` to create a new message.
 */
export declare const DestroyPoolRequestSchema: GenMessage<DestroyPoolRequest>;
/**
 * @generated from message cleanroom.v1.DestroyPoolResponse
 */
export type DestroyPoolResponse = Message<"cleanroom.v1.DestroyPoolResponse"> & {};
/**
 * Describes the message cleanroom.v1.DestroyPoolResponse.
 * Use `create(DestroyPoolResponseSchema)` to create a new message.
 */
export declare const DestroyPoolResponseSchema: GenMessage<DestroyPoolResponse>;
/**
 * Pools are owned by the principal that created them; others get `pool_not_found`.
 *
 * @generated from service cleanroom.v1.WarmPoolService
 */
export declare const WarmPoolService: GenService<{
    /**
     * @generated from rpc cleanroom.v1.WarmPoolService.CreatePool
     */
    createPool: {
        methodKind: "unary";
        input: typeof CreatePoolRequestSchema;
        output: typeof CreatePoolResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.WarmPoolService.ListPools
     */
    listPools: {
        methodKind: "unary";
        input: typeof ListPoolsRequestSchema;
        output: typeof ListPoolsResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.WarmPoolService.GetPoolStats
     */
    getPoolStats: {
        methodKind: "unary";
        input: typeof GetPoolStatsRequestSchema;
        output: typeof GetPoolStatsResponseSchema;
    };
    /**
     * Take a READY sandbox (`no_ready_sandboxes` when there is none); it becomes the caller's.
     *
     * @generated from rpc cleanroom.v1.WarmPoolService.ClaimSandbox
     */
    claimSandbox: {
        methodKind: "unary";
        input: typeof ClaimSandboxRequestSchema;
        output: typeof ClaimSandboxResponseSchema;
    };
    /**
     * Give a claimed sandbox back: destroyed; its slot is re-warmed with a pristine sandbox.
     *
     * @generated from rpc cleanroom.v1.WarmPoolService.ReleaseSandbox
     */
    releaseSandbox: {
        methodKind: "unary";
        input: typeof ReleaseSandboxRequestSchema;
        output: typeof ReleaseSandboxResponseSchema;
    };
    /**
     * Destroy the pool and every sandbox it still holds READY (claimed ones stay the claimers').
     *
     * @generated from rpc cleanroom.v1.WarmPoolService.DestroyPool
     */
    destroyPool: {
        methodKind: "unary";
        input: typeof DestroyPoolRequestSchema;
        output: typeof DestroyPoolResponseSchema;
    };
}>;
