/**
 * Exposed ports from SDK code against the real server: `expose` serves a port of the
 * sandbox at a URL of the server (reached here over its unix socket), `getUrl` finds it
 * again, `unexpose` revokes it (the URL then answers `exposure_revoked`).
 */
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { ExposureNotFoundError, Sandbox } from "../src/index.js";
import { host } from "./helpers.js";

function get(url: string): Promise<[number, string]> {
  const socketPath = host().replace(/^unix:\/\//, "");
  const path = url.replace(/^http:\/\/localhost/, "");
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve([res.statusCode ?? 0, body]));
    });
    req.on("error", reject);
  });
}

test("expose, getUrl and unexpose", async () => {
  const sbx = await Sandbox.create({ host: host() });
  try {
    const r = await sbx.run([
      "sh",
      "-c",
      "echo hi > /tmp/x; cd /tmp; setsid python3 -m http.server 8000 </dev/null >/dev/null 2>&1 & " +
        "for i in $(seq 100); do curl -fsS --noproxy '*' -m 1 http://127.0.0.1:8000/x >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1",
    ]);
    assert.equal(r.exitCode, 0, r.stderr);
    const url = await sbx.expose(8000, { ttl: 60 });
    assert.match(url, /^http:\/\/localhost\/_sandbox\/exp_/);
    assert.equal(await sbx.getUrl(8000), url);
    assert.deepEqual(await get(url.replace("/?", "/x?")), [200, "hi\n"]);
    assert.equal((await sbx.unexpose(8000)).length, 1);
    const [status, body] = await get(url);
    assert.equal(status, 401);
    assert.equal(JSON.parse(body).error.code, "exposure_revoked");
    await assert.rejects(sbx.getUrl(8000), (e: unknown) => e instanceof ExposureNotFoundError);
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
});
