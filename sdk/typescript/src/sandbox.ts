/**
 * The promise-based, idiomatic layer: {@link Sandbox} (create, list, look up, run, pause,
 * snapshot, events, approvals, attestation, release) with {@link CommandHandle} for the
 * commands in it.
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
 * Every options object is checked at run time: an unknown name is `UnknownOptionError`.
 */
import { attestationPublicKey, sandboxAttestation, verifyAttestation, type Attestation, type AttestationStatement } from "./attestation.js";
import { clientFor, type CleanroomClient, type ClientOptions } from "./client.js";
import { Collector, CommandHandle, toBytes, type CommandOptions, type CommandResult, type OutputOptions } from "./command.js";
import { errorFor, SandboxNotFoundError } from "./errors.js";
import {
  answerApprovals,
  approvalRequests,
  egressRequests,
  sandboxEvents,
  type ApprovalAnswer,
  type ApprovalAnswerer,
  type ApprovalRequest,
  type EventOptions,
  type SandboxEventInfo,
} from "./events.js";
import { Files } from "./files.js";
import { ExecutionKind, type Sandbox as SandboxMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { sandboxInfo, type SandboxInfo } from "./info.js";
import { lifetimeOf, seconds, timeoutFields, usageOf, type Lifetime, type TimeoutOptions, type Usage } from "./lifetime.js";
import { CONNECT_KEYS, checkOptions, limitFields, policyText, volumeMounts, type Limits, type PolicyInput, type VolumeSpec } from "./options.js";
import { Snapshot, snapshotInfo } from "./snapshots.js";

/** Options of {@link Sandbox.create}. */
export interface CreateOptions extends ClientOptions {
  /** The policy: cleanroom.yaml text, a policy file's path (or `file:` URL), or the policy as an object. Empty: deny by default. */
  policy?: PolicyInput;
  /** Digest-pinned OCI image reference; empty: the host-view root. */
  image?: string;
  /** Free-form labels, returned on the sandbox and usable as a filter in {@link Sandbox.list}. */
  labels?: Record<string, string>;
  /** Resource limits: MiB (`memoryMb`…) as the CLI and the policy, or bytes (`memoryBytes`…). */
  limits?: Limits;
  idempotencyKey?: string;
  /** Seconds after creation the sandbox ends (default: the policy's, else the server's). */
  ttl?: number;
  /** Seconds without activity after which the sandbox ends. */
  idleTimeout?: number;
  /**
   * Seconds without activity after which the sandbox is suspended (frozen, memory kept)
   * instead; its next command or file call resumes it (default: the policy's, else never).
   */
  suspendAfter?: number;
  /** Restore from this snapshot (`snap_…`): a fork with its policy, image and limits. */
  fromSnapshot?: string;
  /**
   * Restore from this memory checkpoint (`ckpt_…`, {@link Sandbox.checkpoint}; gvisor
   * runtime, docs/checkpoints.md): every process continues as saved. N creates = N forks.
   */
  fromCheckpoint?: string;
  /** Never take a READY sandbox from a matching warm pool. */
  noPool?: boolean;
  /** Isolation runtime: `linux` or `gvisor` (default: the policy's, else the server's); one the server lacks is refused with `runtime_unavailable`. */
  runtime?: string;
  /** Learn mode: allow unknown destinations by name and record them as `egress.learn` events. */
  learn?: boolean;
  /** Agent identity (`ed25519:<base64>`, raw base64 or SPKI PEM), bound into the attestation. */
  agentPublicKey?: string;
  delegationChain?: string[];
  /**
   * Lockfiles of the policy's `sandbox.registries` (path relative to the policy file's
   * directory → content), as the CLI sends them from the repository's committed HEAD; the
   * policy hash covers them.
   */
  lockfiles?: Record<string, string | Uint8Array>;
  /**
   * Named volumes to mount ({@link createVolume}; docs/volumes.md): `"NAME:/path[:ro]"` (the
   * CLI's `--volume`) or `{ name, path, readOnly }`. A malformed one is
   * `VolumeMountInvalidError` before any request; one held read-write elsewhere `VolumeBusyError`.
   */
  volumes?: VolumeSpec[];
}

const CREATE_KEYS = [
  ...CONNECT_KEYS,
  "policy",
  "image",
  "labels",
  "limits",
  "idempotencyKey",
  "ttl",
  "idleTimeout",
  "suspendAfter",
  "fromSnapshot",
  "fromCheckpoint",
  "noPool",
  "runtime",
  "learn",
  "agentPublicKey",
  "delegationChain",
  "lockfiles",
  "volumes",
];
const COMMAND_KEYS = ["env", "cwd", "timeout", "stdin"];
const RUN_KEYS = [...COMMAND_KEYS, "onStdout", "onStderr"];

/** Options of {@link Sandbox.list}. */
/** {@link Sandbox.updateNetwork}: what to change (applied in order: reset, deny, allow). */
export interface NetworkUpdate {
  allow?: string[];
  deny?: string[];
  reset?: boolean;
  cut?: boolean;
}

/** The live rules after {@link Sandbox.updateNetwork}. */
export interface NetworkRules {
  effectiveRulesHash: string;
  /** The compiled policy's hash (unchanged). */
  policyHash: string;
  liveAllow: string[];
  liveDeny: string[];
}

export interface ListOptions extends ClientOptions {
  /** Only sandboxes carrying every one of these labels (key and value equal). */
  labels?: Record<string, string>;
  /** Include STOPPED sandboxes (default: omitted). */
  includeStopped?: boolean;
  /** Only your own sandboxes, also for an admin (who otherwise sees everyone's). */
  onlyOwn?: boolean;
}

/** The CreateSandbox request of `opts` (checked by the caller). */
function createRequest(opts: CreateOptions) {
  return {
    policyYaml: policyText(opts.policy, "Sandbox.create"),
    imageRef: opts.image ?? "",
    idempotencyKey: opts.idempotencyKey ?? "",
    labels: opts.labels ?? {},
    limits: limitFields(opts.limits, "Sandbox.create"),
    ttlSeconds: seconds(opts.ttl, "ttl"),
    idleTimeoutSeconds: seconds(opts.idleTimeout, "idleTimeout"),
    suspendAfterSeconds: seconds(opts.suspendAfter, "suspendAfter"),
    fromSnapshot: opts.fromSnapshot ?? "",
    fromCheckpoint: opts.fromCheckpoint ?? "",
    noPool: opts.noPool ?? false,
    runtime: opts.runtime ?? "",
    learn: opts.learn ?? false,
    agentPublicKey: opts.agentPublicKey ?? "",
    delegationChain: opts.delegationChain ?? [],
    lockfiles: Object.fromEntries(Object.entries(opts.lockfiles ?? {}).map(([k, v]) => [k, toBytes(v)])),
    volumes: volumeMounts(opts.volumes),
  };
}

/** Options of {@link Sandbox.exec}: where to run (a new sandbox from the create options, or `inSandbox`) and the command's. */
export interface ExecOptions extends CreateOptions, CommandOptions, OutputOptions {
  /** Run in this existing sandbox instead of making one (create options are then refused). */
  inSandbox?: string;
  /** Keep the sandbox this call made (default: torn down in the background once the command ended). */
  keep?: boolean;
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

  /** @internal A handle on a sandbox id the server returned. */
  static of(client: CleanroomClient, id: string): Sandbox {
    return new Sandbox(client, id);
  }

  /** Create a sandbox (or restore one: `fromSnapshot`). */
  static async create(opts: CreateOptions = {}): Promise<Sandbox> {
    checkOptions(opts, CREATE_KEYS, "Sandbox.create");
    const c = clientFor(opts);
    const r = await c.call(c.sandboxes.createSandbox(createRequest(opts)));
    return new Sandbox(c, r.sandbox?.sandboxId ?? "");
  }

  /**
   * Make a sandbox (or claim one from a matching pool), run one command in it and tear it
   * down, in one call (RunExecution: what `cleanroom exec` does, no round trip per step).
   * The result carries the sandbox's id. A policy that asks for a repository bootstrap is
   * refused (`invalid_argument`): create the sandbox and run the steps yourself.
   */
  static async exec(command: string[], opts: ExecOptions = {}): Promise<CommandResult & { sandboxId: string }> {
    checkOptions(opts, [...CREATE_KEYS, ...RUN_KEYS, "inSandbox", "keep"], "Sandbox.exec");
    if (!Array.isArray(command) || command.length === 0) throw errorFor("invalid_argument", "a command is a non-empty array of arguments");
    const made = opts.inSandbox === undefined;
    if (!made && CREATE_KEYS.some((k) => !CONNECT_KEYS.includes(k as never) && opts[k as keyof ExecOptions] !== undefined)) {
      throw errorFor("invalid_argument", "Sandbox.exec: inSandbox excludes the create options");
    }
    const c = clientFor(opts);
    const create = made ? createRequest(opts) : undefined;
    const events = c.executions.runExecution({
      execution: {
        sandboxId: opts.inSandbox ?? "",
        command,
        env: opts.env ?? {},
        cwd: opts.cwd ?? "",
        timeoutSeconds: opts.timeout ?? 0,
        kind: ExecutionKind.BATCH,
        attachStdin: opts.stdin !== undefined && opts.stdin !== false,
      },
      create,
      terminateOnExit: made && !opts.keep,
    });
    let col: Collector | undefined;
    let handle: CommandHandle | undefined;
    for await (const ev of c.stream(events)) {
      const p = ev.payload;
      if (p.case === "started") {
        if (p.value.bootstrap) throw errorFor("invalid_argument", "the policy asks for a repository bootstrap: use Sandbox.create and run it");
        const sbx = new Sandbox(c, p.value.sandbox?.sandboxId ?? "");
        handle = new CommandHandle(sbx, p.value.execution?.executionId ?? "");
        col = new Collector(handle.id, { onStdout: opts.onStdout, onStderr: opts.onStderr });
        if (typeof opts.stdin === "string" || opts.stdin instanceof Uint8Array) {
          await handle.sendStdin(toBytes(opts.stdin));
          await handle.closeStdin();
        }
      } else if (col) {
        col.feed(ev);
      }
      // Read on to the end (`finished` follows the exit): a caller gone before it counts as
      // detached and the server keeps the sandbox.
    }
    if (!handle || !col) throw errorFor("stream_ended", "RunExecution ended before the command started");
    const result = await handle.follow(col);
    return { ...result, sandboxId: handle.sandbox.id };
  }

  /** An existing sandbox by id (`SandboxNotFoundError` when absent or not yours). */
  static async connect(sandboxId: string, opts: ClientOptions = {}): Promise<Sandbox> {
    checkOptions(opts, CONNECT_KEYS, "Sandbox.connect");
    const c = clientFor(opts);
    const r = await c.call(c.sandboxes.getSandbox({ sandboxId }));
    return new Sandbox(c, r.sandbox?.sandboxId ?? sandboxId);
  }

  /** The sandboxes you can see (live ones unless `includeStopped`), filtered by labels. */
  static async list(opts: ListOptions = {}): Promise<SandboxInfo[]> {
    checkOptions(opts, [...CONNECT_KEYS, "labels", "includeStopped", "onlyOwn"], "Sandbox.list");
    const c = clientFor(opts);
    const r = await c.call(
      c.sandboxes.listSandboxes({
        labels: opts.labels ?? {},
        includeStopped: opts.includeStopped ?? false,
        onlyOwn: opts.onlyOwn ?? false,
      }),
    );
    return r.sandboxes.map(sandboxInfo);
  }

  /** The sandbox as the server reports it now (the API message). */
  async info(): Promise<SandboxMessage> {
    const r = await this.client.call(this.client.sandboxes.getSandbox({ sandboxId: this.id }));
    if (!r.sandbox) throw errorFor("internal", "GetSandbox returned no sandbox");
    return r.sandbox;
  }

  /** The sandbox now as a plain record: `status` (`ready`, `paused`…), `labels`, `poolId`… */
  async describe(): Promise<SandboxInfo> {
    return sandboxInfo(await this.info());
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
    checkOptions(o, ["ttl", "idleTimeout", "clearTtl", "clearIdleTimeout"], "setTimeout");
    const fields = timeoutFields(o);
    const r = await this.client.call(this.client.lifetimes.setSandboxTimeout({ sandboxId: this.id, ...fields }));
    if (!r.sandbox) throw errorFor("internal", "SetSandboxTimeout returned no sandbox");
    return lifetimeOf(r.sandbox);
  }

  /** Start a command (argv) in the background. */
  async start(command: string[], o: CommandOptions = {}): Promise<CommandHandle> {
    checkOptions(o, COMMAND_KEYS, "start");
    return this.startChecked(command, o);
  }

  private async startChecked(command: string[], o: CommandOptions): Promise<CommandHandle> {
    if (!Array.isArray(command) || command.length === 0) {
      throw errorFor("invalid_argument", "a command is a non-empty array of arguments (for a shell string: runShell)");
    }
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
      await h.sendStdin(toBytes(o.stdin));
      await h.closeStdin();
    }
    return h;
  }

  /** Run a command (argv) to completion. A non-zero exit is a result, not an exception. */
  async run(command: string[], o: CommandOptions & OutputOptions = {}): Promise<CommandResult> {
    checkOptions(o, RUN_KEYS, "run");
    const h = await this.startChecked(command, o);
    return h.wait({ onStdout: o.onStdout, onStderr: o.onStderr });
  }

  /** Run a shell command line (`/bin/sh -c script`) to completion: pipes, globs, `&&`. */
  async runShell(script: string, o: CommandOptions & OutputOptions = {}): Promise<CommandResult> {
    if (typeof script !== "string" || script.trim() === "") throw errorFor("invalid_argument", "runShell: an empty command line");
    return this.run(["/bin/sh", "-c", script], o);
  }

  /** Start a shell command line (`/bin/sh -c script`) in the background. */
  async startShell(script: string, o: CommandOptions = {}): Promise<CommandHandle> {
    if (typeof script !== "string" || script.trim() === "") throw errorFor("invalid_argument", "startShell: an empty command line");
    return this.start(["/bin/sh", "-c", script], o);
  }

  /** Re-attach to an execution of this sandbox by id (checks that it exists). */
  async attach(executionId: string): Promise<CommandHandle> {
    const h = new CommandHandle(this, executionId);
    await h.info();
    return h;
  }

  /** Freeze every process (status `paused`); idempotent. Commands are refused with `sandbox_paused` meanwhile. */
  async pause(): Promise<SandboxInfo> {
    const r = await this.client.call(this.client.snapshots.pauseSandbox({ sandboxId: this.id }));
    if (!r.sandbox) throw errorFor("internal", "PauseSandbox returned no sandbox");
    return sandboxInfo(r.sandbox);
  }

  /** Thaw a paused sandbox (status `ready`); idempotent. */
  async resume(): Promise<SandboxInfo> {
    const r = await this.client.call(this.client.snapshots.resumeSandbox({ sandboxId: this.id }));
    if (!r.sandbox) throw errorFor("internal", "ResumeSandbox returned no sandbox");
    return sandboxInfo(r.sandbox);
  }

  /** Capture the sandbox's writable state; restore it with `snapshot.restore()` (a fork each time). */
  async snapshot(): Promise<Snapshot> {
    const r = await this.client.call(this.client.snapshots.createSnapshot({ sandboxId: this.id }));
    return Snapshot.of(this.client, snapshotInfo(r.snapshot, "CreateSnapshot"));
  }

  /**
   * Memory checkpoint (gvisor runtime, docs/checkpoints.md): memory, processes, files and
   * policy as a `ckpt_…`; restore or fork it with `Sandbox.create({ fromCheckpoint })`.
   * Without `leaveRunning` the sandbox is stopped once saved. `dropped` says what a restore
   * does not bring back. `BackendCapabilityMismatchError` on a runtime without
   * `checkpoint_restore` (linux).
   */
  async checkpoint(
    o: { leaveRunning?: boolean } = {},
  ): Promise<{ checkpointId: string; sizeBytes: number; contentDigest: string; dropped: string[] }> {
    checkOptions(o, ["leaveRunning"], "checkpoint");
    const r = await this.client.call(
      this.client.snapshots.checkpointSandbox({ sandboxId: this.id, leaveRunning: o.leaveRunning ?? false }),
    );
    return {
      checkpointId: r.checkpointId,
      sizeBytes: Number(r.sizeBytes),
      contentDigest: r.checkpoint?.contentDigest ?? "",
      dropped: r.checkpoint?.dropped ?? [],
    };
  }

  /** Give a sandbox claimed from a pool back (destroyed; its slot is re-warmed). */
  async release(o: { reusable?: boolean } = {}): Promise<SandboxInfo> {
    checkOptions(o, ["reusable"], "release");
    const r = await this.client.call(this.client.pools.releaseSandbox({ sandboxId: this.id, reusable: o.reusable ?? false }));
    if (!r.sandbox) throw errorFor("internal", "ReleaseSandbox returned no sandbox");
    return sandboxInfo(r.sandbox);
  }

  /** The sandbox's events (`follow: true` tails them until it stops): `for await (const ev of sbx.events())`. */
  events(o: EventOptions = {}): AsyncGenerator<SandboxEventInfo> {
    return sandboxEvents(this.client, this.id, o);
  }

  /**
   * Open egress requests (policy `ask`), each once, as they come: `for await (const req of
   * sbx.approvals()) await req.approve({ remember: "sandbox" })`. Ends when the sandbox
   * stops, the loop breaks or `signal` aborts.
   */
  approvals(o: { signal?: AbortSignal } = {}): AsyncGenerator<ApprovalRequest> {
    return approvalRequests(this.client, this.id, o);
  }

  /** Answer every egress request with `decide` in the background until `stop()` or the sandbox stops. */
  answerApprovals(decide: (r: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>): ApprovalAnswerer {
    return answerApprovals(this.client, this.id, decide);
  }

  /** The open egress requests now, and the destinations answered for the whole sandbox. */
  async egressRequests(): Promise<{ requests: ApprovalRequest[]; approved: string[]; refused: string[] }> {
    return egressRequests(this.client, this.id);
  }

  /**
   * Change the running sandbox's egress rules (docs/network.md): `allow` entries
   * `HOST[:PORT]` (no port: 80 and 443), `deny` hosts (every port), `reset` drops every live
   * rule first, `cut` also ends established connections the new rules deny. New connections
   * follow the new rules once this resolves. A malformed host is `PolicyInvalidError`; an
   * allow a deny covers, `PolicyConflictError`.
   */
  async updateNetwork(o: NetworkUpdate): Promise<NetworkRules> {
    checkOptions(o, ["allow", "deny", "reset", "cut"], "updateNetwork");
    const r = await this.client.call(
      this.client.network.updateSandboxNetwork({
        sandboxId: this.id,
        allow: o.allow ?? [],
        deny: o.deny ?? [],
        reset: o.reset ?? false,
        cut: o.cut ?? false,
      }),
    );
    return {
      effectiveRulesHash: r.effectiveRulesHash,
      policyHash: r.policyHash,
      liveAllow: [...r.liveAllow],
      liveDeny: [...r.liveDeny],
    };
  }

  /**
   * Serve `port` of the sandbox at a URL of the Cleanroom server (docs/network.md
   * "Inbound"), its signed token included: HTTP/1.1, HTTP/2, WebSocket and server-sent
   * events reach the sandbox's loopback port until `ttl` seconds (default one hour) pass or
   * {@link Sandbox.unexpose} removes it. Exposing an exposed port returns its URL.
   * `BackendCapabilityMismatchError` on a runtime that cannot (`inbound_connections`).
   */
  async expose(port: number, o: { ttl?: number } = {}): Promise<string> {
    checkOptions(o, ["ttl"], "expose");
    const r = await this.client.call(
      this.client.inbound.exposeSandboxPort({ sandboxId: this.id, port, ttlSeconds: BigInt(o.ttl ?? 0) }),
    );
    return r.exposure?.url || this.client.baseUrl + (r.exposure?.path ?? "");
  }

  /** The URL of `port`'s exposure (`ExposureNotFoundError` when it is not exposed). */
  async getUrl(port: number): Promise<string> {
    const r = await this.client.call(this.client.inbound.listSandboxExposures({ sandboxId: this.id }));
    const e = r.exposures.find((x) => x.port === port);
    if (!e) throw errorFor("exposure_not_found", `port ${port} of ${this.id} is not exposed`);
    return e.url || this.client.baseUrl + e.path;
  }

  /** Remove the exposure of a port (or by its `exp_…` id): its URL stops working at once. → the removed ids. */
  async unexpose(portOrExposure: number | string): Promise<string[]> {
    const r = await this.client.call(
      this.client.inbound.unexposeSandboxPort({ sandboxId: this.id, target: String(portOrExposure) }),
    );
    return r.removed.map((e) => e.id);
  }

  /** The attestation the server signed at create/claim (unverified: see {@link Sandbox.verifiedAttestation}). */
  async attestation(): Promise<Attestation> {
    return sandboxAttestation(this.client, this.id);
  }

  /** The attestation, checked against the server's public key (or `publicKeyPem` when given, e.g. pinned out of band). */
  async verifiedAttestation(publicKeyPem?: string): Promise<AttestationStatement> {
    const a = await this.attestation();
    const pem = publicKeyPem ?? (await attestationPublicKey({ client: this.client })).publicKeyPem;
    return verifyAttestation(a.envelopeJson, pem);
  }

  /**
   * Stop the sandbox and everything in it. `background`: return once it is `stopping` (its
   * commands canceled) and let the server finish the teardown.
   */
  async terminate(o: { background?: boolean } = {}): Promise<void> {
    checkOptions(o, ["background"], "terminate");
    await this.client.call(this.client.sandboxes.terminateSandbox({ sandboxId: this.id, background: o.background ?? false }));
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

export { CommandHandle, type CommandOptions, type CommandResult, type OutputCallback, type OutputOptions } from "./command.js";
