import type { GenFile, GenMessage } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/usage.proto.
 */
export declare const file_cleanroom_v1_usage: GenFile;
/**
 * A live sandbox's resource usage (seed 002 `/status`), read when asked: cgroup counters
 * (v2, or the v1 cpuacct/memory/pids controllers), the writable filesystems' usage, and
 * the egress gateway's byte counters.
 *
 * @generated from message cleanroom.v1.SandboxUsage
 */
export type SandboxUsage = Message<"cleanroom.v1.SandboxUsage"> & {
    /**
     * @generated from field: google.protobuf.Timestamp sampled_at = 1;
     */
    sampledAt?: Timestamp | undefined;
    /**
     * CPU time used by every process of the sandbox, user + system, in microseconds.
     *
     * @generated from field: uint64 cpu_usec = 2;
     */
    cpuUsec: bigint;
    /**
     * Memory charged to the sandbox now, and the peak (0 when the kernel does not say).
     *
     * @generated from field: uint64 memory_bytes = 3;
     */
    memoryBytes: bigint;
    /**
     * @generated from field: uint64 memory_peak_bytes = 4;
     */
    memoryPeakBytes: bigint;
    /**
     * Processes (tasks) in the sandbox now.
     *
     * @generated from field: uint64 pids = 5;
     */
    pids: bigint;
    /**
     * @generated from field: repeated cleanroom.v1.FilesystemUsage filesystems = 6;
     */
    filesystems: FilesystemUsage[];
    /**
     * Bytes the sandbox sent (tx) and received (rx) through the egress gateway, including
     * DNS answered by the gateway.
     *
     * @generated from field: uint64 network_tx_bytes = 7;
     */
    networkTxBytes: bigint;
    /**
     * @generated from field: uint64 network_rx_bytes = 8;
     */
    networkRxBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.SandboxUsage.
 * Use `create(SandboxUsageSchema)` to create a new message.
 */
export declare const SandboxUsageSchema: GenMessage<SandboxUsage>;
/**
 * One writable filesystem of the sandbox, by its path inside the guest.
 *
 * @generated from message cleanroom.v1.FilesystemUsage
 */
export type FilesystemUsage = Message<"cleanroom.v1.FilesystemUsage"> & {
    /**
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * @generated from field: uint64 used_bytes = 2;
     */
    usedBytes: bigint;
    /**
     * @generated from field: uint64 size_bytes = 3;
     */
    sizeBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.FilesystemUsage.
 * Use `create(FilesystemUsageSchema)` to create a new message.
 */
export declare const FilesystemUsageSchema: GenMessage<FilesystemUsage>;
