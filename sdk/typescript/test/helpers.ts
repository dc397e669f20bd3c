/**
 * Test environment: crates/e2e/tests/suites/sdk.rs starts a real `cleanroom serve` on a unix
 * socket (CLEANROOM_HOST) and one on TCP with a tokens file (CLEANROOM_TEST_TCP_HOST,
 * CLEANROOM_TEST_TOKEN). Without them the tests fail; they never skip.
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run through \`cargo nextest run -p cleanroom-cli --test sdk\``);
  return v;
}

export const host = () => need("CLEANROOM_HOST");
export const tcpHost = () => need("CLEANROOM_TEST_TCP_HOST");
export const token = () => need("CLEANROOM_TEST_TOKEN");
/** The repository root (dist/test/ → ../../../..). */
export const repo = resolve(fileURLToPath(import.meta.url), "../../../../..");
