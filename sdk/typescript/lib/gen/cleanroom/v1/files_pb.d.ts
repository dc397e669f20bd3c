import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/files.proto.
 */
export declare const file_cleanroom_v1_files: GenFile;
/**
 * One filesystem entry as the sandbox sees it.
 *
 * @generated from message cleanroom.v1.SandboxFileInfo
 */
export type SandboxFileInfo = Message<"cleanroom.v1.SandboxFileInfo"> & {
    /**
     * Absolute path, normalized (no `.`, `..` or repeated `/`).
     *
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * Last component of `path`.
     *
     * @generated from field: string name = 2;
     */
    name: string;
    /**
     * @generated from field: cleanroom.v1.SandboxFileType type = 3;
     */
    type: SandboxFileType;
    /**
     * @generated from field: uint64 size = 4;
     */
    size: bigint;
    /**
     * Permission bits (0o7777).
     *
     * @generated from field: uint32 mode = 5;
     */
    mode: number;
    /**
     * Owner and group as the sandbox sees them (its own user namespace).
     *
     * @generated from field: uint32 uid = 6;
     */
    uid: number;
    /**
     * @generated from field: uint32 gid = 7;
     */
    gid: number;
    /**
     * @generated from field: google.protobuf.Timestamp modified_at = 8;
     */
    modifiedAt?: Timestamp | undefined;
    /**
     * For a symlink: its target, verbatim (never resolved by the server).
     *
     * @generated from field: string symlink_target = 9;
     */
    symlinkTarget: string;
};
/**
 * Describes the message cleanroom.v1.SandboxFileInfo.
 * Use `create(SandboxFileInfoSchema)` to create a new message.
 */
export declare const SandboxFileInfoSchema: GenMessage<SandboxFileInfo>;
/**
 * How an upload lands. Read on the first call of an upload only.
 *
 * @generated from message cleanroom.v1.SandboxFileWriteOptions
 */
export type SandboxFileWriteOptions = Message<"cleanroom.v1.SandboxFileWriteOptions"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxUploadFormat format = 1;
     */
    format: SandboxUploadFormat;
    /**
     * Permission bits of the new file; 0 = 0644 (no umask applied). Ignored for TAR.
     *
     * @generated from field: uint32 mode = 2;
     */
    mode: number;
    /**
     * Owner and group as the sandbox sees them; unset = the sandbox's own ids. Refused with
     * `permission_denied` unless the sandbox itself could chown to them.
     *
     * @generated from field: optional uint32 uid = 3;
     */
    uid?: number | undefined;
    /**
     * @generated from field: optional uint32 gid = 4;
     */
    gid?: number | undefined;
    /**
     * Create missing parent directories (mode 0755, with the sandbox's identity).
     *
     * @generated from field: bool create_parents = 5;
     */
    createParents: boolean;
    /**
     * Refuse with `file_exists` when something is already at `path` (checked again at
     * commit) instead of replacing it.
     *
     * @generated from field: bool no_overwrite = 6;
     */
    noOverwrite: boolean;
    /**
     * Total size the client intends to send, if known: checked against the free space of
     * the target filesystem at once (`resource_exhausted`) and at finish (must match).
     *
     * @generated from field: optional uint64 expected_size = 7;
     */
    expectedSize?: bigint | undefined;
};
/**
 * Describes the message cleanroom.v1.SandboxFileWriteOptions.
 * Use `create(SandboxFileWriteOptionsSchema)` to create a new message.
 */
export declare const SandboxFileWriteOptionsSchema: GenMessage<SandboxFileWriteOptions>;
/**
 * @generated from message cleanroom.v1.WriteSandboxFileRequest
 */
