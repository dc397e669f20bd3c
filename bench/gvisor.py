"""The gvisor runtime against bare runsc, measured in the same run (issue 33's rows).

Each row pairs what a user does with the bare runsc operation it stands on, on the same
platform, so the ratio is our overhead:

  * exec_true:           `cleanroom exec --runtime gvisor -- true`  vs  `runsc do true`
  * exec_true_usual_start: the same exec with `--keep` (no one-shot sandbox: idle init,
                         then `runsc exec`; what `exec -- true` was before the one-shot start)
                         vs `runsc do true`
  * exec_true_pooled:    the same exec, served from a warm gvisor pool  vs  `runsc do true`
                         (issue 33's target: below the bare `do`)
  * exec_in_existing:    `cleanroom exec --in ID -- true`  vs  `runsc exec CID true` into a
                         running bare container
  * create_ready:        `sandbox create --runtime gvisor` (to READY)  vs  `runsc run --detach`

The bare container is runsc's own `spec` with the host's `/` read-only as its root and no
network; runsc runs with a root directory of its own, removed afterwards. Without runsc the
row says `skipped` (scripts/deps.sh installs it).
"""
import json, os, shutil, subprocess, sys, tempfile, time


def _pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(_pct(xs, 50), 3), "p99_ms": round(_pct(xs, 99), 3)}


