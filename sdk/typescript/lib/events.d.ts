/**
 * A sandbox's event stream (`StreamSandboxEvents`: status changes, executions, egress
 * allow/deny/pending/decision, policy events) as an async iterator, and egress approvals
 * built on it: a sandbox whose policy says `ask` holds a new connection and emits
 * `egress.pending`; {@link approvalRequests} yields each open request once with
 * `approve()`/`deny()` (optionally remembered for the whole sandbox), so a program answers
 * instead of letting the server's approval timeout deny. The iterators end when the
 * sandbox stops, when the caller breaks out of the loop, or when `signal` aborts.
 */
import type { CleanroomClient } from "./client.js";
import { type EgressRequest } from "./gen/cleanroom/v1/approvals_pb.js";
/** One sandbox event. `sequence` is server-wide and monotonic: pass it as `afterSequence` to resume. */
export interface SandboxEventInfo {
    sequence: bigint;
    sandboxId: string;
    executionId: string;
    /** `sandbox.status`, `execution.status`, `egress.allow`, `egress.deny`, `egress.pending`, … */
    type: string;
    at?: Date;
    /** For status events (`ready`, `stopped`…; `unspecified` otherwise). */
    sandboxStatus: string;
    executionStatus: string;
    message: string;
    /** Structured fields: host, port, protocol, decision, reason code, request_id… */
    attributes: Record<string, unknown>;
}
/** Options of {@link Sandbox.events}. */
export interface EventOptions {
    /** Only events after this sequence (resume point; default: from the start). */
    afterSequence?: bigint | number;
    /** Keep tailing new events until the sandbox stops (default false: what exists now). */
    follow?: boolean;
    /** Abort ends the iteration (without an error). */
    signal?: AbortSignal;
}
/** The sandbox's events. */
export declare function sandboxEvents(client: CleanroomClient, sandboxId: string, o?: EventOptions): AsyncGenerator<SandboxEventInfo>;
/** How long an answer holds: this request only, or every later connection of the sandbox to the same host:port. */
export type Remember = "once" | "sandbox";
/** An open egress request of a sandbox, waiting for an answer. */
export declare class ApprovalRequest {
    private readonly client;
    readonly requestId: string;
    readonly sandboxId: string;
    readonly host: string;
    readonly port: number;
    /** `tcp`, `connect`, `http-proxy`. */
    readonly protocol: string;
    readonly createdAt?: Date;
    /** When the server denies it (`approval_timeout`) unless answered. */
    readonly expiresAt?: Date;
    constructor(client: CleanroomClient, r: EgressRequest);
    /** `host:port`. */
    get destination(): string;
    /** Let the connection through (`remember: "sandbox"`: and every later one to this host:port). */
    approve(o?: {
        remember?: Remember;
    }): Promise<void>;
    /** Refuse it (`remember: "sandbox"`: and every later one to this host:port). */
    deny(o?: {
        remember?: Remember;
    }): Promise<void>;
}
/** Answer one request (`ApprovalNotFoundError` when already answered or timed out). */
export declare function decideEgress(client: CleanroomClient, sandboxId: string, requestId: string, allow: boolean, o?: {
    remember?: Remember;
}): Promise<void>;
/** The sandbox's open requests (oldest first) and its remembered answers. */
export declare function egressRequests(client: CleanroomClient, sandboxId: string): Promise<{
    requests: ApprovalRequest[];
    approved: string[];
    refused: string[];
}>;
/**
 * Every open request of the sandbox, each once: those already waiting, then each new one
 * as its `egress.pending` event arrives, until the sandbox stops, the loop breaks or
 * `signal` aborts.
 */
export declare function approvalRequests(client: CleanroomClient, sandboxId: string, o?: {
    signal?: AbortSignal;
}): AsyncGenerator<ApprovalRequest>;
/** What an approval callback answers: a verdict, or a verdict with how long it holds. */
export type ApprovalAnswer = "allow" | "deny" | {
    verdict: "allow" | "deny";
    remember?: Remember;
};
/** A running {@link Sandbox.answerApprovals}: `stop()` ends it; `done` settles when it ends (rejects with a failure of `decide` or of the server). */
export interface ApprovalAnswerer {
    stop(): Promise<void>;
    done: Promise<void>;
}
/** Answer every request of the sandbox with `decide` until stopped or the sandbox stops. */
export declare function answerApprovals(client: CleanroomClient, sandboxId: string, decide: (r: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>): ApprovalAnswerer;
