import type { GenEnum, GenFile, GenMessage, GenService } from "@bufbuild/protobuf/codegenv2";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { SandboxUsage } from "./usage_pb.js";
import type { SandboxExposure } from "./inbound_pb.js";
import type { JsonObject, Message } from "@bufbuild/protobuf";
/**
 * Describes the file cleanroom/v1/cleanroom.proto.
 */
export declare const file_cleanroom_v1_cleanroom: GenFile;
/**
 * Attached to every error as a Connect error detail. `code` is a stable,
 * machine-readable reason (`sandbox_not_found`, `policy_invalid`, ...).
 *
 * @generated from message cleanroom.v1.ErrorDetail
 */
export type ErrorDetail = Message<"cleanroom.v1.ErrorDetail"> & {
    /**
     * @generated from field: string code = 1;
     */
    code: string;
    /**
     * @generated from field: string message = 2;
     */
    message: string;
    /**
     * @generated from field: map<string, string> details = 3;
     */
    details: {
        [key: string]: string;
    };
};
/**
 * Describes the message cleanroom.v1.ErrorDetail.
 * Use `create(ErrorDetailSchema)` to create a new message.
 */
export declare const ErrorDetailSchema: GenMessage<ErrorDetail>;
/**
 * @generated from message cleanroom.v1.Sandbox
 */
export type Sandbox = Message<"cleanroom.v1.Sandbox"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: cleanroom.v1.SandboxStatus status = 2;
     */
    status: SandboxStatus;
    /**
     * @generated from field: string backend = 3;
     */
    backend: string;
    /**
     * @generated from field: string policy_hash = 4;
     */
    policyHash: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 5;
     */
    createdAt?: Timestamp | undefined;
    /**
     * @generated from field: google.protobuf.Timestamp updated_at = 6;
     */
    updatedAt?: Timestamp | undefined;
    /**
     * @generated from field: string last_execution_id = 7;
     */
    lastExecutionId: string;
    /**
     * @generated from field: string active_execution_id = 8;
     */
    activeExecutionId: string;
    /**
     * Human-readable reason for FAILED (or other notable state).
     *
     * @generated from field: string message = 9;
     */
    message: string;
    /**
     * Image the sandbox root was built from; empty for the host-view root.
     *
     * @generated from field: string image_ref = 10;
     */
    imageRef: string;
    /**
     * @generated from field: string image_digest = 11;
     */
    imageDigest: string;
    /**
     * Backend-reported facts (isolation features in use, limits, cgroup mode).
     *
     * @generated from field: google.protobuf.Struct backend_info = 12;
     */
    backendInfo?: JsonObject | undefined;
    /**
     * The labels given at create (CreateSandboxRequest.labels).
     *
     * @generated from field: map<string, string> labels = 13;
     */
    labels: {
        [key: string]: string;
    };
    /**
     * host:port destinations a principal allowed for the whole sandbox (DecideEgress with
     * remember=sandbox): the effective allow set is the policy's allow rules plus these.
     * Derived from the sandbox's `egress.decision` events; the policy_hash is unchanged.
     *
     * @generated from field: repeated string egress_approved = 220;
     */
    egressApproved: string[];
    /**
     * host:port destinations a principal refused for the whole sandbox.
     *
     * @generated from field: repeated string egress_refused = 221;
     */
    egressRefused: string[];
    /**
     * The sandbox's policy may hold connections for a decision (network.unknown: ask or
     * ask rules); clients that can prompt follow its `egress.pending` events.
     *
     * @generated from field: bool egress_asks = 222;
     */
    egressAsks: boolean;
    /**
     * Lifetime (docs/api.md "Lifetimes"): when the TTL ends (unset: no TTL), the
     * effective TTL and idle timeout (0: none), the last activity the idle timeout counts
     * from, and why the sandbox stopped (`ttl_expired`, `idle_timeout`, `terminated`, ...).
     *
     * @generated from field: google.protobuf.Timestamp expires_at = 120;
     */
    expiresAt?: Timestamp | undefined;
    /**
     * @generated from field: uint64 ttl_seconds = 121;
     */
    ttlSeconds: bigint;
    /**
     * @generated from field: uint64 idle_timeout_seconds = 122;
     */
    idleTimeoutSeconds: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp last_activity_at = 123;
     */
    lastActivityAt?: Timestamp | undefined;
    /**
     * @generated from field: string stop_reason = 124;
     */
    stopReason: string;
    /**
     * Suspend on idle (docs/lifetimes.md): seconds without activity after which the sandbox
     * is suspended (0: never), and when it was (unset: it is not suspended). A suspended
     * sandbox is PAUSED; its next use resumes it.
     *
     * @generated from field: uint64 suspend_after_seconds = 126;
     */
    suspendAfterSeconds: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp suspended_at = 127;
     */
    suspendedAt?: Timestamp | undefined;
    /**
     * Live resource usage; filled by GetSandbox for a live sandbox (not by ListSandboxes).
     *
     * @generated from field: cleanroom.v1.SandboxUsage usage = 125;
     */
    usage?: SandboxUsage | undefined;
    /**
     * Agent identity bound at create/claim (`ed25519:<base64>`), empty when none was given
     * (GetSandbox only; see attestation.proto).
     *
     * @generated from field: string agent_public_key = 180;
     */
    agentPublicKey: string;
    /**
     * Delegation chain from the agent towards a human principal, as given (`ed25519:<base64>`).
     *
     * @generated from field: repeated string delegation_chain = 181;
     */
    delegationChain: string[];
    /**
     * Warm pool the sandbox was claimed from (empty: created fresh).
     *
     * @generated from field: string pool_id = 182;
     */
    poolId: string;
    /**
     * Named volumes mounted into the sandbox (from its compiled policy).
     *
     * @generated from field: repeated cleanroom.v1.VolumeMount volumes = 230;
     */
    volumes: VolumeMount[];
    /**
     * Live egress rules (network.proto; GetSandbox only): `sha256:<hex>` of the effective
     * rule set (the policy's rules plus live ones; empty when the policy cannot be decoded),
     * and the live rules themselves (allow as `host:port[,port]`, deny as hosts).
     *
     * @generated from field: string effective_rules_hash = 250;
     */
    effectiveRulesHash: string;
    /**
     * @generated from field: repeated string live_allow = 251;
     */
    liveAllow: string[];
    /**
     * @generated from field: repeated string live_deny = 252;
     */
    liveDeny: string[];
    /**
     * Exposed ports (inbound.proto; GetSandbox only), with their tokens.
     *
     * @generated from field: repeated cleanroom.v1.SandboxExposure exposures = 270;
     */
    exposures: SandboxExposure[];
    /**
     * The owning principal: `uid:<n>` for a unix user, a token's or client certificate's
     * name, `legacy:` for a sandbox from before owners were recorded. A caller sees only its
     * own sandboxes unless it is an admin, so only an admin ever reads another name here.
     *
     * @generated from field: string owner = 280;
     */
    owner: string;
};
/**
 * Describes the message cleanroom.v1.Sandbox.
 * Use `create(SandboxSchema)` to create a new message.
 */
export declare const SandboxSchema: GenMessage<Sandbox>;
/**
 * @generated from message cleanroom.v1.Execution
 */
