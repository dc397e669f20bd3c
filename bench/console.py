"""Console bench rows (issue 13): keystroke echo round trip through `cleanroom console`
next to the same keystroke echoed by a local PTY, in the same run.

Round trip through the console: one byte written to the local terminal (a PTY this script
holds) -> the CLI in raw mode -> Input frame over QUIC -> the server writes the guest's PTY
master -> the guest's line discipline echoes it -> the server reads it into the durable log
-> the attach streams it -> Output frame over QUIC -> the CLI writes it to the local
terminal -> this script reads it. The reference: the same byte written to a local PTY whose
slave runs `cat` (the kernel's line discipline echoes it), no network, no server.

Run alone with BENCH_ONLY=console (bench/run.py), JSON out.
"""
import os, pty, select, statistics, sys, time

KEYS = int(os.environ.get("BENCH_CONSOLE_KEYS", "300"))


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def read_until(fd, needle, limit=30.0):
    buf = b""
    end = time.monotonic() + limit
    while needle not in buf:
        left = end - time.monotonic()
        if left <= 0:
            raise SystemExit(f"bench console: no {needle!r} in time; got {buf[-300:]!r}")
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 65536)
            if not chunk:
                raise SystemExit(f"bench console: terminal closed; got {buf[-300:]!r}")
            buf += chunk
    return buf


def echo_rtts(fd, n):
    """Write one key at a time; time until its echo is read back."""
    xs = []
    for i in range(n + 10):
        t = time.perf_counter()
        os.write(fd, b"k")
        read_until(fd, b"k", 10.0)
        if i >= 10:  # warm-up keys
            xs.append((time.perf_counter() - t) * 1000)
        if i % 200 == 199:  # stay far below the line discipline's 4 KiB line
            os.write(fd, b"\r")
            read_until(fd, b"\n", 10.0)
    return xs


def spawn(argv, env):
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def row(xs):
    return {"keys": len(xs), "p50_ms": round(pct(xs, 50), 3), "p99_ms": round(pct(xs, 99), 3),
            "mean_ms": round(statistics.mean(xs), 3)}


def console_bench(binary, env):
    print(f"bench: console keystroke echo x{KEYS}", file=sys.stderr)
    # Reference: a local PTY echoing through `cat`.
    pid, fd = spawn(["sh", "-c", "echo READY-$((1+1)); exec cat"], dict(os.environ, TERM="xterm"))
    read_until(fd, b"READY-2")
    local = echo_rtts(fd, KEYS)
    os.write(fd, b"\r\x04")  # end the line, then EOF for cat
    os.waitpid(pid, 0)
    os.close(fd)
    # Through cleanroom console (new sandbox, torn down at the end).
    pid, fd = spawn([binary, "console", "--", "sh", "-c", "echo READY-$((1+1)); exec cat"],
                    dict(env, TERM="xterm"))
    read_until(fd, b"READY-2")
    via = echo_rtts(fd, KEYS)
    os.write(fd, b"\r\x04")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench console: cleanroom console exited {status}")
    c, l = row(via), row(local)
    return {"keystroke_echo_console": c, "keystroke_echo_local_pty": l,
            "p50_ratio": round(c["p50_ms"] / l["p50_ms"], 1) if l["p50_ms"] else None,
            "p50_added_ms": round(c["p50_ms"] - l["p50_ms"], 3),
            "p99_added_ms": round(c["p99_ms"] - l["p99_ms"], 3)}
