/**
 * Live egress rules from SDK code against the real server and gateway: `updateNetwork`
 * lets a sandbox reach a loopback upstream (the server's `--egress-resolve` name) that its
 * policy denies, `reset` takes it away, malformed hosts are typed errors.
 */
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { InvalidArgumentError, PolicyInvalidError, Sandbox } from "../src/index.js";
import { host, need } from "./helpers.js";

test("updateNetwork allows a denied host, then reset takes it away", async () => {
  const srv = http.createServer((_req, res) => res.end("hello"));
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as AddressInfo).port;
  const name = need("CLEANROOM_TEST_EGRESS_NAME");
  const curl = ["curl", "-fsS", "-m", "20", "--noproxy", "*", `http://${name}:${port}/`];
  const sbx = await Sandbox.create({ host: host() });
  try {
    const before = (await sbx.info()).effectiveRulesHash;
    assert.match(before, /^sha256:/);
    assert.notEqual((await sbx.run(curl)).exitCode, 0);
    const r = await sbx.updateNetwork({ allow: [`${name}:${port}`] });
    assert.deepEqual(r.liveAllow, [`${name}:${port}`]);
    assert.notEqual(r.effectiveRulesHash, before);
    const ok = await sbx.run(curl);
    assert.deepEqual([ok.exitCode, ok.stdout], [0, "hello"]);
    const info = await sbx.info();
    assert.equal(info.effectiveRulesHash, r.effectiveRulesHash);
    assert.equal(info.policyHash, r.policyHash);
    const back = await sbx.updateNetwork({ reset: true, cut: true });
    assert.equal(back.effectiveRulesHash, before);
    assert.notEqual((await sbx.run(curl)).exitCode, 0);
    await assert.rejects(sbx.updateNetwork({ allow: ["10.0.0.1"] }), (e: unknown) => e instanceof PolicyInvalidError);
    await assert.rejects(sbx.updateNetwork({}), (e: unknown) => e instanceof InvalidArgumentError);
  } finally {
    await sbx[Symbol.asyncDispose]();
    srv.close();
  }
});