export type Execution = Message<"cleanroom.v1.Execution"> & {
    /**
     * @generated from field: string execution_id = 1;
     */
    executionId: string;
    /**
     * @generated from field: string sandbox_id = 2;
     */
    sandboxId: string;
    /**
     * @generated from field: cleanroom.v1.ExecutionStatus status = 3;
     */
    status: ExecutionStatus;
    /**
     * @generated from field: repeated string command = 4;
     */
    command: string[];
    /**
     * @generated from field: int32 exit_code = 5;
     */
    exitCode: number;
    /**
     * @generated from field: google.protobuf.Timestamp started_at = 6;
     */
    startedAt?: Timestamp | undefined;
    /**
     * @generated from field: google.protobuf.Timestamp finished_at = 7;
     */
    finishedAt?: Timestamp | undefined;
    /**
     * @generated from field: bool tty = 8;
     */
    tty: boolean;
    /**
     * @generated from field: cleanroom.v1.ExecutionKind kind = 10;
     */
    kind: ExecutionKind;
    /**
     * Why the execution ended the way it did (timeout, cancel, server restart...).
     *
     * @generated from field: string message = 11;
     */
    message: string;
    /**
     * @generated from field: string cwd = 12;
     */
    cwd: string;
    /**
     * @generated from field: google.protobuf.Timestamp created_at = 13;
     */
    createdAt?: Timestamp | undefined;
    /**
     * @generated from field: string trace_id = 14;
     */
    traceId: string;
};
/**
 * Describes the message cleanroom.v1.Execution.
 * Use `create(ExecutionSchema)` to create a new message.
 */
export declare const ExecutionSchema: GenMessage<Execution>;
/**
 * @generated from message cleanroom.v1.CreateSandboxRequest
 */
export type CreateSandboxRequest = Message<"cleanroom.v1.CreateSandboxRequest"> & {
    /**
     * cleanroom.yaml contents (v1). Empty means the built-in deny-by-default policy.
     *
     * @generated from field: string policy_yaml = 1;
     */
    policyYaml: string;
    /**
     * Optional OCI image reference (digest pinned). Empty = host-view root.
     *
     * @generated from field: string image_ref = 2;
     */
    imageRef: string;
    /**
     * Client-chosen key that makes retries idempotent (optional).
     *
     * @generated from field: string idempotency_key = 3;
     */
    idempotencyKey: string;
    /**
     * Free-form labels for listing/filtering (ListSandboxesRequest.labels), returned on
     * the Sandbox. At most 64; a key is 1-63 bytes of letters, digits, `.`, `_`, `-` and
     * `/`; a value at most 256 bytes. Others are refused with invalid_argument.
     *
     * @generated from field: map<string, string> labels = 4;
     */
    labels: {
        [key: string]: string;
    };
    /**
     * Resource limits; zero fields fall back to the policy's, then the server defaults.
     *
     * @generated from field: cleanroom.v1.ResourceLimits limits = 5;
     */
    limits?: ResourceLimits | undefined;
    /**
     * Learn mode (`cleanroom exec --learn`): the policy is compiled with
     * `sandbox.network.unknown: learn` (destinations no rule covers are allowed and their
     * first use recorded as `egress.learn` events); the policy_hash says so.
     *
     * @generated from field: bool learn = 220;
     */
    learn: boolean;
    /**
     * Lockfiles of the policy's `sandbox.registries` (path relative to the policy file's
     * directory -> content at the repository's committed HEAD). Bound to the policy by the
     * server: the policy hash covers them.
     *
     * @generated from field: map<string, bytes> lockfiles = 200;
     */
    lockfiles: {
        [key: string]: Uint8Array;
    };
    /**
     * Terminate the sandbox this many seconds after creation (0: the policy's
     * `sandbox.lifetime.ttl_seconds`, else `serve --sandbox-ttl`; extend with
     * SandboxLifetimeService.SetSandboxTimeout).
     *
     * @generated from field: uint64 ttl_seconds = 120;
     */
    ttlSeconds: bigint;
    /**
     * Terminate it after this many seconds without activity (0: the policy's, else
     * `serve --sandbox-idle-timeout`).
     *
     * @generated from field: uint64 idle_timeout_seconds = 121;
     */
    idleTimeoutSeconds: bigint;
    /**
     * Suspend (freeze, memory kept) after this many seconds without activity instead of
     * terminating (0: the policy's `sandbox.lifetime.suspend_after_seconds`, else never). Any
     * use of the sandbox (exec, console, files) resumes it first.
     *
     * @generated from field: uint64 suspend_after_seconds = 122;
     */
    suspendAfterSeconds: bigint;
    /**
     * Restore from this snapshot (`snap_…`, the caller's): its policy, image and limits are
     * used; policy_yaml and image_ref must then be empty.
     *
     * @generated from field: string from_snapshot = 160;
     */
    fromSnapshot: string;
    /**
     * Restore from this memory checkpoint (`ckpt_…`, the caller's; docs/checkpoints.md):
     * every process continues with its memory and files as checkpointed, under a fresh
     * identity. Its policy, image and limits are used; policy_yaml, image_ref, runtime,
     * limits and from_snapshot must then be empty. Creating N sandboxes from one
     * checkpoint forks it N times.
     *
     * @generated from field: string from_checkpoint = 161;
     */
    fromCheckpoint: string;
    /**
     * Agent identity (seed 002 NHI): an ed25519 public key as `ed25519:<base64>`, raw base64 or
     * an SPKI PEM. Recorded on the sandbox and bound into its attestation.
     *
     * @generated from field: string agent_public_key = 180;
     */
    agentPublicKey: string;
    /**
     * Delegation chain from the agent towards a human principal (same key forms).
     *
     * @generated from field: repeated string delegation_chain = 181;
     */
    delegationChain: string[];
    /**
     * When true, never take a ready sandbox from a matching warm pool.
     *
     * @generated from field: bool no_pool = 182;
     */
    noPool: boolean;
    /**
     * Isolation runtime: `linux` or `gvisor` (empty: the policy's `sandbox.runtime`, else
     * `serve --default-runtime`). Wins over the policy's. A runtime the server does not have
     * is refused with runtime_unavailable, never replaced by another.
     *
     * @generated from field: string runtime = 240;
     */
    runtime: string;
    /**
     * Named volumes of the caller to mount (besides the policy's `sandbox.volumes`; the
     * policy hash covers both). `volume_mount_invalid` for a bad name or path,
     * `volume_not_found`, `volume_busy` when a live sandbox's mount conflicts. Never
     * served from a warm pool.
     *
     * @generated from field: repeated cleanroom.v1.VolumeMount volumes = 230;
     */
    volumes: VolumeMount[];
};
/**
 * Describes the message cleanroom.v1.CreateSandboxRequest.
 * Use `create(CreateSandboxRequestSchema)` to create a new message.
 */
export declare const CreateSandboxRequestSchema: GenMessage<CreateSandboxRequest>;
/**
 * One named volume mounted into a sandbox (docs/volumes.md).
 *
 * @generated from message cleanroom.v1.VolumeMount
 */
export type VolumeMount = Message<"cleanroom.v1.VolumeMount"> & {
    /**
     * The caller's volume of this name.
     *
     * @generated from field: string name = 1;
     */
    name: string;
    /**
     * Absolute guest path (not /, /workspace, /tmp, /root, /home themselves, nothing under
     * /proc, /dev, /sys, /run, /etc, /usr, /bin, /sbin, /lib*, /opt, /boot, /var).
     *
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * @generated from field: bool read_only = 3;
     */
    readOnly: boolean;
};
/**
 * Describes the message cleanroom.v1.VolumeMount.
 * Use `create(VolumeMountSchema)` to create a new message.
 */
export declare const VolumeMountSchema: GenMessage<VolumeMount>;
/**
 * @generated from message cleanroom.v1.ResourceLimits
 */
