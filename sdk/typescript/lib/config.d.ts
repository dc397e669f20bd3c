export declare const SYSTEM_SOCKET = "/var/run/cleanroom/cleanroom.sock";
/** A parsed server address: a socket path, or `host:port` for http/https. */
export interface Endpoint {
    kind: "unix" | "http" | "https";
    address: string;
}
/** Parse `unix:///path`, a bare absolute socket path, `http://host:port` or `https://host:port`. */
export declare function parseEndpoint(input: string): Endpoint;
/** `unix:///…`, `http://…` form, for messages. */
export declare function displayEndpoint(e: Endpoint): string;
/** Per-user socket path, as the server computes it for a non-root user. */
export declare function userSocket(): string;
/** The endpoint, in the CLI's order. */
export declare function resolveEndpoint(host?: string): Endpoint;
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
export declare function parsePin(pin: string): string;
/** {@link resolveEndpoint} plus the token, CA and pin: option > environment > config file. */
export declare function resolveTarget(opts?: ConnectOptions): Target;
