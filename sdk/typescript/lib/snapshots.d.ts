/**
 * Snapshots (`snap_…`): a sandbox's writable state plus its policy, image and limits,
 * owned by the caller (docs/snapshots.md). Made with {@link Sandbox.snapshot}, listed,
 * inspected and removed here, and restored — as many times as wanted, each restore a fork
 * sharing the snapshot as a read-only lower layer — with {@link Snapshot.restore} (the same
 * as `Sandbox.create({ fromSnapshot })`).
 */
import { type CleanroomClient, type ClientOptions } from "./client.js";
import { Sandbox, type CreateOptions } from "./sandbox.js";
import type { Snapshot as SnapshotMessage } from "./gen/cleanroom/v1/snapshots_pb.js";
import { type LimitsInfo } from "./options.js";
/** A snapshot's record. */
export interface SnapshotInfo {
    id: string;
    /** The sandbox it was captured from. */
    sourceSandboxId: string;
    /** The snapshot that sandbox was itself restored from (empty: none). */
    parentSnapshotId: string;
    policyHash: string;
    imageRef: string;
    imageDigest: string;
    limits?: LimitsInfo;
    sizeBytes: number;
    fileCount: number;
    contentDigest: string;
    createdAt?: Date;
}
export declare function snapshotInfo(s: SnapshotMessage | undefined, call: string): SnapshotInfo;
/** A snapshot on a server: its record and what can be done with it. */
export declare class Snapshot {
    readonly client: CleanroomClient;
    readonly info: SnapshotInfo;
    private constructor();
    get id(): string;
    /** @internal From a record the server returned. */
    static of(client: CleanroomClient, info: SnapshotInfo): Snapshot;
    /** Look a snapshot up (`SnapshotNotFoundError` when absent or not yours). */
    static get(snapshotId: string, opts?: ClientOptions): Promise<Snapshot>;
    /** Your snapshots. */
    static list(opts?: ClientOptions): Promise<Snapshot[]>;
    /**
     * A new sandbox restored from this snapshot (a fork: restore as often as wanted). Its
     * policy, image and limits are the snapshot's; `policy`/`image`/`limits` are refused.
     */
    restore(opts?: Omit<CreateOptions, "fromSnapshot" | "policy" | "image" | "limits">): Promise<Sandbox>;
    /** Remove it (`SnapshotInUseError` while a sandbox restored from it is live). */
    remove(): Promise<void>;
}