export type ResourceLimits = Message<"cleanroom.v1.ResourceLimits"> & {
    /**
     * @generated from field: uint64 memory_bytes = 1;
     */
    memoryBytes: bigint;
    /**
     * @generated from field: uint64 pids = 2;
     */
    pids: bigint;
    /**
     * CPU time per wall second in milli-CPUs (1000 = one core).
     *
     * @generated from field: uint64 cpu_millis = 3;
     */
    cpuMillis: bigint;
    /**
     * Size cap of each writable filesystem (/tmp, /workspace, /root).
     *
     * @generated from field: uint64 disk_bytes = 4;
     */
    diskBytes: bigint;
    /**
     * Output (stdout + stderr) the server retains for all of the sandbox's executions;
     * beyond it output is streamed live to attached clients but not kept.
     *
     * @generated from field: uint64 output_bytes = 5;
     */
    outputBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.ResourceLimits.
 * Use `create(ResourceLimitsSchema)` to create a new message.
 */
export declare const ResourceLimitsSchema: GenMessage<ResourceLimits>;
/**
 * @generated from message cleanroom.v1.CreateSandboxResponse
 */
export type CreateSandboxResponse = Message<"cleanroom.v1.CreateSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
    /**
     * What a client that creates a sandbox for a repository should do before its workload,
     * derived by the server from the compiled policy. Unset when the policy asks for nothing.
     *
     * @generated from field: cleanroom.v1.Bootstrap bootstrap = 2;
     */
    bootstrap?: Bootstrap | undefined;
};
/**
 * Describes the message cleanroom.v1.CreateSandboxResponse.
 * Use `create(CreateSandboxResponseSchema)` to create a new message.
 */
export declare const CreateSandboxResponseSchema: GenMessage<CreateSandboxResponse>;
/**
 * Repository bootstrap steps of a sandbox, from its compiled policy (`repository.path`,
 * `sandbox.dependencies.command`). The client performs them through the public API
 * (it holds the repository); the server only says what the policy asks for.
 *
 * @generated from message cleanroom.v1.Bootstrap
 */
export type Bootstrap = Message<"cleanroom.v1.Bootstrap"> & {
    /**
     * Guest path where the repository's committed checkout goes, and the default working
     * directory of executions. Empty: no checkout.
     *
     * @generated from field: string repository_path = 1;
     */
    repositoryPath: string;
    /**
     * argv run once (in repository_path) before the workload. Empty: none.
     *
     * @generated from field: repeated string dependencies_command = 2;
     */
    dependenciesCommand: string[];
};
/**
 * Describes the message cleanroom.v1.Bootstrap.
 * Use `create(BootstrapSchema)` to create a new message.
 */
export declare const BootstrapSchema: GenMessage<Bootstrap>;
/**
 * @generated from message cleanroom.v1.GetSandboxRequest
 */
export type GetSandboxRequest = Message<"cleanroom.v1.GetSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
};
/**
 * Describes the message cleanroom.v1.GetSandboxRequest.
 * Use `create(GetSandboxRequestSchema)` to create a new message.
 */
export declare const GetSandboxRequestSchema: GenMessage<GetSandboxRequest>;
/**
 * @generated from message cleanroom.v1.GetSandboxResponse
 */
export type GetSandboxResponse = Message<"cleanroom.v1.GetSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.GetSandboxResponse.
 * Use `create(GetSandboxResponseSchema)` to create a new message.
 */
export declare const GetSandboxResponseSchema: GenMessage<GetSandboxResponse>;
/**
 * @generated from message cleanroom.v1.ListSandboxesRequest
 */
export type ListSandboxesRequest = Message<"cleanroom.v1.ListSandboxesRequest"> & {
    /**
     * When false (default), STOPPED sandboxes are omitted.
     *
     * @generated from field: bool include_stopped = 1;
     */
    includeStopped: boolean;
    /**
     * Only sandboxes carrying every one of these labels (key and value equal).
     *
     * @generated from field: map<string, string> labels = 2;
     */
    labels: {
        [key: string]: string;
    };
    /**
     * Only the caller's own sandboxes, also for an admin (who otherwise sees every
     * principal's). `cleanroom sandbox rm --all/--label` lists with it.
     *
     * @generated from field: bool only_own = 3;
     */
    onlyOwn: boolean;
    /**
     * Only the sandboxes of this owner (`Sandbox.owner`'s form). An admin may name anyone;
     * anyone else only themselves — another name is refused with `permission_denied`
     * (reason `owner_filter`), whether or not that principal has sandboxes. A name in no
     * owner form is `invalid_argument`.
     *
     * @generated from field: string owner = 280;
     */
    owner: string;
    /**
     * Only sandboxes that changed at or after this moment — pass the previous answer's
     * `cursor` — so a live list re-reads what changed, not every sandbox. A change is a
     * write to the sandbox's row: its status (pause, suspend, stop included), its
     * executions, its owner (a pool claim), its message; not its usage or last activity.
     * The answer lists the changed sandboxes that match the other fields and names in
     * `unlisted_sandbox_ids` the caller's changed ones that no longer match. A moment the
     * server cannot honour (after its own clock) gets the whole list, `complete` set.
     *
     * @generated from field: google.protobuf.Timestamp changed_since = 281;
     */
    changedSince?: Timestamp | undefined;
};
/**
 * Describes the message cleanroom.v1.ListSandboxesRequest.
 * Use `create(ListSandboxesRequestSchema)` to create a new message.
 */
export declare const ListSandboxesRequestSchema: GenMessage<ListSandboxesRequest>;
/**
 * @generated from message cleanroom.v1.ListSandboxesResponse
 */
export type ListSandboxesResponse = Message<"cleanroom.v1.ListSandboxesResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Sandbox sandboxes = 1;
     */
    sandboxes: Sandbox[];
    /**
     * Where the next `changed_since` starts: a few seconds before this answer was read
     * (writes that were under way then are not missed; the next answer may repeat a few).
     *
     * @generated from field: google.protobuf.Timestamp cursor = 281;
     */
    cursor?: Timestamp | undefined;
    /**
     * True when `sandboxes` is the whole list (no `changed_since`, or one the server could
     * not honour): replace what you hold. False: merge — add or update `sandboxes`, drop
     * `unlisted_sandbox_ids`.
     *
     * @generated from field: bool complete = 282;
     */
    complete: boolean;
    /**
     * With `changed_since`: sandboxes the caller may see that changed and no longer match
     * the request (stopped without include_stopped, other labels or owner).
     *
     * @generated from field: repeated string unlisted_sandbox_ids = 283;
     */
    unlistedSandboxIds: string[];
};
/**
 * Describes the message cleanroom.v1.ListSandboxesResponse.
 * Use `create(ListSandboxesResponseSchema)` to create a new message.
 */
export declare const ListSandboxesResponseSchema: GenMessage<ListSandboxesResponse>;
/**
 * @generated from message cleanroom.v1.DownloadSandboxFileRequest
 */
export type DownloadSandboxFileRequest = Message<"cleanroom.v1.DownloadSandboxFileRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string path = 2;
     */
    path: string;
    /**
     * Maximum bytes to return; 0 = server default.
     *
     * @generated from field: uint64 max_bytes = 3;
     */
    maxBytes: bigint;
};
/**
 * Describes the message cleanroom.v1.DownloadSandboxFileRequest.
 * Use `create(DownloadSandboxFileRequestSchema)` to create a new message.
 */
export declare const DownloadSandboxFileRequestSchema: GenMessage<DownloadSandboxFileRequest>;
/**
 * @generated from message cleanroom.v1.DownloadSandboxFileResponse
 */
export type DownloadSandboxFileResponse = Message<"cleanroom.v1.DownloadSandboxFileResponse"> & {
    /**
     * @generated from field: string path = 1;
     */
    path: string;
    /**
     * @generated from field: bytes content = 2;
     */
    content: Uint8Array;
    /**
     * @generated from field: uint64 size = 3;
     */
    size: bigint;
    /**
     * @generated from field: bool truncated = 4;
     */
    truncated: boolean;
};
/**
 * Describes the message cleanroom.v1.DownloadSandboxFileResponse.
 * Use `create(DownloadSandboxFileResponseSchema)` to create a new message.
 */
