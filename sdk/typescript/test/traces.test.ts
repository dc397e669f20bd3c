import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidArgumentError, Sandbox } from "../src/index.js";
import { host } from "./helpers.js";

// W3C trace context (docs/traces.md): a client given a traceparent continues that trace on
// the server (its executions carry the trace id); a malformed one is refused before any call.
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const TP = `00-${TRACE}-00f067aa0ba902b7-01`;

test("a given traceparent is the trace of the executions", async () => {
  const sbx = await Sandbox.create({ host: host(), traceparent: TP });
  try {
    const h = await sbx.start(["true"]);
    assert.equal((await h.inspect()).traceId, TRACE);
    await h.wait();
  } finally {
    await sbx[Symbol.asyncDispose]();
  }
  const other = await Sandbox.create({ host: host() });
  try {
    const h = await other.start(["true"]);
    const t = (await h.inspect()).traceId;
    assert.equal(t.length, 32);
    assert.notEqual(t, TRACE);
    await h.wait();
  } finally {
    await other[Symbol.asyncDispose]();
  }
});

test("a malformed traceparent is refused", async () => {
  for (const bad of ["", "00-xyz", `${TP}\n`, TP.toUpperCase()]) {
    await assert.rejects(
      Sandbox.create({ host: host(), traceparent: bad }),
      (e: unknown) => e instanceof InvalidArgumentError,
    );
  }
});
