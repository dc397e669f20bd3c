// The event stream, egress approvals answered through the SDK (policy `ask`, a loopback
// upstream reached by the name the server resolves to loopback), and attestations.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import {
  AttestationSignatureInvalidError,
  attestationPublicKey,
  Sandbox,
  verifyAttestation,
  type SandboxEventInfo,
} from "../src/index.js";
import { host, need } from "./helpers.js";

test("events: what happened, then a followed tail that ends with the sandbox", async () => {
  const sbx = await Sandbox.create({ host: host() });
  await sbx.run(["true"]);
  const seen: SandboxEventInfo[] = [];
  for await (const ev of sbx.events()) seen.push(ev);
  assert.ok(seen.some((e) => e.type === "sandbox.status" && e.sandboxStatus === "ready"), JSON.stringify(seen.map((e) => e.type)));
  assert.ok(seen.some((e) => e.type === "execution.status" && e.executionStatus === "succeeded"));
  assert.ok(seen.every((e, i) => e.sandboxId === sbx.id && e.at instanceof Date && (i === 0 || e.sequence > seen[i - 1].sequence)));
  const last = seen[seen.length - 1].sequence;

  const tail: SandboxEventInfo[] = [];
  const following = (async () => {
    for await (const ev of sbx.events({ follow: true, afterSequence: last })) tail.push(ev);
  })();
  await sbx.run(["echo", "more"]);
  await sbx.terminate();
  await following; // ends when the sandbox stops
  assert.ok(tail.every((e) => e.sequence > last));
  assert.ok(tail.some((e) => e.type === "execution.status"));
  assert.ok(tail.some((e) => e.sandboxStatus === "stopped"), JSON.stringify(tail.map((e) => [e.type, e.sandboxStatus])));

  const ctl = new AbortController();
  const other = await Sandbox.create({ host: host() });
  try {
    const stopped = (async () => {
      let n = 0;
      for await (const _ of other.events({ follow: true, signal: ctl.signal })) n++;
      return n;
    })();
    await new Promise((r) => setTimeout(r, 300));
    ctl.abort();
    assert.ok((await stopped) >= 1, "abort ends the iteration");
  } finally {
    await other.terminate();
  }
});

test("an egress request is answered through the SDK: approve once, deny for the sandbox", async () => {
  const up = http.createServer((req, res) => res.end(`hello:${req.url}`));
  await new Promise<void>((r) => up.listen(0, "127.0.0.1", r));
  const port = (up.address() as AddressInfo).port;
  const name = need("CLEANROOM_TEST_EGRESS_NAME");
  const policy = { version: 1, sandbox: { network: { unknown: "ask", approval_timeout_seconds: 90 } } };
  const sbx = await Sandbox.create({ host: host(), policy });
  const curl = `curl -sS -m 80 --noproxy '*' http://${name}:${port}/x`;
  try {
    assert.equal((await sbx.describe()).egressAsks, true);
    // Iterator: approve the first request, once.
    const answered = (async () => {
      for await (const req of sbx.approvals()) {
        assert.deepEqual([req.host, req.port, req.sandboxId], [name, port, sbx.id]);
        assert.ok(req.expiresAt instanceof Date && req.expiresAt > new Date());
        await req.approve();
        return req.destination;
      }
    })();
    const t0 = Date.now();
    const ok = await sbx.runShell(curl);
    assert.equal(await answered, `${name}:${port}`);
    assert.deepEqual([ok.exitCode, ok.stdout], [0, "hello:/x"], ok.stderr);
    assert.ok(Date.now() - t0 < 60_000, "answered, not timed out");

    // Callback: deny, remembered for the sandbox; the next connection is refused without asking.
    const asked: string[] = [];
    const answerer = sbx.answerApprovals((req) => {
      asked.push(req.destination);
      return { verdict: "deny", remember: "sandbox" };
    });
    const denied = await sbx.runShell(curl);
    assert.notEqual(denied.exitCode, 0);
    assert.deepEqual(asked, [`${name}:${port}`]);
    const again = await sbx.runShell(curl);
    assert.notEqual(again.exitCode, 0);
    assert.equal(asked.length, 1, "remembered: not asked again");
    await answerer.stop();
    const q = await sbx.egressRequests();
    assert.deepEqual([q.requests, q.refused], [[], [`${name}:${port}`]]);
    assert.deepEqual((await sbx.describe()).egressRefused, [`${name}:${port}`]);
  } finally {
    up.close();
    await sbx.terminate();
  }
});

test("attestation: fetched, verified against the server's key, tampering refused", async () => {
  const sbx = await Sandbox.create({ host: host() });
  try {
    const a = await sbx.attestation();
    assert.equal(a.statement.sandbox_id, sbx.id);
    const key = await attestationPublicKey({ host: host() });
    assert.equal(a.keyId, key.keyId);
    const st = verifyAttestation(a.envelopeJson, key.publicKeyPem);
    assert.deepEqual([st.sandbox_id, st.policy_hash], [sbx.id, (await sbx.describe()).policyHash]);
    assert.equal((await sbx.verifiedAttestation()).sandbox_id, sbx.id);
    const env = JSON.parse(a.envelopeJson);
    const forged = { ...JSON.parse(Buffer.from(env.payload, "base64").toString()), owner: "someone-else" };
    env.payload = Buffer.from(JSON.stringify(forged)).toString("base64");
    assert.throws(() => verifyAttestation(JSON.stringify(env), key.publicKeyPem), AttestationSignatureInvalidError);
  } finally {
    await sbx.terminate();
  }
});