export declare const DownloadSandboxFileResponseSchema: GenMessage<DownloadSandboxFileResponse>;
/**
 * @generated from message cleanroom.v1.TerminateSandboxRequest
 */
export type TerminateSandboxRequest = Message<"cleanroom.v1.TerminateSandboxRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * Return as soon as the sandbox is STOPPING (its executions canceled, its teardown
     * started) instead of when it is STOPPED: the teardown (killing every process, removing
     * mounts, cgroups and directories) finishes in the server, which reports the end as a
     * sandbox status event. `cleanroom exec` uses it so a command's exit code is not delayed
     * by the teardown. The sandbox keeps counting against caps until it is STOPPED.
     *
     * @generated from field: bool background = 240;
     */
    background: boolean;
};
/**
 * Describes the message cleanroom.v1.TerminateSandboxRequest.
 * Use `create(TerminateSandboxRequestSchema)` to create a new message.
 */
export declare const TerminateSandboxRequestSchema: GenMessage<TerminateSandboxRequest>;
/**
 * @generated from message cleanroom.v1.TerminateSandboxResponse
 */
export type TerminateSandboxResponse = Message<"cleanroom.v1.TerminateSandboxResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
};
/**
 * Describes the message cleanroom.v1.TerminateSandboxResponse.
 * Use `create(TerminateSandboxResponseSchema)` to create a new message.
 */
export declare const TerminateSandboxResponseSchema: GenMessage<TerminateSandboxResponse>;
/**
 * @generated from message cleanroom.v1.StreamSandboxEventsRequest
 */
export type StreamSandboxEventsRequest = Message<"cleanroom.v1.StreamSandboxEventsRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * Only events with sequence > after_sequence are sent (resume point).
     *
     * @generated from field: uint64 after_sequence = 2;
     */
    afterSequence: bigint;
    /**
     * When true, keep the stream open and tail new events until the sandbox stops.
     *
     * @generated from field: bool follow = 3;
     */
    follow: boolean;
};
/**
 * Describes the message cleanroom.v1.StreamSandboxEventsRequest.
 * Use `create(StreamSandboxEventsRequestSchema)` to create a new message.
 */
export declare const StreamSandboxEventsRequestSchema: GenMessage<StreamSandboxEventsRequest>;
/**
 * @generated from message cleanroom.v1.SandboxEvent
 */
export type SandboxEvent = Message<"cleanroom.v1.SandboxEvent"> & {
    /**
     * Server-wide monotonic sequence number; use it to resume.
     *
     * @generated from field: uint64 sequence = 1;
     */
    sequence: bigint;
    /**
     * @generated from field: string sandbox_id = 2;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 3;
     */
    executionId: string;
    /**
     * Event type, e.g. `sandbox.status`, `execution.status`, `policy.deny`.
     *
     * @generated from field: string type = 4;
     */
    type: string;
    /**
     * @generated from field: google.protobuf.Timestamp at = 5;
     */
    at?: Timestamp | undefined;
    /**
     * @generated from field: cleanroom.v1.SandboxStatus sandbox_status = 6;
     */
    sandboxStatus: SandboxStatus;
    /**
     * @generated from field: cleanroom.v1.ExecutionStatus execution_status = 7;
     */
    executionStatus: ExecutionStatus;
    /**
     * @generated from field: string message = 8;
     */
    message: string;
    /**
     * Structured fields: host, port, protocol, decision, reason code, policy_hash...
     *
     * @generated from field: google.protobuf.Struct attributes = 9;
     */
    attributes?: JsonObject | undefined;
};
/**
 * Describes the message cleanroom.v1.SandboxEvent.
 * Use `create(SandboxEventSchema)` to create a new message.
 */
export declare const SandboxEventSchema: GenMessage<SandboxEvent>;
/**
 * @generated from message cleanroom.v1.CreateExecutionRequest
 */
export type CreateExecutionRequest = Message<"cleanroom.v1.CreateExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: repeated string command = 2;
     */
    command: string[];
    /**
     * KEY=VALUE assignments added to the sandbox's base environment.
     *
     * @generated from field: map<string, string> env = 3;
     */
    env: {
        [key: string]: string;
    };
    /**
     * Working directory inside the sandbox; empty = the workspace.
     *
     * @generated from field: string cwd = 4;
     */
    cwd: string;
    /**
     * 0 = no timeout.
     *
     * @generated from field: uint32 timeout_seconds = 5;
     */
    timeoutSeconds: number;
    /**
     * @generated from field: cleanroom.v1.ExecutionKind kind = 6;
     */
    kind: ExecutionKind;
    /**
     * @generated from field: bool tty = 7;
     */
    tty: boolean;
    /**
     * When true, stdin is a pipe fed by WriteExecutionStdin/CloseExecutionStdin;
     * when false, the command sees EOF on stdin at once.
     *
     * @generated from field: bool attach_stdin = 8;
     */
    attachStdin: boolean;
    /**
     * Initial terminal size of a tty/INTERACTIVE execution (0 = 80x24).
     *
     * @generated from field: uint32 tty_cols = 140;
     */
    ttyCols: number;
    /**
     * @generated from field: uint32 tty_rows = 141;
     */
    ttyRows: number;
};
/**
 * Describes the message cleanroom.v1.CreateExecutionRequest.
 * Use `create(CreateExecutionRequestSchema)` to create a new message.
 */
export declare const CreateExecutionRequestSchema: GenMessage<CreateExecutionRequest>;
/**
 * @generated from message cleanroom.v1.CreateExecutionResponse
 */
export type CreateExecutionResponse = Message<"cleanroom.v1.CreateExecutionResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Execution execution = 1;
     */
    execution?: Execution | undefined;
};
/**
 * Describes the message cleanroom.v1.CreateExecutionResponse.
 * Use `create(CreateExecutionResponseSchema)` to create a new message.
 */
export declare const CreateExecutionResponseSchema: GenMessage<CreateExecutionResponse>;
/**
 * @generated from message cleanroom.v1.AttachExecutionRequest
 */
export type AttachExecutionRequest = Message<"cleanroom.v1.AttachExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
    /**
     * @generated from field: uint32 initial_cols = 3;
     */
    initialCols: number;
    /**
     * @generated from field: uint32 initial_rows = 4;
     */
    initialRows: number;
};
/**
 * Describes the message cleanroom.v1.AttachExecutionRequest.
 * Use `create(AttachExecutionRequestSchema)` to create a new message.
 */
export declare const AttachExecutionRequestSchema: GenMessage<AttachExecutionRequest>;
/**
 * @generated from message cleanroom.v1.AttachExecutionResponse
 */
export type AttachExecutionResponse = Message<"cleanroom.v1.AttachExecutionResponse"> & {
    /**
     * @generated from field: string session_id = 1;
     */
    sessionId: string;
    /**
     * @generated from field: string session_token = 2;
     */
    sessionToken: string;
    /**
     * @generated from field: google.protobuf.Timestamp expires_at = 3;
     */
    expiresAt?: Timestamp | undefined;
    /**
     * @generated from field: string quic_endpoint = 4;
     */
    quicEndpoint: string;
    /**
     * @generated from field: string alpn = 5;
     */
    alpn: string;
    /**
     * @generated from field: string server_cert_pin_sha256 = 6;
     */
    serverCertPinSha256: string;
};
/**
 * Describes the message cleanroom.v1.AttachExecutionResponse.
 * Use `create(AttachExecutionResponseSchema)` to create a new message.
 */
