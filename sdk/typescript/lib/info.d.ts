/**
 * Plain, typed views of the API's records for callers: status names as the CLI prints
 * them (`ready`, `paused`), times as `Date`, counts as `number`, with the raw message kept
 * in `raw` for anything not lifted. Shared by sandboxes, snapshots and pools.
 */
import { type Timestamp } from "@bufbuild/protobuf/wkt";
import { type Sandbox as SandboxMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";
/** `SANDBOX_STATUS_READY` → `ready` (enum names as the CLI prints them). */
export declare function enumName(names: Record<number, string>, v: number): string;
export declare function dateOf(t: Timestamp | undefined): Date | undefined;
/** A sandbox as listed or looked up. */
export interface SandboxInfo {
    id: string;
    /** `provisioning`, `ready`, `paused`, `stopping`, `stopped`, `failed`, `checkpointed`… */
    status: string;
    labels: Record<string, string>;
    backend: string;
    policyHash: string;
    imageRef: string;
    imageDigest: string;
    createdAt?: Date;
    /** The warm pool it was claimed from (empty: created fresh). */
    poolId: string;
    /** Why a stopped sandbox stopped (`ttl_expired`, `terminated`…). */
    stopReason: string;
    /** The policy may hold connections for a decision (see {@link Sandbox.approvals}). */
    egressAsks: boolean;
    egressApproved: string[];
    egressRefused: string[];
    /** Hash of the effective egress rules (the policy's plus live ones; GetSandbox only). */
    effectiveRulesHash: string;
    /** Live rules added with {@link Sandbox.updateNetwork}: allow as `host:port[,port]`, deny as hosts. */
    liveAllow: string[];
    liveDeny: string[];
    message: string;
    raw: SandboxMessage;
}
export declare function sandboxInfo(s: SandboxMessage): SandboxInfo;
