/**
 * Option objects checked at run time, not only by the type checker: a JavaScript caller (or
 * a TypeScript one passing a wider object) who misspells an option — `limits: {memoryMb:
 * 512}` before `memoryMb` existed, `{ttl_seconds: 60}` — gets {@link UnknownOptionError}
 * (code `unknown_option`) naming the option and the accepted ones, instead of an option
 * silently dropped. Also the conversions every call shares: a policy given as text, a
 * file path or an object; limits in the CLI's and the policy's units (MiB) or in bytes;
 * volume mounts in the CLI's `--volume` grammar or as objects (a malformed one is
 * `volume_mount_invalid` before any request).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { errorFor, UnknownOptionError } from "./errors.js";
/** The connection options every call accepts (see config.ts). */
export const CONNECT_KEYS = ["host", "token", "caCert", "serverCertSha256", "traceparent", "client"];
/** Levenshtein distance, for "did you mean" (short option names only). */
function distance(a, b) {
    const d = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
        let prev = d[0];
        d[0] = i;
        for (let j = 1; j <= b.length; j++) {
            const cur = d[j];
            d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1].toLowerCase() === b[j - 1].toLowerCase() ? 0 : 1));
            prev = cur;
        }
    }
    return d[b.length];
}
/**
 * Refuse any own key of `o` outside `allowed` (`undefined`-valued keys too: a typo is a
 * typo whatever its value). `where` names the call in the message (`Sandbox.create`).
 */
export function checkOptions(o, allowed, where) {
    if (o === undefined)
        return;
    if (o === null || typeof o !== "object" || Array.isArray(o)) {
        throw errorFor("invalid_argument", `${where}: options must be an object, got ${o === null ? "null" : typeof o}`);
    }
    const unknown = Object.keys(o).filter((k) => !allowed.includes(k));
    if (unknown.length === 0)
        return;
    const k = unknown[0];
    const near = [...allowed].sort((a, b) => distance(k, a) - distance(k, b))[0];
    const hint = near !== undefined && distance(k, near) <= Math.max(2, Math.floor(k.length / 3)) ? ` (did you mean ${near}?)` : "";
    throw new UnknownOptionError("unknown_option", `${where}: unknown option ${JSON.stringify(k)}${hint}; accepted: ${[...allowed].sort().join(", ")}`, "invalid_argument", { option: k, where });
}
/** One line, no YAML mapping on it, and it names an existing file or looks like a path. */
function looksLikePath(s) {
    if (s.includes("\n") || s.trim() === "" || s.trimStart().startsWith("{"))
        return false;
    if (existsSync(s))
        return true;
    return /^(\.{0,2}\/|~\/)/.test(s) || /\.(ya?ml|json)$/i.test(s);
}
/**
 * The policy text to send. A string with a newline, or one that is neither an existing
 * file nor shaped like a path, is YAML text (as before); a one-line string naming a file
 * (or ending in .yaml/.yml/.json, or starting with `/`, `./`, `../`) is read, and a missing
 * file is `file_not_found`; a `URL` is a `file:` URL; an object is serialized as JSON.
 */
