"""Memory checkpoints under the gvisor runtime against bare runsc, in the same run
(issue 33's rows; docs/checkpoints.md):

  * checkpoint_<N>mib: `cleanroom sandbox checkpoint ID` of a sandbox whose process has N MiB
                       of touched memory  vs  `runsc checkpoint` of a bare container running
                       the same workload (both uncompressed, both stop the source)
  * restore_<N>mib:    `cleanroom sandbox create --from ckpt_…` (verify every image file's
                       sha256, then restore to READY)  vs  `runsc restore --detach`
  * image_<N>mib:      bytes of the stored image, ours vs bare
  * fork10_100mib:     10 restores of one checkpoint, one after the other, total ms

The workload is a Python process holding N MiB it wrote (`bytearray(...) * N`), started as
a child of the sandbox's init (`__gvisor-spawn`) in ours and as the container's process in
the bare one. Without runsc the row says `skipped`.
"""
import json, os, shutil, subprocess, sys, tempfile, time

WORKLOAD = ("import os, time\n"
            "b = bytearray(os.urandom(1 << 20)) * {mib}\n"
            "open('/tmp/ready', 'w').write('1')\n"
            "while True: time.sleep(1)\n")


def _ms(t):
    return round((time.perf_counter() - t) * 1000, 1)


def _median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if s else None


def _check(r, what):
    if r.returncode != 0:
        raise SystemExit(f"bench(checkpoint): {what} failed ({r.returncode}): "
                         f"{(r.stderr or b'').decode()[-400:]}")
    return (r.stdout or b"").decode()


def _cli(binary, env, *args):
    return _check(subprocess.run([binary, *args], env=env, stdin=subprocess.DEVNULL,
                                 capture_output=True), " ".join(args[:3])).strip()


def _wait(cond, what, deadline_s=300):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.1)
    raise SystemExit(f"bench(checkpoint): {what} never happened")


def _settle():
    """Write back what earlier rows left dirty before a timed save: an image is GiBs
    written into the page cache, and on this VM the same bare `runsc checkpoint` of 1 GiB
    took 0.8 s to 4 s depending on the writeback still running from the one before."""
    os.sync()
    time.sleep(0.5)


