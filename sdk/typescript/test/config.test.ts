import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { CleanroomError, parseEndpoint, resolveEndpoint, resolveTarget, Sandbox, UnauthenticatedError } from "../src/index.js";
import { need, tcpHost, token } from "./helpers.js";

/** Config directories made by these tests, removed when they end (nothing left in /tmp). */
const made: string[] = [];
function configDir(): string {
  const d = mkdtempSync(join(tmpdir(), "cr-cfg-"));
  made.push(d);
  return d;
}
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** Run `fn` with these environment variables (undefined = unset), then restore. */
async function withEnv(vars: Record<string, string | undefined>, fn: () => Promise<void> | void) {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test("endpoint forms as the CLI parses them", () => {
  assert.deepEqual(parseEndpoint("unix:///a/b.sock"), { kind: "unix", address: "/a/b.sock" });
  assert.deepEqual(parseEndpoint("/a/b.sock"), { kind: "unix", address: "/a/b.sock" });
  assert.deepEqual(parseEndpoint("http://127.0.0.1:7777"), { kind: "http", address: "127.0.0.1:7777" });
  assert.deepEqual(parseEndpoint("https://h:1/"), { kind: "https", address: "h:1" });
  for (const bad of ["", "unix://rel", "ftp://x", "http://", "http://a/b", "tcp://1.2.3.4:5"]) {
    assert.throws(() => parseEndpoint(bad), /invalid_argument/, bad);
  }
});

test("resolution order: option > environment > config file > default socket", async () => {
  const cfg = configDir();
  mkdirSync(join(cfg, "cleanroom"));
  writeFileSync(
    join(cfg, "cleanroom/config.json"),
    JSON.stringify({ control_host: "http://10.0.0.1:1", token: " cfgtok\n", ca_cert: "/c.pem" }),
  );
  await withEnv(
    { XDG_CONFIG_HOME: cfg, CLEANROOM_HOST: undefined, CLEANROOM_TOKEN: undefined, CLEANROOM_CA_CERT: undefined },
    async () => {
      assert.deepEqual(resolveTarget(), {
        endpoint: { kind: "http", address: "10.0.0.1:1" },
        token: "cfgtok",
        caCert: "/c.pem",
      });
      await withEnv({ CLEANROOM_HOST: "unix:///env.sock", CLEANROOM_TOKEN: "envtok" }, () => {
        const t = resolveTarget();
        assert.deepEqual([t.endpoint, t.token], [{ kind: "unix", address: "/env.sock" }, "envtok"]);
        const a = resolveTarget({ host: "https://arg:2", token: "argtok", caCert: "/a.pem" });
        assert.deepEqual(a, { endpoint: { kind: "https", address: "arg:2" }, token: "argtok", caCert: "/a.pem" });
      });
      await withEnv({ XDG_CONFIG_HOME: join(cfg, "none"), XDG_RUNTIME_DIR: "/run/user/4242" }, () => {
        if (!existsSync("/var/run/cleanroom/cleanroom.sock")) {
          assert.deepEqual(resolveEndpoint(), { kind: "unix", address: "/run/user/4242/cleanroom/cleanroom.sock" });
        }
      });
    },
  );
});

test("token authentication over TCP, from options, environment and config file", async () => {
  const cfg = configDir();
  await withEnv({ XDG_CONFIG_HOME: cfg, CLEANROOM_HOST: undefined, CLEANROOM_TOKEN: undefined }, async () => {
    for (const bad of [undefined, "not-the-token"]) {
      await assert.rejects(
        Sandbox.create({ host: tcpHost(), token: bad }),
        (e: unknown) => e instanceof UnauthenticatedError && e.code === "unauthenticated",
      );
    }
    const sbx = await Sandbox.create({ host: tcpHost(), token: token() });
    assert.equal((await sbx.run(["echo", "over tcp"])).stdout, "over tcp\n");
    await sbx.terminate();
    await withEnv({ CLEANROOM_HOST: tcpHost(), CLEANROOM_TOKEN: token() }, async () => {
      const s = await Sandbox.create();
      assert.equal((await s.run(["true"])).exitCode, 0);
      await s.terminate();
    });
    mkdirSync(join(cfg, "cleanroom"));
    writeFileSync(join(cfg, "cleanroom/config.json"), JSON.stringify({ control_host: tcpHost(), token: token() }));
    const s = await Sandbox.create();
    assert.equal((await s.run(["true"])).exitCode, 0);
    await s.terminate();
  });
});

test("https with a private CA, from options and environment", async () => {
  const tls = need("CLEANROOM_TEST_TLS_HOST");
  const ca = need("CLEANROOM_TEST_CA_CERT");
  const cfg = configDir();
  await withEnv({ XDG_CONFIG_HOME: cfg, CLEANROOM_CA_CERT: undefined, CLEANROOM_HOST: undefined }, async () => {
    // Without the private CA the certificate is not trusted: no sandbox.
    await assert.rejects(Sandbox.create({ host: tls, token: token() }), (e: unknown) => e instanceof CleanroomError);
    const sbx = await Sandbox.create({ host: tls, token: token(), caCert: ca });
    assert.equal((await sbx.run(["echo", "over tls"])).stdout, "over tls\n");
    await sbx.terminate();
    await withEnv({ CLEANROOM_CA_CERT: ca }, async () => {
      await assert.rejects(Sandbox.create({ host: tls, token: "wrong" }), (e: unknown) => e instanceof UnauthenticatedError);
      const s = await Sandbox.create({ host: tls, token: token() });
      assert.equal((await s.run(["true"])).exitCode, 0);
      await s.terminate();
    });
  });
});

test("https with a certificate pin, from options, environment and config file", async () => {
  const { createHash, X509Certificate } = await import("node:crypto");
  const { readFileSync } = await import("node:fs");
  const { InvalidArgumentError, ServerUnreachableError } = await import("../src/index.js");
  const tls = need("CLEANROOM_TEST_TLS_HOST");
  const pin = need("CLEANROOM_TEST_TLS_CERT_SHA256");
  const ca = need("CLEANROOM_TEST_CA_CERT");
  const cfg = configDir();
  await withEnv(
    { XDG_CONFIG_HOME: cfg, CLEANROOM_CA_CERT: undefined, CLEANROOM_HOST: undefined, CLEANROOM_SERVER_CERT_SHA256: undefined },
    async () => {
      for (const good of [pin, pin.toUpperCase(), `sha256:${pin}`]) {
        const sbx = await Sandbox.create({ host: tls, token: token(), serverCertSha256: good });
        assert.equal((await sbx.run(["echo", "pinned"])).stdout, "pinned\n");
        await sbx.terminate();
      }
      // The CA's own digest, one digit off: refused before any request (with or without a CA
      // that would accept the server: the pin is exact).
      const caPin = createHash("sha256").update(new X509Certificate(readFileSync(ca)).raw).digest("hex");
      const offByOne = pin.slice(0, -1) + (pin.endsWith("0") ? "1" : "0");
      for (const bad of [caPin, offByOne]) {
        await assert.rejects(
          Sandbox.create({ host: tls, token: token(), serverCertSha256: bad }),
          (e: unknown) => e instanceof ServerUnreachableError && String(e).includes("serverCertSha256"),
        );
        await assert.rejects(
          Sandbox.create({ host: tls, token: token(), caCert: ca, serverCertSha256: bad }),
          (e: unknown) => e instanceof ServerUnreachableError,
        );
      }
      for (const malformed of ["abc", pin.slice(0, -2), "g".repeat(64), `md5:${pin}`]) {
        await assert.rejects(
          Sandbox.create({ host: tls, token: token(), serverCertSha256: malformed }),
          (e: unknown) => e instanceof InvalidArgumentError,
        );
      }
      await withEnv({ CLEANROOM_SERVER_CERT_SHA256: pin }, async () => {
        const s = await Sandbox.create({ host: tls, token: token() });
        assert.equal((await s.run(["true"])).exitCode, 0);
        await s.terminate();
      });
      mkdirSync(join(cfg, "cleanroom"));
      for (const extra of [{ server_cert_sha256: pin }, { ca_cert: ca }]) {
        writeFileSync(join(cfg, "cleanroom/config.json"), JSON.stringify({ control_host: tls, token: token(), ...extra }));
        const s = await Sandbox.create();
        assert.equal((await s.run(["true"])).exitCode, 0);
        await s.terminate();
      }
    },
  );
});