export function policyText(p, where) {
    if (p === undefined || p === "")
        return "";
    if (p instanceof URL) {
        if (p.protocol !== "file:")
            throw errorFor("invalid_argument", `${where}: policy URL must be a file: URL, got ${p.protocol}`);
        return readPolicyFile(p, p.pathname, where);
    }
    if (typeof p === "string")
        return looksLikePath(p) ? readPolicyFile(p, p, where) : p;
    if (typeof p === "object" && p !== null && !Array.isArray(p))
        return JSON.stringify(p);
    throw errorFor("invalid_argument", `${where}: policy must be YAML text, a file path or an object, got ${typeof p}`);
}
function readPolicyFile(p, shown, where) {
    try {
        if (!statSync(p).isFile())
            throw errorFor("invalid_argument", `${where}: policy path ${shown} is not a file`);
        return readFileSync(p, "utf8");
    }
    catch (e) {
        const code = e.code;
        if (code === "ENOENT")
            throw errorFor("file_not_found", `${where}: policy file ${shown} does not exist`, "", { path: shown });
        throw e;
    }
}
const LIMIT_KEYS = ["memoryMb", "memoryBytes", "diskMb", "diskBytes", "outputMb", "outputBytes", "pids", "cpuMillis"];
const MIB = 1024n * 1024n;
function whole(v, name) {
    if (typeof v === "bigint" && v >= 0n)
        return v;
    if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0)
        return BigInt(v);
    throw errorFor("invalid_argument", `limits.${name}: expected a whole number >= 0, got ${String(v)}`);
}
/** The API's ResourceLimits fields (bytes), from {@link Limits}; undefined when none are set. */
export function limitFields(l, where) {
    if (l === undefined)
        return undefined;
    checkOptions(l, LIMIT_KEYS, `${where} limits`);
    const size = (mb, bytes, name) => {
        if (mb !== undefined && bytes !== undefined) {
            throw errorFor("invalid_argument", `limits: give ${name}Mb or ${name}Bytes, not both`);
        }
        if (mb !== undefined)
            return whole(mb, `${name}Mb`) * MIB;
        return bytes === undefined ? 0n : whole(bytes, `${name}Bytes`);
    };
    return {
        memoryBytes: size(l.memoryMb, l.memoryBytes, "memory"),
        diskBytes: size(l.diskMb, l.diskBytes, "disk"),
        outputBytes: size(l.outputMb, l.outputBytes, "output"),
        pids: l.pids === undefined ? 0n : whole(l.pids, "pids"),
        cpuMillis: l.cpuMillis === undefined ? 0n : whole(l.cpuMillis, "cpuMillis"),
    };
}
/** ResourceLimits (bytes) back in both units, as returned by snapshots and pools. */
export function limitsOf(l) {
    const mb = (b) => Number(b / MIB);
    if (!l)
        return undefined;
    return {
        memoryMb: mb(l.memoryBytes),
        memoryBytes: Number(l.memoryBytes),
        diskMb: mb(l.diskBytes),
        diskBytes: Number(l.diskBytes),
        outputMb: mb(l.outputBytes),
        outputBytes: Number(l.outputBytes),
        pids: Number(l.pids),
        cpuMillis: Number(l.cpuMillis),
    };
}
const VOLUME_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
const MOUNT_KEYS = ["name", "path", "readOnly"];
function mountInvalid(spec, why) {
    const shown = typeof spec === "string" ? spec : JSON.stringify(spec) ?? String(spec);
    return errorFor("volume_mount_invalid", `volumes: ${shown}: ${why}`, "invalid_argument", { mount: shown });
}
/** One `VolumeMount` of `"NAME:/path[:ro|:rw]"` or `{ name, path, readOnly }`. */
export function volumeMount(spec) {
    let name;
    let path;
    let readOnly = false;
    if (typeof spec === "string") {
        const at = spec.indexOf(":");
        if (at < 0)
            throw mountInvalid(spec, "expected NAME:/path[:ro]");
        name = spec.slice(0, at);
        path = spec.slice(at + 1);
        const last = path.lastIndexOf(":");
        if (last >= 0) {
            const opt = path.slice(last + 1);
            if (opt !== "ro" && opt !== "rw")
                throw mountInvalid(spec, `unknown mount option ${JSON.stringify(opt)} (ro or rw)`);
            readOnly = opt === "ro";
            path = path.slice(0, last);
        }
    }
    else if (spec !== null && typeof spec === "object" && !Array.isArray(spec)) {
        const unknown = Object.keys(spec).filter((k) => !MOUNT_KEYS.includes(k));
        if (unknown.length > 0)
            throw mountInvalid(spec, `unknown key ${JSON.stringify(unknown[0])}; known: ${MOUNT_KEYS.join(", ")}`);
        ({ name, path } = spec);
        readOnly = spec.readOnly ?? false;
        if (typeof name !== "string" || typeof path !== "string" || typeof readOnly !== "boolean") {
            throw mountInvalid(spec, "name and path are strings, readOnly a boolean");
        }
    }
    else {
        throw mountInvalid(spec, `a mount is a string or an object, not ${spec === null ? "null" : typeof spec}`);
    }
    if (!VOLUME_NAME.test(name)) {
        throw mountInvalid(spec, `volume name ${JSON.stringify(name)} must be 1-63 of a-z 0-9 . _ - starting with a letter or digit`);
    }
    if (!path.startsWith("/"))
        throw mountInvalid(spec, `${JSON.stringify(path)} must be an absolute path inside the sandbox`);
    return { name: name, path: path, readOnly: readOnly };
}
/** The `CreateSandboxRequest.volumes` of a `volumes` option. */
export function volumeMounts(v) {
    if (v === undefined)
        return [];
    if (!Array.isArray(v))
        throw mountInvalid(v, "volumes is an array of mounts");
    return v.map(volumeMount);
}
