import type { CleanroomClient } from "./client.js";
/** Interruptions in a row (no byte of progress between them) before a transfer gives up. */
export declare const RETRIES = 5;
/** One filesystem entry as the sandbox sees it. */
export interface FileInfo {
    path: string;
    name: string;
    type: "file" | "dir" | "symlink" | "other" | "unspecified";
    size: number;
    mode: number;
    uid: number;
    gid: number;
    modifiedAt?: Date;
    symlinkTarget: string;
}
/** Options of {@link Files.write}. */
export interface WriteOptions {
    /** Permission bits (default 0o644). */
    mode?: number;
    uid?: number;
    gid?: number;
    /** Create missing parent directories (default true). */
    createParents?: boolean;
    /** Replace an existing file (default true); false refuses with `file_exists`. */
    overwrite?: boolean;
}
/** File operations of one sandbox. */
export declare class Files {
    private readonly client;
    private readonly sandboxId;
    constructor(client: CleanroomClient, sandboxId: string);
    /** Write `data` to `path` atomically, in chunks. */
    write(path: string, data: string | Uint8Array, o?: WriteOptions): Promise<FileInfo>;
    /**
     * Extract a tar archive (`tar` bytes) into the directory `dir` (created with its parents),
     * in the sandbox with the sandbox's own identity.
     */
    writeArchive(dir: string, tar: Uint8Array): Promise<FileInfo>;
    /** A file or directory tree of the sandbox as tar bytes (entries `<basename>/…`). */
    readArchive(path: string): Promise<Uint8Array>;
    private upload;
    /**
     * A file's bytes from `offset` (at most `length`; 0 = to the end). A stream that breaks
     * off or ends short is re-opened at the offset reached (the same file: size and mtime
     * unchanged, else `stream_ended`).
     */
    read(path: string, offset?: number, length?: number): Promise<Uint8Array>;
    /** A file's content as UTF-8 text. */
    readText(path: string): Promise<string>;
    /** The entries of a directory, sorted by name (all pages). */
    list(path: string): Promise<FileInfo[]>;
    stat(path: string, followSymlinks?: boolean): Promise<FileInfo>;
    mkdir(path: string, o?: {
        mode?: number;
        parents?: boolean;
    }): Promise<FileInfo>;
    remove(path: string, o?: {
        recursive?: boolean;
        missingOk?: boolean;
    }): Promise<boolean>;
}