def _du(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _platform(runsc):
    out = subprocess.run([runsc, "--version"], capture_output=True, text=True).stdout
    version = out.split()[2] if len(out.split()) > 2 else ""
    year = version.split("~")[-1][:4] if "~" in version else version[:4]
    return "systrap" if year.isdigit() and int(year) >= 2023 else "ptrace"


def _bundle(tmp, runsc, mib):
    b = os.path.join(tmp, f"bundle-{mib}")
    os.makedirs(b)
    subprocess.run([runsc, "spec", "--", "python3", "-c", WORKLOAD.format(mib=mib)], cwd=b,
                   check=True)
    path = os.path.join(b, "config.json")
    with open(path) as f:
        c = json.load(f)
    c["root"] = {"path": "/", "readonly": True}
    c["process"]["terminal"] = False
    c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"})
    with open(path, "w") as f:
        json.dump(c, f)
    return b


class Ours:
    def __init__(self, binary, env, state_dir):
        self.binary, self.env, self.state_dir = binary, env, state_dir

    def source(self, mib):
        sid = _cli(self.binary, self.env, "sandbox", "create", "--runtime", "gvisor",
                   "--memory-mb", str(mib + 1024))
        _cli(self.binary, self.env, "exec", "-n", "--in", sid, "--", "sh", "-c",
             f"cat > /tmp/w.py <<'EOF'\n{WORKLOAD.format(mib=mib)}EOF\n"
             "/run/cleanroom-init __gvisor-spawn python3 /tmp/w.py\n"
             "for _ in $(seq 3000); do [ -e /tmp/ready ] && exit 0; sleep 0.1; done; exit 1")
        return sid

    def checkpoint(self, sid):
        _settle()
        t = time.perf_counter()
        ck = _cli(self.binary, self.env, "sandbox", "checkpoint", sid)
        return _ms(t), ck

    def restore(self, ck):
        t = time.perf_counter()
        sid = _cli(self.binary, self.env, "sandbox", "create", "--from", ck)
        return _ms(t), sid

    def size(self, ck):
        return _du(os.path.join(self.state_dir, "checkpoints", ck, "image"))

    def rm(self, sids, ck=None):
        for s in sids:
            subprocess.run([self.binary, "sandbox", "rm", s], env=self.env, capture_output=True)
        if ck:
            subprocess.run([self.binary, "checkpoint", "rm", ck], env=self.env,
                           capture_output=True)


class Bare:
    def __init__(self, runsc, tmp):
        self.tmp = tmp
        self.cmd = [runsc, "--root", os.path.join(tmp, "runsc-root"), "--platform",
                    _platform(runsc), "--network", "none", "--overlay2=root:memory"]
        self.n = 0

    def _run(self, *args):
        # `run`/`restore --detach` hand their stdio to the container, which keeps it: a
        # pipe would never reach EOF, so nothing is captured (the exit status says it all).
        return _check(subprocess.run(self.cmd + list(args), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                      f"runsc {args[0]}")

    def source(self, bundle):
        self.n += 1
        cid = f"bench-ck-{self.n}"
        self._run("run", "--detach", "--bundle", bundle, cid)
        _wait(lambda: subprocess.run(self.cmd + ["exec", cid, "test", "-e", "/tmp/ready"],
                                     capture_output=True).returncode == 0, "bare workload")
        return cid

    def checkpoint(self, cid):
        self.n += 1
        img = os.path.join(self.tmp, f"img-{self.n}")
        os.makedirs(img)
        _settle()
        t = time.perf_counter()
        self._run("checkpoint", "--compression=none", f"--image-path={img}", cid)
        return _ms(t), img

    def restore(self, img, bundle):
        self.n += 1
        cid = f"bench-rs-{self.n}"
        t = time.perf_counter()
        self._run("restore", "--detach", f"--image-path={img}", "--bundle", bundle, cid)
        return _ms(t), cid

    def rm(self, cids, img=None):
        for c in cids:
            subprocess.run(self.cmd + ["kill", "-all", c, "KILL"], capture_output=True)
            subprocess.run(self.cmd + ["delete", "-force", c], capture_output=True)
        if img:
            shutil.rmtree(img, ignore_errors=True)


def _pair(ours, bare):
    o, b = _median(ours), _median(bare)
    return {"cleanroom_p50_ms": o, "runsc_p50_ms": b, "runs": len(ours),
            "p50_ratio": round(o / b, 2) if o and b else None}


def _size_rows(ours, bare, runs, bundle, mib, out):
    cks, rss, szs = [[], []], [[], []], [[], []]
    def mine():
        sid = ours.source(mib)
        dt, ck = ours.checkpoint(sid)
        cks[0].append(dt)
        szs[0].append(ours.size(ck))
        dt, r = ours.restore(ck)
        rss[0].append(dt)
        ours.rm([sid, r], ck)

    def theirs():
        cid = bare.source(bundle)
        dt, img = bare.checkpoint(cid)
        cks[1].append(dt)
        szs[1].append(_du(img))
        dt, r = bare.restore(img, bundle)
        rss[1].append(dt)
        bare.rm([cid, r], img)

    for i in range(runs):
        print(f"bench: checkpoint/restore {mib} MiB, run {i + 1}/{runs}", file=sys.stderr)
        # Alternating which goes first: neither always inherits the other's writeback.
        for f in (mine, theirs) if i % 2 == 0 else (theirs, mine):
            f()
    out[f"checkpoint_{mib}mib"] = _pair(*cks)
    out[f"restore_{mib}mib"] = _pair(*rss)
    out[f"image_{mib}mib"] = {"cleanroom_bytes": _median(szs[0]), "runsc_bytes": _median(szs[1])}


def _fork10(ours, bare, bundle, out):
    print("bench: fork of 10 (100 MiB)", file=sys.stderr)
    sid = ours.source(100)
    _, ck = ours.checkpoint(sid)
    t = time.perf_counter()
    made = [ours.restore(ck)[1] for _ in range(10)]
    o = _ms(t)
    ours.rm([sid] + made, ck)
    cid = bare.source(bundle)
    _, img = bare.checkpoint(cid)
    t = time.perf_counter()
    made = [bare.restore(img, bundle)[1] for _ in range(10)]
    b = _ms(t)
    bare.rm([cid] + made, img)
    out["fork10_100mib"] = {"cleanroom_total_ms": o, "runsc_total_ms": b,
                            "ratio": round(o / b, 2) if b else None}


def run(binary, env, state_dir, runs):
    runsc = shutil.which("runsc")
    if not runsc:
        return {"skipped": "runsc is not installed (scripts/deps.sh installs it)"}
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-ckpt-")
    out = {}
    try:
        ours, bare = Ours(binary, env, state_dir), Bare(runsc, tmp)
        b100 = _bundle(tmp, runsc, 100)
        _size_rows(ours, bare, max(3, min(runs, 7)), b100, 100, out)
        if os.environ.get("BENCH_CHECKPOINT_1GIB", "1") != "0":
            _size_rows(ours, bare, 5, _bundle(tmp, runsc, 1024), 1024, out)
        _fork10(ours, bare, b100, out)
        return out
    finally:
        root = os.path.join(tmp, "runsc-root")
        for c in (os.listdir(root) if os.path.isdir(root) else []):
            Bare(runsc, tmp).rm([c])
        shutil.rmtree(tmp, ignore_errors=True)
