#!/usr/bin/env node
// The agent loop of examples/agent_loop.py with the TypeScript/Node SDK: create a sandbox,
// write a file into it, run 50 commands, read the results back.
//
//   (cd sdk/typescript && npm install && npm run build)
//   node examples/agent_loop.mjs        # server found like the CLI finds it
import { withSandbox } from "../sdk/typescript/lib/index.js";

const TOOL = `
import json, sys
n = int(sys.argv[1])
with open("/workspace/results.jsonl", "a") as f:
    f.write(json.dumps({"step": n, "cube": n ** 3}) + "\\n")
print(n ** 3)
`;

const ok = await withSandbox({}, async (sbx) => {
  console.log(`sandbox ${sbx.id}`);
  await sbx.files.write("/workspace/tool.py", TOOL);
  const started = performance.now();
  let failures = 0;
  for (let step = 0; step < 50; step++) {
    const r = await sbx.run(["python3", "/workspace/tool.py", String(step)]);
    if (r.exitCode !== 0 || r.stdout.trim() !== String(step ** 3)) {
      failures++;
      console.error(`step ${step} failed: ${r.exitCode} ${r.stderr.trim()}`);
    }
  }
  const elapsed = (performance.now() - started) / 1000;
  const results = (await sbx.files.readText("/workspace/results.jsonl")).trim().split("\n").map((l) => JSON.parse(l));
  const listing = (await sbx.files.list("/workspace")).map((e) => `${e.name} ${e.size}`);
  console.log(`ran 50 commands in ${elapsed.toFixed(2)}s, ${failures} failed`);
  console.log(`read back ${results.length} results; last cube: ${results[results.length - 1].cube}`);
  console.log(`workspace: ${listing.join(", ")}`);
  return failures === 0 && results.every((r, i) => r.step === i);
});
process.exit(ok ? 0 : 1);