export type WriteSandboxFileRequest = Message<"cleanroom.v1.WriteSandboxFileRequest"> & {
    /**
     * Required on every call; must name the upload's sandbox.
     *
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * Required on the first call (absolute path as the sandbox sees it); on later calls,
     * empty or the same path.
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Empty on the first call; then the id the server returned.
     *
     * @generated from field: string upload_id = 3;
     */
    uploadId: string;
    /**
     * Where `data` starts; must equal the bytes received so far.
     *
     * @generated from field: uint64 offset = 4;
     */
    offset: bigint;
    /**
     * At most `max_chunk_bytes` (see the response; 2 MiB today).
     *
     * @generated from field: bytes data = 5;
     */
    data: Uint8Array;
    /**
     * Commit after appending `data`.
     *
     * @generated from field: bool finish = 6;
     */
    finish: boolean;
    /**
     * @generated from field: cleanroom.v1.SandboxFileWriteOptions options = 7;
     */
    options?: SandboxFileWriteOptions | undefined;
    /**
     * Optional: lowercase hex sha256 of the whole content, checked at finish (a mismatch
     * is `invalid_argument` and the upload is dropped).
     *
     * @generated from field: string sha256 = 8;
     */
    sha256: string;
};
/**
 * Describes the message cleanroom.v1.WriteSandboxFileRequest.
 * Use `create(WriteSandboxFileRequestSchema)` to create a new message.
 */
export declare const WriteSandboxFileRequestSchema: GenMessage<WriteSandboxFileRequest>;
/**
 * @generated from message cleanroom.v1.WriteSandboxFileResponse
 */
export type WriteSandboxFileResponse = Message<"cleanroom.v1.WriteSandboxFileResponse"> & {
    /**
     * @generated from field: string upload_id = 1;
     */
    uploadId: string;
    /**
     * Bytes received so far: the `offset` of the next chunk.
     *
     * @generated from field: uint64 offset = 2;
     */
    offset: bigint;
    /**
     * The upload was committed (its id is no longer valid).
     *
     * @generated from field: bool finished = 3;
     */
    finished: boolean;
    /**
     * When finished: the new file (or, for TAR, the directory extracted into).
     *
     * @generated from field: cleanroom.v1.SandboxFileInfo file = 4;
     */
    file?: SandboxFileInfo | undefined;
    /**
     * When finished: lowercase hex sha256 of all the bytes received.
     *
     * @generated from field: string sha256 = 5;
     */
    sha256: string;
    /**
     * Largest `data` the server accepts in one call.
     *
     * @generated from field: uint64 max_chunk_bytes = 6;
     */
    maxChunkBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.WriteSandboxFileResponse.
 * Use `create(WriteSandboxFileResponseSchema)` to create a new message.
 */
export declare const WriteSandboxFileResponseSchema: GenMessage<WriteSandboxFileResponse>;
/**
 * An upload in progress.
 *
 * @generated from message cleanroom.v1.SandboxUpload
 */
export type SandboxUpload = Message<"cleanroom.v1.SandboxUpload"> & {
    /**
     * @generated from field: string upload_id = 1;
     */
    uploadId: string;
    /**
     * @generated from field: string sandbox_id = 2;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 3;
     */
    path: string;
    /**
     * @generated from field: cleanroom.v1.SandboxUploadFormat format = 4;
     */
    format: SandboxUploadFormat;
    /**
     * Bytes received so far: resume with this offset.
     *
     * @generated from field: uint64 offset = 5;
     */
    offset: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 6;
     */
    createdAt?: Timestamp | undefined;
    /**
     * An upload untouched until then is dropped (its temporary file with it).
     *
     * @generated from field: google.protobuf.Timestamp expires_at = 7;
     */
    expiresAt?: Timestamp | undefined;
    /**
     * @generated from field: uint64 max_chunk_bytes = 8;
     */
    maxChunkBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.SandboxUpload.
 * Use `create(SandboxUploadSchema)` to create a new message.
 */
export declare const SandboxUploadSchema: GenMessage<SandboxUpload>;
/**
 * @generated from message cleanroom.v1.GetSandboxUploadRequest
 */
export type GetSandboxUploadRequest = Message<"cleanroom.v1.GetSandboxUploadRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string upload_id = 2;
     */
    uploadId: string;
};
/**
 * Describes the message cleanroom.v1.GetSandboxUploadRequest.
 * Use `create(GetSandboxUploadRequestSchema)` to create a new message.
 */
export declare const GetSandboxUploadRequestSchema: GenMessage<GetSandboxUploadRequest>;
/**
 * @generated from message cleanroom.v1.GetSandboxUploadResponse
 */
export type GetSandboxUploadResponse = Message<"cleanroom.v1.GetSandboxUploadResponse"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxUpload upload = 1;
     */
    upload?: SandboxUpload | undefined;
};
/**
 * Describes the message cleanroom.v1.GetSandboxUploadResponse.
 * Use `create(GetSandboxUploadResponseSchema)` to create a new message.
 */
