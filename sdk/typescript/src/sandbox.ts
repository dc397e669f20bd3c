/**
 * The promise-based, idiomatic layer: {@link Sandbox} and {@link CommandHandle}.
 *
 * ```ts
 * const sbx = await Sandbox.create({ policy });
 * try {
 *   const r = await sbx.run(["python3", "-c", "print(1)"]);
 *   console.log(r.stdout, r.exitCode);
 * } finally {
 *   await sbx.terminate();
 * }
 * ```
 *
 * Commands are executions of the server; their output is retained there, so a background
 * command can be re-attached by id from this process or another (`Sandbox.connect(id)`).
 */
import { create } from "@bufbuild/protobuf";
import { CleanroomClient } from "./client.js";
import type { ConnectOptions } from "./config.js";
import { errorFor, SandboxNotFoundError } from "./errors.js";
import { Files } from "./files.js";
import { lifetimeOf, seconds, timeoutFields, usageOf, type Lifetime, type TimeoutOptions, type Usage } from "./lifetime.js";
import {
  ExecutionKind,
  ExecutionStatus,
  OutputStream,
  ResourceLimitsSchema,
  type Execution,
  type ExecutionStreamEvent,
  type ResourceLimits,
  type Sandbox as SandboxMessage,
} from "./gen/cleanroom/v1/cleanroom_pb.js";

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

function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

/** Folds an execution's event stream: buffers, feeds callbacks, remembers the resume point. */
class Collector {
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
    readonly sandbox: Sandbox,
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
    const c = this.sandbox.client;
    const col = new Collector(this.id, o);
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

  /** The execution as the server reports it now. */
  async info(): Promise<Execution> {
    const c = this.sandbox.client;
    const r = await c.call(c.executions.getExecution({ sandboxId: this.sandbox.id, executionId: this.id }));
    if (!r.execution) throw errorFor("internal", "GetExecution returned no execution");
    return r.execution;
  }
}

/** Options of {@link Sandbox.create}. */
export interface CreateOptions extends ConnectOptions {
  /** cleanroom.yaml text; empty: the built-in deny-by-default policy. */
  policy?: string;
  /** Digest-pinned OCI image reference; empty: the host-view root. */
  image?: string;
  labels?: Record<string, string>;
  limits?: Partial<Omit<ResourceLimits, "$typeName">>;
  idempotencyKey?: string;
  /** Seconds after creation the sandbox ends (default: the policy's, else the server's). */
  ttl?: number;
  /** Seconds without activity after which the sandbox ends. */
  idleTimeout?: number;
  /** Reuse an existing client (else one is built from the connect options). */
  client?: CleanroomClient;
}

/** A sandbox on a Cleanroom server. */
export class Sandbox {
  /** File operations in the sandbox (with the sandbox's own identity). */
  readonly files: Files;

  private constructor(
    readonly client: CleanroomClient,
    readonly id: string,
  ) {
    this.files = new Files(client, id);
  }

  /** Create a sandbox. */
  static async create(opts: CreateOptions = {}): Promise<Sandbox> {
    const ttlSeconds = seconds(opts.ttl, "ttl");
    const idleTimeoutSeconds = seconds(opts.idleTimeout, "idleTimeout");
    const c = opts.client ?? new CleanroomClient(opts);
    const r = await c.call(
      c.sandboxes.createSandbox({
        policyYaml: opts.policy ?? "",
        imageRef: opts.image ?? "",
        idempotencyKey: opts.idempotencyKey ?? "",
        labels: opts.labels ?? {},
        limits: opts.limits ? create(ResourceLimitsSchema, opts.limits) : undefined,
        ttlSeconds,
        idleTimeoutSeconds,
      }),
    );
    return new Sandbox(c, r.sandbox?.sandboxId ?? "");
  }

  /** An existing sandbox by id (`SandboxNotFoundError` when absent or not yours). */
  static async connect(
    sandboxId: string,
    opts: ConnectOptions & { client?: CleanroomClient } = {},
  ): Promise<Sandbox> {
    const c = opts.client ?? new CleanroomClient(opts);
    const r = await c.call(c.sandboxes.getSandbox({ sandboxId }));
    return new Sandbox(c, r.sandbox?.sandboxId ?? sandboxId);
  }

  /** The sandbox as the server reports it now. */
  async info(): Promise<SandboxMessage> {
    const r = await this.client.call(this.client.sandboxes.getSandbox({ sandboxId: this.id }));
    if (!r.sandbox) throw errorFor("internal", "GetSandbox returned no sandbox");
    return r.sandbox;
  }

  /** The sandbox's TTL, idle timeout and (once stopped) why it stopped. */
  async lifetime(): Promise<Lifetime> {
    return lifetimeOf(await this.info());
  }

  /** Live usage (CPU, memory now/peak, pids, disk per writable fs, network bytes); undefined when not live. */
  async usage(): Promise<Usage | undefined> {
    return usageOf(await this.info());
  }

  /**
   * Extend (or shorten) the sandbox's life: it now expires `ttl` seconds from now;
   * `idleTimeout` replaces the idle timeout; `clear*` removes one. READY sandboxes only
   * (`SandboxNotReadyError` otherwise).
   */
  async setTimeout(o: TimeoutOptions): Promise<Lifetime> {
    const fields = timeoutFields(o);
    const r = await this.client.call(this.client.lifetimes.setSandboxTimeout({ sandboxId: this.id, ...fields }));
    if (!r.sandbox) throw errorFor("internal", "SetSandboxTimeout returned no sandbox");
    return lifetimeOf(r.sandbox);
  }

  /** Start a command in the background. */
  async start(command: string[], o: CommandOptions = {}): Promise<CommandHandle> {
    if (command.length === 0) throw errorFor("invalid_argument", "a command needs at least one argument");
    const c = this.client;
    const r = await c.call(
      c.executions.createExecution({
        sandboxId: this.id,
        command,
        env: o.env ?? {},
        cwd: o.cwd ?? "",
        timeoutSeconds: o.timeout ?? 0,
        kind: ExecutionKind.BATCH,
        attachStdin: o.stdin !== undefined && o.stdin !== false,
      }),
    );
    const h = new CommandHandle(this, r.execution?.executionId ?? "");
    if (typeof o.stdin === "string" || o.stdin instanceof Uint8Array) {
      await h.sendStdin(o.stdin);
      await h.closeStdin();
    }
    return h;
  }

  /** Run a command to completion. A non-zero exit is a result, not an exception. */
  async run(command: string[], o: CommandOptions & OutputOptions = {}): Promise<CommandResult> {
    const h = await this.start(command, o);
    return h.wait(o);
  }

  /** Re-attach to an execution of this sandbox by id (checks that it exists). */
  async attach(executionId: string): Promise<CommandHandle> {
    const h = new CommandHandle(this, executionId);
    await h.info();
    return h;
  }

  /** Stop the sandbox and everything in it. */
  async terminate(): Promise<void> {
    await this.client.call(this.client.sandboxes.terminateSandbox({ sandboxId: this.id }));
  }

  /** `await using sbx = await Sandbox.create()` terminates it at scope exit. */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.terminate();
    } catch (e) {
      if (!(e instanceof SandboxNotFoundError)) throw e;
    }
  }
}

/** Create a sandbox, run `fn` with it, and terminate it afterwards (even on error). */
export async function withSandbox<T>(opts: CreateOptions, fn: (sbx: Sandbox) => Promise<T>): Promise<T> {
  const sbx = await Sandbox.create(opts);
  try {
    return await fn(sbx);
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
}
