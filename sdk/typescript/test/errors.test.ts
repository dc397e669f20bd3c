import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  CleanroomError,
  errorFor,
  ExecutionNotFoundError,
  InvalidArgumentError,
  KNOWN_CODES,
  PolicyInvalidError,
  Sandbox,
  SandboxNotFoundError,
  ServerUnreachableError,
} from "../src/index.js";
import { host, repo } from "./helpers.js";

test("errors carry the stable code of the server's ErrorDetail", async () => {
  await assert.rejects(Sandbox.connect("sbx_missing", { host: host() }), (e: unknown) => {
    assert.ok(e instanceof SandboxNotFoundError && e instanceof CleanroomError);
    assert.deepEqual([e.code, e.connectCode, e.details.sandbox_id], ["sandbox_not_found", "not_found", "sbx_missing"]);
    return true;
  });
  const sbx = await Sandbox.create({ host: host() });
  try {
    await assert.rejects(sbx.attach("exe_missing"), (e: unknown) => e instanceof ExecutionNotFoundError);
  } finally {
    await sbx.terminate();
  }
  await assert.rejects(
    Sandbox.create({ host: host(), policy: "version: 1\nsandbox: [not, a, map]\n" }),
    (e: unknown) => e instanceof PolicyInvalidError && e.code === "policy_invalid",
  );
});

test("unreachable server and bad endpoints", async () => {
  await assert.rejects(
    Sandbox.create({ host: "unix:///nonexistent/dir/nothing.sock" }),
    (e: unknown) => e instanceof ServerUnreachableError && e.code === "server_unreachable",
  );
  await assert.rejects(Sandbox.create({ host: "ftp://x" }), (e: unknown) => e instanceof InvalidArgumentError);
});

test("every vocab code has a typed error", () => {
  const text = readFileSync(join(repo, "crates/vocab/src/error_code.rs"), "utf8");
  const codes = new Set([...text.matchAll(/=>\s*"([a-z_]+)"/g)].map((m) => m[1]));
  assert.ok(codes.has("sandbox_not_found"));
  const cliOnly = new Set([
    "server_start_failed",
    "auth_config_invalid",
    "repository_unavailable",
    "repository_checkout_failed",
    "dependencies_failed",
    "repository_dirty",
    "workdir_copy_failed",
  ]);
  const missing = [...codes].filter((c) => !cliOnly.has(c) && !KNOWN_CODES.includes(c));
  assert.deepEqual(missing, [], "add typed errors to src/errors.ts");
  const e = errorFor("brand_new_code", "m");
  assert.ok(e.constructor === CleanroomError && e.code === "brand_new_code");
});
