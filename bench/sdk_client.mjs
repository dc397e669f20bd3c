// Measured by bench/sdk.py: the TypeScript SDK's round trip of one command in an existing
// READY sandbox, N times. Prints a JSON list of milliseconds.
import { Sandbox } from "../sdk/typescript/dist/src/index.js";

const n = Number(process.argv[2]);
const sbx = await Sandbox.create();
try {
  for (let i = 0; i < 5; i++) await sbx.run(["true"]);
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    const r = await sbx.run(["true"]);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (r.exitCode !== 0) throw new Error(JSON.stringify(r));
  }
  console.log(JSON.stringify({ sdk_run: ms }));
} finally {
  await sbx.terminate();
}
