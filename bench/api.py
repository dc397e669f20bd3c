"""API exec round trip (issue 10): `CreateExecution` + `StreamExecution` of `true` to its
exit in a READY sandbox, measured in-process by a small Rust client over ONE connection
(crates/client/examples/exec_rtt.rs) — over the unix socket and over an authenticated
loopback TCP listener. Same-run references from the same client: a unary `ListSandboxes`
(the framework + transport floor) and a host `fork+exec` of `true` (the process-spawn
floor). The CLI rows of run.py (`cleanroom exec --in ID -- true`) add the CLI's own process
start and connection setup on top.

Called from run.py (`api_rows`); `BENCH_ONLY=api` runs only these rows.
"""
import json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_client():
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "cleanroom-client", "--example", "exec_rtt"],
                   cwd=ROOT, check=True, stdout=sys.stderr)
    return os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/release/examples/exec_rtt")


def measure(client, host, runs, token=None):
    env = dict(os.environ)
    env.pop("CLEANROOM_TOKEN", None)
    if token:
        env["CLEANROOM_TOKEN"] = token
    out = subprocess.run([client, host, str(runs)], env=env, check=True, capture_output=True)
    return json.loads(out.stdout)


def api_rows(unix_host, tcp_host, tcp_token, runs):
    client = os.environ.get("BENCH_EXEC_RTT") or build_client()
    print(f"bench: API exec round trip x{runs} (unix, tcp)", file=sys.stderr)
    unix = measure(client, unix_host, runs)
    tcp = measure(client, tcp_host, runs, tcp_token)
    row = lambda m: m["exec_true_round_trip"]
    return {
        "unix": unix,
        "tcp": tcp,
        "target_p50_ms": 2.0,
        "unix_p50_ratio_vs_unary": round(row(unix)["p50_ms"] / unix["unary_list_sandboxes"]["p50_ms"], 2),
        "unix_p50_ratio_vs_host_spawn": round(row(unix)["p50_ms"] / unix["host_spawn_true"]["p50_ms"], 2),
        "tcp_minus_unix_p50_ms": round(row(tcp)["p50_ms"] - row(unix)["p50_ms"], 3),
        # One RunExecution call in the same READY sandbox (what `cleanroom exec` uses).
        "unix_run_execution_to_exit_p50_ms": unix["run_execution_to_exit"]["p50_ms"],
        "unix_run_execution_to_final_record_p50_ms": unix["run_execution_to_final_record"]["p50_ms"],
        # The same calls as the server timed them (handler entry to `finished` built): the
        # issue's "server-side" exec round trip.
        "unix_run_execution_server_time_p50_ms": unix["run_execution_server_time"]["p50_ms"],
        # ... and against a host fork+exec of `true` timed in the same run: the host's own
        # spawn moves by a third within an hour here, this ratio much less.
        "unix_run_execution_server_time_vs_host_spawn_p50_ratio": round(
            unix["run_execution_server_time"]["p50_ms"] / unix["host_spawn_true"]["p50_ms"], 2),
    }
