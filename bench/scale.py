"""Many idle sandboxes on one server (issue 11): `BENCH_ONLY=scale`, `BENCH_SCALE_N`
(default 5000) idle sandboxes. Called from run.py (`scale_bench`).

Its own server (clean state, no sandbox caps). Reports, in one run:
  * create->READY (`sandbox create --no-pool`, CLI end to end) and `exec --in` of `true`
    with no idle sandbox and with N idle ones, and their ratios;
  * a `sandbox ls` (every sandbox listed) with N idle: the server stays responsive;
  * the fill rate, the server's OS threads and open descriptors before and after (and per
    sandbox: the host's hard descriptor limit bounds how many sandboxes a server can hold),
    and host memory per idle sandbox (MemAvailable with caches dropped before each reading:
    processes + server + kernel as a whole);
  * the teardown time, and what is left after it (sandbox processes, mounts of the server's
    state, cgroup directories): nothing.
"""
import os, shutil, socket, subprocess, sys, tempfile, time

from pools import _row, _run as _pools_run

N = int(os.environ.get("BENCH_SCALE_N", "5000"))


def _run(cmd, env, check=True):
    dt, out = _pools_run(cmd, env, None, check)
    return dt, out


def _status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def _mem_available_kib():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")
    time.sleep(1)
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def _leftovers(state):
    # Sandboxes (pid 1s) still alive on the host; an idle server's zygote is not one.
    procs = __import__("rows").live_sandboxes()
    mounts = sum(1 for line in open("/proc/self/mountinfo") if state in line)
    return {"sandbox_processes": procs, "mounts_of_state": mounts}


def scale_bench(binary):
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-scale-")
    sock, state = os.path.join(tmp, "s.sock"), os.path.join(tmp, "state")
    server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", state,
                               "--max-sandboxes", "0", "--max-sandboxes-per-principal", "0"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "server.log"), "w"))
    env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
    out = {"idle_sandboxes": N}
    ids = []
    try:
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        create = [binary, "sandbox", "create", "--no-pool"]
        first = [_run(create, env) for _ in range(30)]
        ids += [o.strip() for _, o in first]
        exec0 = [_run([binary, "exec", "-n", "--in", ids[0], "--", "true"], env)[0] for _ in range(30)]
        threads0, fds0, count0 = _status(server.pid, "Threads"), _fds(server.pid), len(ids)
        mem0 = _mem_available_kib()
        print(f"bench: filling {N} idle sandboxes", file=sys.stderr)
        t = time.perf_counter()
        while len(ids) < N:
            d, o = _run(create, env, check=False)
            if not o.strip().startswith("sbx_"):
                out["fill_stopped_at"] = len(ids)
                out["fill_error"] = subprocess.run(create, env=env, capture_output=True).stderr.decode()[-300:]
                break
            ids.append(o.strip())
            if len(ids) % 500 == 0:
                print(f"bench: {len(ids)} sandboxes, server fds {_fds(server.pid)}", file=sys.stderr)
        fill_s = time.perf_counter() - t
        filled = len(ids) - count0
        mem1 = _mem_available_kib()
        threads1, fds1 = _status(server.pid, "Threads"), _fds(server.pid)
        after = [_run(create, env) for _ in range(30)]
        ids += [o.strip() for _, o in after]
        exec1 = [_run([binary, "exec", "-n", "--in", ids[0], "--", "true"], env)[0] for _ in range(30)]
        ls = [_run([binary, "sandbox", "ls", "--json"], env)[0] for _ in range(5)]
        c0, c1 = _row([d for d, _ in first]), _row([d for d, _ in after])
        e0, e1 = _row(exec0), _row(exec1)
        out.update({
            "held": count0 + filled,
            "fill_seconds": round(fill_s, 1),
            "create_ready_none_idle": c0,
            "create_ready_with_idle": c1,
            "create_ready_p50_ratio": round(c1["p50_ms"] / c0["p50_ms"], 2),
            "exec_in_none_idle": e0,
            "exec_in_with_idle": e1,
            "exec_in_p50_ratio": round(e1["p50_ms"] / e0["p50_ms"], 2),
            "sandbox_ls_all_with_idle": _row(ls),
            "server_threads": [threads0, threads1],
            "server_fds": [fds0, fds1],
            "server_fds_per_sandbox": round((fds1 - fds0) / max(1, filled), 2),
            "server_rss_kib": _status(server.pid, "VmRSS"),
            "host_mem_per_idle_sandbox_kib": round((mem0 - mem1) / max(1, filled), 1),
        })
        t = time.perf_counter()
        for i in range(0, len(ids), 64):
            _run([binary, "sandbox", "rm", *ids[i:i + 64]], env, check=False)
        out["teardown_seconds"] = round(time.perf_counter() - t, 1)
    finally:
        server.send_signal(2)
        try:
            server.wait(timeout=120)
        except subprocess.TimeoutExpired:
            server.kill()
        time.sleep(1)
        out["left_after_teardown"] = _leftovers(state)
        shutil.rmtree(tmp, ignore_errors=True)
    return out