export declare const GetSandboxUploadResponseSchema: GenMessage<GetSandboxUploadResponse>;
/**
 * @generated from message cleanroom.v1.CancelSandboxUploadRequest
 */
export type CancelSandboxUploadRequest = Message<"cleanroom.v1.CancelSandboxUploadRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string upload_id = 2;
     */
    uploadId: string;
};
/**
 * Describes the message cleanroom.v1.CancelSandboxUploadRequest.
 * Use `create(CancelSandboxUploadRequestSchema)` to create a new message.
 */
export declare const CancelSandboxUploadRequestSchema: GenMessage<CancelSandboxUploadRequest>;
/**
 * @generated from message cleanroom.v1.CancelSandboxUploadResponse
 */
export type CancelSandboxUploadResponse = Message<"cleanroom.v1.CancelSandboxUploadResponse"> & {};
/**
 * Describes the message cleanroom.v1.CancelSandboxUploadResponse.
 * Use `create(CancelSandboxUploadResponseSchema)` to create a new message.
 */
export declare const CancelSandboxUploadResponseSchema: GenMessage<CancelSandboxUploadResponse>;
/**
 * @generated from message cleanroom.v1.ReadSandboxFileRequest
 */
export type ReadSandboxFileRequest = Message<"cleanroom.v1.ReadSandboxFileRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * First byte to send.
     *
     * @generated from field: uint64 offset = 3;
     */
    offset: bigint;
    /**
     * Most bytes to send; 0 = to the end of the file.
     *
     * @generated from field: uint64 length = 4;
     */
    length: bigint;
};
/**
 * Describes the message cleanroom.v1.ReadSandboxFileRequest.
 * Use `create(ReadSandboxFileRequestSchema)` to create a new message.
 */
export declare const ReadSandboxFileRequestSchema: GenMessage<ReadSandboxFileRequest>;
/**
 * The first message carries `file` (the file as opened); every message may carry data.
 * The stream ends after the last byte; a client that got fewer bytes than it expected
 * (file.size - offset, or length) resumes with a new call at the offset it reached.
 *
 * @generated from message cleanroom.v1.ReadSandboxFileResponse
 */
export type ReadSandboxFileResponse = Message<"cleanroom.v1.ReadSandboxFileResponse"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxFileInfo file = 1;
     */
    file?: SandboxFileInfo | undefined;
    /**
     * Offset of `data` in the file.
     *
     * @generated from field: uint64 offset = 2;
     */
    offset: bigint;
    /**
     * @generated from field: bytes data = 3;
     */
    data: Uint8Array;
};
/**
 * Describes the message cleanroom.v1.ReadSandboxFileResponse.
 * Use `create(ReadSandboxFileResponseSchema)` to create a new message.
 */
export declare const ReadSandboxFileResponseSchema: GenMessage<ReadSandboxFileResponse>;
/**
 * @generated from message cleanroom.v1.StatSandboxFileRequest
 */
export type StatSandboxFileRequest = Message<"cleanroom.v1.StatSandboxFileRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Describe what a final symlink points to instead of the link itself.
     *
     * @generated from field: bool follow_symlinks = 3;
     */
    followSymlinks: boolean;
};
/**
 * Describes the message cleanroom.v1.StatSandboxFileRequest.
 * Use `create(StatSandboxFileRequestSchema)` to create a new message.
 */
