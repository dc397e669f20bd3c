"""Snapshot, restore, fork and pause/resume rows for bench/run.py (BENCH_ONLY=snapshots).

Measured through the real CLI against the bench's server, each beside a same-run reference:
  * `snapshot create` of a sandbox with 100 MiB written to /workspace (p50/p99, size) next to
    `cp -a` of the same 100 MiB file on the host into the state dir's filesystem;
  * `sandbox create --from snap_…` next to a fresh `sandbox create` (p50/p99, ratio);
  * a fork of 10 sandboxes from one snapshot: total time, per sandbox, and the snapshot
    store's size before/after (the layer is shared, not copied);
  * `sandbox pause` and `sandbox resume` of a sandbox running a busy loop (p50/p99) next to
    `sandbox inspect` (the CLI round trip floor);
  * CRIU checkpoint/restore: reported as unsupported with the reason (see docs/snapshots.md);
  * where runsc is installed, the same snapshot, create --from and fork rows for gvisor
    sandboxes (`gvisor_*`), in the same run, next to a fresh gvisor create.
"""
import os, shutil, statistics, subprocess, sys, time

MIB100 = 100 << 20


def _pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(_pct(xs, 50), 3), "p99_ms": round(_pct(xs, 99), 3),
            "mean_ms": round(statistics.mean(xs), 3)}