def _run(cmd, env=None, detached=False):
    """Run `cmd`, timed. `detached`: a `runsc run --detach`, whose container keeps the
    stdio it was given, so pipes would never reach EOF; its output goes nowhere."""
    t = time.perf_counter()
    if detached:
        r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        r.stdout = r.stderr = b""
    else:
        r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        raise SystemExit(f"bench(gvisor): {cmd} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt, r.stdout.decode()


def _series(name, cmd, runs, env=None):
    print(f"bench: {name} x{runs}", file=sys.stderr)
    for _ in range(3):
        _run(cmd, env)
    return _row([_run(cmd, env)[0] for _ in range(runs)])


def _pair(ours, bare):
    return {"cleanroom": ours, "runsc": bare,
            "p50_ratio": round(ours["p50_ms"] / bare["p50_ms"], 2) if bare["p50_ms"] else None}


def _platform(runsc):
    """systrap where this runsc has it (2023 and later builds), else ptrace — what the
    server picks (docs/runtimes.md)."""
    out = subprocess.run([runsc, "--version"], capture_output=True, text=True).stdout
    version = out.split()[2] if len(out.split()) > 2 else ""
    year = version.split("~")[-1][:4] if "~" in version else version[:4]
    return "systrap" if year.isdigit() and int(year) >= 2023 else "ptrace"


def _bundle(tmp, runsc):
    b = os.path.join(tmp, "bundle")
    os.makedirs(b)
    subprocess.run([runsc, "spec", "--", "sleep", "100000"], cwd=b, check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        c = json.load(f)
    c["root"] = {"path": "/", "readonly": True}
    c["process"]["terminal"] = False
    with open(path, "w") as f:
        json.dump(c, f)
    return b


def _wait_ready(binary, env, pool, want, deadline_s=120):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        _, out = _run([binary, "pool", "stats", pool, "--json"], env)
        if json.loads(out)["stats"].get("ready", 0) >= want:
            return
        time.sleep(0.2)
    raise SystemExit(f"bench(gvisor): pool {pool} never had {want} ready sandboxes")


def run(binary, env, runs):
    runsc = shutil.which("runsc")
    if not runsc:
        return {"skipped": "runsc is not installed (scripts/deps.sh installs it)"}
    runs = max(5, min(runs, 40))  # ~0.2-0.4 s each: keep the row to a minute or so
    platform = _platform(runsc)
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-gvisor-")
    root = os.path.join(tmp, "runsc-root")
    bare = [runsc, "--root", root, "--platform", platform, "--network", "none"]
    out = {"platform": platform}
    made = []
    try:
        bundle = _bundle(tmp, runsc)
        do_true = _series("runsc do true", bare + ["do", "true"], runs)
        # No pool exists yet: every exec makes its sandbox.
        ours = _series("cleanroom exec --runtime gvisor -- true",
                       [binary, "exec", "-n", "--runtime", "gvisor", "--", "true"], runs, env)
        out["exec_true"] = _pair(ours, do_true)
        # The same exec started the usual way (idle init, then `runsc exec`): `--keep`
        # makes it no one-shot sandbox. What every `exec -- true` was before the one-shot
        # start; the sandbox is removed after each sample, untimed.
        print(f"bench: cleanroom exec --keep --runtime gvisor -- true (usual start) x{runs}",
              file=sys.stderr)
        xs = []
        for i in range(runs + 3):
            t = time.perf_counter()
            r = subprocess.run([binary, "exec", "-n", "--keep", "--runtime", "gvisor", "--", "true"],
                               env=env, stdin=subprocess.DEVNULL, capture_output=True)
            dt = (time.perf_counter() - t) * 1000
            if r.returncode != 0:
                raise SystemExit(f"bench(gvisor): exec --keep failed: {r.stderr.decode()[-400:]}")
            sid = next((w for w in r.stderr.decode().split() if w.startswith("sbx_")), "")
            subprocess.run([binary, "sandbox", "rm", sid], env=env, capture_output=True)
            if i >= 3:
                xs.append(dt)
        out["exec_true_usual_start"] = _pair(_row(xs), do_true)
        out["exec_true_vs_usual_start"] = round(ours["p50_ms"] / _row(xs)["p50_ms"], 2)

        _run(bare + ["run", "--detach", "--bundle", bundle, "bench-exec"], detached=True)
        made.append("bench-exec")
        bare_exec = _series("runsc exec CID true", bare + ["exec", "bench-exec", "true"], runs)
        _, sid = _run([binary, "sandbox", "create", "--runtime", "gvisor"], env)
        sid = sid.strip()
        try:
            ours = _series("cleanroom exec --in ID -- true (gvisor)",
                           [binary, "exec", "-n", "--in", sid, "--", "true"], runs, env)
        finally:
            subprocess.run([binary, "sandbox", "rm", sid], env=env, capture_output=True)
        out["exec_in_existing"] = _pair(ours, bare_exec)

        print(f"bench: create -> READY (gvisor) vs runsc run --detach x{runs}", file=sys.stderr)
        ours_xs, bare_xs = [], []
        for i in range(runs):
            dt, sid = _run([binary, "sandbox", "create", "--runtime", "gvisor"], env)
            ours_xs.append(dt)
            subprocess.run([binary, "sandbox", "rm", sid.strip()], env=env, capture_output=True)
            cid = f"bench-run-{i}"
            dt, _ = _run(bare + ["run", "--detach", "--bundle", bundle, cid], detached=True)
            bare_xs.append(dt)
            subprocess.run(bare + ["delete", "--force", cid], capture_output=True)
        out["create_ready"] = _pair(_row(ours_xs), _row(bare_xs))

        _, pool = _run([binary, "pool", "create", "--runtime", "gvisor", "--min-ready", "2",
                        "--max-ready", "4"], env)
        pool = pool.strip()
        try:
            _wait_ready(binary, env, pool, 2)
            xs = []
            print(f"bench: cleanroom exec --runtime gvisor -- true (pooled) x{runs}", file=sys.stderr)
            for _ in range(runs):
                _wait_ready(binary, env, pool, 1)
                xs.append(_run([binary, "exec", "-n", "--runtime", "gvisor", "--", "true"], env)[0])
            out["exec_true_pooled"] = _pair(_row(xs), do_true)
        finally:
            subprocess.run([binary, "pool", "rm", pool], env=env, capture_output=True)
        return out
    finally:
        for cid in made:
            subprocess.run(bare + ["delete", "--force", cid], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
