/**
 * Plain, typed views of the API's records for callers: status names as the CLI prints
 * them (`ready`, `paused`), times as `Date`, counts as `number`, with the raw message kept
 * in `raw` for anything not lifted. Shared by sandboxes, snapshots and pools.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { SandboxStatus } from "./gen/cleanroom/v1/cleanroom_pb.js";
/** `SANDBOX_STATUS_READY` → `ready` (enum names as the CLI prints them). */
export function enumName(names, v) {
    return (names[v] ?? "UNSPECIFIED").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
export function dateOf(t) {
    return t ? timestampDate(t) : undefined;
}
export function sandboxInfo(s) {
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
