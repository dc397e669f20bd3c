// The calls beyond run and files: list with label filters, describe, runShell, pause and
// resume, limits in MiB, the policy as text / file path / object, and unknown option names
// refused with `unknown_option` at run time (not only by the type checker).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import {
  BackendCapabilityMismatchError,
  FileNotFoundError,
  ImageNotFoundError,
  InvalidArgumentError,
  listImages,
  PolicyInvalidError,
  pullImage,
  removeImage,
  Sandbox,
  SandboxPausedError,
  UnknownOptionError,
  type CreateOptions,
} from "../src/index.js";
import { host } from "./helpers.js";

test("list filters by labels, which come back on the sandbox", async () => {
  const run = randomUUID();
  const a = await Sandbox.create({ host: host(), labels: { run, role: "worker" } });
  const b = await Sandbox.create({ host: host(), labels: { run, role: "judge" } });
  try {
    const mine = await Sandbox.list({ host: host(), labels: { run } });
    assert.deepEqual(mine.map((s) => s.id).sort(), [a.id, b.id].sort());
    const workers = await Sandbox.list({ host: host(), labels: { run, role: "worker" } });
    assert.deepEqual(workers.map((s) => [s.id, s.status, s.labels]), [[a.id, "ready", { run, role: "worker" }]]);
    assert.deepEqual((await b.describe()).labels, { run, role: "judge" });
    assert.deepEqual(await Sandbox.list({ host: host(), labels: { run, role: "nobody" } }), []);
    await b.terminate();
    assert.deepEqual((await Sandbox.list({ host: host(), labels: { run } })).map((s) => s.id), [a.id]);
    const all = await Sandbox.list({ host: host(), labels: { run }, includeStopped: true, onlyOwn: true });
    assert.deepEqual(all.map((s) => s.id).sort(), [a.id, b.id].sort());
    assert.equal(all.find((s) => s.id === b.id)?.status, "stopped");
  } finally {
    await a[Symbol.asyncDispose]();
    await b[Symbol.asyncDispose]();
  }
});

test("runShell takes a command line; argv stays argv", async () => {
  const sbx = await Sandbox.create({ host: host() });
  try {
    const r = await sbx.runShell("echo $((6 * 7)) | tr 4 x && echo 'a b' > /tmp/f; cat /tmp/f >&2; exit 5");
    assert.deepEqual([r.stdout, r.stderr, r.exitCode], ["x2\n", "a b\n", 5]);
    const h = await sbx.startShell("sleep 0.2; echo later", { env: { X: "1" } });
    assert.equal((await h.wait()).stdout, "later\n");
    assert.equal((await sbx.run(["echo", "$((1+1))"])).stdout, "$((1+1))\n");
    await assert.rejects(sbx.runShell("  "), InvalidArgumentError);
    const rep = await (await Sandbox.connect(sbx.id, { host: host() })).attach(r.executionId).then((x) => x.inspect());
    assert.deepEqual(
      [rep.status, rep.exitCode, rep.stdout, rep.stderr, rep.stdoutBytes, rep.command[0]],
      ["failed", 5, "x2\n", "a b\n", 3, "/bin/sh"],
    );
    assert.ok(rep.finishedAt instanceof Date && !rep.outputExpired);
  } finally {
    await sbx.terminate();
  }
});

test("pause freezes the sandbox, resume thaws it", async () => {
  const sbx = await Sandbox.create({ host: host() });
  try {
    const job = await sbx.startShell("i=0; while [ $i -lt 50 ]; do echo $i; i=$((i+1)); sleep 0.1; done");
    assert.equal((await sbx.pause()).status, "paused");
    assert.equal((await sbx.pause()).status, "paused", "idempotent");
    assert.equal((await sbx.describe()).status, "paused");
    await assert.rejects(sbx.run(["true"]), (e: unknown) => e instanceof SandboxPausedError && e.code === "sandbox_paused");
    assert.equal((await sbx.resume()).status, "ready");
    assert.equal((await sbx.run(["echo", "awake"])).stdout, "awake\n");
    assert.equal((await job.wait()).exitCode, 0);
    // No process checkpoint on this backend: a typed refusal, not a hang or a generic error.
    await assert.rejects(sbx.checkpoint(), (e: unknown) => e instanceof BackendCapabilityMismatchError);
  } finally {
    await sbx.terminate();
  }
});

