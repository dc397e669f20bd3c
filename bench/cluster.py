"""Many hosts, one API (issue 34, docs/cluster.md): `BENCH_ONLY=cluster`. Called from run.py
(`cluster_bench`).

It starts everything itself, like the e2e fixture (crates/e2e/src/etcd.rs and the cluster
suites): a real 3-member etcd on loopback (Debian's `etcd-server`, installed by
scripts/deps.sh), a cluster CA and node identities made with `cleanroom cluster init|issue`,
and three servers `a`, `b`, `c` (`serve --cluster ...`, each its own state directory, unix
socket and member link). One machine: the hosts share its CPUs, so "3 hosts" measures the
coordination, not a scale-out. Rows, in one run:

  * create->READY (`sandbox create`, CLI end to end) through front door `a`, split by where
    placement put the sandbox (on `a` itself vs forwarded to `b`/`c` over the member link),
    next to the same create on a plain server without `--cluster` (the same-run reference);
  * `exec -n --in ID -- true` through the owning host vs through another member, interleaved
    run by run: the forwarding overhead (`forward_added_p50_ms`; target < 1 ms);
  * creates/s with 1 host (only `a` joined) vs 3 hosts (front doors taken in turn), from
    BENCH_CLUSTER_CLIENTS (default 4) client threads, BENCH_CLUSTER_CREATES (default 48)
    creates each time;
  * etcd operations per create, per `rm` and per forwarded `exec`: etcd's own /metrics
    (every `etcd_mvcc_*_total` counter, and gRPC requests per method) read before and after
    N operations, minus the idle rate measured just before (lease keep-alives, member records,
    the hosts' binding reconciliation) over the same time; plus the idle rates themselves
    and the keys under `/cleanroom/` with their sizes (the inputs of docs/cluster.md's
    sizing).
"""
import base64, json, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time
import urllib.request

RUNS = int(os.environ.get("BENCH_RUNS", "200"))
CLIENTS = int(os.environ.get("BENCH_CLUSTER_CLIENTS", "4"))
CREATES = int(os.environ.get("BENCH_CLUSTER_CREATES", "48"))
NODES = ("a", "b", "c")


