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
import { errorFor } from "./errors.js";
import { EgressRemember, EgressVerdict, type EgressRequest } from "./gen/cleanroom/v1/approvals_pb.js";
import { ExecutionStatus, SandboxStatus } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { dateOf, enumName } from "./info.js";
import { checkOptions } from "./options.js";

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
export async function* sandboxEvents(client: CleanroomClient, sandboxId: string, o: EventOptions = {}): AsyncGenerator<SandboxEventInfo> {
  checkOptions(o, ["afterSequence", "follow", "signal"], "Sandbox.events");
  const after = o.afterSequence ?? 0;
  if ((typeof after !== "bigint" && !Number.isSafeInteger(after)) || after < 0) {
    throw errorFor("invalid_argument", `afterSequence: expected a whole number >= 0, got ${String(after)}`);
  }
  const stream = client.sandboxes.streamSandboxEvents(
    { sandboxId, afterSequence: BigInt(after), follow: o.follow ?? false },
    { signal: o.signal },
  );
  try {
    for await (const ev of client.stream(stream)) {
      yield {
        sequence: ev.sequence,
        sandboxId: ev.sandboxId,
        executionId: ev.executionId,
        type: ev.type,
        at: dateOf(ev.at),
        sandboxStatus: enumName(SandboxStatus, ev.sandboxStatus),
        executionStatus: enumName(ExecutionStatus, ev.executionStatus),
        message: ev.message,
        attributes: { ...(ev.attributes ?? {}) },
      };
    }
  } catch (e) {
    if (o.signal?.aborted) return;
    throw e;
  }
}

/** How long an answer holds: this request only, or every later connection of the sandbox to the same host:port. */
export type Remember = "once" | "sandbox";

/** An open egress request of a sandbox, waiting for an answer. */
export class ApprovalRequest {
  readonly requestId: string;
  readonly sandboxId: string;
  readonly host: string;
  readonly port: number;
  /** `tcp`, `connect`, `http-proxy`. */
  readonly protocol: string;
  readonly createdAt?: Date;
  /** When the server denies it (`approval_timeout`) unless answered. */
  readonly expiresAt?: Date;

  constructor(
    private readonly client: CleanroomClient,
    r: EgressRequest,
  ) {
    this.requestId = r.requestId;
    this.sandboxId = r.sandboxId;
    this.host = r.host;
    this.port = r.port;
    this.protocol = r.protocol;
    this.createdAt = dateOf(r.createdAt);
    this.expiresAt = dateOf(r.expiresAt);
  }

  /** `host:port`. */
  get destination(): string {
    return `${this.host}:${this.port}`;
  }

  /** Let the connection through (`remember: "sandbox"`: and every later one to this host:port). */
  approve(o: { remember?: Remember } = {}): Promise<void> {
    return decideEgress(this.client, this.sandboxId, this.requestId, true, o);
  }

  /** Refuse it (`remember: "sandbox"`: and every later one to this host:port). */
  deny(o: { remember?: Remember } = {}): Promise<void> {
    return decideEgress(this.client, this.sandboxId, this.requestId, false, o);
  }
}

/** Answer one request (`ApprovalNotFoundError` when already answered or timed out). */
export async function decideEgress(
  client: CleanroomClient,
  sandboxId: string,
  requestId: string,
  allow: boolean,
  o: { remember?: Remember } = {},
): Promise<void> {
  checkOptions(o, ["remember"], allow ? "approve" : "deny");
  const remember = o.remember ?? "once";
  if (remember !== "once" && remember !== "sandbox") {
    throw errorFor("invalid_argument", `remember: expected "once" or "sandbox", got ${JSON.stringify(remember)}`);
  }
  await client.call(
    client.approvals.decideEgress({
      sandboxId,
      requestId,
      verdict: allow ? EgressVerdict.ALLOW : EgressVerdict.DENY,
      remember: remember === "sandbox" ? EgressRemember.SANDBOX : EgressRemember.ONCE,
    }),
  );
}

/** The sandbox's open requests (oldest first) and its remembered answers. */
export async function egressRequests(client: CleanroomClient, sandboxId: string) {
  const r = await client.call(client.approvals.listEgressRequests({ sandboxId }));
  return {
    requests: r.requests.map((q) => new ApprovalRequest(client, q)),
    approved: [...r.approved],
    refused: [...r.refused],
  };
}

/**
 * Every open request of the sandbox, each once: those already waiting, then each new one
 * as its `egress.pending` event arrives, until the sandbox stops, the loop breaks or
 * `signal` aborts.
 */
export async function* approvalRequests(
  client: CleanroomClient,
  sandboxId: string,
  o: { signal?: AbortSignal } = {},
): AsyncGenerator<ApprovalRequest> {
  checkOptions(o, ["signal"], "Sandbox.approvals");
  const seen = new Set<string>();
  const open = async function* () {
    for (const q of (await egressRequests(client, sandboxId)).requests) {
      if (!seen.has(q.requestId)) {
        seen.add(q.requestId);
        yield q;
      }
    }
  };
  yield* open();
  for await (const ev of sandboxEvents(client, sandboxId, { follow: true, signal: o.signal })) {
    const id = ev.attributes.request_id;
    if (ev.type !== "egress.pending" || typeof id !== "string" || seen.has(id)) continue;
    yield* open();
  }
}

/** What an approval callback answers: a verdict, or a verdict with how long it holds. */
export type ApprovalAnswer = "allow" | "deny" | { verdict: "allow" | "deny"; remember?: Remember };

/** A running {@link Sandbox.answerApprovals}: `stop()` ends it; `done` settles when it ends (rejects with a failure of `decide` or of the server). */
export interface ApprovalAnswerer {
  stop(): Promise<void>;
  done: Promise<void>;
}

/** Answer every request of the sandbox with `decide` until stopped or the sandbox stops. */
export function answerApprovals(
  client: CleanroomClient,
  sandboxId: string,
  decide: (r: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>,
): ApprovalAnswerer {
  const ctl = new AbortController();
  const done = (async () => {
    for await (const r of approvalRequests(client, sandboxId, { signal: ctl.signal })) {
      const a = await decide(r);
      const { verdict, remember } = typeof a === "string" ? { verdict: a, remember: undefined } : a;
      if (verdict !== "allow" && verdict !== "deny") {
        throw errorFor("invalid_argument", `approval answer: expected "allow" or "deny", got ${JSON.stringify(verdict)}`);
      }
      try {
        await (verdict === "allow" ? r.approve({ remember }) : r.deny({ remember }));
      } catch (e) {
        // Timed out or answered elsewhere meanwhile: nothing left to answer.
        if ((e as { code?: string }).code !== "approval_not_found") throw e;
      }
    }
  })();
  // Marked handled so an answerer nobody awaits cannot crash the process; `await done` still throws.
  done.catch(() => undefined);
  return {
    done,
    async stop() {
      ctl.abort();
      await done.catch(() => undefined);
    },
  };
}
