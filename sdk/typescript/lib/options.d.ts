/** The connection options every call accepts (see config.ts). */
export declare const CONNECT_KEYS: readonly ["host", "token", "caCert", "serverCertSha256", "traceparent", "client"];
/**
 * Refuse any own key of `o` outside `allowed` (`undefined`-valued keys too: a typo is a
 * typo whatever its value). `where` names the call in the message (`Sandbox.create`).
 */
export declare function checkOptions(o: unknown, allowed: readonly string[], where: string): void;
/**
 * A policy as the caller has it: cleanroom.yaml text, the path of a policy file, or the
 * policy as an object (sent as JSON, which every YAML parser reads).
 */
export type PolicyInput = string | URL | Record<string, unknown>;
/**
 * The policy text to send. A string with a newline, or one that is neither an existing
 * file nor shaped like a path, is YAML text (as before); a one-line string naming a file
 * (or ending in .yaml/.yml/.json, or starting with `/`, `./`, `../`) is read, and a missing
 * file is `file_not_found`; a `URL` is a `file:` URL; an object is serialized as JSON.
 */
export declare function policyText(p: PolicyInput | undefined, where: string): string;
/**
 * Resource limits. Sizes in MiB as the CLI and the policy (`sandbox.resources.memory_mb`)
 * have them, or in bytes with the `*Bytes` names (the API's; a `bigint` is accepted);
 * one of each pair. CPU in milli-CPUs (1000 = one core). Unset: the policy's, else the
 * server's default.
 */
export interface Limits {
    memoryMb?: number;
    memoryBytes?: number | bigint;
    diskMb?: number;
    diskBytes?: number | bigint;
    outputMb?: number;
    outputBytes?: number | bigint;
    pids?: number | bigint;
    cpuMillis?: number | bigint;
}
/** The API's ResourceLimits fields (bytes), from {@link Limits}; undefined when none are set. */
export declare function limitFields(l: Limits | undefined, where: string): {
    memoryBytes: bigint;
    diskBytes: bigint;
    outputBytes: bigint;
    pids: bigint;
    cpuMillis: bigint;
} | undefined;
/** ResourceLimits (bytes) back in both units, as returned by snapshots and pools. */
export declare function limitsOf(l: {
    memoryBytes: bigint;
    diskBytes: bigint;
    outputBytes: bigint;
    pids: bigint;
    cpuMillis: bigint;
} | undefined): {
    memoryMb: number;
    memoryBytes: number;
    diskMb: number;
    diskBytes: number;
    outputMb: number;
    outputBytes: number;
    pids: number;
    cpuMillis: number;
} | undefined;
/** Resource limits as reported (both units; 0: not set). */
export type LimitsInfo = NonNullable<ReturnType<typeof limitsOf>>;
/** A named-volume mount: the CLI's `--volume` grammar `"NAME:/path[:ro]"`, or an object. */
export type VolumeSpec = string | {
    name: string;
    path: string;
    readOnly?: boolean;
};
/** One `VolumeMount` of `"NAME:/path[:ro|:rw]"` or `{ name, path, readOnly }`. */
export declare function volumeMount(spec: VolumeSpec): {
    name: string;
    path: string;
    readOnly: boolean;
};
/** The `CreateSandboxRequest.volumes` of a `volumes` option. */
export declare function volumeMounts(v: VolumeSpec[] | undefined): {
    name: string;
    path: string;
    readOnly: boolean;
}[];