def _pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(_pct(xs, 50), 3), "p99_ms": round(_pct(xs, 99), 3),
            "mean_ms": round(statistics.mean(xs), 3)}


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def _run(cmd, env=None, check=True):
    """(ms, stdout) of one command; raises SystemExit with its stderr when it fails."""
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True)
    dt = (time.perf_counter() - t) * 1000
    if check and r.returncode != 0:
        raise SystemExit(f"bench(cluster): {' '.join(cmd[:6])} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt, r.stdout.decode()


class Etcd:
    """Three etcd members on loopback, each with its own data directory (as the e2e fixture)."""

    def __init__(self, tmp):
        etcd = shutil.which("etcd")
        if not etcd or not shutil.which("etcdctl"):
            raise SystemExit("bench(cluster): etcd is not installed (scripts/deps.sh installs etcd-server)")
        ports = [(_free_port(), _free_port()) for _ in range(3)]
        initial = ",".join(f"m{i}=http://127.0.0.1:{p}" for i, (_, p) in enumerate(ports))
        self.urls = [f"http://127.0.0.1:{c}" for c, _ in ports]
        self.procs = []
        for i, (c, p) in enumerate(ports):
            curl, purl = f"http://127.0.0.1:{c}", f"http://127.0.0.1:{p}"
            self.procs.append(subprocess.Popen(
                [etcd, "--name", f"m{i}", "--data-dir", os.path.join(tmp, f"etcd-m{i}"),
                 "--listen-client-urls", curl, "--advertise-client-urls", curl,
                 "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                 "--initial-cluster", initial, "--initial-cluster-state", "new",
                 "--initial-cluster-token", "cleanroom-bench",
                 "--heartbeat-interval", "100", "--election-timeout", "1000"],
                env=dict(os.environ, ETCD_UNSUPPORTED_ARCH=""), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"etcd-m{i}.log"), "w")))
        deadline = time.time() + 30
        while subprocess.run(self.ctl("endpoint", "health"), capture_output=True).returncode != 0:
            if time.time() > deadline:
                raise SystemExit("bench(cluster): etcd did not become healthy")
            time.sleep(0.2)

    def ctl(self, *args):
        return ["etcdctl", "--endpoints", ",".join(self.urls), *args]

    def arg(self):
        return "etcd=" + ",".join(self.urls)

    def metrics(self):
        """Every member's counters we count, summed over the members: {name: value}."""
        total = {}
        for u in self.urls:
            with urllib.request.urlopen(u + "/metrics", timeout=5) as r:
                text = r.read().decode()
            for line in text.splitlines():
                # Counters only (etcd_debugging_mvcc_keys_total is a gauge); etcd 3.4 also
                # exports the older etcd_debugging_mvcc_{put,range,...} twins of these.
                m = re.match(r'^(etcd_mvcc_(?:put|range|txn|delete)_total)\s+(\S+)$', line)
                if m:
                    total[m.group(1)] = total.get(m.group(1), 0) + float(m.group(2))
                    continue
                m = re.match(r'^grpc_server_(handled|msg_received)_total\{(.*)\}\s+(\S+)$', line)
                if m:
                    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                    what = "requests" if m.group(1) == "handled" else "stream_messages"
                    k = f"grpc_{what}.{labels.get('grpc_method', '?')}"
                    total[k] = total.get(k, 0) + float(m.group(3))
        return total

    def keys(self):
        """Keys under /cleanroom/, per kind: count and mean key/value bytes."""
        out = subprocess.run(self.ctl("get", "--prefix", "/cleanroom/", "-w", "json"), capture_output=True,
                             check=True).stdout
        kinds = {}
        for kv in json.loads(out).get("kvs", []):
            k, v = base64.b64decode(kv["key"]), base64.b64decode(kv.get("value", ""))
            kind = k.decode().split("/")[2]
            e = kinds.setdefault(kind, {"count": 0, "key_bytes": 0, "value_bytes": 0, "leased": 0})
            e["count"] += 1
            e["key_bytes"] += len(k)
            e["value_bytes"] += len(v)
            e["leased"] += 1 if kv.get("lease") else 0
        for e in kinds.values():
            e["mean_key_bytes"] = round(e.pop("key_bytes") / e["count"], 1)
            e["mean_value_bytes"] = round(e.pop("value_bytes") / e["count"], 1)
        return kinds

    def host_of(self):
        """Every binding: {sandbox id: host}."""
        out = subprocess.run(self.ctl("get", "--prefix", "/cleanroom/sandboxes/", "-w", "json"),
                             capture_output=True, check=True).stdout
        res = {}
        for kv in json.loads(out).get("kvs", []):
            sid = base64.b64decode(kv["key"]).decode().rsplit("/", 1)[-1]
            res[sid] = json.loads(base64.b64decode(kv["value"]))["host"]
        return res

    def stop(self):
        for p in self.procs:
            p.kill()
            p.wait()


class Hosts:
    """Cluster servers (and a plain one), each with its own socket and state directory."""

    def __init__(self, binary, tmp, etcd):
        self.binary, self.tmp, self.etcd, self.procs = binary, tmp, etcd, {}
        _run([binary, "cluster", "init", os.path.join(tmp, "ca")])

    def env(self, name):
        return dict(os.environ, CLEANROOM_HOST="unix://" + os.path.join(self.tmp, f"{name}.sock"))

    def start(self, name, cluster=True):
        args = [self.binary, "serve", "--listen", "unix://" + os.path.join(self.tmp, f"{name}.sock"),
                "--state-dir", os.path.join(self.tmp, f"state-{name}")]
        if cluster:
            ident = os.path.join(self.tmp, f"id-{name}")
            _run([self.binary, "cluster", "issue", "--ca", os.path.join(self.tmp, "ca"), "--node", name, ident])
            args += ["--cluster", self.etcd.arg(), "--node-name", name, "--advertise", f"https://{name}.test:7443",
                     "--cluster-tls", ident, "--cluster-listen", f"127.0.0.1:{_free_port()}"]
        self.procs[name] = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=open(os.path.join(self.tmp, f"server-{name}.log"), "w"))
        sock = os.path.join(self.tmp, f"{name}.sock")
        deadline = time.time() + 30
        while True:
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(sock)
                s.close()
                return
            except OSError:
                if self.procs[name].poll() is not None or time.time() > deadline:
                    log = open(os.path.join(self.tmp, f"server-{name}.log")).read()[-600:]
                    raise SystemExit(f"bench(cluster): server {name} did not start: {log}")
                time.sleep(0.05)

    def wait_members(self, n):
        deadline = time.time() + 30
        while True:
            _, out = _run([self.binary, "cluster", "status", "--json"], self.env("a"))
            if len(json.loads(out).get("members", [])) == n:
                return
            if time.time() > deadline:
                raise SystemExit(f"bench(cluster): {n} members did not show: {out[-400:]}")
            time.sleep(0.2)

    def create(self, name):
        dt, out = _run([self.binary, "sandbox", "create"], self.env(name))
        return dt, out.strip()

    def rm(self, name, ids):
        for i in range(0, len(ids), 32):
            _run([self.binary, "sandbox", "rm", *ids[i:i + 32]], self.env(name), check=False)

    def stop(self):
        for p in self.procs.values():
            p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _creates_per_s(hosts, fronts):
    """CREATES creates from CLIENTS threads, front doors taken in turn: (creates/s, ids)."""
    ids, errors, lock = [], [], threading.Lock()
    counter = iter(range(CREATES))

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            try:
                _, sid = hosts.create(fronts[i % len(fronts)])
                with lock:
                    ids.append(sid)
            except SystemExit as e:
                with lock:
                    errors.append(str(e))

    t = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(CLIENTS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    if errors:
        raise SystemExit(f"bench(cluster): {len(errors)} creates failed: {errors[0]}")
    return round(CREATES / dt, 2), ids


def _delta(before, after):
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(before) | set(after)}


