import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { host, repo } from "./helpers.js";

test("examples/agent_loop.mjs runs end to end", () => {
  const p = spawnSync("node", [join(repo, "examples/agent_loop.mjs")], {
    env: { ...process.env, CLEANROOM_HOST: host() },
    encoding: "utf8",
    timeout: 300_000,
  });
  assert.equal(p.status, 0, p.stdout + p.stderr);
  assert.match(p.stdout, /ran 50 commands in .*, 0 failed/);
  assert.match(p.stdout, /read back 50 results; last cube: 117649/);
  assert.match(p.stdout, /results\.jsonl \d+, tool\.py \d+/);
});
