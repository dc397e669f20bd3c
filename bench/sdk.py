"""SDK rows of the benchmark (BENCH_ONLY=sdk for these alone): a command's round trip
(`sbx.run("true")` in an existing READY sandbox) through the Python SDK (sync and asyncio,
unix socket and authenticated TCP) and the TypeScript SDK, next to the same-run reference —
the raw generated Connect stubs under the Python SDK (CreateExecution + StreamExecution) —
and the ratio, so the idiomatic layer's cost is visible. Needs scripts/deps.sh (the venv and
sdk/typescript/node_modules); without them the rows say so instead of guessing."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _stats(xs):
    from run import pct  # bench/run.py's percentile, one definition

    return {"runs": len(xs), "p50_ms": round(pct(xs, 50), 3), "p99_ms": round(pct(xs, 99), 3)}


def _json_of(cmd, env, cwd=ROOT):
    r = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench sdk: {cmd} failed ({r.returncode}): {r.stderr[-600:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def sdk_rows(runs, env_unix, env_tcp):
    """The `sdk_exec_round_trip` object for bench/run.py's result."""
    py = os.path.join(ROOT, ".tools/venv/bin/python")
    tsc = os.path.join(ROOT, "sdk/typescript/node_modules/.bin/tsc")
    if not os.path.exists(py) or not os.path.exists(tsc):
        return {"skipped": "SDK toolchain missing: run scripts/deps.sh"}
    print(f"bench: SDK round trips x{runs}", file=sys.stderr)
    client = os.path.join(ROOT, "bench/sdk_client.py")
    unix = _json_of([py, client, str(runs), "async"], env_unix)
    tcp = _json_of([py, client, str(runs)], env_tcp)
    subprocess.run([tsc, "-p", "."], cwd=os.path.join(ROOT, "sdk/typescript"), check=True, stdout=sys.stderr)
    ts = _json_of(["node", os.path.join(ROOT, "bench/sdk_client.mjs"), str(runs)], env_unix)
    rows = {
        "python_sdk_unix": _stats(unix["sdk_run"]),
        "python_sdk_asyncio_unix": _stats(unix["sdk_async_run"]),
        "python_raw_stubs_unix_reference": _stats(unix["raw_stubs"]),
        "python_sdk_tcp_token": _stats(tcp["sdk_run"]),
        "python_raw_stubs_tcp_reference": _stats(tcp["raw_stubs"]),
        "typescript_sdk_unix": _stats(ts["sdk_run"]),
    }
    ref = rows["python_raw_stubs_unix_reference"]["p50_ms"]
    rows["python_sdk_vs_raw_stubs_p50_ratio"] = round(rows["python_sdk_unix"]["p50_ms"] / ref, 3)
    rows["typescript_sdk_vs_python_raw_stubs_p50_ratio"] = round(rows["typescript_sdk_unix"]["p50_ms"] / ref, 3)
    return rows
