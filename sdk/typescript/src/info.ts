/**
 * Plain, typed views of the API's records for callers: status names as the CLI prints
 * them (`ready`, `paused`), times as `Date`, counts as `number`, with the raw message kept
 * in `raw` for anything not lifted. Shared by sandboxes, snapshots and pools.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { SandboxStatus, type Sandbox as SandboxMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";

/** `SANDBOX_STATUS_READY` → `ready` (enum names as the CLI prints them). */
export function enumName(names: Record<number, string>, v: number): string {
  return (names[v] ?? "UNSPECIFIED").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

export function dateOf(t: Timestamp | undefined): Date | undefined {
  return t ? timestampDate(t) : undefined;
}

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

export function sandboxInfo(s: SandboxMessage): SandboxInfo {
  return {
    id: s.sandboxId,
    status: enumName(SandboxStatus, s.status),
    labels: { ...s.labels },
    backend: s.backend,
    policyHash: s.policyHash,
    imageRef: s.imageRef,
    imageDigest: s.imageDigest,
    createdAt: dateOf(s.createdAt),
    poolId: s.poolId,
    stopReason: s.stopReason,
    egressAsks: s.egressAsks,
    egressApproved: [...s.egressApproved],
    egressRefused: [...s.egressRefused],
    effectiveRulesHash: s.effectiveRulesHash,
    liveAllow: [...s.liveAllow],
    liveDeny: [...s.liveDeny],
    message: s.message,
    raw: s,
  };
}
