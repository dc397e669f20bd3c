/**
 * Commands in a sandbox: {@link CommandHandle} (a started execution: stdin, wait, kill,
 * re-attach) and the folding of an execution's output stream into a {@link CommandResult}.
 * Output is retained by the server, so a handle resumes a broken stream where it stopped.
 */
import type { CleanroomClient } from "./client.js";
import { errorFor } from "./errors.js";
import { dateOf } from "./info.js";
import { ExecutionStatus, OutputStream, type Execution, type ExecutionStreamEvent } from "./gen/cleanroom/v1/cleanroom_pb.js";

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

/** WriteExecutionStdin accepts at most 4 MiB a call; stay well below. */
const STDIN_CHUNK = 1 << 20;
/** Re-open an output stream that ended without an exit this many times (resuming). */
const STREAM_RETRIES = 3;

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

function statusName(s: ExecutionStatus): string {
  return (ExecutionStatus[s] ?? "UNSPECIFIED").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

/** Folds an execution's event stream: buffers, feeds callbacks, remembers the resume point. */
/** @internal Exported for the one-call run (Sandbox.exec), which starts folding from RunExecution's stream. */
export class Collector {
  lastSequence = 0n;
  result?: CommandResult;
  private out: Uint8Array[] = [];
  private err: Uint8Array[] = [];
  private warnings: string[] = [];
  private decOut = new TextDecoder("utf-8");
  private decErr = new TextDecoder("utf-8");

  constructor(
    private readonly executionId: string,
    private readonly o: OutputOptions,
  ) {}

  feed(ev: ExecutionStreamEvent): void {
    if (ev.sequence <= this.lastSequence) return;
    this.lastSequence = ev.sequence;
    const p = ev.payload;
    if (p.case === "output") {
      const isOut = p.value.stream === OutputStream.STDOUT;
      (isOut ? this.out : this.err).push(p.value.data);
      const cb = isOut ? this.o.onStdout : this.o.onStderr;
      if (cb) {
        const text = (isOut ? this.decOut : this.decErr).decode(p.value.data, { stream: true });
        if (text) cb(text);
      }
    } else if (p.case === "warning") {
      this.warnings.push(`${p.value.code}: ${p.value.message}`);
    } else if (p.case === "exit") {
      const tailOut = this.decOut.decode();
      const tailErr = this.decErr.decode();
      if (tailOut && this.o.onStdout) this.o.onStdout(tailOut);
      if (tailErr && this.o.onStderr) this.o.onStderr(tailErr);
      const stdoutBytes = concat(this.out);
      const stderrBytes = concat(this.err);
      const td = new TextDecoder("utf-8");
      this.result = {
        executionId: this.executionId,
        exitCode: p.value.exitCode,
        status: statusName(p.value.status),
        stdout: td.decode(stdoutBytes),
        stderr: td.decode(stderrBytes),
        stdoutBytes,
        stderrBytes,
        message: p.value.message,
        errorCode: p.value.code,
        warnings: this.warnings,
      };
    }
  }
}

/** A command running in a sandbox (from {@link Sandbox.start} or {@link Sandbox.attach}). */
export class CommandHandle {
  constructor(
    readonly sandbox: SandboxRef,
    readonly id: string,
  ) {}

  get executionId(): string {
    return this.id;
  }

  /** Write to the command's stdin (started with `stdin: true`). */
  async sendStdin(data: string | Uint8Array): Promise<void> {
    const c = this.sandbox.client;
    const bytes = toBytes(data);
    for (let at = 0; at < bytes.length; at += STDIN_CHUNK) {
      await c.call(
        c.executions.writeExecutionStdin({
          sandboxId: this.sandbox.id,
          executionId: this.id,
          data: bytes.subarray(at, at + STDIN_CHUNK),
        }),
      );
    }
  }

  /** Send EOF to the command's stdin. */
  async closeStdin(): Promise<void> {
    const c = this.sandbox.client;
    await c.call(c.executions.closeExecutionStdin({ sandboxId: this.sandbox.id, executionId: this.id }));
  }

  /** Stream the output from the start until the command exits; resolve with the result. */
  async wait(o: OutputOptions = {}): Promise<CommandResult> {
    return this.follow(new Collector(this.id, o));
  }

  /** @internal Stream from where `col` stands until the exit. */
  async follow(col: Collector): Promise<CommandResult> {
    if (col.result) return col.result;
    const c = this.sandbox.client;
    for (let i = 0; i <= STREAM_RETRIES; i++) {
      const events = c.executions.streamExecution({
        sandboxId: this.sandbox.id,
        executionId: this.id,
        afterSequence: col.lastSequence,
      });
      for await (const ev of c.stream(events)) {
        col.feed(ev);
        if (col.result) return col.result;
      }
    }
    throw errorFor("stream_ended", `the output stream of ${this.id} ended without an exit status`);
  }

  /** Cancel: SIGTERM, then SIGKILL after `graceSeconds` (0 = server default). */
  async kill(graceSeconds = 0): Promise<void> {
    const c = this.sandbox.client;
    await c.call(
      c.executions.cancelExecution({ sandboxId: this.sandbox.id, executionId: this.id, graceSeconds }),
    );
  }

  /**
   * One SIGINT to the command, as a terminal's Ctrl-C: no SIGKILL follows and nothing is
   * recorded as canceled (the command decides; {@link CommandHandle.kill} can still follow).
   */
  async interrupt(): Promise<void> {
    const c = this.sandbox.client;
    await c.call(c.executions.cancelExecution({ sandboxId: this.sandbox.id, executionId: this.id, interrupt: true }));
  }

  /** The execution's record and retained output as the server reports them now. */
  async inspect(): Promise<ExecutionReport> {
    const c = this.sandbox.client;
    const r = await c.call(c.executions.inspectExecution({ sandboxId: this.sandbox.id, executionId: this.id }));
    const e = r.execution;
    if (!e) throw errorFor("internal", "InspectExecution returned no execution");
    return {
      executionId: e.executionId,
      status: statusName(e.status),
      exitCode: e.exitCode,
      command: [...e.command],
      message: r.message || e.message,
      startedAt: dateOf(e.startedAt),
      finishedAt: dateOf(e.finishedAt),
      stdout: r.stdout,
      stderr: r.stderr,
      stdoutBytes: Number(r.stdoutBytes),
      stderrBytes: Number(r.stderrBytes),
      retainedBytesDropped: Number(r.retainedBytesDropped),
      outputTruncated: r.outputTruncated,
      outputExpired: r.outputExpired,
      policyHash: r.policyHash,
      traceId: r.traceId || e.traceId,
    };
  }

  /** The execution as the server reports it now. */
  async info(): Promise<Execution> {
    const c = this.sandbox.client;
    const r = await c.call(c.executions.getExecution({ sandboxId: this.sandbox.id, executionId: this.id }));
    if (!r.execution) throw errorFor("internal", "GetExecution returned no execution");
    return r.execution;
  }
}