export declare const AttachExecutionResponseSchema: GenMessage<AttachExecutionResponse>;
/**
 * @generated from message cleanroom.v1.GetExecutionRequest
 */
export type GetExecutionRequest = Message<"cleanroom.v1.GetExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
};
/**
 * Describes the message cleanroom.v1.GetExecutionRequest.
 * Use `create(GetExecutionRequestSchema)` to create a new message.
 */
export declare const GetExecutionRequestSchema: GenMessage<GetExecutionRequest>;
/**
 * @generated from message cleanroom.v1.GetExecutionResponse
 */
export type GetExecutionResponse = Message<"cleanroom.v1.GetExecutionResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Execution execution = 1;
     */
    execution?: Execution | undefined;
};
/**
 * Describes the message cleanroom.v1.GetExecutionResponse.
 * Use `create(GetExecutionResponseSchema)` to create a new message.
 */
export declare const GetExecutionResponseSchema: GenMessage<GetExecutionResponse>;
/**
 * @generated from message cleanroom.v1.InspectExecutionRequest
 */
export type InspectExecutionRequest = Message<"cleanroom.v1.InspectExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
    /**
     * With sandbox_id set and execution_id empty: inspect the sandbox's last execution.
     *
     * @generated from field: bool last = 3;
     */
    last: boolean;
};
/**
 * Describes the message cleanroom.v1.InspectExecutionRequest.
 * Use `create(InspectExecutionRequestSchema)` to create a new message.
 */
export declare const InspectExecutionRequestSchema: GenMessage<InspectExecutionRequest>;
/**
 * @generated from message cleanroom.v1.InspectExecutionResponse
 */
export type InspectExecutionResponse = Message<"cleanroom.v1.InspectExecutionResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Execution execution = 1;
     */
    execution?: Execution | undefined;
    /**
     * @generated from field: string message = 2;
     */
    message: string;
    /**
     * Retained output (tail, capped); lossy UTF-8. Use StreamExecution for bytes.
     *
     * @generated from field: string stdout = 3;
     */
    stdout: string;
    /**
     * @generated from field: string stderr = 4;
     */
    stderr: string;
    /**
     * @generated from field: string image_ref = 5;
     */
    imageRef: string;
    /**
     * @generated from field: string image_digest = 6;
     */
    imageDigest: string;
    /**
     * @generated from field: string artifacts_dir = 7;
     */
    artifactsDir: string;
    /**
     * @generated from field: string plan_path = 8;
     */
    planPath: string;
    /**
     * @generated from field: bool launched_vm = 9;
     */
    launchedVm: boolean;
    /**
     * @generated from field: google.protobuf.Struct observability = 10;
     */
    observability?: JsonObject | undefined;
    /**
     * @generated from field: string trace_id = 11;
     */
    traceId: string;
    /**
     * @generated from field: string trace_url = 12;
     */
    traceUrl: string;
    /**
     * @generated from field: string policy_hash = 13;
     */
    policyHash: string;
    /**
     * @generated from field: uint64 stdout_bytes = 14;
     */
    stdoutBytes: bigint;
    /**
     * @generated from field: uint64 stderr_bytes = 15;
     */
    stderrBytes: bigint;
    /**
     * Output the sandbox wrote but the server did not retain (retention quota or a server
     * watermark was reached; it was streamed live only), also while the execution runs.
     *
     * @generated from field: uint64 retained_bytes_dropped = 16;
     */
    retainedBytesDropped: bigint;
    /**
     * @generated from field: bool output_truncated = 17;
     */
    outputTruncated: boolean;
    /**
     * The retained output was deleted by the server's retention GC (`output_expired`).
     *
     * @generated from field: bool output_expired = 18;
     */
    outputExpired: boolean;
};
/**
 * Describes the message cleanroom.v1.InspectExecutionResponse.
 * Use `create(InspectExecutionResponseSchema)` to create a new message.
 */
export declare const InspectExecutionResponseSchema: GenMessage<InspectExecutionResponse>;
/**
 * @generated from message cleanroom.v1.CancelExecutionRequest
 */
export type CancelExecutionRequest = Message<"cleanroom.v1.CancelExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
    /**
     * SIGTERM first, SIGKILL after this many seconds (0 = server default).
     *
     * @generated from field: uint32 grace_seconds = 3;
     */
    graceSeconds: number;
    /**
     * Instead of a cancel: one SIGINT to the process, as a terminal's Ctrl-C (what
     * `cleanroom exec` sends on the first Ctrl-C). No SIGKILL follows and nothing is recorded
     * as canceled: the process decides; a cancel can still follow.
     *
     * @generated from field: bool interrupt = 4;
     */
    interrupt: boolean;
};
/**
 * Describes the message cleanroom.v1.CancelExecutionRequest.
 * Use `create(CancelExecutionRequestSchema)` to create a new message.
 */
export declare const CancelExecutionRequestSchema: GenMessage<CancelExecutionRequest>;
/**
 * @generated from message cleanroom.v1.CancelExecutionResponse
 */
export type CancelExecutionResponse = Message<"cleanroom.v1.CancelExecutionResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Execution execution = 1;
     */
    execution?: Execution | undefined;
};
/**
 * Describes the message cleanroom.v1.CancelExecutionResponse.
 * Use `create(CancelExecutionResponseSchema)` to create a new message.
 */
export declare const CancelExecutionResponseSchema: GenMessage<CancelExecutionResponse>;
/**
 * @generated from message cleanroom.v1.WriteExecutionStdinRequest
 */
export type WriteExecutionStdinRequest = Message<"cleanroom.v1.WriteExecutionStdinRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
    /**
     * @generated from field: bytes data = 3;
     */
    data: Uint8Array;
};
/**
 * Describes the message cleanroom.v1.WriteExecutionStdinRequest.
 * Use `create(WriteExecutionStdinRequestSchema)` to create a new message.
 */
export declare const WriteExecutionStdinRequestSchema: GenMessage<WriteExecutionStdinRequest>;
/**
 * @generated from message cleanroom.v1.WriteExecutionStdinResponse
 */
export type WriteExecutionStdinResponse = Message<"cleanroom.v1.WriteExecutionStdinResponse"> & {
    /**
     * @generated from field: uint64 bytes_written = 1;
     */
    bytesWritten: bigint;
};
/**
 * Describes the message cleanroom.v1.WriteExecutionStdinResponse.
 * Use `create(WriteExecutionStdinResponseSchema)` to create a new message.
 */
export declare const WriteExecutionStdinResponseSchema: GenMessage<WriteExecutionStdinResponse>;
/**
 * @generated from message cleanroom.v1.CloseExecutionStdinRequest
 */
export type CloseExecutionStdinRequest = Message<"cleanroom.v1.CloseExecutionStdinRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
};
/**
 * Describes the message cleanroom.v1.CloseExecutionStdinRequest.
 * Use `create(CloseExecutionStdinRequestSchema)` to create a new message.
 */
export declare const CloseExecutionStdinRequestSchema: GenMessage<CloseExecutionStdinRequest>;
/**
 * @generated from message cleanroom.v1.CloseExecutionStdinResponse
 */
export type CloseExecutionStdinResponse = Message<"cleanroom.v1.CloseExecutionStdinResponse"> & {};
/**
 * Describes the message cleanroom.v1.CloseExecutionStdinResponse.
 * Use `create(CloseExecutionStdinResponseSchema)` to create a new message.
 */
export declare const CloseExecutionStdinResponseSchema: GenMessage<CloseExecutionStdinResponse>;
/**
 * @generated from message cleanroom.v1.StreamExecutionRequest
 */
