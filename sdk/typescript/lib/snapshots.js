/**
 * Snapshots (`snap_…`): a sandbox's writable state plus its policy, image and limits,
 * owned by the caller (docs/snapshots.md). Made with {@link Sandbox.snapshot}, listed,
 * inspected and removed here, and restored — as many times as wanted, each restore a fork
 * sharing the snapshot as a read-only lower layer — with {@link Snapshot.restore} (the same
 * as `Sandbox.create({ fromSnapshot })`).
 */
import { clientFor } from "./client.js";
import { errorFor } from "./errors.js";
import { Sandbox } from "./sandbox.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions, limitsOf } from "./options.js";
export function snapshotInfo(s, call) {
    if (!s)
        throw errorFor("internal", `${call} returned no snapshot`);
    return {
        id: s.snapshotId,
        sourceSandboxId: s.sourceSandboxId,
        parentSnapshotId: s.parentSnapshotId,
        policyHash: s.policyHash,
        imageRef: s.imageRef,
        imageDigest: s.imageDigest,
        limits: limitsOf(s.limits),
        sizeBytes: Number(s.sizeBytes),
        fileCount: Number(s.fileCount),
        contentDigest: s.contentDigest,
        createdAt: dateOf(s.createdAt),
    };
}
/** A snapshot on a server: its record and what can be done with it. */
export class Snapshot {
    client;
    info;
    constructor(client, info) {
        this.client = client;
        this.info = info;
    }
    get id() {
        return this.info.id;
    }
    /** @internal From a record the server returned. */
    static of(client, info) {
        return new Snapshot(client, info);
    }
    /** Look a snapshot up (`SnapshotNotFoundError` when absent or not yours). */
    static async get(snapshotId, opts = {}) {
        checkOptions(opts, CONNECT_KEYS, "Snapshot.get");
        const c = clientFor(opts);
        const r = await c.call(c.snapshots.getSnapshot({ snapshotId }));
        return new Snapshot(c, snapshotInfo(r.snapshot, "GetSnapshot"));
    }
    /** Your snapshots. */
    static async list(opts = {}) {
        checkOptions(opts, CONNECT_KEYS, "Snapshot.list");
        const c = clientFor(opts);
        const r = await c.call(c.snapshots.listSnapshots({}));
        return r.snapshots.map((s) => new Snapshot(c, snapshotInfo(s, "ListSnapshots")));
    }
    /**
     * A new sandbox restored from this snapshot (a fork: restore as often as wanted). Its
     * policy, image and limits are the snapshot's; `policy`/`image`/`limits` are refused.
     */
    async restore(opts = {}) {
        return Sandbox.create({ client: this.client, ...opts, fromSnapshot: this.id });
    }
    /** Remove it (`SnapshotInUseError` while a sandbox restored from it is live). */
    async remove() {
        await this.client.call(this.client.snapshots.removeSnapshot({ snapshotId: this.id }));
    }
}
