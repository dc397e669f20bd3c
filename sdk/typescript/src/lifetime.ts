/**
 * Lifetimes and usage as typed values: a sandbox's TTL and idle timeout (set at create,
 * changed later with `SetSandboxTimeout`) and its live resource usage (`GetSandbox`).
 * Durations are whole seconds (1 s .. 366 days; the server refuses anything else with
 * `invalid_argument` naming the field). Byte and microsecond counts are `number`s (exact
 * up to 2^53, i.e. 8 PiB / 285 years).
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { errorFor } from "./errors.js";
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
export function seconds(v: number | undefined, name: string): bigint {
  if (v === undefined) return 0n;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
    throw errorFor("invalid_argument", `${name}: expected whole seconds >= 1, got ${String(v)}`);
  }
  return BigInt(v);
}

/** The `SetSandboxTimeout` request fields; at least one change must be asked for. */
export function timeoutFields(o: TimeoutOptions) {
  if (o.ttl !== undefined && o.clearTtl) throw errorFor("invalid_argument", "ttl and clearTtl exclude each other");
  if (o.idleTimeout !== undefined && o.clearIdleTimeout) {
    throw errorFor("invalid_argument", "idleTimeout and clearIdleTimeout exclude each other");
  }
  if (o.ttl === undefined && o.idleTimeout === undefined && !o.clearTtl && !o.clearIdleTimeout) {
    throw errorFor("invalid_argument", "setTimeout needs ttl, idleTimeout, clearTtl or clearIdleTimeout");
  }
  return {
    ttlSeconds: seconds(o.ttl, "ttl"),
    idleTimeoutSeconds: seconds(o.idleTimeout, "idleTimeout"),
    clearTtl: o.clearTtl ?? false,
    clearIdleTimeout: o.clearIdleTimeout ?? false,
  };
}

export function lifetimeOf(s: SandboxMessage): Lifetime {
  return {
    ttlSeconds: Number(s.ttlSeconds),
    expiresAt: s.expiresAt ? timestampDate(s.expiresAt) : undefined,
    idleTimeoutSeconds: Number(s.idleTimeoutSeconds),
    lastActivityAt: s.lastActivityAt ? timestampDate(s.lastActivityAt) : undefined,
    stopReason: s.stopReason,
    suspendAfterSeconds: Number(s.suspendAfterSeconds),
    suspendedAt: s.suspendedAt ? timestampDate(s.suspendedAt) : undefined,
  };
}

/** Undefined when the server reports no usage (a sandbox that is not live). */
export function usageOf(s: SandboxMessage): Usage | undefined {
  const u = s.usage;
  if (!u) return undefined;
  return {
    sampledAt: u.sampledAt ? timestampDate(u.sampledAt) : undefined,
    cpuUsec: Number(u.cpuUsec),
    memoryBytes: Number(u.memoryBytes),
    memoryPeakBytes: Number(u.memoryPeakBytes),
    pids: Number(u.pids),
    filesystems: u.filesystems.map((f) => ({
      path: f.path,
      usedBytes: Number(f.usedBytes),
      sizeBytes: Number(f.sizeBytes),
    })),
    networkTxBytes: Number(u.networkTxBytes),
    networkRxBytes: Number(u.networkRxBytes),
  };
}
