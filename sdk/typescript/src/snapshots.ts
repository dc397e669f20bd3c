/**
 * Snapshots (`snap_…`): a sandbox's writable state plus its policy, image and limits,
 * owned by the caller (docs/snapshots.md). Made with {@link Sandbox.snapshot}, listed,
 * inspected and removed here, and restored — as many times as wanted, each restore a fork
 * sharing the snapshot as a read-only lower layer — with {@link Snapshot.restore} (the same
 * as `Sandbox.create({ fromSnapshot })`).
 */
import { clientFor, type CleanroomClient, type ClientOptions } from "./client.js";
import { errorFor } from "./errors.js";
import { Sandbox, type CreateOptions } from "./sandbox.js";
import type { Snapshot as SnapshotMessage } from "./gen/cleanroom/v1/snapshots_pb.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions, limitsOf, type LimitsInfo } from "./options.js";

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

export function snapshotInfo(s: SnapshotMessage | undefined, call: string): SnapshotInfo {
  if (!s) throw errorFor("internal", `${call} returned no snapshot`);
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
  private constructor(
    readonly client: CleanroomClient,
    readonly info: SnapshotInfo,
  ) {}

  get id(): string {
    return this.info.id;
  }

  /** @internal From a record the server returned. */
  static of(client: CleanroomClient, info: SnapshotInfo): Snapshot {
    return new Snapshot(client, info);
  }

  /** Look a snapshot up (`SnapshotNotFoundError` when absent or not yours). */
  static async get(snapshotId: string, opts: ClientOptions = {}): Promise<Snapshot> {
    checkOptions(opts, CONNECT_KEYS, "Snapshot.get");
    const c = clientFor(opts);
    const r = await c.call(c.snapshots.getSnapshot({ snapshotId }));
    return new Snapshot(c, snapshotInfo(r.snapshot, "GetSnapshot"));
  }

  /** Your snapshots. */
  static async list(opts: ClientOptions = {}): Promise<Snapshot[]> {
    checkOptions(opts, CONNECT_KEYS, "Snapshot.list");
    const c = clientFor(opts);
    const r = await c.call(c.snapshots.listSnapshots({}));
    return r.snapshots.map((s) => new Snapshot(c, snapshotInfo(s, "ListSnapshots")));
  }

  /**
   * A new sandbox restored from this snapshot (a fork: restore as often as wanted). Its
   * policy, image and limits are the snapshot's; `policy`/`image`/`limits` are refused.
   */
  async restore(opts: Omit<CreateOptions, "fromSnapshot" | "policy" | "image" | "limits"> = {}): Promise<Sandbox> {
    return Sandbox.create({ client: this.client, ...opts, fromSnapshot: this.id });
  }

  /** Remove it (`SnapshotInUseError` while a sandbox restored from it is live). */
  async remove(): Promise<void> {
    await this.client.call(this.client.snapshots.removeSnapshot({ snapshotId: this.id }));
  }
}