def _etcd_ops(etcd, n, action, settle=8.0):
    """etcd counters per operation: (after - before - idle rate x elapsed) / n, over the
    counters that moved. `action()` performs the n operations. The idle rate is taken after
    `settle` seconds of quiet (the hosts reconcile their bindings every 2 s and check a
    sandbox 4 s after they first see it change: what the previous step left to do is done by
    then, and the checks an operation causes fall inside its window)."""
    time.sleep(settle)
    m0, t0 = etcd.metrics(), time.perf_counter()
    time.sleep(settle)
    m1, t1 = etcd.metrics(), time.perf_counter()
    idle = {k: v / (t1 - t0) for k, v in _delta(m0, m1).items()}
    action()
    time.sleep(settle)  # the hosts' reconciliation and record updates that follow
    m2, t2 = etcd.metrics(), time.perf_counter()
    raw = _delta(m1, m2)
    per = {k: round((v - idle.get(k, 0) * (t2 - t1)) / n, 2) for k, v in raw.items()}
    return {"operations": n, "window_s": round(t2 - t1, 1),
            "per_operation": {k: v for k, v in sorted(per.items()) if abs(v) >= 0.05}}, idle


def cluster_bench(binary):
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-cluster-")
    out = {"hosts": len(NODES), "note": "one machine: the hosts share its CPUs and etcd's three members"}
    etcd = hosts = None
    try:
        etcd = Etcd(tmp)
        hosts = Hosts(binary, tmp, etcd)
        hosts.start("plain", cluster=False)
        hosts.start("a")
        hosts.wait_members(1)
        print(f"bench: cluster creates/s, 1 host x{CREATES} ({CLIENTS} clients)", file=sys.stderr)
        one, ids = _creates_per_s(hosts, ["a"])
        hosts.rm("a", ids)
        for n in ("b", "c"):
            hosts.start(n)
        hosts.wait_members(3)
        print(f"bench: cluster creates/s, 3 hosts x{CREATES}", file=sys.stderr)
        three, ids = _creates_per_s(hosts, list(NODES))
        hosts.rm("a", ids)
        out["creates_per_s"] = {"clients": CLIENTS, "creates": CREATES, "one_host": one, "three_hosts": three,
                                "ratio_three_vs_one": round(three / one, 2)}

        n = min(RUNS, 30)
        print(f"bench: cluster create->READY x{n} (plain server, through a)", file=sys.stderr)
        plain, made = [], []
        for _ in range(n):
            dt, sid = hosts.create("plain")
            plain.append(dt)
            made.append(sid)
        hosts.rm("plain", made)
        times = []
        for _ in range(n * 2):
            times.append(hosts.create("a"))
        where = etcd.host_of()
        local = [dt for dt, sid in times if where.get(sid) == "a"]
        remote = [dt for dt, sid in times if where.get(sid) in ("b", "c")]
        row = {"plain_server": _row(plain)}
        if local:
            row["placed_on_front_door"] = _row(local)
        if remote:
            row["placed_on_another_member"] = _row(remote)
        if local and remote:
            row["forward_added_p50_ms"] = round(_pct(remote, 50) - _pct(local, 50), 3)
        if local:
            row["cluster_added_p50_ms_vs_plain"] = round(_pct(local, 50) - _pct(plain, 50), 3)
        out["create_ready"] = row

        # exec --in through the owner vs through another member, interleaved.
        sid = next(s for _, s in times if where.get(s) == "b")
        cmd = [binary, "exec", "-n", "--in", sid, "--", "true"]
        print(f"bench: cluster exec --in x{RUNS} (owner b vs through a)", file=sys.stderr)
        for _ in range(5):
            _run(cmd, hosts.env("b"))
            _run(cmd, hosts.env("a"))
        owner, via = [], []
        for _ in range(RUNS):
            owner.append(_run(cmd, hosts.env("b"))[0])
            via.append(_run(cmd, hosts.env("a"))[0])
        out["exec_in_existing"] = {"through_owner": _row(owner), "through_another_member": _row(via),
                                   "forward_added_p50_ms": round(_pct(via, 50) - _pct(owner, 50), 3),
                                   "target_added_p50_ms": 1.0}

        out["etcd_keys_with_sandboxes"] = {"sandboxes": len(where), **{"keys": etcd.keys()}}
        hosts.rm("a", [s for _, s in times])

        # Pool claims through one member (after the rm above: the claims count against the
        # caller's cluster-wide limit like any sandbox): served by its own share while it has READY
        # sandboxes, then by a peer's (docs/cluster.md "Warm pools"); told apart by the
        # host each claimed sandbox is bound to.
        _, pool = _run([binary, "pool", "create", "--min-ready", "3"], hosts.env("a"))
        pool = pool.strip()
        deadline = time.time() + 120
        while time.time() < deadline:
            _, st = _run([binary, "pool", "stats", pool, "--json"], hosts.env("a"), check=False)
            try:
                if int(json.loads(st)["stats"].get("ready", 0)) >= 3 * len(NODES):
                    break
            except (ValueError, KeyError):
                pass
            time.sleep(0.5)
        print("bench: cluster pool claims x8 through a (its share, then peers')", file=sys.stderr)
        claims = []
        for _ in range(8):
            dt, sid = _run([binary, "pool", "claim", pool], hosts.env("a"))
            claims.append((dt, sid.strip()))
        where_claimed = etcd.host_of()
        own = [dt for dt, sid in claims if where_claimed.get(sid) == "a"]
        peer = [dt for dt, sid in claims if where_claimed.get(sid) in ("b", "c")]
        row = {"claims": len(claims)}
        if own:
            row["served_by_front_door"] = _row(own)
        if peer:
            row["served_by_a_peer"] = _row(peer)
        if own and peer:
            row["peer_added_p50_ms"] = round(_pct(peer, 50) - _pct(own, 50), 3)
        out["pool_claim_cli"] = row
        hosts.rm("a", [sid for _, sid in claims])
        _run([binary, "pool", "rm", pool], hosts.env("a"), check=False)


        # etcd operations per create / per rm / per forwarded exec (the idle rate subtracted).
        k = min(CREATES, 30)
        print(f"bench: etcd operations per create x{k}", file=sys.stderr)
        made = []
        per_create, idle = _etcd_ops(etcd, k, lambda: made.extend(hosts.create("a")[1] for _ in range(k)))
        per_rm, _ = _etcd_ops(etcd, k, lambda: [_run([binary, "sandbox", "rm", s], hosts.env("a")) for s in made])
        _, sid = hosts.create("a")
        owner = etcd.host_of().get(sid)
        front = next(x for x in NODES if x != owner)
        cmd = [binary, "exec", "-n", "--in", sid, "--", "true"]
        _run(cmd, hosts.env(front))
        per_exec, _ = _etcd_ops(etcd, k, lambda: [_run(cmd, hosts.env(front)) for _ in range(k)])
        hosts.rm(front, [sid])
        out["etcd_ops"] = {
            "per_create": per_create,
            "per_rm": per_rm,
            "per_forwarded_exec": per_exec,
            "idle_per_s_three_hosts": {k: round(v, 2) for k, v in sorted(idle.items()) if v >= 0.01},
            "note": "mvcc counters are summed over etcd's 3 members (each applies every write: "
                    "divide by 3 for the cluster's own); gRPC requests are counted where served",
        }
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
    finally:
        if hosts:
            hosts.stop()
        if etcd:
            etcd.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out
