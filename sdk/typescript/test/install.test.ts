// Installing the SDK as a user does, with only Node and npm, no registry and no cache:
// `npm install <path>/sdk/typescript` from a fresh directory (from the repository, and from
// a copy of just its committed files — a fresh clone, with no node_modules or build output),
// the tarball of pack.sh, and the committed lib/ being exactly what tools/build-lib.mjs
// builds from src/ now.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { after, test } from "node:test";
import { host, repo } from "./helpers.js";

const pkg = join(repo, "sdk/typescript");
const scratch = mkdtempSync(join(tmpdir(), "cleanroom-ts-install-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** npm with an empty cache and a registry that does not answer: nothing may be fetched. */
function npm(cwd: string, args: string[]): string {
  const p = spawnSync("npm", args, {
    cwd,
    encoding: "utf8",
    timeout: 180_000,
    env: {
      ...process.env,
      npm_config_cache: join(scratch, "empty-npm-cache"),
      npm_config_registry: "http://127.0.0.1:9/",
      npm_config_update_notifier: "false",
    },
  });
  assert.equal(p.status, 0, `npm ${args.join(" ")}: ${p.stdout}${p.stderr}`);
  return p.stdout;
}

/** A fresh project that installs `spec` and runs a command through the SDK; returns its output. */
function consumer(name: string, spec: string, typecheck = true): { out: string; dir: string } {
  const dir = join(scratch, name);
  mkdirSync(dir);
  npm(dir, ["install", spec, "--offline", "--no-audit", "--no-fund"]);
  writeFileSync(
    join(dir, "main.mjs"),
    `import { Sandbox, Pool } from "@cleanroom/sdk";
import { fileURLToPath } from "node:url";
const sbx = await Sandbox.create();
try {
  const r = await sbx.runShell("echo installed $((40 + 2))");
  console.log(r.stdout.trim(), typeof Pool.create);
} finally {
  await sbx.terminate();
}
console.log(fileURLToPath(import.meta.resolve("@cleanroom/sdk")));
`,
  );
  const p = spawnSync("node", ["main.mjs"], { cwd: dir, encoding: "utf8", timeout: 120_000, env: { ...process.env, CLEANROOM_HOST: host() } });
  assert.equal(p.status, 0, p.stdout + p.stderr);
  if (!typecheck) return { out: p.stdout, dir };
  // TypeScript consumers resolve the types the same way (the SDK's own compiler, nodenext).
  writeFileSync(
    join(dir, "check.ts"),
    `import { Sandbox, type CommandResult } from "@cleanroom/sdk";\n` +
      `export async function f(): Promise<CommandResult> { return (await Sandbox.create({ limits: { memoryMb: 256 } })).runShell("true"); }\n`,
  );
  execFileSync(
    join(pkg, "node_modules/.bin/tsc"),
    ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node", "--typeRoots", join(pkg, "node_modules/@types"), "check.ts"],
    { cwd: dir, stdio: "pipe" },
  );
  return { out: p.stdout, dir };
}

/** The files git would hand a fresh clone (committed, or new and not ignored). */
function committedCopy(to: string): string {
  const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "."], { cwd: pkg, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  assert.ok(files.includes("lib/index.js") && files.includes("lib/node_modules/@connectrpc/connect/package.json"), "lib/ is committed");
  for (const f of files) {
    mkdirSync(dirname(join(to, f)), { recursive: true });
    cpSync(join(pkg, f), join(to, f));
  }
  return to;
}

test("npm install <repo>/sdk/typescript from a fresh directory, offline, then run a command", () => {
  const { out } = consumer("from-repo", pkg, false); // the same files as the clone below, which is type-checked
  assert.match(out, /^installed 42 function\n/);
  const clone = committedCopy(join(scratch, "clone/sdk/typescript"));
  const c = consumer("from-clone", clone);
  assert.match(c.out, /^installed 42 function\n/);
  assert.ok(c.out.includes(join(clone, "lib/index.js")), `the clone's copy was imported: ${c.out}`);
});

test("pack.sh writes a tarball that installs offline and imports", () => {
  const out = join(scratch, "dist");
  const tgz = execFileSync(join(pkg, "pack.sh"), [out], { encoding: "utf8" }).trim();
  assert.match(tgz, /cleanroom-sdk-\d+\.\d+\.\d+\.tgz$/);
  assert.equal(dirname(tgz), out);
  const listing = execFileSync("tar", ["tzf", tgz], { encoding: "utf8" });
  assert.ok(listing.includes("package/lib/index.d.ts") && listing.includes("package/lib/node_modules/@bufbuild/protobuf/package.json"));
  assert.ok(!listing.includes("package/test/") && !listing.includes("package/src/"));
  const { out: ran, dir } = consumer("from-tarball", tgz);
  assert.match(ran, /^installed 42 function\n/);
  assert.ok(ran.includes(join(dir, "node_modules/@cleanroom/sdk/lib/index.js")), ran);
});

function tree(root: string): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else m.set(relative(root, p), readFileSync(p, "utf8"));
    }
  };
  walk(root);
  return m;
}

test("the committed lib/ is what tools/build-lib.mjs builds from src/ now", () => {
  const fresh = join(scratch, "lib-fresh");
  execFileSync("node", [join(pkg, "tools/build-lib.mjs"), fresh], { stdio: "pipe" });
  const want = tree(fresh);
  const have = tree(join(pkg, "lib"));
  const stale = [...new Set([...want.keys(), ...have.keys()])].filter((f) => want.get(f) !== have.get(f));
  assert.deepEqual(stale, [], "lib/ is stale: run `node tools/build-lib.mjs` in sdk/typescript and commit");
});
