/**
 * Commands in a sandbox: {@link CommandHandle} (a started execution: stdin, wait, kill,
 * re-attach) and the folding of an execution's output stream into a {@link CommandResult}.
 * Output is retained by the server, so a handle resumes a broken stream where it stopped.
 */
import type { CleanroomClient } from "./client.js";
import { type Execution, type ExecutionStreamEvent } from "./gen/cleanroom/v1/cleanroom_pb.js";
/** An execution's record with its retained output (InspectExecution), e.g. after the fact or from another process. */
export interface ExecutionReport {
    executionId: string;
    /** `queued`, `running`, `succeeded`, `failed`, `canceled`, `timed_out`. */
    status: string;
    exitCode: number;
    command: string[];
    message: string;
    startedAt?: Date;
    finishedAt?: Date;
    /** Retained output tails (capped, lossy UTF-8); the full bytes stream with {@link CommandHandle.wait}. */
    stdout: string;
    stderr: string;
    stdoutBytes: number;
    stderrBytes: number;
    /** Output written but not retained (a retention quota or watermark was reached). */
    retainedBytesDropped: number;
    outputTruncated: boolean;
    /** The retained output was deleted by the server's retention GC. */
    outputExpired: boolean;
    policyHash: string;
    traceId: string;
}
/** What a command handle needs of its sandbox. */
export interface SandboxRef {
    readonly client: CleanroomClient;
    readonly id: string;
}
export type OutputCallback = (text: string) => void;
/** What a finished command produced. */
export interface CommandResult {
    executionId: string;
    exitCode: number;
    /** `succeeded`, `failed`, `canceled`, `timed_out`... */
    status: string;
    /** UTF-8 decoded output (invalid bytes replaced); the exact bytes are in `*Bytes`. */
    stdout: string;
    stderr: string;
    stdoutBytes: Uint8Array;
    stderrBytes: Uint8Array;
    /** Why the execution ended the way it did. */
    message: string;
    /** Stable code when the end is an error to report (`oom_killed`), else empty. */
    errorCode: string;
    warnings: string[];
}
/** Options of {@link Sandbox.start} and {@link Sandbox.run}. */
export interface CommandOptions {
    /** KEY=VALUE additions to the sandbox's environment. */
    env?: Record<string, string>;
    /** Working directory inside the sandbox (default: the workspace). */
    cwd?: string;
    /** Seconds before the server stops the command (0/absent: none). */
    timeout?: number;
    /** `true` keeps stdin open for {@link CommandHandle.sendStdin}; data is written then closed. */
    stdin?: boolean | string | Uint8Array;
}
/** Options of {@link CommandHandle.wait} and {@link Sandbox.run}. */
export interface OutputOptions {
    onStdout?: OutputCallback;
    onStderr?: OutputCallback;
}
export declare function toBytes(data: string | Uint8Array): Uint8Array;
/** Folds an execution's event stream: buffers, feeds callbacks, remembers the resume point. */
/** @internal Exported for the one-call run (Sandbox.exec), which starts folding from RunExecution's stream. */
export declare class Collector {
    private readonly executionId;
    private readonly o;
    lastSequence: bigint;
    result?: CommandResult;
    private out;
    private err;
    private warnings;
    private decOut;
    private decErr;
    constructor(executionId: string, o: OutputOptions);
    feed(ev: ExecutionStreamEvent): void;
}
/** A command running in a sandbox (from {@link Sandbox.start} or {@link Sandbox.attach}). */
export declare class CommandHandle {
    readonly sandbox: SandboxRef;
    readonly id: string;
    constructor(sandbox: SandboxRef, id: string);
    get executionId(): string;
    /** Write to the command's stdin (started with `stdin: true`). */
    sendStdin(data: string | Uint8Array): Promise<void>;
    /** Send EOF to the command's stdin. */
    closeStdin(): Promise<void>;
    /** Stream the output from the start until the command exits; resolve with the result. */
    wait(o?: OutputOptions): Promise<CommandResult>;
    /** @internal Stream from where `col` stands until the exit. */
    follow(col: Collector): Promise<CommandResult>;
    /** Cancel: SIGTERM, then SIGKILL after `graceSeconds` (0 = server default). */
    kill(graceSeconds?: number): Promise<void>;
    /**
     * One SIGINT to the command, as a terminal's Ctrl-C: no SIGKILL follows and nothing is
     * recorded as canceled (the command decides; {@link CommandHandle.kill} can still follow).
     */
    interrupt(): Promise<void>;
    /** The execution's record and retained output as the server reports them now. */
    inspect(): Promise<ExecutionReport>;
    /** The execution as the server reports it now. */
    info(): Promise<Execution>;
}