def _run(binary, env, *args):
    r = subprocess.run([binary, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"bench: cleanroom {' '.join(args)} failed: {r.stderr.decode()[-400:]}")
    return r.stdout.decode().strip()


def _timed(binary, env, *args):
    t = time.perf_counter()
    out = _run(binary, env, *args)
    return (time.perf_counter() - t) * 1000, out


def _du(path):
    total = 0
    seen = set()
    for root, dirs, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                total += st.st_blocks * 512
    return total


def run(binary, env, state_dir, runs=20):
    out = {}
    store = os.path.join(state_dir, "snapshots")
    # 1. Snapshot of 100 MiB written.
    print("bench: snapshot of a sandbox with 100 MiB written", file=sys.stderr)
    sbx = _run(binary, env, "sandbox", "create")
    _run(binary, env, "exec", "-n", "--in", sbx, "--", "sh", "-c",
         f"head -c {MIB100} /dev/urandom > /workspace/big")
    snap_ms, cp_ms = [], []
    snap = None
    n = max(3, min(runs, 7))
    for _ in range(n):
        ms, snap = _timed(binary, env, "snapshot", "create", sbx)
        snap_ms.append(ms)
        size = _du(store)
        # Content addressed: the same state is the same snapshot; remove it to measure anew.
        _run(binary, env, "snapshot", "rm", snap)
    src = os.path.join(state_dir, "bench-src")
    with open(src, "wb") as f:
        f.write(os.urandom(MIB100))
    for _ in range(n):
        dst = os.path.join(state_dir, "bench-copy")
        t = time.perf_counter()
        subprocess.run(["cp", "-a", src, dst], check=True)
        cp_ms.append((time.perf_counter() - t) * 1000)
        os.unlink(dst)
    os.unlink(src)
    snap = _run(binary, env, "snapshot", "create", sbx)
    out["snapshot_100mib"] = {
        "snapshot_create": _row(snap_ms), "store_bytes_on_disk": size,
        "reference_cp_a_100mib": _row(cp_ms),
        "ratio_p50_vs_cp": round(_pct(snap_ms, 50) / _pct(cp_ms, 50), 2)}
    # 2. create --from vs a fresh create (same run, alternating).
    print("bench: create --from vs fresh create", file=sys.stderr)
    small = _run(binary, env, "sandbox", "create")
    _run(binary, env, "exec", "-n", "--in", small, "--", "sh", "-c",
         "mkdir -p /workspace/src && for i in $(seq 1 200); do echo $i > /workspace/src/f$i; done")
    small_snap = _run(binary, env, "snapshot", "create", small)
    fresh, restored, ids = [], [], []
    for _ in range(runs):
        ms, i = _timed(binary, env, "sandbox", "create")
        fresh.append(ms); ids.append(i)
        ms, i = _timed(binary, env, "sandbox", "create", "--from", small_snap)
        restored.append(ms); ids.append(i)
    _run(binary, env, "sandbox", "rm", *ids)
    out["create_from_snapshot"] = {
        "from_snapshot": _row(restored), "fresh_create": _row(fresh),
        "ratio_p50": round(_pct(restored, 50) / _pct(fresh, 50), 2)}
    # 3. Fork of 10 from the 100 MiB snapshot.
    print("bench: fork of 10", file=sys.stderr)
    before = _du(store)
    t = time.perf_counter()
    forks = [_run(binary, env, "sandbox", "create", "--from", snap) for _ in range(10)]
    total = (time.perf_counter() - t) * 1000
    after = _du(store)
    check = _run(binary, env, "exec", "-n", "--in", forks[-1], "--", "sh", "-c", "wc -c < /workspace/big")
    _run(binary, env, "sandbox", "rm", *forks)
    out["fork_10"] = {"total_ms": round(total, 3), "per_sandbox_ms": round(total / 10, 3),
                      "store_bytes_before": before, "store_bytes_after": after,
                      "each_fork_sees_bytes": int(check)}
    # 4. Pause / resume latency with a busy loop inside.
    print("bench: pause/resume", file=sys.stderr)
    busy = _run(binary, env, "sandbox", "create")
    _run(binary, env, "exec", "-n", "--in", busy, "--", "sh", "-c",
         "(while :; do :; done) >/dev/null 2>&1 & echo started")
    pause, resume, inspect = [], [], []
    for _ in range(runs):
        pause.append(_timed(binary, env, "sandbox", "pause", busy)[0])
        resume.append(_timed(binary, env, "sandbox", "resume", busy)[0])
        inspect.append(_timed(binary, env, "sandbox", "inspect", busy)[0])
    _run(binary, env, "sandbox", "rm", busy, sbx, small)
    _run(binary, env, "snapshot", "rm", snap, small_snap)
    out["pause_resume"] = {"pause": _row(pause), "resume": _row(resume),
                           "reference_sandbox_inspect": _row(inspect),
                           "pause_minus_inspect_p50_ms": round(_pct(pause, 50) - _pct(inspect, 50), 3),
                           "resume_minus_inspect_p50_ms": round(_pct(resume, 50) - _pct(inspect, 50), 3)}
    if shutil.which("runsc"):
        out.update(_gvisor(binary, env, store, runs))
    out["criu_checkpoint_restore"] = {
        "supported": False,
        "reason": "backend does not declare checkpoint_restore: Debian's criu 3.17.1 cannot initialise on "
                  "this kernel (vdso: Unexpected rt vDSO area bounds), see docs/snapshots.md"}
    return out


def _gvisor(binary, env, store, runs):
    """The snapshot, restore and fork rows for gvisor sandboxes (captured and restored by a
    helper inside the sandbox, docs/runtimes.md)."""
    out = {}
    gv = ("--runtime", "gvisor")
    print("bench: gvisor snapshot of 100 MiB written", file=sys.stderr)
    sbx = _run(binary, env, "sandbox", "create", *gv)
    _run(binary, env, "exec", "-n", "--in", sbx, "--", "sh", "-c",
         f"head -c {MIB100} /dev/urandom > /workspace/big")
    snap_ms, size, snap = [], 0, None
    for _ in range(max(3, min(runs, 7))):
        ms, snap = _timed(binary, env, "snapshot", "create", sbx)
        snap_ms.append(ms)
        size = _du(store)
        _run(binary, env, "snapshot", "rm", snap)
    snap = _run(binary, env, "snapshot", "create", sbx)
    out["gvisor_snapshot_100mib"] = {"snapshot_create": _row(snap_ms), "store_bytes_on_disk": size}
    print("bench: gvisor create --from vs fresh create", file=sys.stderr)
    small = _run(binary, env, "sandbox", "create", *gv)
    _run(binary, env, "exec", "-n", "--in", small, "--", "sh", "-c",
         "mkdir -p /workspace/src && for i in $(seq 1 200); do echo $i > /workspace/src/f$i; done")
    small_snap = _run(binary, env, "snapshot", "create", small)
    fresh, restored, ids = [], [], []
    for _ in range(runs):
        ms, i = _timed(binary, env, "sandbox", "create", *gv)
        fresh.append(ms); ids.append(i)
        ms, i = _timed(binary, env, "sandbox", "create", "--from", small_snap)
        restored.append(ms); ids.append(i)
    _run(binary, env, "sandbox", "rm", *ids)
    out["gvisor_create_from_snapshot"] = {
        "from_snapshot": _row(restored), "fresh_create": _row(fresh),
        "ratio_p50": round(_pct(restored, 50) / _pct(fresh, 50), 2)}
    print("bench: gvisor fork of 10", file=sys.stderr)
    before = _du(store)
    t = time.perf_counter()
    forks = [_run(binary, env, "sandbox", "create", "--from", snap) for _ in range(10)]
    total = (time.perf_counter() - t) * 1000
    check = _run(binary, env, "exec", "-n", "--in", forks[-1], "--", "sh", "-c", "wc -c < /workspace/big")
    _run(binary, env, "sandbox", "rm", *forks, sbx, small)
    _run(binary, env, "snapshot", "rm", snap, small_snap)
    out["gvisor_fork_10"] = {"total_ms": round(total, 3), "per_sandbox_ms": round(total / 10, 3),
                             "store_bytes_before": before, "each_fork_sees_bytes": int(check)}
    return out