export declare const StatSandboxFileRequestSchema: GenMessage<StatSandboxFileRequest>;
/**
 * @generated from message cleanroom.v1.StatSandboxFileResponse
 */
export type StatSandboxFileResponse = Message<"cleanroom.v1.StatSandboxFileResponse"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxFileInfo file = 1;
     */
    file?: SandboxFileInfo | undefined;
};
/**
 * Describes the message cleanroom.v1.StatSandboxFileResponse.
 * Use `create(StatSandboxFileResponseSchema)` to create a new message.
 */
export declare const StatSandboxFileResponseSchema: GenMessage<StatSandboxFileResponse>;
/**
 * @generated from message cleanroom.v1.ListSandboxFilesRequest
 */
export type ListSandboxFilesRequest = Message<"cleanroom.v1.ListSandboxFilesRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * A directory (a symlink to one is followed, inside the sandbox).
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Only entries whose name sorts after this one (byte order): the next page.
     *
     * @generated from field: string start_after = 3;
     */
    startAfter: string;
    /**
     * Most entries to return; 0 = 1000 (the server caps it at 10000).
     *
     * @generated from field: uint32 max_entries = 4;
     */
    maxEntries: number;
};
/**
 * Describes the message cleanroom.v1.ListSandboxFilesRequest.
 * Use `create(ListSandboxFilesRequestSchema)` to create a new message.
 */
export declare const ListSandboxFilesRequestSchema: GenMessage<ListSandboxFilesRequest>;
/**
 * @generated from message cleanroom.v1.ListSandboxFilesResponse
 */
export type ListSandboxFilesResponse = Message<"cleanroom.v1.ListSandboxFilesResponse"> & {
    /**
     * Sorted by name (byte order); `.` and `..` are not listed.
     *
     * @generated from field: repeated cleanroom.v1.SandboxFileInfo entries = 1;
     */
    entries: SandboxFileInfo[];
    /**
     * More entries follow: ask again with start_after = the last name.
     *
     * @generated from field: bool truncated = 2;
     */
    truncated: boolean;
};
/**
 * Describes the message cleanroom.v1.ListSandboxFilesResponse.
 * Use `create(ListSandboxFilesResponseSchema)` to create a new message.
 */
export declare const ListSandboxFilesResponseSchema: GenMessage<ListSandboxFilesResponse>;
/**
 * @generated from message cleanroom.v1.MakeSandboxDirectoryRequest
 */
export type MakeSandboxDirectoryRequest = Message<"cleanroom.v1.MakeSandboxDirectoryRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Permission bits; 0 = 0755.
     *
     * @generated from field: uint32 mode = 3;
     */
    mode: number;
    /**
     * Create missing parents; an existing directory is then not an error.
     *
     * @generated from field: bool parents = 4;
     */
    parents: boolean;
};
/**
 * Describes the message cleanroom.v1.MakeSandboxDirectoryRequest.
 * Use `create(MakeSandboxDirectoryRequestSchema)` to create a new message.
 */
export declare const MakeSandboxDirectoryRequestSchema: GenMessage<MakeSandboxDirectoryRequest>;
/**
 * @generated from message cleanroom.v1.MakeSandboxDirectoryResponse
 */
export type MakeSandboxDirectoryResponse = Message<"cleanroom.v1.MakeSandboxDirectoryResponse"> & {
    /**
     * @generated from field: cleanroom.v1.SandboxFileInfo directory = 1;
     */
    directory?: SandboxFileInfo | undefined;
};
/**
 * Describes the message cleanroom.v1.MakeSandboxDirectoryResponse.
 * Use `create(MakeSandboxDirectoryResponseSchema)` to create a new message.
 */
export declare const MakeSandboxDirectoryResponseSchema: GenMessage<MakeSandboxDirectoryResponse>;
/**
 * @generated from message cleanroom.v1.RemoveSandboxFileRequest
 */