test("unknown or misspelled option names are an error with a stable code", async () => {
  const bad: [() => Promise<unknown>, string][] = [
    [() => Sandbox.create({ host: host(), limits: { memory_mb: 512 } } as unknown as CreateOptions), "memory_mb"],
    [() => Sandbox.create({ host: host(), ttl_seconds: 60 } as unknown as CreateOptions), "ttl_seconds"],
    [() => Sandbox.create({ host: host(), polciy: "version: 1\n" } as unknown as CreateOptions), "polciy"],
    [() => Sandbox.list({ host: host(), label: { a: "b" } } as never), "label"],
    [() => Sandbox.connect("sbx_x", { hots: host() } as never), "hots"],
  ];
  for (const [call, option] of bad) {
    await assert.rejects(call(), (e: unknown) => {
      assert.ok(e instanceof UnknownOptionError && e instanceof InvalidArgumentError, String(e));
      assert.deepEqual([e.code, e.details.option], ["unknown_option", option]);
      return true;
    });
  }
  await assert.rejects(
    Sandbox.create({ host: host(), limits: { memoryMB: 512 } } as never),
    (e: unknown) => e instanceof UnknownOptionError && /did you mean memoryMb\?/.test(e.message),
  );
  await assert.rejects(Sandbox.create({ host: host(), limits: { memoryMb: 512, memoryBytes: 1 } }), InvalidArgumentError);
  const sbx = await Sandbox.create({ host: host() });
  try {
    await assert.rejects(sbx.run(["true"], { timeoutSeconds: 5 } as never), (e: unknown) => e instanceof UnknownOptionError);
    await assert.rejects(sbx.setTimeout({ ttl: 60, idle: 5 } as never), (e: unknown) => e instanceof UnknownOptionError);
    await assert.rejects(sbx.files.write("/tmp/x", "x", { mod: 0o600 } as never), (e: unknown) => e instanceof UnknownOptionError);
    await assert.rejects(sbx.events({ folow: true } as never).next(), (e: unknown) => e instanceof UnknownOptionError);
  } finally {
    await sbx.terminate();
  }
});

test("limits in MiB (as the CLI and the policy) reach the sandbox", async () => {
  const sbx = await Sandbox.create({ host: host(), limits: { memoryMb: 384, pids: 200 } });
  try {
    const snap = await sbx.snapshot();
    try {
      assert.equal(snap.info.limits?.memoryMb, 384);
      assert.equal(snap.info.limits?.memoryBytes, 384 * 1024 * 1024);
      assert.equal(snap.info.limits?.pids, 200);
    } finally {
      await snap.remove();
    }
    // What the backend set on the sandbox's cgroup, as it reports it.
    const limits = String((await sbx.info()).backendInfo?.limits);
    assert.match(limits, /\bmemory=384MiB\b/);
    assert.match(limits, /\bpids=200\b/);
  } finally {
    await sbx.terminate();
  }
});

test("the policy as text, as a file path or file URL, and as an object", async () => {
  const yaml = "version: 1\nsandbox:\n  resources:\n    memory_mb: 320\n  network:\n    allow:\n      - host: example.invalid\n        ports: [443]\n";
  const obj = { version: 1, sandbox: { resources: { memory_mb: 320 }, network: { allow: [{ host: "example.invalid", ports: [443] }] } } };
  const dir = mkdtempSync(join(tmpdir(), "cleanroom-ts-policy-"));
  const file = join(dir, "cleanroom.yaml");
  writeFileSync(file, yaml);
  const made: Sandbox[] = [];
  try {
    for (const policy of [yaml, file, pathToFileURL(file), obj]) made.push(await Sandbox.create({ host: host(), policy }));
    made.push(await Sandbox.create({ host: host() }));
    const hashes = await Promise.all(made.map(async (s) => (await s.describe()).policyHash));
    assert.equal(new Set(hashes.slice(0, 4)).size, 1, JSON.stringify(hashes));
    assert.notEqual(hashes[4], hashes[0], "the policy was not applied");
    await assert.rejects(
      Sandbox.create({ host: host(), policy: join(dir, "missing.yaml") }),
      (e: unknown) => e instanceof FileNotFoundError && e.code === "file_not_found",
    );
  } finally {
    for (const s of made) await s.terminate();
  }
});

