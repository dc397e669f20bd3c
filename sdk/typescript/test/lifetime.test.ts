import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { CleanroomError, InvalidArgumentError, Sandbox, SandboxNotReadyError } from "../src/index.js";
import { host, need } from "./helpers.js";

/** Bounded waits (never asserted as durations). */
const WAIT_MS = 60_000;

async function waitStopped(sbx: Sandbox) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const l = await sbx.lifetime();
    if (l.stopReason) return l;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${sbx.id} did not stop`);
}

test("ttl and idle timeout at create; expiry with its reason", async () => {
  const a = await Sandbox.create({ host: host(), ttl: 2 });
  const b = await Sandbox.create({ host: host(), idleTimeout: 2 });
  try {
    const la = await a.lifetime();
    assert.equal(la.ttlSeconds, 2);
    assert.ok(la.expiresAt instanceof Date);
    assert.equal((await b.lifetime()).idleTimeoutSeconds, 2);
    assert.equal((await waitStopped(a)).stopReason, "ttl_expired");
    assert.equal((await waitStopped(b)).stopReason, "idle_timeout");
    await assert.rejects(a.run(["true"]), (e: unknown) => e instanceof CleanroomError);
  } finally {
    await a[Symbol.asyncDispose]();
    await b[Symbol.asyncDispose]();
  }
});

test("setTimeout extends, changes, clears and shortens", async () => {
  const sbx = await Sandbox.create({ host: host(), ttl: 4, idleTimeout: 600 });
  try {
    const first = (await sbx.lifetime()).expiresAt!;
    let l = await sbx.setTimeout({ ttl: 3600 });
    assert.equal(l.ttlSeconds, 3600);
    assert.ok(l.expiresAt! > first);
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal((await sbx.run(["echo", "still here"])).stdout, "still here\n");
    l = await sbx.setTimeout({ idleTimeout: 120 });
    assert.deepEqual([l.ttlSeconds, l.idleTimeoutSeconds], [3600, 120]);
    l = await sbx.setTimeout({ clearTtl: true, clearIdleTimeout: true });
    assert.deepEqual([l.ttlSeconds, l.expiresAt, l.idleTimeoutSeconds], [0, undefined, 0]);
    await sbx.setTimeout({ ttl: 1 });
    assert.equal((await waitStopped(sbx)).stopReason, "ttl_expired");
    await assert.rejects(sbx.setTimeout({ ttl: 60 }), (e: unknown) => e instanceof SandboxNotReadyError);
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
});

test("timeout arguments are checked, here and by the server", async () => {
  const sbx = await Sandbox.create({ host: host() });
  try {
    for (const bad of [0, -1, 0.5, Number.NaN]) {
      await assert.rejects(sbx.setTimeout({ ttl: bad }), (e: unknown) => e instanceof InvalidArgumentError);
    }
    await assert.rejects(sbx.setTimeout({}), (e: unknown) => e instanceof InvalidArgumentError);
    await assert.rejects(sbx.setTimeout({ ttl: 5, clearTtl: true }), (e: unknown) => e instanceof InvalidArgumentError);
    await assert.rejects(
      sbx.setTimeout({ ttl: 400 * 86400 }),
      (e: unknown) => e instanceof InvalidArgumentError && e.message.includes("ttl"),
    );
    await assert.rejects(Sandbox.create({ host: host(), idleTimeout: 400 * 86400 }), (e: unknown) => e instanceof InvalidArgumentError);
    assert.equal((await sbx.run(["true"])).exitCode, 0);
  } finally {
    await sbx.terminate();
  }
});

test("usage moves with CPU, memory, disk, processes and network", async () => {
  const body = Buffer.alloc(2 << 20, 120);
  const up = http.createServer((_req, res) => {
    res.writeHead(200, { "content-length": body.length });
    res.end(body);
  });
  await new Promise<void>((r) => up.listen(0, "127.0.0.1", r));
  const port = (up.address() as AddressInfo).port;
  const name = need("CLEANROOM_TEST_EGRESS_NAME");
  const policy = `version: 1\nsandbox:\n  network:\n    allow:\n      - host: ${name}\n        ports: [${port}]\n`;
  const sbx = await Sandbox.create({ host: host(), policy });
  try {
    const base = (await sbx.usage())!;
    assert.ok(base.sampledAt instanceof Date);
    const tmp = (u: typeof base) => u.filesystems.find((f) => f.path === "/tmp")!.usedBytes;
    assert.ok(base.filesystems.some((f) => f.path === "/workspace"));
    await sbx.run(["sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]);
    const cpu = (await sbx.usage())!;
    assert.ok(cpu.cpuUsec > base.cpuUsec, JSON.stringify([base, cpu]));
    await sbx.run(["sh", "-c", "head -c 32000000 /dev/zero > /tmp/blob"]);
    const full = (await sbx.usage())!;
    assert.ok(tmp(full) >= tmp(base) + 32_000_000);
    assert.ok(full.memoryBytes >= base.memoryBytes + 30_000_000, JSON.stringify([base, full]));
    assert.ok(full.memoryPeakBytes >= full.memoryBytes);
    const job = await sbx.start(["sh", "-c", "sleep 600 & sleep 600 & wait"]);
    const deadline = Date.now() + WAIT_MS;
    let pids = 0;
    while (Date.now() < deadline && (pids = (await sbx.usage())!.pids) < base.pids + 3) {
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(pids >= base.pids + 3, `pids ${base.pids} -> ${pids}`);
    await job.kill();
    const before = (await sbx.usage())!;
    const r = await sbx.run([
      "sh",
      "-c",
      `curl -fsS -m 30 --noproxy '*' -o /tmp/dl http://${name}:${port}/ && wc -c < /tmp/dl`,
    ]);
    assert.equal(r.stdout.trim(), String(body.length), r.stderr);
    const after = (await sbx.usage())!;
    assert.ok(after.networkRxBytes >= before.networkRxBytes + body.length, JSON.stringify([before, after]));
    assert.ok(after.networkTxBytes > before.networkTxBytes);
    await sbx.terminate();
    assert.equal(await sbx.usage(), undefined);
  } finally {
    up.close();
    await sbx[Symbol.asyncDispose]();
  }
});

test("suspendAfter suspends an idle sandbox and its next command resumes it", async () => {
  const sbx = await Sandbox.create({ host: host(), suspendAfter: 1 });
  try {
    assert.equal((await sbx.lifetime()).suspendAfterSeconds, 1);
    await sbx.run(["sh", "-c", "echo 7 > /tmp/kept"]);
    const deadline = Date.now() + WAIT_MS;
    while ((await sbx.lifetime()).suspendedAt === undefined) {
      assert.ok(Date.now() < deadline, `${sbx.id} was not suspended`);
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal((await sbx.run(["cat", "/tmp/kept"])).stdout, "7\n");
    assert.equal((await sbx.lifetime()).suspendedAt, undefined);
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
});