export type RemoveSandboxFileRequest = Message<"cleanroom.v1.RemoveSandboxFileRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Remove a directory with everything in it (symlinks inside are removed, not followed).
     *
     * @generated from field: bool recursive = 3;
     */
    recursive: boolean;
    /**
     * Nothing at `path` is not an error.
     *
     * @generated from field: bool missing_ok = 4;
     */
    missingOk: boolean;
};
/**
 * Describes the message cleanroom.v1.RemoveSandboxFileRequest.
 * Use `create(RemoveSandboxFileRequestSchema)` to create a new message.
 */
export declare const RemoveSandboxFileRequestSchema: GenMessage<RemoveSandboxFileRequest>;
/**
 * @generated from message cleanroom.v1.RemoveSandboxFileResponse
 */
export type RemoveSandboxFileResponse = Message<"cleanroom.v1.RemoveSandboxFileResponse"> & {
    /**
     * False when nothing was there (with missing_ok).
     *
     * @generated from field: bool removed = 1;
     */
    removed: boolean;
};
/**
 * Describes the message cleanroom.v1.RemoveSandboxFileResponse.
 * Use `create(RemoveSandboxFileResponseSchema)` to create a new message.
 */
export declare const RemoveSandboxFileResponseSchema: GenMessage<RemoveSandboxFileResponse>;
/**
 * @generated from message cleanroom.v1.ReadSandboxArchiveRequest
 */
export type ReadSandboxArchiveRequest = Message<"cleanroom.v1.ReadSandboxArchiveRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
};
/**
 * Describes the message cleanroom.v1.ReadSandboxArchiveRequest.
 * Use `create(ReadSandboxArchiveRequestSchema)` to create a new message.
 */
export declare const ReadSandboxArchiveRequestSchema: GenMessage<ReadSandboxArchiveRequest>;
/**
 * Consecutive pieces of one tar archive (ustar/GNU, as the `tar` tool reads it).
 *
 * @generated from message cleanroom.v1.ReadSandboxArchiveResponse
 */
export type ReadSandboxArchiveResponse = Message<"cleanroom.v1.ReadSandboxArchiveResponse"> & {
    /**
     * @generated from field: bytes data = 1;
     */
    data: Uint8Array;
};
/**
 * Describes the message cleanroom.v1.ReadSandboxArchiveResponse.
 * Use `create(ReadSandboxArchiveResponseSchema)` to create a new message.
 */
export declare const ReadSandboxArchiveResponseSchema: GenMessage<ReadSandboxArchiveResponse>;
/**
 * @generated from enum cleanroom.v1.SandboxFileType
 */
export declare enum SandboxFileType {
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_REGULAR = 1;
     */
    REGULAR = 1,
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_DIRECTORY = 2;
     */
    DIRECTORY = 2,
    /**
     * @generated from enum value: SANDBOX_FILE_TYPE_SYMLINK = 3;
     */
    SYMLINK = 3,
    /**
     * FIFO, socket, character or block device.
     *
     * @generated from enum value: SANDBOX_FILE_TYPE_OTHER = 4;
     */
    OTHER = 4
}
/**
 * Describes the enum cleanroom.v1.SandboxFileType.
 */
export declare const SandboxFileTypeSchema: GenEnum<SandboxFileType>;
/**
 * @generated from enum cleanroom.v1.SandboxUploadFormat
 */
export declare enum SandboxUploadFormat {
    /**
     * Same as FILE.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * The bytes are the file's content; `path` names the file.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_FILE = 1;
     */
    FILE = 1,
    /**
     * The bytes are a tar archive; `path` names an existing directory it is extracted into
     * at finish (entries' own modes; ownership as the sandbox's own uid unless the sandbox
     * could chown). The archive is staged in the sandbox first, so it counts twice against
     * the disk limit while it is extracted.
     *
     * @generated from enum value: SANDBOX_UPLOAD_FORMAT_TAR = 2;
     */
    TAR = 2
}
/**
 * Describes the enum cleanroom.v1.SandboxUploadFormat.
 */
export declare const SandboxUploadFormatSchema: GenEnum<SandboxUploadFormat>;
/**
 * @generated from service cleanroom.v1.FileService
 */
