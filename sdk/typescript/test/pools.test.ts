// Warm pools through the SDK: create (with its own template so no other test's sandbox is
// served from it), wait until warm, claim (a sandbox of the caller's, attested), stats,
// list, release, destroy.
import assert from "node:assert/strict";
import { test } from "node:test";
import { attestationPublicKey, NoReadySandboxesError, Pool, PoolNotFoundError, verifyAttestation } from "../src/index.js";
import { host } from "./helpers.js";

const WAIT_MS = 120_000;

test("pool create, claim, stats, list, release, destroy", async () => {
  const pool = await Pool.create({ host: host(), name: "ts-sdk", minReady: 1, maxReady: 1, limits: { memoryMb: 272 } });
  try {
    assert.match(pool.id, /^pool_/);
    assert.deepEqual([pool.info.name, pool.info.minReady, pool.info.limits?.memoryMb], ["ts-sdk", 1, 272]);
    const deadline = Date.now() + WAIT_MS;
    while ((await pool.stats()).ready < 1) {
      assert.ok(Date.now() < deadline, "the pool did not warm");
      await new Promise((r) => setTimeout(r, 200));
    }
    const sbx = await pool.claim();
    assert.ok(sbx.claimLatencyUs > 0);
    const d = await sbx.describe();
    assert.deepEqual([d.poolId, d.status], [pool.id, "ready"]);
    assert.equal((await sbx.runShell("echo claimed")).stdout, "claimed\n");
    const key = await attestationPublicKey({ host: host() });
    assert.equal(verifyAttestation(sbx.attestationEnvelopeJson, key.publicKeyPem).pool_id, pool.id);

    const stats = await pool.stats();
    assert.ok(stats.claimsTotal >= 1 && stats.claimed >= 1, JSON.stringify(stats));
    const listed = (await Pool.list({ host: host() })).find((p) => p.pool.id === pool.id);
    assert.ok(listed && listed.stats.claimsTotal >= 1);
    assert.equal((await Pool.get(pool.id, { host: host() })).info.name, "ts-sdk");

    const released = await sbx.release();
    assert.equal(released.id, sbx.id);
    await assert.rejects(sbx.run(["true"]));
  } finally {
    await pool.destroy();
  }
  await assert.rejects(pool.stats(), (e: unknown) => e instanceof PoolNotFoundError);
  await assert.rejects(pool.claim(), (e: unknown) => e instanceof PoolNotFoundError || e instanceof NoReadySandboxesError);
});
