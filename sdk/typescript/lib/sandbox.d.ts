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
import { type Attestation, type AttestationStatement } from "./attestation.js";
import { type CleanroomClient, type ClientOptions } from "./client.js";
import { CommandHandle, type CommandOptions, type CommandResult, type OutputOptions } from "./command.js";
import { type ApprovalAnswer, type ApprovalAnswerer, type ApprovalRequest, type EventOptions, type SandboxEventInfo } from "./events.js";
import { Files } from "./files.js";
import { type Sandbox as SandboxMessage } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { type SandboxInfo } from "./info.js";
import { type Lifetime, type TimeoutOptions, type Usage } from "./lifetime.js";
import { type Limits, type PolicyInput, type VolumeSpec } from "./options.js";
import { Snapshot } from "./snapshots.js";
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
/** Options of {@link Sandbox.exec}: where to run (a new sandbox from the create options, or `inSandbox`) and the command's. */
export interface ExecOptions extends CreateOptions, CommandOptions, OutputOptions {
    /** Run in this existing sandbox instead of making one (create options are then refused). */
    inSandbox?: string;
    /** Keep the sandbox this call made (default: torn down in the background once the command ended). */
    keep?: boolean;
}
/** A sandbox on a Cleanroom server. */
export declare class Sandbox {
    readonly client: CleanroomClient;
    readonly id: string;
    /** File operations in the sandbox (with the sandbox's own identity). */
    readonly files: Files;
    private constructor();
    /** @internal A handle on a sandbox id the server returned. */
    static of(client: CleanroomClient, id: string): Sandbox;
    /** Create a sandbox (or restore one: `fromSnapshot`). */
    static create(opts?: CreateOptions): Promise<Sandbox>;
    /**
     * Make a sandbox (or claim one from a matching pool), run one command in it and tear it
     * down, in one call (RunExecution: what `cleanroom exec` does, no round trip per step).
     * The result carries the sandbox's id. A policy that asks for a repository bootstrap is
     * refused (`invalid_argument`): create the sandbox and run the steps yourself.
     */
    static exec(command: string[], opts?: ExecOptions): Promise<CommandResult & {
        sandboxId: string;
    }>;
    /** An existing sandbox by id (`SandboxNotFoundError` when absent or not yours). */
    static connect(sandboxId: string, opts?: ClientOptions): Promise<Sandbox>;
    /** The sandboxes you can see (live ones unless `includeStopped`), filtered by labels. */
    static list(opts?: ListOptions): Promise<SandboxInfo[]>;
    /** The sandbox as the server reports it now (the API message). */
    info(): Promise<SandboxMessage>;
    /** The sandbox now as a plain record: `status` (`ready`, `paused`…), `labels`, `poolId`… */
    describe(): Promise<SandboxInfo>;
    /** The sandbox's TTL, idle timeout and (once stopped) why it stopped. */
    lifetime(): Promise<Lifetime>;
    /** Live usage (CPU, memory now/peak, pids, disk per writable fs, network bytes); undefined when not live. */
    usage(): Promise<Usage | undefined>;
    /**
     * Extend (or shorten) the sandbox's life: it now expires `ttl` seconds from now;
     * `idleTimeout` replaces the idle timeout; `clear*` removes one. READY sandboxes only
     * (`SandboxNotReadyError` otherwise).
     */
    setTimeout(o: TimeoutOptions): Promise<Lifetime>;
    /** Start a command (argv) in the background. */
    start(command: string[], o?: CommandOptions): Promise<CommandHandle>;
    private startChecked;
    /** Run a command (argv) to completion. A non-zero exit is a result, not an exception. */
    run(command: string[], o?: CommandOptions & OutputOptions): Promise<CommandResult>;
    /** Run a shell command line (`/bin/sh -c script`) to completion: pipes, globs, `&&`. */
    runShell(script: string, o?: CommandOptions & OutputOptions): Promise<CommandResult>;
    /** Start a shell command line (`/bin/sh -c script`) in the background. */
    startShell(script: string, o?: CommandOptions): Promise<CommandHandle>;
    /** Re-attach to an execution of this sandbox by id (checks that it exists). */
    attach(executionId: string): Promise<CommandHandle>;
    /** Freeze every process (status `paused`); idempotent. Commands are refused with `sandbox_paused` meanwhile. */
    pause(): Promise<SandboxInfo>;
    /** Thaw a paused sandbox (status `ready`); idempotent. */
    resume(): Promise<SandboxInfo>;
    /** Capture the sandbox's writable state; restore it with `snapshot.restore()` (a fork each time). */
    snapshot(): Promise<Snapshot>;
    /**
     * Memory checkpoint (gvisor runtime, docs/checkpoints.md): memory, processes, files and
     * policy as a `ckpt_…`; restore or fork it with `Sandbox.create({ fromCheckpoint })`.
     * Without `leaveRunning` the sandbox is stopped once saved. `dropped` says what a restore
     * does not bring back. `BackendCapabilityMismatchError` on a runtime without
     * `checkpoint_restore` (linux).
     */
    checkpoint(o?: {
        leaveRunning?: boolean;
    }): Promise<{
        checkpointId: string;
        sizeBytes: number;
        contentDigest: string;
        dropped: string[];
    }>;
    /** Give a sandbox claimed from a pool back (destroyed; its slot is re-warmed). */
    release(o?: {
        reusable?: boolean;
    }): Promise<SandboxInfo>;
    /** The sandbox's events (`follow: true` tails them until it stops): `for await (const ev of sbx.events())`. */
    events(o?: EventOptions): AsyncGenerator<SandboxEventInfo>;
    /**
     * Open egress requests (policy `ask`), each once, as they come: `for await (const req of
     * sbx.approvals()) await req.approve({ remember: "sandbox" })`. Ends when the sandbox
     * stops, the loop breaks or `signal` aborts.
     */
    approvals(o?: {
        signal?: AbortSignal;
    }): AsyncGenerator<ApprovalRequest>;
    /** Answer every egress request with `decide` in the background until `stop()` or the sandbox stops. */
    answerApprovals(decide: (r: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>): ApprovalAnswerer;
    /** The open egress requests now, and the destinations answered for the whole sandbox. */
    egressRequests(): Promise<{
        requests: ApprovalRequest[];
        approved: string[];
        refused: string[];
    }>;
    /**
     * Change the running sandbox's egress rules (docs/network.md): `allow` entries
     * `HOST[:PORT]` (no port: 80 and 443), `deny` hosts (every port), `reset` drops every live
     * rule first, `cut` also ends established connections the new rules deny. New connections
     * follow the new rules once this resolves. A malformed host is `PolicyInvalidError`; an
     * allow a deny covers, `PolicyConflictError`.
     */
    updateNetwork(o: NetworkUpdate): Promise<NetworkRules>;
    /**
     * Serve `port` of the sandbox at a URL of the Cleanroom server (docs/network.md
     * "Inbound"), its signed token included: HTTP/1.1, HTTP/2, WebSocket and server-sent
     * events reach the sandbox's loopback port until `ttl` seconds (default one hour) pass or
     * {@link Sandbox.unexpose} removes it. Exposing an exposed port returns its URL.
     * `BackendCapabilityMismatchError` on a runtime that cannot (`inbound_connections`).
     */
    expose(port: number, o?: {
        ttl?: number;
    }): Promise<string>;
    /** The URL of `port`'s exposure (`ExposureNotFoundError` when it is not exposed). */
    getUrl(port: number): Promise<string>;
    /** Remove the exposure of a port (or by its `exp_…` id): its URL stops working at once. → the removed ids. */
    unexpose(portOrExposure: number | string): Promise<string[]>;
    /** The attestation the server signed at create/claim (unverified: see {@link Sandbox.verifiedAttestation}). */
    attestation(): Promise<Attestation>;
    /** The attestation, checked against the server's public key (or `publicKeyPem` when given, e.g. pinned out of band). */
    verifiedAttestation(publicKeyPem?: string): Promise<AttestationStatement>;
    /**
     * Stop the sandbox and everything in it. `background`: return once it is `stopping` (its
     * commands canceled) and let the server finish the teardown.
     */
    terminate(o?: {
        background?: boolean;
    }): Promise<void>;
    /** `await using sbx = await Sandbox.create()` terminates it at scope exit. */
    [Symbol.asyncDispose](): Promise<void>;
}
/** Create a sandbox, run `fn` with it, and terminate it afterwards (even on error). */
export declare function withSandbox<T>(opts: CreateOptions, fn: (sbx: Sandbox) => Promise<T>): Promise<T>;
export { CommandHandle, type CommandOptions, type CommandResult, type OutputCallback, type OutputOptions } from "./command.js";
