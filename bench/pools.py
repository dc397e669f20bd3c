"""Warm pools, attestation and scale rows of the benchmark (issue 11). Called from run.py
(`pools_bench`); `BENCH_ONLY=pools` runs only these rows.

Same run, same machine, its own server (clean state, no sandbox caps):
  * `bwrap --unshare-all ... true` (the reference);
  * `cleanroom exec -n -- true` without a pool, and with a pool whose template matches
    exactly (so CreateSandbox claims a READY sandbox); ratios to bwrap's p50;
  * claim latency: `pool claim` end to end, and the server-side avg/p99 from `pool stats`;
  * create->READY with no idle sandboxes and with BENCH_POOL_IDLE (default 1000) idle
    ones, their ratio, the server's OS thread count, and host memory per idle sandbox
    (MemAvailable before/after: processes + server + kernel, as a whole);
  * whether the server stays responsive (exec --in p50) with that many idle sandboxes.
"""
import json, os, shutil, socket, subprocess, sys, tempfile, time

IDLE = int(os.environ.get("BENCH_POOL_IDLE", "1000"))
RUNS = int(os.environ.get("BENCH_RUNS", "200"))


def _pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(_pct(xs, 50), 3), "p99_ms": round(_pct(xs, 99), 3),
            "mean_ms": round(sum(xs) / len(xs), 3)}


