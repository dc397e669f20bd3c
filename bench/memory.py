"""Host memory per idle sandbox, as a whole and broken down (issue 11, item 6).
`BENCH_ONLY=memory ./bench/run.sh`; BENCH_MEM_IDLE sandboxes (default 1000) per round,
BENCH_MEM_ROUNDS rounds (default 3), medians reported.

Each round, on its own server (clean state, no caps):
  1. drop the page cache (`echo 3 > /proc/sys/vm/drop_caches`, as root) and read the host:
     /proc/meminfo, /proc/slabinfo, and the counters of the server's own memory cgroup;
  2. create BENCH_MEM_IDLE sandboxes (`sandbox create --no-pool`, a few clients at once);
  3. let it settle, drop caches again, read the same, plus smaps_rollup / VmPTE of the server,
     its zygote(s), every shim and every pid 1;
  4. remove them all and wait until they are gone.
Reported per idle sandbox (KiB): the whole-host figures (MemAvailable and MemFree deltas
with caches dropped on both sides), each /proc/meminfo kernel field (Slab, SUnreclaim,
SReclaimable, PageTables, KernelStack, Percpu, Shmem, AnonPages, VmallocUsed), the slab
caches that grew most, the processes (Pss and private pages of shim + pid 1, server RSS),
and the attributable figure: the growth of the memory cgroup the bench starts the server
in (every sandbox's memory cgroup is a child of it), i.e. every page and every accounted
kernel object the server, its zygote, the shims, the pid 1s and their sandboxes were
charged for — independent of what other users of the host do. The kernel allocates some
objects unaccounted (they show in the whole-host rows only); `unaccounted_kib` is the
difference.

The machine is shared: other servers' sandboxes move the whole-host rows. Each round
records how many sandboxes of OTHER servers existed before and after (`others_delta`);
rounds where that moved are reported but flagged, and the medians use the clean rounds
when there are any.
"""
import concurrent.futures as cf
import glob, json, os, shutil, socket, subprocess, sys, tempfile, time

IDLE = int(os.environ.get("BENCH_MEM_IDLE", "1000"))
ROUNDS = int(os.environ.get("BENCH_MEM_ROUNDS", "3"))
CLIENTS = int(os.environ.get("BENCH_MEM_CLIENTS", "4"))
MEMCG_ROOT = "/sys/fs/cgroup/memory"
FIELDS = ["MemAvailable", "MemFree", "AnonPages", "Shmem", "Slab", "SReclaimable", "SUnreclaim",
          "KernelStack", "PageTables", "SecPageTables", "Percpu", "VmallocUsed", "Cached", "Buffers"]


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _meminfo():
    out = {}
    for line in open("/proc/meminfo"):
        k, v = line.split(":", 1)
        out[k] = int(v.split()[0])
    return out


def _slabinfo():
    """cache name -> bytes held in its slabs (num_slabs * pages per slab)."""
    out = {}
    with open("/proc/slabinfo") as f:
        for line in f:
            if line.startswith(("slabinfo", "#")):
                continue
            p = line.split()
            # name active_objs num_objs objsize objperslab pagesperslab : tunables .. : slabdata active num shared
            num_slabs, pages = int(p[14]), int(p[5])
            out[p[0]] = num_slabs * pages * 4096
    return out


def _drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:  # not root: the whole-host rows are noisier, say so
        print(f"bench(memory): cannot drop caches: {e}", file=sys.stderr)
    time.sleep(1)


def _own_memcg():
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.strip().split(":", 2)
        if "memory" in ctrls.split(","):
            return path
    return None


def _memcg_read(cg):
    if cg is None:
        return {}
    out = {}
    for name in ["memory.usage_in_bytes", "memory.kmem.usage_in_bytes"]:
        try:
            out[name] = int(open(os.path.join(cg, name)).read())
        except OSError:
            pass
    try:
        for line in open(os.path.join(cg, "memory.stat")):
            k, v = line.split()
            if k in ("total_rss", "total_cache", "total_shmem"):
                out[k] = int(v)
    except OSError:
        pass
    return out