export type StreamExecutionRequest = Message<"cleanroom.v1.StreamExecutionRequest"> & {
    /**
     * @generated from field: string sandbox_id = 1;
     */
    sandboxId: string;
    /**
     * @generated from field: string execution_id = 2;
     */
    executionId: string;
    /**
     * Resume after this event sequence (0 = from the start).
     *
     * @generated from field: uint64 after_sequence = 3;
     */
    afterSequence: bigint;
    /**
     * Skip output bytes before these per-stream byte offsets.
     *
     * @generated from field: uint64 stdout_offset = 4;
     */
    stdoutOffset: bigint;
    /**
     * @generated from field: uint64 stderr_offset = 5;
     */
    stderrOffset: bigint;
    /**
     * When false, send only what is retained now and end (no live tail).
     *
     * @generated from field: bool no_follow = 6;
     */
    noFollow: boolean;
};
/**
 * Describes the message cleanroom.v1.StreamExecutionRequest.
 * Use `create(StreamExecutionRequestSchema)` to create a new message.
 */
export declare const StreamExecutionRequestSchema: GenMessage<StreamExecutionRequest>;
/**
 * @generated from message cleanroom.v1.OutputChunk
 */
export type OutputChunk = Message<"cleanroom.v1.OutputChunk"> & {
    /**
     * @generated from field: cleanroom.v1.OutputStream stream = 1;
     */
    stream: OutputStream;
    /**
     * Byte offset of `data` within its stream.
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
 * Describes the message cleanroom.v1.OutputChunk.
 * Use `create(OutputChunkSchema)` to create a new message.
 */
export declare const OutputChunkSchema: GenMessage<OutputChunk>;
/**
 * @generated from message cleanroom.v1.ExecutionExit
 */
export type ExecutionExit = Message<"cleanroom.v1.ExecutionExit"> & {
    /**
     * @generated from field: cleanroom.v1.ExecutionStatus status = 1;
     */
    status: ExecutionStatus;
    /**
     * @generated from field: int32 exit_code = 2;
     */
    exitCode: number;
    /**
     * @generated from field: string message = 3;
     */
    message: string;
    /**
     * Stable code when the end is an error the client should report, e.g. `oom_killed`
     * (the exit code stays the guest's, 128+9); empty otherwise.
     *
     * @generated from field: string code = 4;
     */
    code: string;
};
/**
 * Describes the message cleanroom.v1.ExecutionExit.
 * Use `create(ExecutionExitSchema)` to create a new message.
 */
export declare const ExecutionExitSchema: GenMessage<ExecutionExit>;
/**
 * @generated from message cleanroom.v1.Warning
 */
export type Warning = Message<"cleanroom.v1.Warning"> & {
    /**
     * Stable reason code, e.g. `host_not_allowed`.
     *
     * @generated from field: string code = 1;
     */
    code: string;
    /**
     * @generated from field: string message = 2;
     */
    message: string;
};
/**
 * Describes the message cleanroom.v1.Warning.
 * Use `create(WarningSchema)` to create a new message.
 */
export declare const WarningSchema: GenMessage<Warning>;
/**
 * @generated from message cleanroom.v1.ExecutionStreamEvent
 */
export type ExecutionStreamEvent = Message<"cleanroom.v1.ExecutionStreamEvent"> & {
    /**
     * @generated from field: string execution_id = 1;
     */
    executionId: string;
    /**
     * Monotonic per execution; pass as after_sequence to resume.
     *
     * @generated from field: uint64 sequence = 2;
     */
    sequence: bigint;
    /**
     * @generated from oneof cleanroom.v1.ExecutionStreamEvent.payload
     */
    payload: {
        /**
         * @generated from field: cleanroom.v1.OutputChunk output = 3;
         */
        value: OutputChunk;
        case: "output";
    } | {
        /**
         * @generated from field: cleanroom.v1.ExecutionExit exit = 4;
         */
        value: ExecutionExit;
        case: "exit";
    } | {
        /**
         * @generated from field: cleanroom.v1.Warning warning = 5;
         */
        value: Warning;
        case: "warning";
    } | {
        /**
         * RunExecution only (sequence 0): what was made, first.
         *
         * @generated from field: cleanroom.v1.RunStarted started = 6;
         */
        value: RunStarted;
        case: "started";
    } | {
        /**
         * RunExecution only (sequence 0): the execution's final record, last (as
         * InspectExecution answers once the execution has ended, without the output tails:
         * the stream carried the output).
         *
         * @generated from field: cleanroom.v1.InspectExecutionResponse finished = 7;
         */
        value: InspectExecutionResponse;
        case: "finished";
    } | {
        case: undefined;
        value?: undefined;
    };
    /**
     * RunExecution only, on `finished`: the server's own time for the call in µs, from the
     * handler's entry (the transport has decoded the request) to the `finished` message
     * built. The caller's round trip minus this is the client's and the transport's share
     * (as ClaimSandboxResponse.claim_latency_us for a claim); a reader slower than the output
     * (HTTP/2 flow control) holds the stream back, and that wait is counted here too.
     *
     * @generated from field: uint64 server_time_us = 8;
     */
    serverTimeUs: bigint;
};
/**
 * Describes the message cleanroom.v1.ExecutionStreamEvent.
 * Use `create(ExecutionStreamEventSchema)` to create a new message.
 */
export declare const ExecutionStreamEventSchema: GenMessage<ExecutionStreamEvent>;
/**
 * @generated from message cleanroom.v1.RunExecutionRequest
 */
export type RunExecutionRequest = Message<"cleanroom.v1.RunExecutionRequest"> & {
    /**
     * The command. Its `sandbox_id` names an existing sandbox to run in; empty: the sandbox
     * is made from `create` (a matching warm pool's READY sandbox is claimed, as by
     * CreateSandbox).
     *
     * @generated from field: cleanroom.v1.CreateExecutionRequest execution = 1;
     */
    execution?: CreateExecutionRequest | undefined;
    /**
     * @generated from field: cleanroom.v1.CreateSandboxRequest create = 2;
     */
    create?: CreateSandboxRequest | undefined;
    /**
     * Tear the sandbox this call made down (in the background, as TerminateSandbox with
     * `background`) once the command has ended and `finished` was handed to the caller's
     * stream. A caller that went away before (detached) leaves the sandbox and the
     * execution as they are. Only for a sandbox this call makes (`invalid_argument`
     * otherwise).
     *
     * @generated from field: bool terminate_on_exit = 3;
     */
    terminateOnExit: boolean;
};
/**
 * Describes the message cleanroom.v1.RunExecutionRequest.
 * Use `create(RunExecutionRequestSchema)` to create a new message.
 */
export declare const RunExecutionRequestSchema: GenMessage<RunExecutionRequest>;
/**
 * What a RunExecution made before its command's output.
 *
 * @generated from message cleanroom.v1.RunStarted
 */
export type RunStarted = Message<"cleanroom.v1.RunStarted"> & {
    /**
     * @generated from field: cleanroom.v1.Sandbox sandbox = 1;
     */
    sandbox?: Sandbox | undefined;
    /**
     * True when this call made the sandbox.
     *
     * @generated from field: bool created = 2;
     */
    created: boolean;
    /**
     * As CreateSandboxResponse.bootstrap. When set, the command was NOT started (the
     * caller performs the bootstrap first, then CreateExecution) and the stream ends here.
     *
     * @generated from field: cleanroom.v1.Bootstrap bootstrap = 3;
     */
    bootstrap?: Bootstrap | undefined;
    /**
     * The started command (unset when `bootstrap` is set).
     *
     * @generated from field: cleanroom.v1.Execution execution = 4;
     */
    execution?: Execution | undefined;
};
/**
 * Describes the message cleanroom.v1.RunStarted.
 * Use `create(RunStartedSchema)` to create a new message.
 */
export declare const RunStartedSchema: GenMessage<RunStarted>;
/**
 * @generated from message cleanroom.v1.Image
 */
export type Image = Message<"cleanroom.v1.Image"> & {
    /**
     * The pinned digest (`sha256:<hex>`) of the manifest or index the reference names.
     *
     * @generated from field: string digest = 1;
     */
    digest: string;
    /**
     * Reference it was pulled as (`registry/repository@sha256:<hex>`).
     *
     * @generated from field: string reference = 2;
     */
    reference: string;
    /**
     * The linux/amd64 image manifest (equals `digest` unless the reference names an index).
     *
     * @generated from field: string manifest_digest = 3;
     */
    manifestDigest: string;
    /**
     * @generated from field: string config_digest = 4;
     */
    configDigest: string;
    /**
     * @generated from field: repeated string layers = 5;
     */
    layers: string[];
    /**
     * Compressed size of the layers in bytes.
     *
     * @generated from field: uint64 size = 6;
     */
    size: bigint;
    /**
     * @generated from field: google.protobuf.Timestamp pulled_at = 7;
     */
    pulledAt?: Timestamp | undefined;
};
/**
 * Describes the message cleanroom.v1.Image.
 * Use `create(ImageSchema)` to create a new message.
 */
export declare const ImageSchema: GenMessage<Image>;
/**
 * @generated from message cleanroom.v1.PullImageRequest
 */
export type PullImageRequest = Message<"cleanroom.v1.PullImageRequest"> & {
    /**
     * @generated from field: string image_ref = 1;
     */
    imageRef: string;
};
/**
 * Describes the message cleanroom.v1.PullImageRequest.
 * Use `create(PullImageRequestSchema)` to create a new message.
 */
export declare const PullImageRequestSchema: GenMessage<PullImageRequest>;
/**
 * @generated from message cleanroom.v1.PullImageResponse
 */
export type PullImageResponse = Message<"cleanroom.v1.PullImageResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Image image = 1;
     */
    image?: Image | undefined;
};
/**
 * Describes the message cleanroom.v1.PullImageResponse.
 * Use `create(PullImageResponseSchema)` to create a new message.
 */
