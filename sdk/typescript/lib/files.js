/**
 * `sbx.files`: move files in and out of a sandbox through the FileService.
 *
 * Every operation runs on the server with the sandbox's own identity. Uploads are chunked
 * unary calls with offsets; the file appears atomically at finish.
 *
 * Transfers survive interruptions: an upload whose call failed in transit (connection
 * dropped, server unreachable for a moment) asks the server where it stands
 * (`GetSandboxUpload`) and continues from that offset; a chunk the server did not take
 * (`upload_offset_mismatch`) likewise; a download that broke off re-opens the stream at
 * the offset reached. Both give up after {@link RETRIES} interruptions in a row without
 * progress (`ServerUnreachableError`). A server restart reclaims its sandboxes and their
 * uploads: that surfaces as the server's own typed error.
 */
import { checkOptions } from "./options.js";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { createHash } from "node:crypto";
import { errorFor, FileExistsError, ServerUnreachableError, UploadNotFoundError, UploadOffsetMismatchError, } from "./errors.js";
import { SandboxFileType, SandboxUploadFormat, } from "./gen/cleanroom/v1/files_pb.js";
/** Chunk size used before the server has said its maximum. */
const FIRST_CHUNK = 1 << 20;
/** Interruptions in a row (no byte of progress between them) before a transfer gives up. */
export const RETRIES = 5;
/** Milliseconds before retry `attempt` (1-based): 200, 400 … capped at 3000. */
function backoff(attempt) {
    return new Promise((r) => setTimeout(r, Math.min(200 * 2 ** (attempt - 1), 3000)));
}
function sha256(b) {
    return createHash("sha256").update(b).digest("hex");
}
function fileInfo(m) {
    if (!m)
        throw errorFor("internal", "the server sent no file info");
    const types = {
        [SandboxFileType.REGULAR]: "file",
        [SandboxFileType.DIRECTORY]: "dir",
        [SandboxFileType.SYMLINK]: "symlink",
        [SandboxFileType.OTHER]: "other",
    };
    return {
        path: m.path,
        name: m.name,
        type: types[m.type] ?? "unspecified",
        size: Number(m.size),
        mode: m.mode,
        uid: m.uid,
        gid: m.gid,
        modifiedAt: m.modifiedAt ? timestampDate(m.modifiedAt) : undefined,
        symlinkTarget: m.symlinkTarget,
    };
}
/** File operations of one sandbox. */
export class Files {
    client;
    sandboxId;
    constructor(client, sandboxId) {
        this.client = client;
        this.sandboxId = sandboxId;
    }
    /** Write `data` to `path` atomically, in chunks. */
    async write(path, data, o = {}) {
        checkOptions(o, ["mode", "uid", "gid", "createParents", "overwrite"], "files.write");
        const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
        return this.upload(path, bytes, o, SandboxUploadFormat.FILE);
    }
    /**
     * Extract a tar archive (`tar` bytes) into the directory `dir` (created with its parents),
     * in the sandbox with the sandbox's own identity.
     */
    async writeArchive(dir, tar) {
        await this.mkdir(dir, { parents: true });
        return this.upload(dir, tar, { createParents: false }, SandboxUploadFormat.TAR);
    }
    /** A file or directory tree of the sandbox as tar bytes (entries `<basename>/…`). */
    async readArchive(path) {
        const parts = [];
        const stream = this.client.files.readSandboxArchive({ sandboxId: this.sandboxId, path });
        for await (const m of this.client.stream(stream))
            if (m.data.length)
                parts.push(m.data);
        return Buffer.concat(parts);
    }
    async upload(path, bytes, o, format) {
        const svc = this.client.files;
        let uploadId = "";
        let offset = 0;
        let chunk = FIRST_CHUNK;
        let failures = 0;
        // A one-call upload whose answer was lost may already be at the target.
        let maybeCommitted = false;
        /** The file at `path` is a regular file holding exactly `bytes`. */
        const holdsOurBytes = async () => {
            const info = await this.stat(path);
            return info.type === "file" && sha256(await this.read(path)) === sha256(bytes) ? info : undefined;
        };
        for (;;) {
            const piece = bytes.subarray(offset, offset + chunk);
            const finish = offset + piece.length >= bytes.length;
            try {
                const r = await this.client.call(svc.writeSandboxFile({
                    sandboxId: this.sandboxId,
                    path,
                    uploadId,
                    offset: BigInt(offset),
                    data: piece,
                    finish,
                    options: uploadId
                        ? undefined
                        : {
                            format,
                            mode: o.mode ?? 0,
                            uid: o.uid,
                            gid: o.gid,
                            createParents: o.createParents ?? true,
                            noOverwrite: o.overwrite === false,
                            expectedSize: BigInt(bytes.length),
                        },
                    sha256: finish ? sha256(bytes) : "",
                }));
                failures = 0;
                uploadId = r.uploadId || uploadId;
                offset = Number(r.offset);
                if (r.maxChunkBytes > 0n)
                    chunk = Number(r.maxChunkBytes);
                if (r.finished)
                    return fileInfo(r.file);
            }
            catch (e) {
                if (e instanceof UploadOffsetMismatchError) {
                    // A chunk lost in transit: the server says where it stands; resend from there.
                    const at = Number(e.details.offset);
                    if (!Number.isInteger(at) || at < 0 || at > bytes.length)
                        throw e;
                    offset = at;
                    continue;
                }
                if (e instanceof FileExistsError && maybeCommitted && format !== SandboxUploadFormat.TAR) {
                    // Our own lost first attempt put it there? Only if it holds our bytes.
                    const info = await holdsOurBytes();
                    if (info)
                        return info;
                    throw e;
                }
                if (!(e instanceof ServerUnreachableError))
                    throw e;
                // Interrupted in transit: ask where the upload stands and continue from there.
                let last = e;
                for (;;) {
                    if (++failures > RETRIES)
                        throw last;
                    await backoff(failures);
                    if (!uploadId) {
                        offset = 0; // no call answered yet: start over (a stray upload expires)
                        maybeCommitted = finish;
                        break;
                    }
                    try {
                        const st = await this.client.call(svc.getSandboxUpload({ sandboxId: this.sandboxId, uploadId }));
                        const at = Number(st.upload?.offset ?? -1);
                        if (!Number.isInteger(at) || at < 0 || at > bytes.length)
                            throw last;
                        offset = at;
                        break;
                    }
                    catch (e2) {
                        if (e2 instanceof ServerUnreachableError) {
                            last = e2;
                            continue;
                        }
                        if (e2 instanceof UploadNotFoundError && finish && format !== SandboxUploadFormat.TAR) {
                            // The commit ran (the upload is gone): accept the file only if it holds
                            // exactly the bytes sent.
                            const info = await holdsOurBytes();
                            if (info)
                                return info;
                            throw errorFor("upload_not_found", `upload of ${path}: the connection broke during the commit and the file at the target does not hold this upload's bytes`, "", { upload_id: uploadId });
                        }
                        throw e2;
                    }
                }
            }
        }
    }
    /**
     * A file's bytes from `offset` (at most `length`; 0 = to the end). A stream that breaks
     * off or ends short is re-opened at the offset reached (the same file: size and mtime
     * unchanged, else `stream_ended`).
     */
    async read(path, offset = 0, length = 0) {
        const parts = [];
        let pos = offset;
        let end = length ? offset + length : undefined;
        let ident;
        let failures = 0;
        for (;;) {
            const stream = this.client.files.readSandboxFile({
                sandboxId: this.sandboxId,
                path,
                offset: BigInt(pos),
                length: end !== undefined ? BigInt(end - pos) : 0n,
            });
            let interrupted;
            try {
                for await (const m of this.client.stream(stream)) {
                    if (m.file) {
                        const id = `${m.file.size}/${m.file.modifiedAt?.seconds ?? ""}/${m.file.modifiedAt?.nanos ?? ""}`;
                        if (ident === undefined) {
                            ident = id;
                            const size = Number(m.file.size);
                            end = end === undefined ? size : Math.min(end, size);
                        }
                        else if (id !== ident) {
                            throw errorFor("stream_ended", `${path} changed while it was being downloaded; start over`);
                        }
                    }
                    if (m.data.length) {
                        parts.push(m.data);
                        pos += m.data.length;
                        failures = 0;
                    }
                }
            }
            catch (e) {
                if (!(e instanceof ServerUnreachableError))
                    throw e;
                interrupted = e;
            }
            if (!interrupted && (end === undefined || pos >= end))
                break;
            interrupted ??= errorFor("stream_ended", `the download of ${path} ended at byte ${pos} of ${end}`);
            if (++failures > RETRIES)
                throw interrupted;
            await backoff(failures);
        }
        const out = new Uint8Array(pos - offset);
        let at = 0;
        for (const p of parts) {
            out.set(p, at);
            at += p.length;
        }
        return out;
    }
    /** A file's content as UTF-8 text. */
    async readText(path) {
        return new TextDecoder().decode(await this.read(path));
    }
    /** The entries of a directory, sorted by name (all pages). */
    async list(path) {
        const out = [];
        let startAfter = "";
        for (;;) {
            const r = await this.client.call(this.client.files.listSandboxFiles({ sandboxId: this.sandboxId, path, startAfter }));
            out.push(...r.entries.map(fileInfo));
            if (!r.truncated || r.entries.length === 0)
                return out;
            startAfter = r.entries[r.entries.length - 1].name;
        }
    }
    async stat(path, followSymlinks = false) {
        const r = await this.client.call(this.client.files.statSandboxFile({ sandboxId: this.sandboxId, path, followSymlinks }));
        return fileInfo(r.file);
    }
    async mkdir(path, o = {}) {
        checkOptions(o, ["mode", "parents"], "files.mkdir");
        const r = await this.client.call(this.client.files.makeSandboxDirectory({
            sandboxId: this.sandboxId,
            path,
            mode: o.mode ?? 0,
            parents: o.parents ?? true,
        }));
        return fileInfo(r.directory);
    }
    async remove(path, o = {}) {
        checkOptions(o, ["recursive", "missingOk"], "files.remove");
        const r = await this.client.call(this.client.files.removeSandboxFile({
            sandboxId: this.sandboxId,
            path,
            recursive: o.recursive ?? false,
            missingOk: o.missingOk ?? false,
        }));
        return r.removed;
    }
}
