"""Files API rows of the Cleanroom benchmark (BENCH_ONLY=files runs only these).

Upload and download of BENCH_FILE_MB (default 256) MiB through the files API
(`cleanroom cp`, i.e. chunked WriteSandboxFile / streamed ReadSandboxFile with sha256 on
both ends, every byte written by the sandbox's own helper) next to, in the same run:
  * `cat` through a pipe on the host (`cat SRC | cat > DST`): the floor of moving the bytes;
  * the same bytes through a sandbox's stdin/stdout (`cleanroom exec … sh -c 'cat > F'`,
    `cleanroom exec … cat F`): what an agent platform would do without a files API.
Medians of BENCH_FILE_RUNS (default 3) runs each, MiB/s and ratios (API time / reference
time, so 1.0 = as fast as the reference, 2.0 = twice as long).
"""
import hashlib, os, statistics, subprocess, sys, time


def _timed(cmd, env=None, stdin=None, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                       stdout=stdout, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"bench: {cmd} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return dt


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _row(times, mib):
    med = statistics.median(times)
    return {"runs": len(times), "median_s": round(med, 3), "mib_s": round(mib / med, 1),
            "min_s": round(min(times), 3), "max_s": round(max(times), 3)}


def files_bench(binary, env, tmp):
    mb = int(os.environ.get("BENCH_FILE_MB", "256"))
    runs = int(os.environ.get("BENCH_FILE_RUNS", "3"))
    size = mb << 20
    src = os.path.join(tmp, "files-src.bin")
    with open(src, "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    want = _sha(src)
    # Room for the file three times (API copy, its replacement, stdin copy) under the disk limit of each
    # writable filesystem; tmpfs pages count against the memory limit.
    out = subprocess.run([binary, "sandbox", "create", "--memory-mb", str(4 * mb + 512), "--disk-mb",
                          str(3 * mb + 64)], env=env, check=True, capture_output=True).stdout
    sid = out.decode().strip()
    up, down, pipe, ex_in, ex_out = [], [], [], [], []
    back = os.path.join(tmp, "files-back.bin")
    try:
        for i in range(runs):
            print(f"bench: files {mb} MiB run {i + 1}/{runs}", file=sys.stderr)
            pipe.append(_timed(["sh", "-c", f"cat {src} | cat > {back}"]))
            os.remove(back)
            up.append(_timed([binary, "cp", "--no-progress", src, f"{sid}:/workspace/api.bin"], env))
            down.append(_timed([binary, "cp", "--no-progress", f"{sid}:/workspace/api.bin", back], env))
            if _sha(back) != want:
                raise SystemExit("bench: files download is not byte-exact")
            os.remove(back)
            with open(src, "rb") as f:
                ex_in.append(_timed([binary, "exec", "--in", sid, "--", "sh", "-c",
                                     "cat > /workspace/stdin.bin"], env, stdin=f))
            with open(back, "wb") as f:
                ex_out.append(_timed([binary, "exec", "-n", "--in", sid, "--", "cat", "/workspace/stdin.bin"],
                                     env, stdout=f))
            os.remove(back)
    finally:
        subprocess.run([binary, "sandbox", "rm", sid], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for p in (src, back):
            try:
                os.remove(p)
            except OSError:
                pass
    mp = statistics.median(pipe)
    return {
        "bytes": size,
        "upload_api": _row(up, mb),
        "download_api": _row(down, mb),
        "cat_pipe": _row(pipe, mb),
        "exec_stdin_cat": _row(ex_in, mb),
        "exec_stdout_cat": _row(ex_out, mb),
        "upload_vs_cat_pipe_ratio": round(statistics.median(up) / mp, 2),
        "download_vs_cat_pipe_ratio": round(statistics.median(down) / mp, 2),
        "upload_vs_exec_stdin_ratio": round(statistics.median(up) / statistics.median(ex_in), 2),
        "download_vs_exec_stdout_ratio": round(statistics.median(down) / statistics.median(ex_out), 2),
    }
