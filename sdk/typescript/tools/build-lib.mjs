// Build the committed, installable package tree `lib/` (or OUTDIR): the SDK compiled by
// tsc (JS + .d.ts, from tsconfig.lib.json) and its runtime dependencies vendored under
// lib/node_modules (their ESM build and types, with a package.json trimmed to the ESM entry
// points), so `npm install <path>/sdk/typescript` works from a fresh clone with only Node
// and npm, offline: npm links a directory install and installs nothing for it, and Node
// resolves the SDK's imports from lib/ upwards, where lib/node_modules has them.
// Usage: node tools/build-lib.mjs [OUTDIR]   (test/lib.test.ts checks lib/ is fresh)
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = resolve(process.argv[2] ?? join(pkg, "lib"));
const tsc = join(pkg, "node_modules/.bin/tsc");
if (!existsSync(tsc)) {
  console.error("build-lib: node_modules/.bin/tsc missing - run `npm ci` in sdk/typescript (scripts/deps.sh)");
  process.exit(2);
}
rmSync(out, { recursive: true, force: true });
execFileSync(tsc, ["-p", join(pkg, "tsconfig.lib.json"), "--outDir", out], { stdio: "inherit" });

/** The packages the SDK imports at run time (devDependencies of the build, pinned by the lockfile). */
const VENDORED = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-node"];
for (const name of VENDORED) {
  const src = join(pkg, "node_modules", name);
  const dst = join(out, "node_modules", name);
  const meta = JSON.parse(readFileSync(join(src, "package.json"), "utf8"));
  mkdirSync(dst, { recursive: true });
  cpSync(join(src, "dist/esm"), join(dst, "dist/esm"), { recursive: true });
  const exportsMap = {};
  for (const [k, v] of Object.entries(meta.exports)) exportsMap[k] = v.import;
  const trimmed = {
    name: meta.name,
    version: meta.version,
    license: meta.license,
    description: `${meta.description ?? ""} (vendored by @cleanroom/sdk: ESM build only)`.trim(),
    type: "module",
    sideEffects: meta.sideEffects ?? false,
    main: exportsMap["."],
    exports: exportsMap,
  };
  writeFileSync(join(dst, "package.json"), JSON.stringify(trimmed, null, 2) + "\n");
}
console.error(`build-lib: wrote ${out}`);