test("images: list, and pull/remove answered with their typed errors", async () => {
  assert.ok(Array.isArray(await listImages({ host: host() })));
  await assert.rejects(removeImage(`sha256:${"0".repeat(64)}`, { host: host() }), (e: unknown) => e instanceof ImageNotFoundError);
  await assert.rejects(pullImage("docker.invalid/library/python:3.12", { host: host() }), (e: unknown) => e instanceof PolicyInvalidError);
  await assert.rejects(listImages({ host: host(), tokn: "x" } as never), (e: unknown) => e instanceof UnknownOptionError);
});

test("interrupt is one SIGINT the command handles; terminate in the background", async () => {
  const sbx = await Sandbox.create({ host: host() });
  const h = await sbx.startShell("trap 'echo got-int; exit 7' INT; echo armed; while :; do sleep 0.1; done");
  let armed!: () => void;
  const ready = new Promise<void>((r) => (armed = r));
  const done = h.wait({ onStdout: (t) => t.includes("armed") && armed() });
  await ready;
  await h.interrupt();
  const r = await done;
  assert.deepEqual([r.exitCode, r.stdout, r.status], [7, "armed\ngot-int\n", "failed"]);
  await sbx.terminate({ background: true });
  assert.ok(["stopping", "stopped"].includes((await sbx.describe()).status));
  await assert.rejects(sbx.terminate({ wait: true } as never), (e: unknown) => e instanceof UnknownOptionError);
});

test("lockfiles of a registries policy are sent with it (and its hash covers them)", async () => {
  const policy = {
    version: 1,
    sandbox: { registries: [{ kind: "npm", lockfile: "package-lock.json", upstream: "registry.invalid" }] },
  };
  const lock = (v: string) =>
    JSON.stringify({ name: "x", version: v, lockfileVersion: 3, requires: true, packages: { "": { name: "x", version: v } } });
  await assert.rejects(Sandbox.create({ host: host(), policy }), (e: unknown) => e instanceof PolicyInvalidError && /package-lock\.json/.test(e.message));
  const a = await Sandbox.create({ host: host(), policy, lockfiles: { "package-lock.json": lock("1.0.0") } });
  const b = await Sandbox.create({ host: host(), policy, lockfiles: { "package-lock.json": new TextEncoder().encode(lock("2.0.0")) } });
  try {
    const [ha, hb] = [(await a.describe()).policyHash, (await b.describe()).policyHash];
    assert.ok(ha && hb && ha !== hb, `${ha} ${hb}`);
  } finally {
    await a.terminate();
    await b.terminate();
  }
});

test("Sandbox.exec: one call makes a sandbox, runs a command with stdin, tears it down", async () => {
  const run = randomUUID();
  const r = await Sandbox.exec(["sh", "-c", "cat; echo err >&2; exit 3"], { host: host(), labels: { run }, stdin: "piped\n" });
  assert.deepEqual([r.stdout, r.stderr, r.exitCode], ["piped\n", "err\n", 3]);
  const made = await Sandbox.connect(r.sandboxId, { host: host() });
  const deadline = Date.now() + 60_000;
  while ((await made.describe()).status !== "stopped") {
    assert.ok(Date.now() < deadline, "the one-shot sandbox was not torn down");
    await new Promise((res) => setTimeout(res, 100));
  }
  const kept = await Sandbox.exec(["echo", "kept"], { host: host(), keep: true });
  try {
    const again = await Sandbox.exec(["sh", "-c", "echo in $((1+1))"], { host: host(), inSandbox: kept.sandboxId });
    assert.deepEqual([kept.stdout, again.stdout, again.sandboxId], ["kept\n", "in 2\n", kept.sandboxId]);
    const sbx = await Sandbox.connect(kept.sandboxId, { host: host() });
    assert.equal((await sbx.describe()).status, "ready");
    await assert.rejects(Sandbox.exec(["true"], { host: host(), inSandbox: kept.sandboxId, labels: { a: "b" } }), InvalidArgumentError);
    await assert.rejects(Sandbox.exec(["true"], { host: host(), keepp: true } as never), UnknownOptionError);
  } finally {
    await (await Sandbox.connect(kept.sandboxId, { host: host() })).terminate();
  }
});
