"""Egress verdicts that ask, and learn mode: what the machinery costs per run.

Same server, same loopback web server, same workload (`curl` of a small body through the
gateway, transparent mode) in a new sandbox per run:
  * reference: the policy allows the destination;
  * ask: the policy says `unknown: ask` and `exec --approve HOST:PORT` answers the request
    (egress.pending event -> the CLI's event follower -> DecideEgress -> the held connection
    goes on): the full round trip of an approval with an instant answerer;
  * learn: `exec --learn=FILE` (allow + record, then the suggested policy is computed from the
    sandbox's events).
The rows run round-robin. Reported as p50/p99 of the whole `cleanroom exec`, and each row's p50 minus and over the
reference's. BENCH_APPROVAL_RUNS (default 30) runs each.
"""
import os, socket, subprocess, sys, time

RUNS = int(os.environ.get("BENCH_APPROVAL_RUNS", "30"))


def _pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def _one(name, cmd, env):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        raise SystemExit(f"bench: {name} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt


def _interleaved(rows, env):
    """Run the rows round-robin (so load drift on a shared machine hits all alike)."""
    print(f"bench: {', '.join(rows)} x{RUNS} interleaved", file=sys.stderr)
    xs = {name: [] for name in rows}
    for i in range(RUNS + 3):
        for name, cmd in rows.items():
            dt = _one(name, cmd, env)
            if i >= 3:  # warm-up rounds are not counted
                xs[name].append(dt)
    return {name: {"runs": RUNS, "p50_ms": round(_pct(v, 50), 3), "p99_ms": round(_pct(v, 99), 3)}
            for name, v in xs.items()}


def run(binary, env, tmp, port, host="bench.test"):
    """`host` must resolve to the loopback web server on `port` (serve --egress-resolve)."""
    def policy(name, network):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write("version: 1\nsandbox:\n  network:\n" + network)
        return p

    for _ in range(400):  # the web server may still be starting
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    allow = policy("approvals-allow.yaml", f"    allow:\n      - host: {host}\n        ports: [{port}]\n")
    ask = policy("approvals-ask.yaml", "    unknown: ask\n    approval_timeout_seconds: 60\n")
    curl = ["curl", "-fsS", "-m", "30", "--noproxy", "*", f"http://{host}:{port}/"]
    out = _interleaved({
        "reference_allow_rule": [binary, "exec", "-n", "--policy", allow, "--", *curl],
        "ask_approved_by_cli": [binary, "exec", "-n", "--policy", ask, "--approve", f"{host}:{port}", "--", *curl],
        "learn": [binary, "exec", "-n", "--learn=" + os.path.join(tmp, "learned.yaml"), "--", *curl],
    }, env)
    ref = out["reference_allow_rule"]
    for k in ("ask_approved_by_cli", "learn"):
        out[k]["p50_minus_reference_ms"] = round(out[k]["p50_ms"] - ref["p50_ms"], 3)
        out[k]["p50_ratio_vs_reference"] = round(out[k]["p50_ms"] / ref["p50_ms"], 3)
    return out
