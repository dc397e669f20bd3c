"""Warm pools, attestation and scale rows of the benchmark (issue 11). Called from run.py
(`pools_bench`); `BENCH_ONLY=pools` runs only these rows.

Same run, same machine, its own server (clean state, no sandbox caps):
  * `bwrap --unshare-all ... true` (the reference);
  * `cleanroom exec -n -- true` without a pool, and with a pool whose template matches
    exactly (so CreateSandbox claims a READY sandbox); ratios to bwrap's p50; both also
    paced (runs 0.3 s apart / once the pool is quiet) beside bwrap paced the same way;
    every tight loop also reports `host_cpu_ms_per_run` (the whole host's busy CPU time
    per run, from /proc/stat: what bounds a tight loop on a small host);
  * claim latency: `pool claim` end to end, and the server-side avg/p99 from `pool stats`
    (`pool_claim_server_us`: the `pool claim` series alone; `pool_claim_server_all_us`:
    every claim of the pool, transparent ones included);
  * `sandbox create` served by a matching pool end to end from the CLI, beside
    `cleanroom --version` of the same run (process start);
  * what a sandbox's cgroup join costs when creates come apart (`cgroup_join`: first
    `cgroup.procs` write vs the others, and whether cgroup2 favordynmods is on);
  * a claim burst against an autoscaling pool (`claim_burst`): hits/misses, whether the
    pool's counters are exact, the most warming at once, the time to reach the target;
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


def _host_busy_ms():
    """CPU time the whole host spent not idle (all CPUs, `/proc/stat`), in ms."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
    return (sum(v[:8]) - v[3] - v[4]) * 1000.0 / os.sysconf("SC_CLK_TCK")


def _series(name, cmd, env, cwd, runs):
    """A tight loop of `cmd`: latency row plus the host CPU each run cost as a whole
    (every process and kernel thread, the bench's own fork+exec included). On a small
    host a tight loop is bound by that, not by any one process's latency."""
    print(f"bench: {name} x{runs}", file=sys.stderr)
    for _ in range(5):
        _run(cmd, env, cwd)
    busy = _host_busy_ms()
    row = _row([_run(cmd, env, cwd)[0] for _ in range(runs)])
    row["host_cpu_ms_per_run"] = round((_host_busy_ms() - busy) / runs, 2)
    return row


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


def _wait_quiet(binary, env, cwd, pool, limit=60):
    """Until the pool warms nothing and no sandbox is being torn down."""
    deadline = time.time() + limit
    while time.time() < deadline:
        busy = int(_stats(binary, env, cwd, pool).get("warming", 0))
        _, ls = _run([binary, "sandbox", "ls", "-o", "json"], env, cwd)
        if busy == 0 and "STOPPING" not in ls:
            time.sleep(0.05)
            return
        time.sleep(0.05)


def _cgroup_join(rounds=12, pause=0.2):
    """What joining a sandbox's cgroups costs when creates come `pause` s apart: a child
    writes itself into a fresh cgroup of every v1 hierarchy the backend uses (the shim's
    `cgroup.procs` writes), first write and the rest timed apart. The first waits for an
    RCU grace period unless cgroup2 favordynmods is on (docs/performance.md)."""
    root = "/sys/fs/cgroup"
    names = [c for c in ("memory", "pids", "cpu", "freezer", "cpuacct")
             if os.path.exists(os.path.join(root, c, "cgroup.procs"))]
    if os.geteuid() != 0 or not names:
        return {"skipped": "needs root and cgroup v1 hierarchies"}
    dirs = [os.path.join(root, c, f"cleanroom-bench-join-{os.getpid()}") for c in names]
    first, rest = [], []
    try:
        for d in dirs:
            os.makedirs(d, exist_ok=True)
        for _ in range(rounds):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                ts = []
                for d in dirs:
                    t = time.perf_counter()
                    with open(os.path.join(d, "cgroup.procs"), "w") as f:
                        f.write("0")
                    ts.append((time.perf_counter() - t) * 1e6)
                os.write(w, json.dumps(ts).encode())
                os._exit(0)
            os.close(w)
            ts = json.loads(os.read(r, 4096) or b"[]")
            os.close(r)
            os.waitpid(pid, 0)
            if ts:
                first.append(ts[0])
                rest.extend(ts[1:])
            time.sleep(pause)
    finally:
        for d in dirs:
            try:
                os.rmdir(d)
            except OSError:
                pass
    fav = any(" - cgroup2 " in l and "favordynmods" in l.split(" - ", 1)[1]
              for l in open("/proc/self/mountinfo"))
    return {"hierarchies": names, "rounds": rounds, "pause_s": pause, "favordynmods": fav,
            "first_write_p50_us": round(_pct(first, 50)), "first_write_max_us": round(max(first)),
            "other_writes_p50_us": round(_pct(rest, 50)) if rest else None}


