// Named volumes through the SDK (docs/volumes.md): create, mount read-write into one sandbox,
// read-only into the next, refused writes and removals, and mount specs checked before any
// request. The suite's servers run as root, so volumes really mount.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import {
  createVolume,
  getVolume,
  InvalidArgumentError,
  listVolumes,
  removeVolume,
  Sandbox,
  VolumeBusyError,
  VolumeExistsError,
  VolumeInUseError,
  VolumeMountInvalidError,
  VolumeNotFoundError,
  type VolumeSpec,
} from "../src/index.js";
import { host } from "./helpers.js";

const MiB = 1 << 20;
const freshName = () => `ts-${randomBytes(6).toString("hex")}`;
const is = (C: new (...a: never[]) => Error) => (e: unknown) => e instanceof C;

/** removeVolume once the one-shot sandboxes that mounted it have finished stopping. */
async function removeWhenReleased(name: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await removeVolume(name, { host: host() });
    } catch (e) {
      if (!(e instanceof VolumeInUseError) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

test("a volume outlives its writer and reads back read-only", async () => {
  const name = freshName();
  const v = await createVolume(name, { host: host(), sizeMib: 32 });
  assert.equal(v.name, name);
  assert.equal(v.sizeBytes, 32 * MiB);
  assert.match(v.id, /^vol_/);
  await assert.rejects(createVolume(name, { host: host() }), is(VolumeExistsError));

  // A: read-write (the object form); its file stays after A is gone.
  const a = await Sandbox.create({ host: host(), volumes: [{ name, path: "/workspace/cache" }] });
  try {
    const r = await a.run(["sh", "-c", "echo kept > /workspace/cache/f && cat /workspace/cache/f"]);
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, "kept\n");
    const got = await getVolume(name, { host: host() });
    assert.deepEqual(got.mountedBy, [a.id]);
    assert.equal(got.mountedRw, true);
  } finally {
    await a.terminate();
  }

  // B: read-only (the CLI's grammar): reads A's file, cannot write.
  const b = await Sandbox.create({ host: host(), volumes: [`${name}:/mnt/data:ro`] });
  try {
    const r = await b.run(["cat", "/mnt/data/f"]);
    assert.equal(r.stdout, "kept\n", r.stderr);
    const w = await b.run(["sh", "-c", "echo x > /mnt/data/g"]);
    assert.notEqual(w.exitCode, 0);
    assert.match(w.stderr, /Read-only file system/);
    const got = await getVolume(v.id, { host: host() });
    assert.deepEqual(got.mountedBy, [b.id]);
    assert.equal(got.mountedRw, false);
    // One call: a second reader beside B, torn down after the command.
    const e = await Sandbox.exec(["cat", "/mnt/data/f"], { host: host(), volumes: [`${name}:/mnt/data:ro`] });
    assert.equal(e.stdout, "kept\n", e.stderr);
    // Read-write beside a read-only mount is refused.
    await assert.rejects(Sandbox.create({ host: host(), volumes: [`${name}:/workspace/cache`] }), is(VolumeBusyError));
    await assert.rejects(removeVolume(name, { host: host() }), is(VolumeInUseError));
    assert.ok((await listVolumes({ host: host() })).some((x) => x.name === name));
  } finally {
    await b.terminate();
  }

  const gone = await removeWhenReleased(name);
  assert.equal(gone.id, v.id);
  assert.ok(!(await listVolumes({ host: host() })).some((x) => x.name === name));
  await assert.rejects(getVolume(name, { host: host() }), is(VolumeNotFoundError));
});

test("malformed mounts are typed before any request", async () => {
  const nowhere = "unix:///nonexistent/cleanroom.sock";
  const bad: unknown[] = [
    "nocolon",
    "cache:relative/path",
    "cache:/mnt/data:rx",
    "Bad Name:/mnt/data",
    ":/mnt/data",
    { name: "cache" },
    { name: "cache", path: "/mnt/data", read_only: true },
    42,
  ];
  for (const spec of bad) {
    const volumes = [spec as VolumeSpec];
    await assert.rejects(Sandbox.create({ host: nowhere, volumes }), (e: unknown) => {
      assert.ok(e instanceof VolumeMountInvalidError, `${JSON.stringify(spec)}: ${String(e)}`);
      assert.equal(e.code, "volume_mount_invalid");
      return true;
    });
    await assert.rejects(Sandbox.exec(["true"], { host: nowhere, volumes }), is(VolumeMountInvalidError));
  }
});

test("server rules and option checks", async () => {
  // Well-formed but on a system path: the server refuses with the same code.
  await assert.rejects(Sandbox.create({ host: host(), volumes: ["anyvol:/etc/x"] }), is(VolumeMountInvalidError));
  await assert.rejects(Sandbox.create({ host: host(), volumes: [`${freshName()}:/mnt/x`] }), is(VolumeNotFoundError));
  await assert.rejects(Sandbox.exec(["true"], { host: host(), inSandbox: "sbx_x", volumes: ["v:/mnt/x"] }), is(InvalidArgumentError));
  await assert.rejects(createVolume(freshName(), { host: host(), sizeMib: 32, sizeBytes: 32 * MiB }), is(InvalidArgumentError));
});
