import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";
import { Sandbox, ServerUnreachableError } from "../src/index.js";
import { tcpHost, token } from "./helpers.js";
import { BreakingProxy } from "./proxy.js";

const MiB = 1 << 20;
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

test("an upload resumes after its connection drops, twice", async () => {
  const sbx = await Sandbox.create({ host: tcpHost(), token: token() });
  const data = new Uint8Array(randomBytes(12 * MiB));
  const p = await BreakingProxy.start(tcpHost(), { cutUp: [5 * MiB, 9 * MiB] });
  try {
    const via = await Sandbox.connect(sbx.id, { host: p.host, token: token() });
    const info = await via.files.write("/workspace/big.bin", data);
    assert.equal(info.size, data.length);
    assert.equal(p.cuts, 2, "the proxy did not interrupt the upload");
    // Resumed, not restarted: at most the chunks in flight went up twice.
    assert.ok(p.up < data.length + 2 * 2 * MiB + MiB, `${p.up} bytes up`);
    const got = (await sbx.run(["sha256sum", "/workspace/big.bin"])).stdout.split(" ")[0];
    assert.equal(got, sha(data));
  } finally {
    await p.close();
    await sbx.terminate();
  }
});

test("a download resumes at the offset reached", async () => {
  const sbx = await Sandbox.create({ host: tcpHost(), token: token() });
  const data = new Uint8Array(randomBytes(12 * MiB));
  await sbx.files.write("/workspace/dl.bin", data);
  const p = await BreakingProxy.start(tcpHost(), { cutDown: [4 * MiB, 8 * MiB] });
  try {
    const via = await Sandbox.connect(sbx.id, { host: p.host, token: token() });
    // Record where each ReadSandboxFile call starts (what a cut loses in socket buffers
    // varies, so bytes on the wire do not tell a resume from a restart here).
    const starts: [number, number][] = [];
    const svc = via.client.files;
    const real = svc.readSandboxFile.bind(svc);
    (svc as unknown as { readSandboxFile: typeof real }).readSandboxFile = (req, opts) => {
      starts.push([Number(req.offset ?? 0), Number(req.length ?? 0)]);
      return real(req, opts);
    };
    const got = await via.files.read("/workspace/dl.bin");
    assert.equal(p.cuts, 2, "the proxy did not interrupt the download");
    assert.equal(got.length, data.length);
    assert.equal(sha(got), sha(data));
    assert.equal(starts.length, 3, JSON.stringify(starts));
    assert.deepEqual(starts[0], [0, 0]);
    // Resumed at the offsets reached (a reset drops what was still in the socket buffer).
    assert.ok(starts[1][0] <= starts[2][0] && starts[2][0] > 0 && starts[2][0] < data.length, JSON.stringify(starts));
    starts.length = 0;
    p.cutDown.push(p.down + MiB);
    const part = await via.files.read("/workspace/dl.bin", MiB + 3, 5 * MiB);
    assert.equal(sha(part), sha(data.subarray(MiB + 3, 6 * MiB + 3)));
    assert.equal(p.cuts, 3);
    assert.equal(starts.length, 2, JSON.stringify(starts));
    assert.deepEqual(starts[0], [MiB + 3, 5 * MiB]);
    assert.ok(starts[1][0] >= MiB + 3 && starts[1][0] + starts[1][1] === 6 * MiB + 3, JSON.stringify(starts));
  } finally {
    await p.close();
    await sbx.terminate();
  }
});

test("a server gone for good ends the upload with a typed error", async () => {
  const sbx = await Sandbox.create({ host: tcpHost(), token: token() });
  const p = await BreakingProxy.start(tcpHost(), { cutUp: [3 * MiB], dieAfterCut: true });
  try {
    const via = await Sandbox.connect(sbx.id, { host: p.host, token: token() });
    await assert.rejects(
      via.files.write("/workspace/never.bin", new Uint8Array(randomBytes(6 * MiB))),
      (e: unknown) => e instanceof ServerUnreachableError,
    );
    assert.equal(p.cuts, 1);
    assert.ok(p.refused >= 1);
    assert.equal((await sbx.run(["test", "-e", "/workspace/never.bin"])).exitCode, 1);
  } finally {
    await p.close();
    await sbx.terminate();
  }
});

test("a commit whose answer was lost is accepted only if the file holds our bytes", async () => {
  const { CleanroomError } = await import("../src/index.js");
  const sbx = await Sandbox.create({ host: tcpHost(), token: token() });
  const svc = sbx.client.files;
  const real = svc.writeSandboxFile.bind(svc);
  // The committing call reaches the real server (which commits); then its answer is
  // "lost" — raised as the unreachable server an SDK sees when a connection dies after
  // the request was processed (a proxy cannot aim a reset at that moment).
  let lose = false;
  let meanwhile: (() => Promise<unknown>) | undefined;
  (svc as unknown as { writeSandboxFile: typeof real }).writeSandboxFile = async (req, opts) => {
    const r = await real(req, opts);
    if (req.finish && lose) {
      lose = false;
      if (meanwhile) await meanwhile();
      throw new ServerUnreachableError("server_unreachable", "answer lost (test)");
    }
    return r;
  };
  try {
    for (const size of [100, 5 * MiB + 1]) {
      const data = new Uint8Array(randomBytes(size));
      lose = true;
      meanwhile = undefined;
      const info = await sbx.files.write(`/workspace/c1-${size}`, data, { overwrite: false });
      assert.equal(info.size, size);
      assert.equal(lose, false, "the answer was not lost");
      assert.equal(sha(await sbx.files.read(`/workspace/c1-${size}`)), sha(data));
      // Something else replaced the file meanwhile: refused.
      lose = true;
      meanwhile = () => sbx.run(["sh", "-c", `echo tampered > /workspace/c2-${size}`]);
      await assert.rejects(
        sbx.files.write(`/workspace/c2-${size}`, data, { overwrite: false }),
        (e: unknown) => e instanceof CleanroomError && ["file_exists", "upload_not_found"].includes(e.code),
      );
      assert.equal(await sbx.files.readText(`/workspace/c2-${size}`), "tampered\n");
    }
  } finally {
    await sbx.terminate();
  }
});