def _burst(binary, env, cwd, n=24, threads=8):
    """Autoscaling under a claim burst: a pool of min 2 / max 32, headroom 2 over 30 s;
    `n` claims from `threads` concurrent clients. Reports hits/misses against the pool's
    own counters (claims_total and claims/min must equal the hits exactly), the most
    sandboxes seen warming at once, the target the autoscaler reached and how long the
    pool took to hold it."""
    import concurrent.futures as cf
    print(f"bench: claim burst x{n} over {threads} clients", file=sys.stderr)
    _, pool = _run([binary, "pool", "create", "--min-ready", "2", "--max-ready", "32", "--autoscale",
                    "--headroom", "2", "--interval", "30"], env, cwd)
    pool = pool.strip()
    _wait_ready(binary, env, cwd, pool, 2)

    def one(_):
        r = subprocess.run([binary, "pool", "claim", pool], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           capture_output=True)
        return r.stdout.decode().strip() if r.returncode == 0 else None

    t = time.perf_counter()
    with cf.ThreadPoolExecutor(threads) as ex:
        got = list(ex.map(one, range(n)))
    burst_s = time.perf_counter() - t
    hits = [g for g in got if g]
    max_warming, target, refill_s = 0, 0, None
    deadline = time.time() + 120
    while time.time() < deadline:
        st = _stats(binary, env, cwd, pool)
        max_warming = max(max_warming, int(st.get("warming", 0)))
        target = int(st.get("targetReady", 0))
        if int(st.get("ready", 0)) >= target and int(st.get("warming", 0)) == 0:
            refill_s = round(time.perf_counter() - t, 2)
            break
        time.sleep(0.1)
    st = _stats(binary, env, cwd, pool)
    for i in range(0, len(hits), 64):
        _run([binary, "sandbox", "rm", *hits[i:i + 64]], env, cwd, check=False)
    _run([binary, "pool", "rm", pool], env, cwd)
    return {"claims": n, "clients": threads, "hits": len(hits), "misses": n - len(hits),
            "burst_seconds": round(burst_s, 2),
            "stats_claims_total": int(st.get("claimsTotal", 0)),
            "stats_misses_total": int(st.get("missesTotal", 0)),
            "stats_claims_per_minute": float(st.get("claimsPerMinute", 0)),
            "counts_exact": int(st.get("claimsTotal", 0)) == len(hits)
                            and int(float(st.get("claimsPerMinute", 0))) == len(hits),
            "target_ready": target, "max_warming_seen": max_warming,
            "seconds_to_target": refill_s,
            "server_p99_us": int(st.get("p99ClaimLatencyUs", 0))}


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
        # No pool, paced (0.3 s apart; bwrap interleaved and paced the same way): a
        # developer's `cleanroom exec` loop. Each create starts with the cgroup machinery
        # idle, which is where an RCU grace period used to be paid per create
        # (docs/performance.md, "favordynmods").
        print("bench: cleanroom exec -- true (no pool, paced)", file=sys.stderr)
        np_paced, np_bwrap = [], []
        for _ in range(min(RUNS, 40)):
            time.sleep(0.3)
            np_paced.append(_run([binary, "exec", "-n", "--", "true"], env, cwd)[0])
            time.sleep(0.3)
            np_bwrap.append(_run(bwrap_cmd, env, cwd)[0])
        out["exec_true_no_pool_paced"] = _row(np_paced)
        out["bwrap_true_paced_no_pool_series"] = _row(np_bwrap)
        out["exec_true_no_pool_paced_vs_bwrap_paced_p50_ratio"] = round(
            out["exec_true_no_pool_paced"]["p50_ms"] / out["bwrap_true_paced_no_pool_series"]["p50_ms"], 2)
        # A pool that holds every run's sandbox ready (refills run in the background).
        size = RUNS + 10
        _, pool = _run([binary, "pool", "create", "--min-ready", str(size), "--max-ready", str(size)], env, cwd)
        pool = pool.strip()
        _wait_ready(binary, env, cwd, pool, size)
        out["exec_true_with_pool"] = _series("cleanroom exec -- true (matching pool)",
                                             [binary, "exec", "-n", "--", "true"], env, cwd, RUNS)
        # The same, paced: each run starts once the pool has refilled and the previous
        # sandbox's background teardown has ended (no warming, nothing STOPPING), as when
        # a user's commands come seconds apart. The tight loop above also pays, on these
        # two cores, for the refill and teardown its previous runs caused.
        print("bench: cleanroom exec -- true (matching pool, paced)", file=sys.stderr)
        # bwrap is paced the same way, interleaved (an idle 2-vCPU VM wakes up slower
        # than a busy one, whoever runs).
        paced, bwrap_paced = [], []
        for _ in range(min(RUNS, 50)):
            _wait_ready(binary, env, cwd, pool, size)
            _wait_quiet(binary, env, cwd, pool)
            paced.append(_run([binary, "exec", "-n", "--", "true"], env, cwd)[0])
            _wait_ready(binary, env, cwd, pool, size)
            _wait_quiet(binary, env, cwd, pool)
            bwrap_paced.append(_run(bwrap_cmd, env, cwd)[0])
        out["exec_true_with_pool_paced"] = _row(paced)
        out["bwrap_true_paced"] = _row(bwrap_paced)
        _wait_ready(binary, env, cwd, pool, size)
        claims, server_us = [], []
        for _ in range(min(RUNS, 100)):
            d, o = _run([binary, "pool", "claim", pool, "--json"], env, cwd)
            claims.append(d)
            server_us.append(int(json.loads(o)["claimLatencyUs"]))
        st = _stats(binary, env, cwd, pool)
        out["pool_claim_cli"] = _row(claims)
        # This series' own server-side latencies (each answer carries its claim_latency_us).
        out["pool_claim_server_us"] = {"avg": int(sum(server_us) / len(server_us)),
                                       "p50": int(_pct(server_us, 50)),
                                       "p99": int(_pct(server_us, 99)),
                                       "claims": int(st.get("claimsTotal", 0)),
                                       "misses": int(st.get("missesTotal", 0))}
        # CreateSandbox served by the matching pool (`sandbox create`), end to end from the
        # CLI, beside `cleanroom --version` (process start alone) of the same run.
        _wait_ready(binary, env, cwd, pool, size)
        print("bench: sandbox create (matching pool) / --version", file=sys.stderr)
        made, ver, created = [], [], []
        for _ in range(min(RUNS, 100)):
            ver.append(_run([binary, "--version"], env, cwd)[0])
            d, sid = _run([binary, "sandbox", "create"], env, cwd)
            made.append(d)
            created.append(sid.strip())
        for i in range(0, len(created), 64):
            _run([binary, "sandbox", "rm", *created[i:i + 64]], env, cwd, check=False)
        out["create_with_pool_cli"] = _row(made)
        out["cli_version_same_run"] = _row(ver)
        st = _stats(binary, env, cwd, pool)
        out["pool_claim_server_all_us"] = {"avg": int(st.get("avgClaimLatencyUs", 0)),
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
        # `exec --in` beyond the CLI's own process start (`--version`), same rounds.
        out["exec_in_ready_minus_cli_version_p50_ms"] = round(
            _pct(bd["exec_in_ready"], 50) - _pct(bd["cli_version"], 50), 3)
        _run([binary, "pool", "rm", pool], env, cwd)
        out["claim_burst"] = _burst(binary, env, cwd)
        print("bench: cgroup join, creates 0.2 s apart", file=sys.stderr)
        out["cgroup_join"] = _cgroup_join()
        b = out["bwrap_true"]["p50_ms"]
        out["exec_true_with_pool_vs_bwrap_p50_ratio"] = round(out["exec_true_with_pool"]["p50_ms"] / b, 2)
        out["exec_true_with_pool_paced_vs_bwrap_paced_p50_ratio"] = round(
            out["exec_true_with_pool_paced"]["p50_ms"] / out["bwrap_true_paced"]["p50_ms"], 2)
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
