/**
 * Named volumes (VolumeService; docs/volumes.md): size-capped filesystems owned by the
 * caller, mounted into sandboxes by name — read-write into one live sandbox, read-only into
 * many — with `Sandbox.create({ volumes: ["NAME:/path[:ro]"] })`. Created, listed, looked up
 * (by name or `vol_…` id) and removed here (`volume_in_use` while a live sandbox mounts it).
 */
import { clientFor, type ClientOptions } from "./client.js";
import { errorFor } from "./errors.js";
import type { Volume as VolumeMessage } from "./gen/cleanroom/v1/volumes_pb.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";

/** A volume's record. */
export interface VolumeInfo {
  /** `vol_…`. */
  id: string;
  name: string;
  owner: string;
  /** The filesystem's size (its quota), bytes. */
  sizeBytes: number;
  createdAt?: Date;
  /** The live sandboxes that mount it. */
  mountedBy: string[];
  /** Whether the (one) sandbox mounting it has it read-write. */
  mountedRw: boolean;
}

/** Options of {@link createVolume}: the size in MiB or bytes (neither: the server's default, 1 GiB). */
export interface VolumeOptions extends ClientOptions {
  sizeMib?: number;
  sizeBytes?: number;
}

function volumeInfo(v: VolumeMessage | undefined, call: string): VolumeInfo {
  if (!v) throw errorFor("internal", `${call} returned no volume`);
  return {
    id: v.volumeId,
    name: v.name,
    owner: v.owner,
    sizeBytes: Number(v.sizeBytes),
    createdAt: dateOf(v.createdAt),
    mountedBy: [...v.mountedBy],
    mountedRw: v.mountedRw,
  };
}

function sizeOf(opts: VolumeOptions): bigint {
  if (opts.sizeMib !== undefined && opts.sizeBytes !== undefined) {
    throw errorFor("invalid_argument", "createVolume: give sizeMib or sizeBytes, not both");
  }
  for (const [k, v] of [["sizeMib", opts.sizeMib], ["sizeBytes", opts.sizeBytes]] as const) {
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) {
      throw errorFor("invalid_argument", `createVolume: ${k} must be a positive integer, got ${String(v)}`);
    }
  }
  if (opts.sizeMib !== undefined) return BigInt(opts.sizeMib) * 1048576n;
  return BigInt(opts.sizeBytes ?? 0);
}

/** Create a named volume of yours (`volume_exists` if you have one so named). */
export async function createVolume(name: string, opts: VolumeOptions = {}): Promise<VolumeInfo> {
  checkOptions(opts, [...CONNECT_KEYS, "sizeMib", "sizeBytes"], "createVolume");
  const sizeBytes = sizeOf(opts);
  const c = clientFor(opts);
  return volumeInfo((await c.call(c.volumes.createVolume({ name, sizeBytes }))).volume, "CreateVolume");
}

/** Your volumes (an admin: everyone's), with the sandboxes mounting each. */
export async function listVolumes(opts: ClientOptions = {}): Promise<VolumeInfo[]> {
  checkOptions(opts, CONNECT_KEYS, "listVolumes");
  const c = clientFor(opts);
  return (await c.call(c.volumes.listVolumes({}))).volumes.map((v) => volumeInfo(v, "ListVolumes"));
}

/** One volume by name or `vol_…` id (`VolumeNotFoundError` when absent or not yours). */
export async function getVolume(volume: string, opts: ClientOptions = {}): Promise<VolumeInfo> {
  checkOptions(opts, CONNECT_KEYS, "getVolume");
  const c = clientFor(opts);
  return volumeInfo((await c.call(c.volumes.getVolume({ volume }))).volume, "GetVolume");
}

/** Delete a volume and its contents (`VolumeInUseError` while a live sandbox mounts it). */
export async function removeVolume(volume: string, opts: ClientOptions = {}): Promise<VolumeInfo> {
  checkOptions(opts, CONNECT_KEYS, "removeVolume");
  const c = clientFor(opts);
  return volumeInfo((await c.call(c.volumes.deleteVolume({ volume }))).volume, "DeleteVolume");
}