export declare const PullImageResponseSchema: GenMessage<PullImageResponse>;
/**
 * @generated from message cleanroom.v1.ResolveImageRequest
 */
export type ResolveImageRequest = Message<"cleanroom.v1.ResolveImageRequest"> & {
    /**
     * @generated from field: string image_ref = 1;
     */
    imageRef: string;
};
/**
 * Describes the message cleanroom.v1.ResolveImageRequest.
 * Use `create(ResolveImageRequestSchema)` to create a new message.
 */
export declare const ResolveImageRequestSchema: GenMessage<ResolveImageRequest>;
/**
 * @generated from message cleanroom.v1.ResolveImageResponse
 */
export type ResolveImageResponse = Message<"cleanroom.v1.ResolveImageResponse"> & {
    /**
     * `host[:port]/repository:TAG@sha256:<hex>` (the tag kept for readers; pulls use the
     * digest), or the pinned reference as given, canonicalised.
     *
     * @generated from field: string reference = 1;
     */
    reference: string;
    /**
     * `sha256:<hex>` of the manifest or index the registry served for the tag.
     *
     * @generated from field: string digest = 2;
     */
    digest: string;
};
/**
 * Describes the message cleanroom.v1.ResolveImageResponse.
 * Use `create(ResolveImageResponseSchema)` to create a new message.
 */
export declare const ResolveImageResponseSchema: GenMessage<ResolveImageResponse>;
/**
 * @generated from message cleanroom.v1.ListImagesRequest
 */
export type ListImagesRequest = Message<"cleanroom.v1.ListImagesRequest"> & {};
/**
 * Describes the message cleanroom.v1.ListImagesRequest.
 * Use `create(ListImagesRequestSchema)` to create a new message.
 */
export declare const ListImagesRequestSchema: GenMessage<ListImagesRequest>;
/**
 * @generated from message cleanroom.v1.ListImagesResponse
 */
export type ListImagesResponse = Message<"cleanroom.v1.ListImagesResponse"> & {
    /**
     * @generated from field: repeated cleanroom.v1.Image images = 1;
     */
    images: Image[];
};
/**
 * Describes the message cleanroom.v1.ListImagesResponse.
 * Use `create(ListImagesResponseSchema)` to create a new message.
 */
export declare const ListImagesResponseSchema: GenMessage<ListImagesResponse>;
/**
 * @generated from message cleanroom.v1.RemoveImageRequest
 */
export type RemoveImageRequest = Message<"cleanroom.v1.RemoveImageRequest"> & {
    /**
     * `sha256:<hex>` or the bare hex digest.
     *
     * @generated from field: string digest = 1;
     */
    digest: string;
};
/**
 * Describes the message cleanroom.v1.RemoveImageRequest.
 * Use `create(RemoveImageRequestSchema)` to create a new message.
 */
export declare const RemoveImageRequestSchema: GenMessage<RemoveImageRequest>;
/**
 * @generated from message cleanroom.v1.RemoveImageResponse
 */
export type RemoveImageResponse = Message<"cleanroom.v1.RemoveImageResponse"> & {
    /**
     * @generated from field: cleanroom.v1.Image image = 1;
     */
    image?: Image | undefined;
};
/**
 * Describes the message cleanroom.v1.RemoveImageResponse.
 * Use `create(RemoveImageResponseSchema)` to create a new message.
 */
export declare const RemoveImageResponseSchema: GenMessage<RemoveImageResponse>;
/**
 * @generated from enum cleanroom.v1.SandboxStatus
 */
export declare enum SandboxStatus {
    /**
     * @generated from enum value: SANDBOX_STATUS_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: SANDBOX_STATUS_PROVISIONING = 1;
     */
    PROVISIONING = 1,
    /**
     * @generated from enum value: SANDBOX_STATUS_READY = 2;
     */
    READY = 2,
    /**
     * @generated from enum value: SANDBOX_STATUS_STOPPING = 3;
     */
    STOPPING = 3,
    /**
     * @generated from enum value: SANDBOX_STATUS_STOPPED = 4;
     */
    STOPPED = 4,
    /**
     * @generated from enum value: SANDBOX_STATUS_FAILED = 5;
     */
    FAILED = 5,
    /**
     * Every process frozen (cgroup freezer); ResumeSandbox continues it.
     *
     * @generated from enum value: SANDBOX_STATUS_PAUSED = 40;
     */
    PAUSED = 40,
    /**
     * A process checkpoint is being written.
     *
     * @generated from enum value: SANDBOX_STATUS_CHECKPOINTING = 41;
     */
    CHECKPOINTING = 41,
    /**
     * The sandbox's processes were checkpointed and stopped.
     *
     * @generated from enum value: SANDBOX_STATUS_CHECKPOINTED = 42;
     */
    CHECKPOINTED = 42,
    /**
     * Cluster (docs/cluster.md): the sandbox's host left the cluster without leaving (its
     * membership lease expired). Shown by the other members, with a `host_lost` event;
     * calls for it fail `host_lost` until the host returns.
     *
     * @generated from enum value: SANDBOX_STATUS_LOST = 50;
     */
    LOST = 50
}
/**
 * Describes the enum cleanroom.v1.SandboxStatus.
 */
export declare const SandboxStatusSchema: GenEnum<SandboxStatus>;
/**
 * @generated from enum cleanroom.v1.ExecutionStatus
 */
