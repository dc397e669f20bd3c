import type { Sandbox as SandboxMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";
/** When a sandbox expires, and why it stopped. */
export interface Lifetime {
    /** TTL in seconds (0: none). */
    ttlSeconds: number;
    /** When the TTL ends (undefined: no TTL). */
    expiresAt?: Date;
    /** Idle timeout in seconds (0: none). */
    idleTimeoutSeconds: number;
    lastActivityAt?: Date;
    /** Why a stopped sandbox stopped (`ttl_expired`, `idle_timeout`, `terminated`…); empty while live. */
    stopReason: string;
    /** Seconds idle after which the sandbox is suspended (0: never). */
    suspendAfterSeconds: number;
    /** When it was suspended for being idle (undefined: it is not suspended). */
    suspendedAt?: Date;
}
/** One writable filesystem of the sandbox, by its path inside the sandbox. */
export interface FilesystemUsage {
    path: string;
    usedBytes: number;
    sizeBytes: number;
}
/** A live sandbox's resource usage. */
export interface Usage {
    sampledAt?: Date;
    /** CPU time of every process of the sandbox, user + system. */
    cpuUsec: number;
    memoryBytes: number;
    memoryPeakBytes: number;
    pids: number;
    filesystems: FilesystemUsage[];
    /** Bytes through the egress gateway: sent by the sandbox (tx), received (rx). */
    networkTxBytes: number;
    networkRxBytes: number;
}
/** Options of {@link Sandbox.setTimeout}. */
export interface TimeoutOptions {
    /** The sandbox now expires this many seconds from now. */
    ttl?: number;
    /** New idle timeout in seconds. */
    idleTimeout?: number;
    clearTtl?: boolean;
    clearIdleTimeout?: boolean;
}
/** Whole seconds >= 1 as the proto's uint64 (undefined: 0n, "not given"). */
export declare function seconds(v: number | undefined, name: string): bigint;
/** The `SetSandboxTimeout` request fields; at least one change must be asked for. */
export declare function timeoutFields(o: TimeoutOptions): {
    ttlSeconds: bigint;
    idleTimeoutSeconds: bigint;
    clearTtl: boolean;
    clearIdleTimeout: boolean;
};
export declare function lifetimeOf(s: SandboxMessage): Lifetime;
/** Undefined when the server reports no usage (a sandbox that is not live). */
export declare function usageOf(s: SandboxMessage): Usage | undefined;
