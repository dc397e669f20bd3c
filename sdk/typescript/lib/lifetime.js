/**
 * Lifetimes and usage as typed values: a sandbox's TTL and idle timeout (set at create,
 * changed later with `SetSandboxTimeout`) and its live resource usage (`GetSandbox`).
 * Durations are whole seconds (1 s .. 366 days; the server refuses anything else with
 * `invalid_argument` naming the field). Byte and microsecond counts are `number`s (exact
 * up to 2^53, i.e. 8 PiB / 285 years).
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { errorFor } from "./errors.js";
/** Whole seconds >= 1 as the proto's uint64 (undefined: 0n, "not given"). */
export function seconds(v, name) {
    if (v === undefined)
        return 0n;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
        throw errorFor("invalid_argument", `${name}: expected whole seconds >= 1, got ${String(v)}`);
    }
    return BigInt(v);
}
/** The `SetSandboxTimeout` request fields; at least one change must be asked for. */
export function timeoutFields(o) {
    if (o.ttl !== undefined && o.clearTtl)
        throw errorFor("invalid_argument", "ttl and clearTtl exclude each other");
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
export function lifetimeOf(s) {
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
export function usageOf(s) {
    const u = s.usage;
    if (!u)
        return undefined;
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
