/**
 * Named volumes (VolumeService; docs/volumes.md): size-capped filesystems owned by the
 * caller, mounted into sandboxes by name — read-write into one live sandbox, read-only into
 * many — with `Sandbox.create({ volumes: ["NAME:/path[:ro]"] })`. Created, listed, looked up
 * (by name or `vol_…` id) and removed here (`volume_in_use` while a live sandbox mounts it).
 */
import { type ClientOptions } from "./client.js";
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
/** Create a named volume of yours (`volume_exists` if you have one so named). */
export declare function createVolume(name: string, opts?: VolumeOptions): Promise<VolumeInfo>;
/** Your volumes (an admin: everyone's), with the sandboxes mounting each. */
export declare function listVolumes(opts?: ClientOptions): Promise<VolumeInfo[]>;
/** One volume by name or `vol_…` id (`VolumeNotFoundError` when absent or not yours). */
export declare function getVolume(volume: string, opts?: ClientOptions): Promise<VolumeInfo>;
/** Delete a volume and its contents (`VolumeInUseError` while a live sandbox mounts it). */
export declare function removeVolume(volume: string, opts?: ClientOptions): Promise<VolumeInfo>;
