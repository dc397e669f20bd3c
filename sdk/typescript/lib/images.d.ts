/**
 * OCI images in the server's cache (ImageService), keyed by the digest they are pinned by:
 * pull (verify and unpack; a no-op when cached), list, remove (`image_in_use` while a
 * sandbox uses it). References must be digest-pinned (`policy_invalid` otherwise).
 */
import { type ClientOptions } from "./client.js";
/** A cached image. */
export interface ImageInfo {
    /** `sha256:<hex>` of the manifest or index the reference names. */
    digest: string;
    /** `registry/repository@sha256:<hex>`. */
    reference: string;
    manifestDigest: string;
    configDigest: string;
    layers: string[];
    /** Compressed size of the layers, bytes. */
    sizeBytes: number;
    pulledAt?: Date;
}
/** Pull, verify and unpack a digest-pinned image into the server's cache. */
export declare function pullImage(reference: string, opts?: ClientOptions): Promise<ImageInfo>;
/** The cached images. */
export declare function listImages(opts?: ClientOptions): Promise<ImageInfo[]>;
/** Remove a cached image by digest (`sha256:<hex>` or bare hex). */
export declare function removeImage(digest: string, opts?: ClientOptions): Promise<ImageInfo>;
