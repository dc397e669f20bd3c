/**
 * Typed Connect clients (the Connect project's official `@connectrpc/connect` +
 * `@connectrpc/connect-node`) for every service, over a unix socket, plain HTTP or TLS.
 *
 * HTTP/1.1 is used on every endpoint: connect-node reaches a unix socket through Node's
 * `http.request({ socketPath })`, idle keep-alive sockets never hold the process open, and
 * the server streams execution output over HTTP/1.1 as well as over HTTP/2.
 */
import { readFileSync } from "node:fs";
import { ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { displayEndpoint, resolveTarget, type ConnectOptions, type Target } from "./config.js";
import { errorFor, fromConnect, type CleanroomError } from "./errors.js";
import { ExecutionService, ImageService, SandboxService } from "./gen/cleanroom/v1/cleanroom_pb.js";
import { FileService } from "./gen/cleanroom/v1/files_pb.js";

/** Socket errors that mean the server is not there (connect-node reports them as `internal`). */
const CONNECT_FAILURES = new Set(["ENOENT", "ECONNREFUSED", "ECONNRESET", "EACCES", "EHOSTUNREACH", "ETIMEDOUT", "ENOTSOCK"]);

function isConnectFailure(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    const code = (c as NodeJS.ErrnoException).code;
    if (typeof code === "string" && CONNECT_FAILURES.has(code)) return true;
  }
  return false;
}

/** Clients for the Cleanroom services of one server. */
export class CleanroomClient {
  readonly target: Target;
  readonly sandboxes: Client<typeof SandboxService>;
  readonly executions: Client<typeof ExecutionService>;
  readonly images: Client<typeof ImageService>;
  readonly files: Client<typeof FileService>;

  constructor(opts: ConnectOptions = {}) {
    this.target = resolveTarget(opts);
    const ep = this.target.endpoint;
    const interceptors: Interceptor[] = [];
    // The token goes to TCP endpoints only: on the unix socket the kernel's peer
    // credentials identify the caller (as in the CLI).
    const token = this.target.token;
    if (token && ep.kind !== "unix") {
      interceptors.push((next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      });
    }
    const nodeOptions =
      ep.kind === "unix"
        ? { socketPath: ep.address }
        : ep.kind === "https" && this.target.caCert
          ? { ca: readFileSync(this.target.caCert) }
          : {};
    const transport = createConnectTransport({
      baseUrl: ep.kind === "unix" ? "http://localhost" : `${ep.kind}://${ep.address}`,
      httpVersion: "1.1",
      useBinaryFormat: true,
      nodeOptions,
      interceptors,
    });
    this.sandboxes = createClient(SandboxService, transport);
    this.executions = createClient(ExecutionService, transport);
    this.images = createClient(ImageService, transport);
    this.files = createClient(FileService, transport);
  }

  /** Await a unary call, mapping failures to typed errors. */
  async call<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (e) {
      throw this.map(e);
    }
  }

  /** Iterate a server stream, mapping failures to typed errors. */
  async *stream<T>(it: AsyncIterable<T>): AsyncGenerator<T> {
    try {
      yield* it;
    } catch (e) {
      throw this.map(e);
    }
  }

  private map(e: unknown): CleanroomError {
    const err = fromConnect(e);
    const unreachable =
      (err.code === "server_unreachable" && err.connectCode === "unavailable") ||
      isConnectFailure(e);
    if (unreachable) {
      return errorFor(
        "server_unreachable",
        `cannot reach the cleanroom server at ${displayEndpoint(this.target.endpoint)}: ` +
          `${ConnectError.from(e).rawMessage}. ` +
          "Start it with `cleanroom serve`.",
        "unavailable",
      );
    }
    return err;
  }
}
