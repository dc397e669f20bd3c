"""Which difference between our gvisor sandbox and a bare runsc container makes `runsc
checkpoint` slower (docs/runtimes.md, "What a checkpoint's time is made of").

Bare runsc only, no cleanroom server: a base container (bench/checkpoint.py's bare one —
the host's `/` read-only, `--network none`, `--overlay2=root:memory`, a Python process
holding N MiB it wrote, saved without `--leave-running` into a directory on disk), then
the same with ONE of our differences switched on (our runsc flags, spec, mounts, cgroup,
network namespace with a tun; the freeze after a save, `runsc pause`; the server's hashing of
each image file while runsc writes it; where the image goes; `--direct`), then combined.
Every variant is run once per round, the rounds interleaved (so load drifts hit every variant alike), and
the median of the rounds is printed with its ratio to the base of the same run.

    python3 bench/checkpoint_toggles.py [--mib 100] [--rounds 5] [--only a,b]

Root only (runsc, network namespaces, tmpfs mounts). Everything it makes is under one
temporary directory and one runsc root, removed at the end.
"""
import argparse, hashlib, json, os, threading, shutil, statistics, subprocess, sys, tempfile, time

WORKLOAD = ("import os, time\n"
            "b = bytearray(os.urandom(1 << 20)) * {mib}\n"
            "open('/tmp/ready', 'w').write('1')\n"
            "while True: time.sleep(1)\n")
HOST_DIRS = ["usr", "etc", "opt"]  # what the host view binds on this host (bin, lib: links)

# name -> what it switches on (one difference each; the `ours*` rows combine them).
VARIANTS = {
    "base": {},
    "leave_running": {"leave_running": True},
    "overlay_all_memory": {"overlay": "all:memory"},
    "overlay_all_dir": {"overlay": "all:dir"},
    "binds_scratch": {"overlay": "all:dir", "scratch_binds": True},
    "network_tun": {"network": True},
    "memory_cgroup": {"memory_limit": True},
    "cgroupfs_mount": {"cgroupfs": True},
    "host_view_binds": {"host_binds": True},
    "image_on_tmpfs": {"image_tmpfs": True},
    "direct_io": {"direct": True},
    "then_pause": {"leave_running": True, "pause": True},
    "hash_while_writing": {"follow": True},
    # Every difference in how runsc is configured (flags, spec, mounts, cgroup, netns).
    "ours_config": {"leave_running": True, "overlay": "all:dir", "scratch_binds": True,
                    "network": True, "memory_limit": True, "cgroupfs": True,
                    "host_binds": True},
    # ... plus what the server's save does around runsc: the freeze and the hashing.
    "ours": {"leave_running": True, "pause": True, "follow": True, "overlay": "all:dir",
             "scratch_binds": True, "network": True, "memory_limit": True, "cgroupfs": True,
             "host_binds": True},
    "ours_direct": {"leave_running": True, "pause": True, "follow": True,
                    "overlay": "all:dir", "scratch_binds": True, "network": True,
                    "memory_limit": True, "cgroupfs": True, "host_binds": True, "direct": True},
    "ours_no_leave_running": {"overlay": "all:dir", "scratch_binds": True, "network": True,
                              "memory_limit": True, "cgroupfs": True, "host_binds": True},
}


def sh(*cmd, check=True, **kw):
    r = subprocess.run(list(cmd), stdin=subprocess.DEVNULL, capture_output=True, **kw)
    if check and r.returncode != 0:
        raise SystemExit(f"toggles: {' '.join(cmd[:6])} failed: {r.stderr.decode()[-500:]}")
    return r


