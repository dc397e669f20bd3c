/**
 * Typed Connect clients (the Connect project's official `@connectrpc/connect` +
 * `@connectrpc/connect-node`) for every service, over a unix socket, plain HTTP or TLS.
 *
 * HTTP/1.1 is used on every endpoint: connect-node reaches a unix socket through Node's
 * `http.request({ socketPath })`, idle keep-alive sockets never hold the process open, and
 * the server streams execution output over HTTP/1.1 as well as over HTTP/2.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import https from "node:https";
import tls from "node:tls";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { displayEndpoint, resolveTarget } from "./config.js";
import { CONNECT_KEYS, checkOptions } from "./options.js";
import { errorFor, fromConnect } from "./errors.js";
import { ExecutionService, ImageService, SandboxService } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { FileService } from "./gen/cleanroom/v1/files_pb.js";
import { SandboxLifetimeService } from "./gen/cleanroom/v1/lifetime_pb.js";
import { ApprovalService } from "./gen/cleanroom/v1/approvals_pb.js";
import { InboundService } from "./gen/cleanroom/v1/inbound_pb.js";
import { NetworkService } from "./gen/cleanroom/v1/network_pb.js";
import { AttestationService } from "./gen/cleanroom/v1/attestation_pb.js";
import { WarmPoolService } from "./gen/cleanroom/v1/pools_pb.js";
import { SnapshotService } from "./gen/cleanroom/v1/snapshots_pb.js";
import { VolumeService } from "./gen/cleanroom/v1/volumes_pb.js";
/** Code of the error a pinned connection fails with when the certificate differs. */
export const CERT_PIN_MISMATCH = "ERR_CLEANROOM_CERT_PIN_MISMATCH";
/**
 * Socket and TLS errors that mean the server is not there, or not the one we trust
 * (connect-node reports them as `internal`).
 */
const CONNECT_FAILURES = new Set([
    "ENOENT",
    "ECONNREFUSED",
    "ECONNRESET",
    "EPIPE",
    "EACCES",
    "EHOSTUNREACH",
    "ETIMEDOUT",
    "ENOTSOCK",
    "UND_ERR_SOCKET",
    "ERR_STREAM_PREMATURE_CLOSE",
    "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "SELF_SIGNED_CERT_IN_CHAIN",
    "DEPTH_ZERO_SELF_SIGNED_CERT",
    "CERT_HAS_EXPIRED",
    "ERR_TLS_CERT_ALTNAME_INVALID",
    CERT_PIN_MISMATCH,
]);
/**
 * An HTTPS agent that accepts exactly the server certificate whose DER hashes to `pin`
 * (name and chain are not consulted, as the CLI's `--server-cert-sha256`; the handshake
 * still proves the server holds the certificate's key). The socket is handed to the
 * request only after the check, so no request byte — the bearer token included — reaches
 * a server with another certificate.
 */
