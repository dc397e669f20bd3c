import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { DirectoryNotEmptyError, FileExistsError, FileNotFoundError, Sandbox } from "../src/index.js";
import { host } from "./helpers.js";

let sbx: Sandbox;
before(async () => {
  sbx = await Sandbox.create({ host: host() });
});
after(async () => {
  await sbx.terminate();
});

test("files: write, read, list, stat, offsets", async () => {
  const info = await sbx.files.write("/workspace/dir/hello.txt", "hello\n", { mode: 0o600 });
  assert.deepEqual([info.path, info.name, info.type, info.size, info.mode], ["/workspace/dir/hello.txt", "hello.txt", "file", 6, 0o600]);
  assert.equal(await sbx.files.readText("/workspace/dir/hello.txt"), "hello\n");
  assert.equal((await sbx.run(["cat", "/workspace/dir/hello.txt"])).stdout, "hello\n");
  await sbx.run(["sh", "-c", "printf inside > /workspace/dir/inside.txt"]);
  assert.equal(await sbx.files.readText("/workspace/dir/inside.txt"), "inside");
  assert.deepEqual(
    (await sbx.files.list("/workspace/dir")).map((e) => [e.name, e.type]),
    [["hello.txt", "file"], ["inside.txt", "file"]],
  );
  assert.equal((await sbx.files.stat("/workspace/dir")).type, "dir");
  assert.equal(new TextDecoder().decode(await sbx.files.read("/workspace/dir/hello.txt", 2, 3)), "llo");
});

test("files: a multi-chunk upload is byte-exact", async () => {
  const data = randomBytes(5 * 1024 * 1024 + 123);
  assert.equal((await sbx.files.write("/workspace/big.bin", data)).size, data.length);
  const r = await sbx.run(["sha256sum", "/workspace/big.bin"]);
  assert.equal(r.stdout.split(" ")[0], createHash("sha256").update(data).digest("hex"));
  assert.ok(Buffer.from(await sbx.files.read("/workspace/big.bin")).equals(data));
  assert.equal((await sbx.files.write("/workspace/empty", new Uint8Array())).size, 0);
});

test("files: mkdir, remove and typed errors", async () => {
  await sbx.files.mkdir("/workspace/a/b/c");
  await assert.rejects(sbx.files.remove("/workspace/a"), (e: unknown) => e instanceof DirectoryNotEmptyError);
  assert.equal(await sbx.files.remove("/workspace/a", { recursive: true }), true);
  await assert.rejects(sbx.files.read("/workspace/a"), (e: unknown) => e instanceof FileNotFoundError && e.code === "file_not_found");
  await sbx.files.write("/workspace/once", "1");
  await assert.rejects(sbx.files.write("/workspace/once", "2", { overwrite: false }), (e: unknown) => e instanceof FileExistsError);
  assert.equal(await sbx.files.readText("/workspace/once"), "1");
});

test("files: directories as tar streams", async () => {
  const src = mkdtempSync(join(tmpdir(), "cr-tar-"));
  let tar: Buffer;
  try {
    mkdirSync(join(src, "sub"));
    writeFileSync(join(src, "a.txt"), "A");
    writeFileSync(join(src, "sub/b.txt"), "B");
    tar = execFileSync("tar", ["-C", src, "-cf", "-", "a.txt", "sub"]);
  } finally {
    rmSync(src, { recursive: true, force: true });
  }
  await sbx.files.writeArchive("/workspace/tree/in", tar);
  assert.equal(await sbx.files.readText("/workspace/tree/in/sub/b.txt"), "B");
  const back = await sbx.files.readArchive("/workspace/tree/in");
  const names = execFileSync("tar", ["-tf", "-"], { input: back }).toString().split("\n").filter(Boolean);
  assert.ok(names.includes("in/a.txt") && names.some((n) => n.startsWith("in/sub/b.txt")), names.join(","));
});