def _run(cmd, env, cwd, check=True):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True)
    dt = (time.perf_counter() - t) * 1000
    if check and r.returncode != 0:
        raise SystemExit(f"bench(pools): {cmd} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt, r.stdout.decode()


def _series(name, cmd, env, cwd, runs):
    print(f"bench: {name} x{runs}", file=sys.stderr)
    for _ in range(5):
        _run(cmd, env, cwd)
    return _row([_run(cmd, env, cwd)[0] for _ in range(runs)])


def _mem_available_kib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def _threads(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def _stats(binary, env, cwd, pool):
    _, out = _run([binary, "pool", "stats", pool, "--json"], env, cwd)
    return json.loads(out)["stats"]


def _wait_ready(binary, env, cwd, pool, n, limit=300):
    deadline = time.time() + limit
    while time.time() < deadline:
        if int(_stats(binary, env, cwd, pool).get("ready", 0)) >= n:
            return
        time.sleep(0.2)
    raise SystemExit(f"bench(pools): pool {pool} never reached {n} ready")


def pools_bench(binary, bwrap_cmd):
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-pools-")
    sock = os.path.join(tmp, "s.sock")
    server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", os.path.join(tmp, "state"),
                               "--max-sandboxes", "0", "--max-sandboxes-per-principal", "0"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "server.log"), "w"))
    env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
    cwd = tmp  # no cleanroom.yaml here: `exec` uses the built-in policy, like the pool
    out = {}
    try:
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        out["bwrap_true"] = _series("bwrap --unshare-all true", bwrap_cmd, env, cwd, RUNS)
        out["exec_true_no_pool"] = _series("cleanroom exec -- true (no pool)",
                                           [binary, "exec", "-n", "--", "true"], env, cwd, RUNS)
        # A pool that holds every run's sandbox ready (refills run in the background).
        size = RUNS + 10
        _, pool = _run([binary, "pool", "create", "--min-ready", str(size), "--max-ready", str(size)], env, cwd)
        pool = pool.strip()
        _wait_ready(binary, env, cwd, pool, size)
        out["exec_true_with_pool"] = _series("cleanroom exec -- true (matching pool)",
                                             [binary, "exec", "-n", "--", "true"], env, cwd, RUNS)
        _wait_ready(binary, env, cwd, pool, size)
        claims = [_run([binary, "pool", "claim", pool], env, cwd)[0] for _ in range(min(RUNS, 100))]
        st = _stats(binary, env, cwd, pool)
        out["pool_claim_cli"] = _row(claims)
        out["pool_claim_server_us"] = {"avg": int(st.get("avgClaimLatencyUs", 0)),
                                       "p99": int(st.get("p99ClaimLatencyUs", 0)),
                                       "claims": int(st.get("claimsTotal", 0)),
                                       "misses": int(st.get("missesTotal", 0))}
        # Where the time of `exec -- true` goes, each step timed alone through the CLI:
        # process start, create->READY (fresh), claim (pool), exec in a READY sandbox,
        # terminate.
        print("bench: exec breakdown", file=sys.stderr)
        bd = {"cli_version": [], "create_ready_fresh": [], "pool_claim": [], "exec_in_ready": [],
              "terminate": []}
        for _ in range(min(RUNS, 50)):
            bd["cli_version"].append(_run([binary, "--version"], env, cwd)[0])
            d, sid = _run([binary, "sandbox", "create", "--no-pool"], env, cwd)
            bd["create_ready_fresh"].append(d)
            bd["exec_in_ready"].append(_run([binary, "exec", "-n", "--in", sid.strip(), "--", "true"], env, cwd)[0])
            bd["terminate"].append(_run([binary, "sandbox", "rm", sid.strip()], env, cwd)[0])
            d, cid = _run([binary, "pool", "claim", pool], env, cwd)
            bd["pool_claim"].append(d)
            _run([binary, "sandbox", "rm", cid.strip()], env, cwd)
        out["exec_breakdown_p50_ms"] = {k: round(_pct(v, 50), 3) for k, v in bd.items()}
        _run([binary, "pool", "rm", pool], env, cwd)
        b = out["bwrap_true"]["p50_ms"]
        out["exec_true_with_pool_vs_bwrap_p50_ratio"] = round(out["exec_true_with_pool"]["p50_ms"] / b, 2)
        out["exec_true_no_pool_vs_bwrap_p50_ratio"] = round(out["exec_true_no_pool"]["p50_ms"] / b, 2)
        # Clean slate for the scale rows.
        _, ls = _run([binary, "sandbox", "ls", "--json"], env, cwd)
        live = [x["sandboxId"] for x in json.loads(ls)]
        for i in range(0, len(live), 64):
            _run([binary, "sandbox", "rm", *live[i:i + 64]], env, cwd)

        create = [_run([binary, "sandbox", "create", "--no-pool"], env, cwd) for _ in range(30)]
        ids = [o.strip() for _, o in create]
        threads_before = _threads(server.pid)
        time.sleep(1)
        mem0 = _mem_available_kib()
        print(f"bench: {IDLE} idle sandboxes", file=sys.stderr)
        t = time.perf_counter()
        for _ in range(IDLE):
            ids.append(_run([binary, "sandbox", "create", "--no-pool"], env, cwd)[1].strip())
        fill_s = time.perf_counter() - t
        time.sleep(2)
        mem1 = _mem_available_kib()
        after = [_run([binary, "sandbox", "create", "--no-pool"], env, cwd) for _ in range(30)]
        ids.extend(o.strip() for _, o in after)
        exec_busy = _series(f"exec --in with {IDLE} idle", [binary, "exec", "-n", "--in", ids[0], "--", "true"],
                            env, cwd, 50)
        c0 = _row([d for d, _ in create])
        c1 = _row([d for d, _ in after])
        out["scale"] = {
            "idle_sandboxes": IDLE,
            "create_ready_none_idle": c0,
            "create_ready_with_idle": c1,
            "create_ready_p50_ratio": round(c1["p50_ms"] / c0["p50_ms"], 2),
            "fill_seconds": round(fill_s, 1),
            "server_threads_before": threads_before,
            "server_threads_with_idle": _threads(server.pid),
            "host_mem_per_idle_sandbox_kib": round((mem0 - mem1) / IDLE, 1),
            "exec_in_existing_with_idle": exec_busy,
        }
        for i in range(0, len(ids), 64):
            _run([binary, "sandbox", "rm", *ids[i:i + 64]], env, cwd, check=False)
    finally:
        server.send_signal(2)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return out