function pinnedAgent(pin) {
    const agent = new https.Agent({ keepAlive: true });
    const create = (options, done) => {
        let settled = false;
        const finish = (err, socket) => {
            if (!settled) {
                settled = true;
                done(err, socket);
            }
        };
        const sock = tls.connect({ ...options, rejectUnauthorized: false, checkServerIdentity: () => undefined });
        sock.once("error", (e) => finish(e));
        sock.once("secureConnect", () => {
            const der = sock.getPeerCertificate(true)?.raw;
            const got = der ? createHash("sha256").update(der).digest("hex") : "";
            if (got !== pin) {
                const e = Object.assign(new Error("the server's certificate does not match serverCertSha256"), { code: CERT_PIN_MISMATCH });
                sock.destroy();
                finish(e);
                return;
            }
            finish(null, sock);
        });
        return undefined;
    };
    agent.createConnection = create;
    return agent;
}
function isConnectFailure(e) {
    for (let c = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
        const code = c.code;
        if (typeof code === "string" && CONNECT_FAILURES.has(code))
            return true;
    }
    return false;
}
/** Clients for the Cleanroom services of one server. */
export class CleanroomClient {
    target;
    sandboxes;
    executions;
    images;
    files;
    lifetimes;
    snapshots;
    pools;
    volumes;
    approvals;
    /** Live egress rules (docs/network.md). */
    network;
    /** Exposed ports (docs/network.md "Inbound"). */
    inbound;
    /** The URL prefix of this server (`http://localhost` on a unix socket). */
    baseUrl;
    attestations;
    constructor(opts = {}) {
        checkOptions(opts, CONNECT_KEYS.filter((k) => k !== "client"), "CleanroomClient");
        this.target = resolveTarget(opts);
        const ep = this.target.endpoint;
        const interceptors = [];
        // The token goes to TCP endpoints only: on the unix socket the kernel's peer
        // credentials identify the caller (as in the CLI).
        const token = this.target.token;
        if (token && ep.kind !== "unix") {
            interceptors.push((next) => (req) => {
                req.header.set("authorization", `Bearer ${token}`);
                return next(req);
            });
        }
        // Every call continues the caller's trace (docs/traces.md).
        const traceparent = opts.traceparent;
        if (traceparent !== undefined) {
            if (!/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(traceparent)) {
                throw errorFor("invalid_argument", "traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)");
            }
            interceptors.push((next) => (req) => {
                req.header.set("traceparent", traceparent);
                return next(req);
            });
        }
        const nodeOptions = ep.kind === "unix"
            ? { socketPath: ep.address }
            : ep.kind === "https" && this.target.serverCertSha256
                ? { agent: pinnedAgent(this.target.serverCertSha256) }
                : ep.kind === "https" && this.target.caCert
                    ? { ca: readFileSync(this.target.caCert) }
                    : {};
        this.baseUrl = ep.kind === "unix" ? "http://localhost" : `${ep.kind}://${ep.address}`;
        const transport = createConnectTransport({
            baseUrl: this.baseUrl,
            httpVersion: "1.1",
            useBinaryFormat: true,
            nodeOptions,
            interceptors,
        });
        this.sandboxes = createClient(SandboxService, transport);
        this.executions = createClient(ExecutionService, transport);
        this.images = createClient(ImageService, transport);
        this.files = createClient(FileService, transport);
        this.lifetimes = createClient(SandboxLifetimeService, transport);
        this.snapshots = createClient(SnapshotService, transport);
        this.pools = createClient(WarmPoolService, transport);
        this.volumes = createClient(VolumeService, transport);
        this.approvals = createClient(ApprovalService, transport);
        this.network = createClient(NetworkService, transport);
        this.inbound = createClient(InboundService, transport);
        this.attestations = createClient(AttestationService, transport);
    }
    /** Await a unary call, mapping failures to typed errors. */
    async call(p) {
        try {
            return await p;
        }
        catch (e) {
            throw this.map(e);
        }
    }
    /** Iterate a server stream, mapping failures to typed errors. */
    async *stream(it) {
        try {
            yield* it;
        }
        catch (e) {
            throw this.map(e);
        }
    }
    map(e) {
        const err = fromConnect(e);
        const unreachable = (err.code === "server_unreachable" && err.connectCode === "unavailable") ||
            isConnectFailure(e);
        if (unreachable) {
            return errorFor("server_unreachable", `cannot reach the cleanroom server at ${displayEndpoint(this.target.endpoint)}: ` +
                `${ConnectError.from(e).rawMessage}. ` +
                "Start it with `cleanroom serve`.", "unavailable");
        }
        return err;
    }
}
/** `o.client`, else a client built from `o`'s connection options (the others are ignored here). */
export function clientFor(o) {
    if (o.client)
        return o.client;
    const { host, token, caCert, serverCertSha256, traceparent } = o;
    return new CleanroomClient({ host, token, caCert, serverCertSha256, traceparent });
}