export declare enum ExecutionStatus {
    /**
     * @generated from enum value: EXECUTION_STATUS_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: EXECUTION_STATUS_QUEUED = 1;
     */
    QUEUED = 1,
    /**
     * @generated from enum value: EXECUTION_STATUS_RUNNING = 2;
     */
    RUNNING = 2,
    /**
     * @generated from enum value: EXECUTION_STATUS_SUCCEEDED = 3;
     */
    SUCCEEDED = 3,
    /**
     * @generated from enum value: EXECUTION_STATUS_FAILED = 4;
     */
    FAILED = 4,
    /**
     * @generated from enum value: EXECUTION_STATUS_CANCELED = 5;
     */
    CANCELED = 5,
    /**
     * @generated from enum value: EXECUTION_STATUS_TIMED_OUT = 6;
     */
    TIMED_OUT = 6
}
/**
 * Describes the enum cleanroom.v1.ExecutionStatus.
 */
export declare const ExecutionStatusSchema: GenEnum<ExecutionStatus>;
/**
 * @generated from enum cleanroom.v1.ExecutionKind
 */
export declare enum ExecutionKind {
    /**
     * @generated from enum value: EXECUTION_KIND_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: EXECUTION_KIND_BATCH = 1;
     */
    BATCH = 1,
    /**
     * @generated from enum value: EXECUTION_KIND_INTERACTIVE = 2;
     */
    INTERACTIVE = 2
}
/**
 * Describes the enum cleanroom.v1.ExecutionKind.
 */
export declare const ExecutionKindSchema: GenEnum<ExecutionKind>;
/**
 * @generated from enum cleanroom.v1.OutputStream
 */
export declare enum OutputStream {
    /**
     * @generated from enum value: OUTPUT_STREAM_UNSPECIFIED = 0;
     */
    UNSPECIFIED = 0,
    /**
     * @generated from enum value: OUTPUT_STREAM_STDOUT = 1;
     */
    STDOUT = 1,
    /**
     * @generated from enum value: OUTPUT_STREAM_STDERR = 2;
     */
    STDERR = 2
}
/**
 * Describes the enum cleanroom.v1.OutputStream.
 */
export declare const OutputStreamSchema: GenEnum<OutputStream>;
/**
 * Lifecycle of sandboxes: create, look up, list, terminate, tail events.
 *
 * @generated from service cleanroom.v1.SandboxService
 */
export declare const SandboxService: GenService<{
    /**
     * @generated from rpc cleanroom.v1.SandboxService.CreateSandbox
     */
    createSandbox: {
        methodKind: "unary";
        input: typeof CreateSandboxRequestSchema;
        output: typeof CreateSandboxResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SandboxService.GetSandbox
     */
    getSandbox: {
        methodKind: "unary";
        input: typeof GetSandboxRequestSchema;
        output: typeof GetSandboxResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SandboxService.ListSandboxes
     */
    listSandboxes: {
        methodKind: "unary";
        input: typeof ListSandboxesRequestSchema;
        output: typeof ListSandboxesResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SandboxService.DownloadSandboxFile
     */
    downloadSandboxFile: {
        methodKind: "unary";
        input: typeof DownloadSandboxFileRequestSchema;
        output: typeof DownloadSandboxFileResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SandboxService.TerminateSandbox
     */
    terminateSandbox: {
        methodKind: "unary";
        input: typeof TerminateSandboxRequestSchema;
        output: typeof TerminateSandboxResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.SandboxService.StreamSandboxEvents
     */
    streamSandboxEvents: {
        methodKind: "server_streaming";
        input: typeof StreamSandboxEventsRequestSchema;
        output: typeof SandboxEventSchema;
    };
}>;
/**
 * Command runs inside a sandbox and their durable output.
 *
 * @generated from service cleanroom.v1.ExecutionService
 */
export declare const ExecutionService: GenService<{
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.CreateExecution
     */
    createExecution: {
        methodKind: "unary";
        input: typeof CreateExecutionRequestSchema;
        output: typeof CreateExecutionResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.AttachExecution
     */
    attachExecution: {
        methodKind: "unary";
        input: typeof AttachExecutionRequestSchema;
        output: typeof AttachExecutionResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.GetExecution
     */
    getExecution: {
        methodKind: "unary";
        input: typeof GetExecutionRequestSchema;
        output: typeof GetExecutionResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.InspectExecution
     */
    inspectExecution: {
        methodKind: "unary";
        input: typeof InspectExecutionRequestSchema;
        output: typeof InspectExecutionResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.CancelExecution
     */
    cancelExecution: {
        methodKind: "unary";
        input: typeof CancelExecutionRequestSchema;
        output: typeof CancelExecutionResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.WriteExecutionStdin
     */
    writeExecutionStdin: {
        methodKind: "unary";
        input: typeof WriteExecutionStdinRequestSchema;
        output: typeof WriteExecutionStdinResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.CloseExecutionStdin
     */
    closeExecutionStdin: {
        methodKind: "unary";
        input: typeof CloseExecutionStdinRequestSchema;
        output: typeof CloseExecutionStdinResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ExecutionService.StreamExecution
     */
    streamExecution: {
        methodKind: "server_streaming";
        input: typeof StreamExecutionRequestSchema;
        output: typeof ExecutionStreamEventSchema;
    };
    /**
     * Create (or claim) a sandbox, or take an existing one, start a command in it and stream
     * its output, in one call: what `cleanroom exec` does, without a round trip per step.
     * The first event is `started`; then the execution's events exactly as StreamExecution
     * sends them (resume with StreamExecution after the last sequence if the stream breaks);
     * after the exit, `finished`. Errors are those of CreateSandbox and CreateExecution.
     *
     * @generated from rpc cleanroom.v1.ExecutionService.RunExecution
     */
    runExecution: {
        methodKind: "server_streaming";
        input: typeof RunExecutionRequestSchema;
        output: typeof ExecutionStreamEventSchema;
    };
}>;
/**
 * OCI images in the server's cache, keyed by the digest they are pinned by.
 * Errors: `policy_invalid` (not digest pinned), `image_not_found`,
 * `image_digest_mismatch`, `registry_unavailable`, `registry_unauthorized`,
 * `image_unsupported`, `image_layer_unsafe`, `image_in_use`.
 *
 * @generated from service cleanroom.v1.ImageService
 */
export declare const ImageService: GenService<{
    /**
     * Pull, verify and unpack an image (no-op when already cached). Digest-pinned only.
     *
     * @generated from rpc cleanroom.v1.ImageService.PullImage
     */
    pullImage: {
        methodKind: "unary";
        input: typeof PullImageRequestSchema;
        output: typeof PullImageResponseSchema;
    };
    /**
     * Resolve a tag (`host[:port]/repository:TAG`) to the digest its registry serves now,
     * so a client can pin it; nothing is downloaded beyond the manifest and nothing is
     * cached. A pinned reference is returned unchanged (no network). Errors:
     * `policy_invalid` (no registry host, or neither tag nor digest), `image_not_found`
     * (no such tag or repository), `registry_unavailable`, `registry_unauthorized`.
     *
     * @generated from rpc cleanroom.v1.ImageService.ResolveImage
     */
    resolveImage: {
        methodKind: "unary";
        input: typeof ResolveImageRequestSchema;
        output: typeof ResolveImageResponseSchema;
    };
    /**
     * @generated from rpc cleanroom.v1.ImageService.ListImages
     */
    listImages: {
        methodKind: "unary";
        input: typeof ListImagesRequestSchema;
        output: typeof ListImagesResponseSchema;
    };
    /**
     * Remove a cached image; refused with `image_in_use` while a sandbox uses it.
     *
     * @generated from rpc cleanroom.v1.ImageService.RemoveImage
     */
    removeImage: {
        methodKind: "unary";
        input: typeof RemoveImageRequestSchema;
        output: typeof RemoveImageResponseSchema;
    };
}>;