export declare const FileService: GenService<{
    /**
     * Upload a file (or, with format TAR, a tar archive extracted into a directory) in
     * chunks. The first call carries sandbox_id, path and options and no upload_id; the
     * server opens an invisible temporary file next to the target and answers with an
     * upload_id. Each call appends `data` at `offset`, which must equal the bytes received
     * so far (else `upload_offset_mismatch` with details["offset"]). The call with
     * finish = true commits: the file appears atomically at `path` (rename over any old
     * file), with its mode and ownership; nothing is visible before. A small file is one
     * call: no upload_id, all the data, finish = true.
     *
     * @generated from rpc cleanroom.v1.FileService.WriteSandboxFile
     */
    writeSandboxFile: {
        methodKind: "unary";
        input: typeof WriteSandboxFileRequestSchema;
        output: typeof WriteSandboxFileResponseSchema;
    };
    /**
     * Where an unfinished upload stands (to resume after an interruption).
     *
     * @generated from rpc cleanroom.v1.FileService.GetSandboxUpload
     */
    getSandboxUpload: {
        methodKind: "unary";
        input: typeof GetSandboxUploadRequestSchema;
        output: typeof GetSandboxUploadResponseSchema;
    };
    /**
     * Abandon an upload; its temporary file goes away. Idempotent for a finished upload.
     *
     * @generated from rpc cleanroom.v1.FileService.CancelSandboxUpload
     */
    cancelSandboxUpload: {
        methodKind: "unary";
        input: typeof CancelSandboxUploadRequestSchema;
        output: typeof CancelSandboxUploadResponseSchema;
    };
    /**
     * Stream a regular file from `offset`, at most `length` bytes (0 = to the end).
     *
     * @generated from rpc cleanroom.v1.FileService.ReadSandboxFile
     */
    readSandboxFile: {
        methodKind: "server_streaming";
        input: typeof ReadSandboxFileRequestSchema;
        output: typeof ReadSandboxFileResponseSchema;
    };
    /**
     * Describe one path (by default the entry itself: a symlink is reported as a symlink).
     *
     * @generated from rpc cleanroom.v1.FileService.StatSandboxFile
     */
    statSandboxFile: {
        methodKind: "unary";
        input: typeof StatSandboxFileRequestSchema;
        output: typeof StatSandboxFileResponseSchema;
    };
    /**
     * Entries of a directory, sorted by name, paged with start_after.
     *
     * @generated from rpc cleanroom.v1.FileService.ListSandboxFiles
     */
    listSandboxFiles: {
        methodKind: "unary";
        input: typeof ListSandboxFilesRequestSchema;
        output: typeof ListSandboxFilesResponseSchema;
    };
    /**
     * Create a directory (with `parents`: like mkdir -p).
     *
     * @generated from rpc cleanroom.v1.FileService.MakeSandboxDirectory
     */
    makeSandboxDirectory: {
        methodKind: "unary";
        input: typeof MakeSandboxDirectoryRequestSchema;
        output: typeof MakeSandboxDirectoryResponseSchema;
    };
    /**
     * Remove a file, a symlink (never its target) or, with `recursive`, a directory tree.
     *
     * @generated from rpc cleanroom.v1.FileService.RemoveSandboxFile
     */
    removeSandboxFile: {
        methodKind: "unary";
        input: typeof RemoveSandboxFileRequestSchema;
        output: typeof RemoveSandboxFileResponseSchema;
    };
    /**
     * Stream a file or directory tree as a tar archive (docker cp layout: entries are named
     * `<basename of path>/…`). Symlinks are archived as symlinks, never followed; FIFOs,
     * sockets and devices are skipped.
     *
     * @generated from rpc cleanroom.v1.FileService.ReadSandboxArchive
     */
    readSandboxArchive: {
        methodKind: "server_streaming";
        input: typeof ReadSandboxArchiveRequestSchema;
        output: typeof ReadSandboxArchiveResponseSchema;
    };
}>;
