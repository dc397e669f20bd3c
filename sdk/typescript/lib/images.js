/**
 * OCI images in the server's cache (ImageService), keyed by the digest they are pinned by:
 * pull (verify and unpack; a no-op when cached), list, remove (`image_in_use` while a
 * sandbox uses it). References must be digest-pinned (`policy_invalid` otherwise).
 */
import { clientFor } from "./client.js";
import { errorFor } from "./errors.js";
import { dateOf } from "./info.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";
function imageInfo(i, call) {
    if (!i)
        throw errorFor("internal", `${call} returned no image`);
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
export async function pullImage(reference, opts = {}) {
    checkOptions(opts, CONNECT_KEYS, "pullImage");
    const c = clientFor(opts);
    return imageInfo((await c.call(c.images.pullImage({ imageRef: reference }))).image, "PullImage");
}
/** The cached images. */
export async function listImages(opts = {}) {
    checkOptions(opts, CONNECT_KEYS, "listImages");
    const c = clientFor(opts);
    return (await c.call(c.images.listImages({}))).images.map((i) => imageInfo(i, "ListImages"));
}
/** Remove a cached image by digest (`sha256:<hex>` or bare hex). */
export async function removeImage(digest, opts = {}) {
    checkOptions(opts, CONNECT_KEYS, "removeImage");
    const c = clientFor(opts);
    return imageInfo((await c.call(c.images.removeImage({ digest }))).image, "RemoveImage");
}
