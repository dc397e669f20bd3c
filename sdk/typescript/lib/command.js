import { errorFor } from "./errors.js";
import { dateOf } from "./info.js";
import { ExecutionStatus, OutputStream } from "./gen/cleanroom/v1/cleanroom_pb.js";
/** WriteExecutionStdin accepts at most 4 MiB a call; stay well below. */
const STDIN_CHUNK = 1 << 20;
/** Re-open an output stream that ended without an exit this many times (resuming). */
const STREAM_RETRIES = 3;
function statusName(s) {
    return (ExecutionStatus[s] ?? "UNSPECIFIED").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
function concat(parts) {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
        out.set(p, at);
        at += p.length;
    }
    return out;
}
export function toBytes(data) {
    return typeof data === "string" ? new TextEncoder().encode(data) : data;
}
/** Folds an execution's event stream: buffers, feeds callbacks, remembers the resume point. */
/** @internal Exported for the one-call run (Sandbox.exec), which starts folding from RunExecution's stream. */
export class Collector {
    executionId;
    o;
    lastSequence = 0n;
    result;
    out = [];
    err = [];
    warnings = [];
    decOut = new TextDecoder("utf-8");
    decErr = new TextDecoder("utf-8");
    constructor(executionId, o) {
        this.executionId = executionId;
        this.o = o;
    }
    feed(ev) {
        if (ev.sequence <= this.lastSequence)
            return;
        this.lastSequence = ev.sequence;
        const p = ev.payload;
        if (p.case === "output") {
            const isOut = p.value.stream === OutputStream.STDOUT;
            (isOut ? this.out : this.err).push(p.value.data);
            const cb = isOut ? this.o.onStdout : this.o.onStderr;
            if (cb) {
                const text = (isOut ? this.decOut : this.decErr).decode(p.value.data, { stream: true });
                if (text)
                    cb(text);
            }
        }
        else if (p.case === "warning") {
            this.warnings.push(`${p.value.code}: ${p.value.message}`);
        }
        else if (p.case === "exit") {
            const tailOut = this.decOut.decode();
            const tailErr = this.decErr.decode();
            if (tailOut && this.o.onStdout)
                this.o.onStdout(tailOut);
            if (tailErr && this.o.onStderr)
                this.o.onStderr(tailErr);
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
    sandbox;
    id;
    constructor(sandbox, id) {
        this.sandbox = sandbox;
        this.id = id;
    }
    get executionId() {
        return this.id;
    }
    /** Write to the command's stdin (started with `stdin: true`). */
    async sendStdin(data) {
        const c = this.sandbox.client;
        const bytes = toBytes(data);
        for (let at = 0; at < bytes.length; at += STDIN_CHUNK) {
            await c.call(c.executions.writeExecutionStdin({
                sandboxId: this.sandbox.id,
                executionId: this.id,
                data: bytes.subarray(at, at + STDIN_CHUNK),
            }));
        }
    }
    /** Send EOF to the command's stdin. */
    async closeStdin() {
        const c = this.sandbox.client;
        await c.call(c.executions.closeExecutionStdin({ sandboxId: this.sandbox.id, executionId: this.id }));
    }
    /** Stream the output from the start until the command exits; resolve with the result. */
    async wait(o = {}) {
        return this.follow(new Collector(this.id, o));
    }
    /** @internal Stream from where `col` stands until the exit. */
    async follow(col) {
        if (col.result)
            return col.result;
        const c = this.sandbox.client;
        for (let i = 0; i <= STREAM_RETRIES; i++) {
            const events = c.executions.streamExecution({
                sandboxId: this.sandbox.id,
                executionId: this.id,
                afterSequence: col.lastSequence,
            });
            for await (const ev of c.stream(events)) {
                col.feed(ev);
                if (col.result)
                    return col.result;
            }
        }
        throw errorFor("stream_ended", `the output stream of ${this.id} ended without an exit status`);
    }
    /** Cancel: SIGTERM, then SIGKILL after `graceSeconds` (0 = server default). */
    async kill(graceSeconds = 0) {
        const c = this.sandbox.client;
        await c.call(c.executions.cancelExecution({ sandboxId: this.sandbox.id, executionId: this.id, graceSeconds }));
    }
    /**
     * One SIGINT to the command, as a terminal's Ctrl-C: no SIGKILL follows and nothing is
     * recorded as canceled (the command decides; {@link CommandHandle.kill} can still follow).
     */
    async interrupt() {
        const c = this.sandbox.client;
        await c.call(c.executions.cancelExecution({ sandboxId: this.sandbox.id, executionId: this.id, interrupt: true }));
    }
    /** The execution's record and retained output as the server reports them now. */
    async inspect() {
        const c = this.sandbox.client;
        const r = await c.call(c.executions.inspectExecution({ sandboxId: this.sandbox.id, executionId: this.id }));
        const e = r.execution;
        if (!e)
            throw errorFor("internal", "InspectExecution returned no execution");
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
    async info() {
        const c = this.sandbox.client;
        const r = await c.call(c.executions.getExecution({ sandboxId: this.sandbox.id, executionId: this.id }));
        if (!r.execution)
            throw errorFor("internal", "GetExecution returned no execution");
        return r.execution;
    }
}
