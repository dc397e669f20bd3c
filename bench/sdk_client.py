"""Measured inside the SDK's venv (bench/sdk.py runs it): round trips of one command in an
existing READY sandbox, N times, through the Python SDK, its asyncio twin, and — the same-run
reference — the raw generated Connect stubs the SDK is built on (CreateExecution + the
StreamExecution stream, nothing else). Prints JSON lists of milliseconds."""

import asyncio
import json
import sys
import time

from cleanroom import AsyncSandbox, Client, Sandbox
from cleanroom.v1 import cleanroom_pb2 as pb


def _raw_round_trip(c: Client, sandbox_id: str) -> None:
    e = c.executions.create_execution(pb.CreateExecutionRequest(sandbox_id=sandbox_id, command=["true"]))
    for ev in c.executions.stream_execution(
        pb.StreamExecutionRequest(sandbox_id=sandbox_id, execution_id=e.execution.execution_id)
    ):
        if ev.WhichOneof("payload") == "exit":
            return
    raise SystemExit("stream ended without an exit")


def sync_rows(n: int) -> dict:
    """SDK and raw stubs interleaved, one of each per iteration, so load on the machine
    hits both alike."""
    out = {"sdk_run": [], "raw_stubs": []}
    with Sandbox.create() as sbx:
        for _ in range(5):
            sbx.run("true")
            _raw_round_trip(sbx.client, sbx.id)
        for _ in range(n):
            t = time.perf_counter()
            r = sbx.run("true")
            out["sdk_run"].append((time.perf_counter() - t) * 1000)
            assert r.exit_code == 0, r
            t = time.perf_counter()
            _raw_round_trip(sbx.client, sbx.id)
            out["raw_stubs"].append((time.perf_counter() - t) * 1000)
    return out


async def async_rows(n: int) -> dict:
    out = {"sdk_async_run": []}
    async with AsyncSandbox.create() as sbx:
        for _ in range(5):
            await sbx.run("true")
        for _ in range(n):
            t = time.perf_counter()
            await sbx.run("true")
            out["sdk_async_run"].append((time.perf_counter() - t) * 1000)
    return out


if __name__ == "__main__":
    n = int(sys.argv[1])
    rows = sync_rows(n)
    if sys.argv[2:] == ["async"]:
        rows.update(asyncio.run(async_rows(n)))
    print(json.dumps(rows))
