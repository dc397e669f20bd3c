// Owners: another principal on the same TCP server sees none of a caller's sandboxes,
// snapshots or pools through the new calls, and cannot answer its approvals or read its
// attestation (each is the caller's, `*_not_found` to everyone else).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { CleanroomClient, Pool, PoolNotFoundError, Sandbox, SandboxNotFoundError, Snapshot, SnapshotNotFoundError } from "../src/index.js";
import { need, tcpHost, token } from "./helpers.js";

test("sandboxes, snapshots and pools are their owner's", async () => {
  const me = new CleanroomClient({ host: tcpHost(), token: token() });
  const other = new CleanroomClient({ host: tcpHost(), token: need("CLEANROOM_TEST_OTHER_TOKEN") });
  const run = randomUUID();
  const sbx = await Sandbox.create({ client: me, labels: { run } });
  const snap = await sbx.snapshot();
  const pool = await Pool.create({ client: me, minReady: 0, maxReady: 1, limits: { memoryMb: 288 } });
  try {
    assert.equal((await Sandbox.list({ client: me, labels: { run } })).length, 1);
    assert.deepEqual(await Sandbox.list({ client: other, labels: { run }, includeStopped: true }), []);
    assert.ok(!(await Snapshot.list({ client: other })).some((s) => s.id === snap.id));
    await assert.rejects(Snapshot.get(snap.id, { client: other }), SnapshotNotFoundError);
    await assert.rejects(Sandbox.create({ client: other, fromSnapshot: snap.id }), SnapshotNotFoundError);
    assert.ok(!(await Pool.list({ client: other })).some((p) => p.pool.id === pool.id));
    await assert.rejects(Pool.get(pool.id, { client: other }), PoolNotFoundError);
    const theirs = Sandbox.of(other, sbx.id);
    for (const call of [() => theirs.pause(), () => theirs.snapshot(), () => theirs.egressRequests(), () => theirs.attestation(), () => theirs.events().next()]) {
      await assert.rejects(call(), SandboxNotFoundError);
    }
    assert.equal((await sbx.describe()).status, "ready", "the other principal's calls changed nothing");
  } finally {
    await pool.destroy();
    await sbx.terminate();
    await snap.remove();
  }
});
