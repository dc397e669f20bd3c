#!/usr/bin/env python3
"""Cleanroom benchmark: one command, JSON on stdout.

Measures, in the same run and on the same machine:
  * `cleanroom exec -n -- true` end to end through a real server (p50/p99, N runs)
    next to `bwrap --unshare-all ... true` (the reference), and their ratio;
  * sandbox create->READY (CreateSandbox RPC through the CLI) p50;
  * stdout throughput of `head -c 1G /dev/zero` streamed through `cleanroom exec`
    next to the same bytes through a raw pipe, and through a pipe into a file (the floor
    of what a durable output log costs).
Progress goes to stderr.
"""
import json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = int(os.environ.get("BENCH_RUNS", "200"))
BYTES = int(os.environ.get("BENCH_BYTES", str(1 << 30)))


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def timed(cmd, env=None, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"bench: {cmd} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt


def series(name, cmd, env=None):
    print(f"bench: {name} x{RUNS}", file=sys.stderr)
    for _ in range(5):
        timed(cmd, env)  # warm up
    xs = [timed(cmd, env) * 1000 for _ in range(RUNS)]
    return {"runs": RUNS, "p50_ms": round(pct(xs, 50), 3), "p99_ms": round(pct(xs, 99), 3),
            "mean_ms": round(statistics.mean(xs), 3)}


def main():
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "cleanroom-cli"], cwd=ROOT, check=True,
                   stdout=sys.stderr)
    binary = os.path.join(ROOT, "target/release/cleanroom")
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-")
    sock = os.path.join(tmp, "s.sock")
    server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", os.path.join(tmp, "state")],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "server.log"), "w"))
    try:
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
        result = {"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release}}

        result["exec_true"] = series("cleanroom exec -- true", [binary, "exec", "-n", "--", "true"], env)
        bwrap = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                 "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                 "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"]
        result["bwrap_true"] = series("bwrap --unshare-all true", bwrap)
        result["exec_true_vs_bwrap_p50_ratio"] = round(result["exec_true"]["p50_ms"] / result["bwrap_true"]["p50_ms"], 2)

        # create -> READY, then reuse: exec in an existing sandbox.
        create = []
        ids = []
        for _ in range(min(RUNS, 50)):
            t = time.perf_counter()
            out = subprocess.run([binary, "sandbox", "create"], env=env, check=True, capture_output=True).stdout
            create.append((time.perf_counter() - t) * 1000)
            ids.append(out.decode().strip())
        result["sandbox_create_ready"] = {"runs": len(create), "p50_ms": round(pct(create, 50), 3),
                                          "p99_ms": round(pct(create, 99), 3)}
        result["exec_true_in_existing_sandbox"] = series("cleanroom exec --in ID -- true",
                                                         [binary, "exec", "-n", "--in", ids[0], "--", "true"], env)
        subprocess.run([binary, "sandbox", "rm", *ids], env=env, check=True, stdout=subprocess.DEVNULL)

        print(f"bench: streaming {BYTES} bytes", file=sys.stderr)
        raw = []
        to_file = []
        via = []
        sink = os.path.join(tmp, "pipe-sink")
        for _ in range(3):
            raw.append(timed(["sh", "-c", f"head -c {BYTES} /dev/zero | cat > /dev/null"]))
            # Same bytes through a pipe into a file on the state dir's filesystem: what the
            # durable execution log costs at minimum.
            to_file.append(timed(["sh", "-c", f"head -c {BYTES} /dev/zero | cat > {sink}; rm -f {sink}"]))
            via.append(timed([binary, "exec", "-n", "--", "head", "-c", str(BYTES), "/dev/zero"], env))
        mib = BYTES / (1 << 20)
        result["stdout_throughput"] = {
            "bytes": BYTES,
            "cleanroom_exec_mib_s": round(mib / statistics.median(via), 1),
            "raw_pipe_mib_s": round(mib / statistics.median(raw), 1),
            "pipe_to_file_mib_s": round(mib / statistics.median(to_file), 1),
            "ratio_vs_raw_pipe": round(statistics.median(raw) / statistics.median(via), 3),
            "ratio_vs_pipe_to_file": round(statistics.median(to_file) / statistics.median(via), 3),
        }
        print(json.dumps(result, indent=2))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
