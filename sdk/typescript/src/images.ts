/**
 * OCI images in the server's cache (ImageService), keyed by the digest they are pinned by:
 * pull (verify and unpack; a no-op when cached), list, remove (`image_in_use` while a
 * sandbox uses it). References must be digest-pinned (`policy_invalid` otherwise).
 */
import { clientFor, type ClientOptions } from "./client.js";
import { errorFor } from "./errors.js";
import type { Image as ImageMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";

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

function imageInfo(i: ImageMessage | undefined, call: string): ImageInfo {
  if (!i) throw errorFor("internal", `${call} returned no image`);
  return {
    digest: i.digest,
    reference: i.reference,
    manifestDigest: i.manifestDigest,
    configDigest: i.configDigest,
    layers: [...i.layers],
    sizeBytes: Number(i.size),
    pulledAt: dateOf(i.pulledAt),
  };
}

/** Pull, verify and unpack a digest-pinned image into the server's cache. */
export async function pullImage(reference: string, opts: ClientOptions = {}): Promise<ImageInfo> {
  checkOptions(opts, CONNECT_KEYS, "pullImage");
  const c = clientFor(opts);
  return imageInfo((await c.call(c.images.pullImage({ imageRef: reference }))).image, "PullImage");
}

/** The cached images. */
export async function listImages(opts: ClientOptions = {}): Promise<ImageInfo[]> {
  checkOptions(opts, CONNECT_KEYS, "listImages");
  const c = clientFor(opts);
  return (await c.call(c.images.listImages({}))).images.map((i) => imageInfo(i, "ListImages"));
}

/** Remove a cached image by digest (`sha256:<hex>` or bare hex). */
export async function removeImage(digest: string, opts: ClientOptions = {}): Promise<ImageInfo> {
  checkOptions(opts, CONNECT_KEYS, "removeImage");
  const c = clientFor(opts);
  return imageInfo((await c.call(c.images.removeImage({ digest }))).image, "RemoveImage");
}
