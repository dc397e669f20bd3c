// Snapshots through the SDK: capture a sandbox's state, restore it twice (forks that share
// it, each with its own changes), list, inspect, remove (refused while a fork lives).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Sandbox, Snapshot, SnapshotInUseError, SnapshotNotFoundError } from "../src/index.js";
import { host } from "./helpers.js";

test("snapshot, fork twice, list, inspect, remove", async () => {
  const src = await Sandbox.create({ host: host(), labels: { t: "snap" } });
  const forks: Sandbox[] = [];
  try {
    await src.files.write("/workspace/state.txt", "v1\n");
    const snap = await src.snapshot();
    assert.match(snap.id, /^snap_/);
    assert.equal(snap.info.sourceSandboxId, src.id);
    assert.ok(snap.info.fileCount >= 1 && snap.info.sizeBytes > 0, JSON.stringify(snap.info));
    await src.files.write("/workspace/state.txt", "changed after the snapshot\n");

    forks.push(await snap.restore({ host: host(), labels: { t: "fork" } }));
    forks.push(await Sandbox.create({ host: host(), fromSnapshot: snap.id }));
    for (const f of forks) assert.equal(await f.files.readText("/workspace/state.txt"), "v1\n");
    await forks[0].files.write("/workspace/state.txt", "fork 0\n");
    assert.equal(await forks[1].files.readText("/workspace/state.txt"), "v1\n", "forks are independent");
    assert.deepEqual((await forks[0].describe()).labels, { t: "fork" });

    const again = await Snapshot.get(snap.id, { host: host() });
    assert.deepEqual(again.info, snap.info);
    assert.ok((await Snapshot.list({ host: host() })).some((s) => s.id === snap.id));
    await assert.rejects(snap.remove(), (e: unknown) => e instanceof SnapshotInUseError);
    for (const f of forks) await f.terminate();
    await snap.remove();
    await assert.rejects(Snapshot.get(snap.id, { host: host() }), (e: unknown) => e instanceof SnapshotNotFoundError);
    assert.ok(!(await Snapshot.list({ host: host() })).some((s) => s.id === snap.id));
  } finally {
    for (const f of forks) await f[Symbol.asyncDispose]();
    await src.terminate();
  }
});