class Follower:
    """Hashes each image file while runsc writes it, as the server does
    (crates/server/src/engine/checkpoint_follow.rs): reads on from where it stopped."""

    def __init__(self, img):
        self.img, self.done, self.state = img, threading.Event(), {}
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _pass(self):
        moved = False
        for name in os.listdir(self.img):
            f, h = self.state.setdefault(name, (open(os.path.join(self.img, name), "rb"),
                                                hashlib.sha256()))
            while chunk := f.read(1 << 20):
                h.update(chunk)
                moved = True
        return moved

    def _run(self):
        while not self.done.is_set():
            if not self._pass():
                time.sleep(0.002)
        self._pass()

    def finish(self):
        self.done.set()
        self.thread.join()
        for f, _ in self.state.values():
            f.close()


class Env:
    def __init__(self, tmp, runsc, mib):
        self.tmp, self.runsc, self.mib, self.n = tmp, runsc, mib, 0
        self.root = os.path.join(tmp, "runsc-root")
        self.mounts = []
        self.netns = []

    def _tmpfs(self, path, size):
        os.makedirs(path)
        sh("mount", "-t", "tmpfs", "-o", f"size={size},mode=755", "tmpfs", path)
        self.mounts.append(path)

    def _netns(self, name):
        sh("ip", "netns", "add", name)
        self.netns.append(name)
        for c in (["ip", "link", "set", "lo", "up"],
                  ["ip", "tuntap", "add", "dev", "cr0", "mode", "tun"],
                  ["ip", "addr", "add", "100.96.0.2/30", "dev", "cr0"],
                  ["ip", "link", "set", "cr0", "up"],
                  ["ip", "route", "add", "default", "via", "100.96.0.1"]):
            sh("ip", "netns", "exec", name, *c)

    def flags(self, v):
        overlay = v.get("overlay", "root:memory")
        return [self.runsc, "--root", self.root, "--platform", "systrap",
                "--network", "sandbox" if v.get("network") else "none",
                "--gso=false", "--software-gso=false", f"--overlay2={overlay}"]

    def start(self, name, v):
        """A container of variant `v` running the workload; returns (cid, flags)."""
        self.n += 1
        cid = f"tog-{name}-{self.n}"
        b = os.path.join(self.tmp, cid)
        os.makedirs(b)
        sh(self.runsc, "spec", "--", "python3", "-c", WORKLOAD.format(mib=self.mib), cwd=b)
        c = json.load(open(os.path.join(b, "config.json")))
        c["root"] = {"path": "/", "readonly": True}
        c["process"]["terminal"] = False
        flags = self.flags(v)
        if v.get("overlay") == "all:dir":
            scratch = os.path.join(self.tmp, f"scratch-{self.n}")
            self._tmpfs(scratch, f"{self.mib + 1024}m")
            os.makedirs(os.path.join(scratch, ".overlay"))
            flags[-1] = f"--overlay2=all:dir={scratch}/.overlay"
        if v.get("scratch_binds"):
            for d in ("tmp", "root", "workspace"):
                os.makedirs(os.path.join(scratch, d), mode=0o1777)
                c["mounts"].append({"destination": f"/{d}", "type": "bind",
                                    "source": os.path.join(scratch, d),
                                    "options": ["rbind", "rw", "nosuid", "nodev"]})
        else:
            c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"})
        if v.get("cgroupfs"):
            c["mounts"].append({"destination": "/sys/fs/cgroup", "type": "cgroup",
                                "source": "cgroup", "options": ["nosuid", "noexec", "nodev"]})
        if v.get("host_binds"):
            for d in HOST_DIRS:
                c["mounts"].append({"destination": f"/{d}", "type": "bind", "source": f"/{d}",
                                    "options": ["rbind", "ro", "nosuid", "nodev"]})
        if v.get("memory_limit"):
            c["linux"]["resources"] = {
                "memory": {"limit": (self.mib + 1024) << 20},
                "pids": {"limit": 2176},
                "cpu": {"quota": 200000, "period": 100000}}
            c["linux"]["cgroupsPath"] = f"/cleanroom-toggles/{cid}"
        run = flags + ["run", "--detach", "--bundle", b, cid]
        if v.get("network"):
            ns = f"ckt{self.n}"
            self._netns(ns)
            c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                        if n["type"] != "network"]
            c["linux"]["namespaces"].append({"type": "network",
                                             "path": f"/var/run/netns/{ns}"})
            # runsc refuses a networked sandbox where /proc/sys/net/core/rmem_default shows
            # (launch.rs): the same tmpfs over it as ours.
            # nsenter, not `ip netns exec`: that remounts /sys, where runsc then finds no
            # cgroup hierarchy.
            run = ["nsenter", f"--net=/var/run/netns/{ns}", "unshare", "-m", "sh", "-c",
                   "mount -t tmpfs -o size=4k,mode=0555 tmpfs /proc/sys/net/core && "
                   "exec \"$@\"", "sh"] + run
        json.dump(c, open(os.path.join(b, "config.json"), "w"))
        subprocess.run(run, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        end = time.monotonic() + 300
        while sh(*flags, "exec", cid, "test", "-e", "/tmp/ready", check=False).returncode:
            if time.monotonic() > end:
                raise SystemExit(f"toggles: {cid}: workload never ready")
            time.sleep(0.1)
        return cid, flags

    def checkpoint(self, cid, flags, v):
        base = os.path.join(self.tmp, "shm") if v.get("image_tmpfs") else self.tmp
        img = os.path.join(base, f"img-{cid}")
        os.makedirs(img)
        os.sync()
        time.sleep(0.5)
        args = ["checkpoint", "--compression=none", f"--image-path={img}"]
        args += ["--leave-running"] if v.get("leave_running") else []
        args += ["--direct"] if v.get("direct") else []
        t = time.perf_counter()
        follower = Follower(img) if v.get("follow") else None
        sh(*flags, *args, cid)
        if v.get("pause"):
            sh(*flags, "pause", cid)
        if follower:
            follower.finish()
        ms = (time.perf_counter() - t) * 1000
        size = sum(os.path.getsize(os.path.join(img, f)) for f in os.listdir(img))
        shutil.rmtree(img)
        return ms, size

    def destroy(self, cid, flags):
        sh(*flags, "kill", "-all", cid, "KILL", check=False)
        sh(*flags, "delete", "-force", cid, check=False)

    def cleanup(self):
        if os.path.isdir(self.root):
            for cid in os.listdir(self.root):
                if cid.startswith("tog-"):
                    self.destroy(cid, self.flags({}))
        for m in self.mounts:
            sh("umount", "-l", m, check=False)
        for ns in self.netns:
            sh("ip", "netns", "del", ns, check=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mib", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", default="")
    a = p.parse_args()
    runsc = shutil.which("runsc") or sys.exit("runsc is not installed")
    names = [n for n in VARIANTS if not a.only or n in a.only.split(",") or n == "base"]
    tmp = tempfile.mkdtemp(prefix="cleanroom-toggles-", dir="/var/tmp")
    env = Env(tmp, runsc, a.mib)
    env._tmpfs(os.path.join(tmp, "shm"), f"{2 * a.mib + 256}m")
    times = {n: [] for n in names}
    sizes = {n: [] for n in names}
    try:
        for r in range(a.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for n in order:
                v = VARIANTS[n]
                cid, flags = env.start(n, v)
                ms, size = env.checkpoint(cid, flags, v)
                env.destroy(cid, flags)
                times[n].append(ms)
                sizes[n].append(size)
                print(f"round {r + 1} {n}: {ms:.0f} ms", file=sys.stderr)
    finally:
        env.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["base"])
    out = {n: {"p50_ms": round(statistics.median(times[n]), 1),
               "vs_base": round(statistics.median(times[n]) / base, 2),
               "image_mb": round(statistics.median(sizes[n]) / 1e6, 1),
               "runs_ms": [round(x) for x in times[n]]} for n in names}
    with open("/proc/loadavg") as f:
        out["loadavg"] = f.read().split()[:3]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
