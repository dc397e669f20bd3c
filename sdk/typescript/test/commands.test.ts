import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { Sandbox, SandboxNotReadyError, StdinNotAttachedError, withSandbox } from "../src/index.js";
import { host } from "./helpers.js";

let sbx: Sandbox;
before(async () => {
  sbx = await Sandbox.create({ host: host() });
});
after(async () => {
  await sbx.terminate();
});

test("run: exit code, stdout, stderr", async () => {
  const r = await sbx.run(["sh", "-c", "echo out; echo err >&2; exit 3"]);
  assert.deepEqual([r.exitCode, r.status, r.stdout, r.stderr], [3, "failed", "out\n", "err\n"]);
  const p = await sbx.run(["python3", "-c", "print(1)"]);
  assert.deepEqual([p.exitCode, p.stdout], [0, "1\n"]);
  assert.match(p.executionId, /^exe_/);
  const b = await sbx.run(["sh", "-c", "printf '\\377\\000a'"]);
  assert.deepEqual([...b.stdoutBytes], [0xff, 0, 0x61]);
});

test("env, cwd, timeout", async () => {
  const r = await sbx.run(["sh", "-c", 'echo "$G"; pwd'], { env: { G: "hi" }, cwd: "/tmp" });
  assert.equal(r.stdout, "hi\n/tmp\n");
  const t = await sbx.run(["sleep", "60"], { timeout: 1 });
  assert.equal(t.status, "timed_out");
});

test("callbacks are live: the command finishes only if output arrives while it runs", async () => {
  const seen: string[] = [];
  let touched: Promise<unknown> | undefined;
  const r = await sbx.run(
    [
      "sh",
      "-c",
      "echo ready; i=0; while [ ! -f /tmp/go-ts ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; sleep 0.1; done; echo done",
    ],
    {
      onStdout: (t) => {
        seen.push(t);
        if (t.includes("ready")) touched = sbx.run(["touch", "/tmp/go-ts"]);
      },
    },
  );
  await touched;
  assert.equal(r.exitCode, 0, JSON.stringify(r));
  assert.equal(seen.join(""), "ready\ndone\n");
});

test("stdin: bytes over several chunks, and interactive", async () => {
  const data = randomBytes(3 * 1024 * 1024 + 17);
  const r = await sbx.run(["sha256sum"], { stdin: data });
  assert.equal(r.stdout.split(" ")[0], createHash("sha256").update(data).digest("hex"));
  const h = await sbx.start(["sh", "-c", 'read a; read b; echo "$b $a"'], { stdin: true });
  await h.sendStdin("world\n");
  await h.sendStdin(new TextEncoder().encode("hello\n"));
  await h.closeStdin();
  assert.equal((await h.wait()).stdout, "hello world\n");
  const h2 = await sbx.start(["sleep", "30"]);
  await assert.rejects(h2.sendStdin("x"), (e: unknown) => e instanceof StdinNotAttachedError && e.code === "stdin_not_attached");
  await h2.kill();
});

test("background: wait, kill, re-attach by id from another client", async () => {
  const h = await sbx.start(["sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.2; done; exit 4"]);
  const other = await Sandbox.connect(sbx.id, { host: host() });
  const again = await other.attach(h.id);
  const chunks: string[] = [];
  const r = await again.wait({ onStdout: (t) => chunks.push(t) });
  assert.deepEqual([r.exitCode, r.stdout, chunks.join("")], [4, "1\n2\n3\n", "1\n2\n3\n"]);
  assert.equal((await h.wait()).stdout, "1\n2\n3\n");
  const long = await sbx.start(["sleep", "300"]);
  await long.kill();
  assert.equal((await long.wait()).status, "canceled");
});

test("withSandbox terminates the sandbox afterwards", async () => {
  let id = "";
  const out = await withSandbox({ host: host() }, async (s) => {
    id = s.id;
    return (await s.run(["echo", "scoped"])).stdout;
  });
  assert.equal(out, "scoped\n");
  const s = await Sandbox.connect(id, { host: host() });
  await assert.rejects(s.run(["true"]), (e: unknown) => e instanceof SandboxNotReadyError);
});
