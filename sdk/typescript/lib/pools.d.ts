/**
 * Warm pools (docs/pools.md): READY sandboxes kept for a template (policy, image, limits)
 * and handed out by {@link Pool.claim} in well under a millisecond of server time. A
 * claimed sandbox is the caller's; {@link Sandbox.release} gives it back (destroyed, its
 * slot re-warmed). Pools are owned by their creator (others get `pool_not_found`).
 */
import { type CleanroomClient, type ClientOptions } from "./client.js";
import { type Limits, type LimitsInfo, type PolicyInput } from "./options.js";
import { Sandbox } from "./sandbox.js";
/** Options of {@link Pool.create}. */
export interface PoolOptions extends ClientOptions {
    name?: string;
    /** Policy of every sandbox of the pool: YAML text, a file path or an object. */
    policy?: PolicyInput;
    /** Digest-pinned OCI image reference; empty: the host-view root. */
    image?: string;
    limits?: Limits;
    /** Backend name; empty: the server's. */
    runtime?: string;
    minReady?: number;
    maxReady?: number;
    /** READY sandboxes older than this are replaced (0: never). */
    maxAgeSeconds?: number;
    reusable?: boolean;
    autoscaling?: {
        enabled?: boolean;
        headroomFactor?: number;
        intervalSeconds?: number;
    };
}
/** A pool's definition. */
export interface PoolInfo {
    id: string;
    name: string;
    owner: string;
    imageRef: string;
    limits?: LimitsInfo;
    runtime: string;
    minReady: number;
    maxReady: number;
    maxAgeSeconds: number;
    reusable: boolean;
    autoscaling: {
        enabled: boolean;
        headroomFactor: number;
        intervalSeconds: number;
    };
    policyHash: string;
    imageDigest: string;
    createdAt?: Date;
}
/** A pool's counters now. Latencies are server-side, in microseconds. */
export interface PoolStats {
    ready: number;
    claimed: number;
    warming: number;
    claimsPerMinute: number;
    avgClaimLatencyUs: number;
    p99ClaimLatencyUs: number;
    claimsTotal: number;
    missesTotal: number;
    /** The autoscaler's current target of READY sandboxes. */
    targetReady: number;
    /** READY sandboxes found dead at claim, skipped and replaced. */
    replacedDeadTotal: number;
}
/** A warm pool on a server. */
export declare class Pool {
    readonly client: CleanroomClient;
    readonly info: PoolInfo;
    private constructor();
    get id(): string;
    /** Create a pool; it starts warming at once. */
    static create(opts?: PoolOptions): Promise<Pool>;
    /** A pool of yours by id (`PoolNotFoundError` otherwise). */
    static get(poolId: string, opts?: ClientOptions): Promise<Pool>;
    /** Your pools, each with its counters. */
    static list(opts?: ClientOptions): Promise<{
        pool: Pool;
        stats: PoolStats;
    }[]>;
    /** The pool's counters now. */
    stats(): Promise<PoolStats>;
    /**
     * Take a READY sandbox (`NoReadySandboxesError` when none is); it becomes yours.
     * `claimLatencyUs` is the server's time for the claim.
     */
    claim(o?: {
        agentPublicKey?: string;
        delegationChain?: string[];
    }): Promise<Sandbox & {
        claimLatencyUs: number;
        attestationEnvelopeJson: string;
    }>;
    /** Destroy the pool and the READY sandboxes it holds (claimed ones stay the claimers'). */
    destroy(): Promise<void>;
}
