/**
 * Where the server is and how to authenticate to it: the same sources, in the same order,
 * as the `cleanroom` CLI (crates/client/src/endpoint.rs), so a program and the CLI on the
 * same machine reach the same server with the same credentials.
 *
 * Endpoint: option > `CLEANROOM_HOST` > config `control_host` > the system socket
 * (`/var/run/cleanroom/cleanroom.sock`) when it exists > the per-user socket
 * (`$XDG_RUNTIME_DIR/cleanroom/cleanroom.sock`, else `/tmp/cleanroom-$UID/cleanroom.sock`).
 * Token: option > `CLEANROOM_TOKEN` > config `token` (sent on TCP endpoints only).
 * CA: option > `CLEANROOM_CA_CERT` > config `ca_cert`.
 * Certificate pin (accept exactly the server certificate whose DER has this hex sha256,
 * instead of a CA): option > `CLEANROOM_SERVER_CERT_SHA256` > config `server_cert_sha256`.
 * Config file: `$XDG_CONFIG_HOME/cleanroom/config.json` (else `~/.config/cleanroom/config.json`).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { errorFor } from "./errors.js";

export const SYSTEM_SOCKET = "/var/run/cleanroom/cleanroom.sock";

/** A parsed server address: a socket path, or `host:port` for http/https. */
export interface Endpoint {
  kind: "unix" | "http" | "https";
  address: string;
}

/** Parse `unix:///path`, a bare absolute socket path, `http://host:port` or `https://host:port`. */
export function parseEndpoint(input: string): Endpoint {
  const s = input.trim();
  if (s.startsWith("unix://")) {
    const p = s.slice("unix://".length);
    if (p.startsWith("/")) return { kind: "unix", address: p };
  } else if (s.startsWith("/")) {
    return { kind: "unix", address: s };
  } else {
    for (const kind of ["http", "https"] as const) {
      const prefix = `${kind}://`;
      if (s.startsWith(prefix)) {
        const auth = s.slice(prefix.length).replace(/\/+$/, "");
        if (auth !== "" && !auth.includes("/")) return { kind, address: auth };
      }
    }
  }
  throw errorFor(
    "invalid_argument",
    `invalid endpoint ${JSON.stringify(s)}: expected unix:///path, http://host:port or https://host:port`,
  );
}

/** `unix:///…`, `http://…` form, for messages. */
export function displayEndpoint(e: Endpoint): string {
  return `${e.kind}://${e.address}`;
}

/** Per-user socket path, as the server computes it for a non-root user. */
export function userSocket(): string {
  const d = process.env.XDG_RUNTIME_DIR;
  if (d) return join(d, "cleanroom/cleanroom.sock");
  return `/tmp/cleanroom-${process.getuid?.() ?? 0}/cleanroom.sock`;
}

function configField(name: string): string | undefined {
  const xdg = process.env.XDG_CONFIG_HOME;
  const home = process.env.HOME;
  const dir = xdg ? xdg : home !== undefined ? join(home, ".config") : undefined;
  if (dir === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(readFileSync(join(dir, "cleanroom/config.json"), "utf8"));
    if (v !== null && typeof v === "object") {
      const f = (v as Record<string, unknown>)[name];
      if (typeof f === "string") return f;
    }
  } catch {
    // No or unreadable config: as the CLI, fall through to the next source.
  }
  return undefined;
}

/** The endpoint, in the CLI's order. */
export function resolveEndpoint(host?: string): Endpoint {
  if (host) return parseEndpoint(host);
  const env = process.env.CLEANROOM_HOST;
  if (env) return parseEndpoint(env);
  const cfg = configField("control_host");
  if (cfg !== undefined) return parseEndpoint(cfg);
  if (existsSync(SYSTEM_SOCKET)) return { kind: "unix", address: SYSTEM_SOCKET };
  return { kind: "unix", address: userSocket() };
}

/** Connection options; anything left out comes from the CLI's sources. */
export interface ConnectOptions {
  /** `unix:///path`, `http://host:port` or `https://host:port`. */
  host?: string;
  /** Bearer token for TCP endpoints. */
  token?: string;
  /** PEM file of the CA that verifies an `https://` server. */
  caCert?: string;
  /** Hex sha256 of the `https://` server's certificate (DER), optionally `sha256:`-prefixed. */
  serverCertSha256?: string;
  /**
   * W3C trace context (`00-<trace id>-<span id>-<flags>`) every call carries, e.g. the
   * current span's: the server's spans and the executions' `traceId` join that trace
   * (docs/traces.md).
   */
  traceparent?: string;
}

/** A server plus the credentials to present to it. */
export interface Target {
  endpoint: Endpoint;
  token?: string;
  caCert?: string;
  /** Lowercase hex sha256 of the one server certificate to accept (parsed, 64 digits). */
  serverCertSha256?: string;
}

/** `sha256:`-prefixed or bare, any case, 64 hex digits (as the CLI's `--server-cert-sha256`). */
export function parsePin(pin: string): string {
  let h = pin.trim();
  if (h.toLowerCase().startsWith("sha256:")) h = h.slice("sha256:".length);
  if (!/^[0-9a-fA-F]{64}$/.test(h)) {
    throw errorFor("invalid_argument", "serverCertSha256 must be 64 hex digits");
  }
  return h.toLowerCase();
}

/** {@link resolveEndpoint} plus the token, CA and pin: option > environment > config file. */
export function resolveTarget(opts: ConnectOptions = {}): Target {
  const pick = (v: string | undefined, env: string, field: string) =>
    v || process.env[env] || configField(field);
  const token = pick(opts.token, "CLEANROOM_TOKEN", "token")?.trim();
  const pin = pick(opts.serverCertSha256, "CLEANROOM_SERVER_CERT_SHA256", "server_cert_sha256");
  const t: Target = {
    endpoint: resolveEndpoint(opts.host),
    token,
    caCert: pick(opts.caCert, "CLEANROOM_CA_CERT", "ca_cert"),
  };
  if (pin) t.serverCertSha256 = parsePin(pin);
  return t;
}