def _others(instance_dirs):
    """Sandboxes of other servers on this host (pids hierarchy, any depth up to 3)."""
    n = 0
    for pat in ["/sys/fs/cgroup/pids/cleanroom/*/sbx_*", "/sys/fs/cgroup/pids/*/cleanroom/*/sbx_*",
                "/sys/fs/cgroup/pids/*/*/cleanroom/*/sbx_*", "/sys/fs/cgroup/unified/cleanroom/*/sbx_*",
                "/sys/fs/cgroup/cleanroom/*/sbx_*"]:
        for d in glob.glob(pat):
            if not any(d.startswith(i) for i in instance_dirs):
                n += 1
    return n


def _descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for t in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                kids = [int(x) for x in open(t).read().split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def _rollup(pid):
    out = {}
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            p = line.split()
            if len(p) >= 2 and p[0].endswith(":") and p[1].isdigit():
                out[p[0][:-1]] = int(p[1])
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(("VmPTE:", "Threads:")):
                out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def _processes(server_pid):
    """smaps_rollup sums (KiB) by role: server, zygotes, sandbox processes (shim + pid 1)."""
    kids = _descendants(server_pid)
    roles = {"server": [_rollup(server_pid)], "zygote": [], "sandbox": []}
    for k in kids:
        try:
            ppid = int(open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        roles["zygote" if ppid == server_pid else "sandbox"].append(_rollup(k))
    out = {}
    for role, rows in roles.items():
        out[role] = {"processes": len(rows)}
        for key in ["Rss", "Pss", "Private_Clean", "Private_Dirty", "Anonymous", "VmPTE"]:
            out[role][key] = sum(r.get(key, 0) for r in rows)
    return out


def _memcg_probe(cg, n=10):
    """kmalloc-1k objects a fresh, empty memory cgroup costs right now (mkdir/rmdir under `cg`).
    Every memcg gets one 520-byte shrinker unit per 64 memcg-aware shrinker ids the host has
    EVER had at once (`shrinker_nr_max` only grows): chiefly superblocks, i.e. mounts of
    their own of all sandboxes that ever existed together. That part of a sandbox's cost is
    the host's history, not this sandbox: reported apart."""
    if cg is None:
        return None
    def objs():
        for line in open("/proc/slabinfo"):
            if line.startswith("kmalloc-1k "):
                return int(line.split()[1])
        return 0
    got = []
    for i in range(n):
        d = os.path.join(cg, f"probe-{i}")
        a = objs()
        os.mkdir(d)
        got.append(objs() - a)
        os.rmdir(d)
    units = _median(got)
    return {"kmalloc_1k_per_fresh_memcg_kib": units, "implied_shrinker_nr_max": int(units * 64)}


def _sandbox_mounts(server_pid):
    """Mounts and superblocks of the sandboxes (their pid 1s' mountinfo: st_dev values not
    also seen in the host's). `superblocks_of_its_own`: those of one sandbox no other
    sandbox shows; `shared_superblocks`: those it shares with others (0 today: shared
    superblocks share inodes, see docs/memory.md); `superblocks_per_sandbox`: distinct superblocks of all sandboxes / sandboxes."""
    host = {l.split()[2] for l in open("/proc/self/mountinfo")}
    own_ns = os.readlink("/proc/self/ns/mnt")
    spaces = {}
    for k in _descendants(server_pid):
        try:
            ns = os.readlink(f"/proc/{k}/ns/mnt")
            if ns == own_ns or ns in spaces or not open(f"/proc/{k}/cmdline").read().startswith(
                    "cleanroom-init"):
                continue
            spaces[ns] = open(f"/proc/{k}/mountinfo").read().splitlines()
        except OSError:
            continue
    if not spaces:
        return None
    seen = {}
    for lines in spaces.values():
        for d in {l.split()[2] for l in lines} - host:
            seen[d] = seen.get(d, 0) + 1
    lines = next(iter(spaces.values()))
    devs = {l.split()[2] for l in lines} - host
    return {"mounts": len(lines),
            "superblocks_of_its_own": sum(1 for d in devs if seen[d] == 1),
            "shared_superblocks": sum(1 for d in devs if seen[d] > 1),
            "superblocks_per_sandbox": round(len(seen) / len(spaces), 2),
            "filesystems": sorted(l.split(" - ")[1].split()[0] for l in lines
                                  if l.split()[2] in devs and seen[l.split()[2]] == 1)}


def _snapshot(cg, instance_dirs):
    _drop_caches()
    return {"meminfo": _meminfo(), "slab": _slabinfo(), "memcg": _memcg_read(cg),
            "others": _others(instance_dirs), "t": time.time()}


def _cli(binary, env, args, check=True):
    r = subprocess.run([binary, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True)
    if check and r.returncode != 0:
        raise SystemExit(f"bench(memory): {args} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return r.stdout.decode().strip()


def _live(binary, env):
    return [x["sandboxId"] for x in json.loads(_cli(binary, env, ["sandbox", "ls", "--json"]))
            if x.get("status") not in ("SANDBOX_STATUS_STOPPED", "SANDBOX_STATUS_FAILED", "STOPPED", "FAILED")]


def _round(binary, env, server_pid, cg, instance_dirs, n):
    before = _snapshot(cg, instance_dirs)
    t = time.perf_counter()
    with cf.ThreadPoolExecutor(CLIENTS) as ex:
        ids = list(ex.map(lambda _: _cli(binary, env, ["sandbox", "create", "--no-pool"]), range(n)))
    fill_s = time.perf_counter() - t
    time.sleep(3)
    procs = _processes(server_pid)
    mounts = _sandbox_mounts(server_pid)
    after = _snapshot(cg, instance_dirs)
    with cf.ThreadPoolExecutor(CLIENTS) as ex:
        list(ex.map(lambda i: _cli(binary, env, ["sandbox", "rm", *ids[i:i + 50]], check=False),
                    range(0, len(ids), 50)))
    deadline = time.time() + 300
    while time.time() < deadline and len(glob.glob(os.path.join(instance_dirs[0], "sbx_*"))) > 0:
        time.sleep(0.5)
    mi0, mi1 = before["meminfo"], after["meminfo"]
    per = {}
    for f in FIELDS:
        if f in mi0 and f in mi1:
            d = mi1[f] - mi0[f]
            per[f] = round((-d if f in ("MemAvailable", "MemFree") else d) / n, 1)
    slab = {k: (after["slab"].get(k, 0) - before["slab"].get(k, 0)) / 1024 / n
            for k in set(before["slab"]) | set(after["slab"])}
    top = dict(sorted(((k, round(v, 1)) for k, v in slab.items() if abs(v) >= 2), key=lambda kv: -kv[1])[:20])
    mc = {k: round((after["memcg"].get(k, 0) - before["memcg"].get(k, 0)) / 1024 / n, 1)
          for k in after["memcg"]}
    sbx = procs["sandbox"]
    return {
        "sandboxes": n, "fill_seconds": round(fill_s, 1),
        "others_before": before["others"], "others_after": after["others"],
        "whole_host_kib": per,
        "slab_top_kib": top,
        "memcg_kib": mc,
        "processes": procs,
        "one_sandbox_mounts": mounts,
        "sandbox_processes_per_sandbox_kib": {k: round(sbx[k] / n, 1) for k in sbx if k != "processes"},
        "unaccounted_kib": round(per.get("MemFree", 0) - mc.get("memory.usage_in_bytes", 0), 1),
    }


def _summary(rounds):
    clean = [r for r in rounds if r["others_before"] == r["others_after"]] or rounds

    def med(get):
        vals = [get(r) for r in clean]
        vals = [v for v in vals if v is not None]
        return round(_median(vals), 1) if vals else None

    fields = sorted({f for r in clean for f in r["whole_host_kib"]})
    caches = sorted({c for r in clean for c in r["slab_top_kib"]})
    out = {
        "rounds": len(rounds), "clean_rounds": len(clean),
        "mem_available_kib": med(lambda r: r["whole_host_kib"].get("MemAvailable")),
        "mem_free_kib": med(lambda r: r["whole_host_kib"].get("MemFree")),
        "memcg_charged_kib": med(lambda r: r["memcg_kib"].get("memory.usage_in_bytes")),
        "memcg_kmem_kib": med(lambda r: r["memcg_kib"].get("memory.kmem.usage_in_bytes")),
        "unaccounted_kib": med(lambda r: r["unaccounted_kib"]),
        # The host-history part (see _memcg_probe) and the rest: what a sandbox costs beyond it.
        "memcg_shrinker_units_kib": med(lambda r: (r.get("memcg_probe_before") or {}).get(
            "kmalloc_1k_per_fresh_memcg_kib")),
        "mem_free_minus_shrinker_units_kib": med(lambda r: r["whole_host_kib"].get("MemFree", 0) - (
            r.get("memcg_probe_before") or {}).get("kmalloc_1k_per_fresh_memcg_kib", 0)),
        "one_sandbox_mounts": clean[0].get("one_sandbox_mounts"),
        "meminfo_kib": {f: med(lambda r, f=f: r["whole_host_kib"].get(f)) for f in fields},
        "slab_top_kib": dict(sorted(((c, med(lambda r, c=c: r["slab_top_kib"].get(c, 0))) for c in caches),
                                    key=lambda kv: -kv[1])[:15]),
        "sandbox_processes_kib": {k: med(lambda r, k=k: r["sandbox_processes_per_sandbox_kib"][k])
                                  for k in clean[0]["sandbox_processes_per_sandbox_kib"]},
    }
    return out


def memory_bench(binary):
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-mem-")
    sock = os.path.join(tmp, "s.sock")
    own = _own_memcg()
    cg = None
    if own is not None and os.path.isdir(MEMCG_ROOT):
        cg = os.path.join(MEMCG_ROOT, own.lstrip("/"), f"bench-mem-{os.getpid()}")
        try:
            os.mkdir(cg)
        except OSError as e:
            print(f"bench(memory): no memory cgroup of its own ({e}): attributable rows omitted", file=sys.stderr)
            cg = None

    def enter():
        if cg:
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
    rounds, server = [], None
    try:
        server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir",
                                   os.path.join(tmp, "state"), "--max-sandboxes", "0",
                                   "--max-sandboxes-per-principal", "0"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=open(os.path.join(tmp, "server.log"), "w"), preexec_fn=enter)
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        # Warm up: the zygote, the store, the first cgroups exist before the baseline.
        warm = [_cli(binary, env, ["sandbox", "create", "--no-pool"]) for _ in range(5)]
        _cli(binary, env, ["sandbox", "rm", *warm])
        time.sleep(1)
        instance_dirs = _instance_dirs(tmp)
        for i in range(ROUNDS):
            print(f"bench: memory round {i + 1}/{ROUNDS}: {IDLE} idle sandboxes", file=sys.stderr)
            probe = _memcg_probe(cg)
            rounds.append(_round(binary, env, server.pid, cg, instance_dirs, IDLE))
            rounds[-1]["memcg_probe_before"] = probe
            print(f"bench: memory round {i + 1}: " + json.dumps({
                "memfree_kib": rounds[-1]["whole_host_kib"].get("MemFree"),
                "memcg_kib": rounds[-1]["memcg_kib"].get("memory.usage_in_bytes"),
                "others": [rounds[-1]["others_before"], rounds[-1]["others_after"]]}), file=sys.stderr)
    finally:
        if server is not None:
            server.send_signal(2)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if cg:
            _rmdir_tree(cg)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"idle_sandboxes": IDLE, "per_idle_sandbox": _summary(rounds), "rounds_detail": rounds}


def _instance_dirs(tmp):
    """This server's parent cgroup directory in the pids hierarchy (v1) or the unified one:
    <own cgroup>/cleanroom/<instance key of its sandboxes directory>, as cgroup.rs makes it."""
    key = _instance_key(os.path.join(tmp, "state", "sandboxes"))
    out = []
    for line in open("/proc/self/cgroup"):
        _, ctrls, path = line.strip().split(":", 2)
        if ctrls == "pids":
            out.append(os.path.join("/sys/fs/cgroup/pids", path.lstrip("/"), "cleanroom", key))
        elif ctrls == "":
            out.append(os.path.join("/sys/fs/cgroup", path.lstrip("/"), "cleanroom", key))
    return [d for d in out if os.path.isdir(d)] or out


def _instance_key(state_root):
    """Same FNV-1a as crates/backend/src/linux/cgroup.rs `instance_key`."""
    h = 0xcbf29ce484222325
    for b in os.fsencode(state_root):
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"srv-{h:016x}"


def _rmdir_tree(path):
    for root, dirs, _ in os.walk(path, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError as e:
        print(f"bench(memory): could not remove {path}: {e}", file=sys.stderr)
