"""The web console with many sandboxes listed (issue 36): `BENCH_ONLY=web`,
`BENCH_WEB_N` (default 1000) idle sandboxes. Called from run.py (`web_bench`).

Its own server (unix socket, `--ui-listen` on loopback, a tokens file; no sandbox caps),
filled with N host-view sandboxes through the CLI, then Debian's headless Chromium
(Playwright, .tools/test-venv) logged in with a token:
  * first load: a fresh browser context opening /ui/ until the list shows all N rows
    (HTML shell, five ES modules, the stylesheet, the session, ListSandboxes, rendering of
    the first 100 rows — the page keeps no more until scrolled);
  * live update: with the page open, `sandbox create` through the CLI; the time from the
    CLI's return (the sandbox is READY and committed) until its row is on the page — the
    live signal, the page's ListSandboxes of what changed since its last answer
    (changed_since) and the re-render;
  * the same two with an empty list, as the same-run reference.
If N sandboxes cannot be made here, the row says how many were (`listed`) and why.
"""
import hashlib, os, shutil, socket, statistics, subprocess, sys, tempfile, time

N = int(os.environ.get("BENCH_WEB_N", "1000"))
RUNS = int(os.environ.get("BENCH_WEB_RUNS", "7"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-web-token-5b7d9f1a3c5e7a9b1d3f5a7c9e1b3d5f"


def _p(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(statistics.median(xs), 1), "p90_ms": round(_p(xs, 90), 1),
            "max_ms": round(max(xs), 1)}


def _measure(pw, url, binary, env, expect_n):
    """(first-load ms list, live-update ms list) for a list of `expect_n` sandboxes."""
    browser = pw.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                 args=["--no-sandbox"])
    loads, live = [], []
    try:
        # Log in once; each first load is a new context holding that session's cookie.
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(f"{url}/ui/login")
        page.fill("#token", TOKEN)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{url}/ui/")
        state = ctx.storage_state()
        ctx.close()
        want = f"{expect_n} sandbox" + ("" if expect_n == 1 else "es")
        for _ in range(RUNS):
            c = browser.new_context(storage_state=state)
            p = c.new_page()
            t = time.perf_counter()
            p.goto(f"{url}/ui/")
            p.wait_for_function("w => document.getElementById('count') && document.getElementById('count').textContent === w",
                                arg=want, timeout=120_000)
            loads.append((time.perf_counter() - t) * 1000)
            c.close()
        c = browser.new_context(storage_state=state)
        p = c.new_page()
        p.goto(f"{url}/ui/")
        p.wait_for_function("w => document.getElementById('count').textContent === w", arg=want, timeout=120_000)
        made = []
        for _ in range(RUNS):
            r = subprocess.run([binary, "sandbox", "create", "--no-pool"], env=env, capture_output=True, text=True, check=True)
            done = time.perf_counter()
            sbx = r.stdout.strip()
            p.wait_for_selector(f'tr[data-id="{sbx}"]', timeout=120_000)
            live.append((time.perf_counter() - done) * 1000)
            made.append(sbx)
        c.close()
        for i in range(0, len(made), 64):
            subprocess.run([binary, "sandbox", "rm", *made[i:i + 64]], env=env, capture_output=True)
        # Back to expect_n (the removals' events settle before the next series).
        time.sleep(1)
    finally:
        browser.close()
    return loads, live


def web_bench(binary):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sys.path.insert(0, next(iter(__import__("glob").glob(os.path.join(ROOT, ".tools/test-venv/lib/python3*/site-packages"))), ""))
        from playwright.sync_api import sync_playwright
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-web-")
    sock, state = os.path.join(tmp, "s.sock"), os.path.join(tmp, "state")
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(f"sha256:{hashlib.sha256(TOKEN.encode()).hexdigest()} bench admin\n")
    os.chmod(tokens, 0o600)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", state,
                               "--ui-listen", url, "--tokens-file", tokens,
                               "--max-sandboxes", "0", "--max-sandboxes-per-principal", "0"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "server.log"), "w"))
    env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
    out = {"wanted": N}
    ids = []
    try:
        for _ in range(200):
            try:
                c = socket.socket(socket.AF_UNIX); c.connect(sock); c.close(); break
            except OSError:
                time.sleep(0.05)
        with sync_playwright() as pw:
            l0, u0 = _measure(pw, url, binary, env, 0)
            print(f"bench(web): filling {N} sandboxes", file=sys.stderr)
            t = time.perf_counter()
            while len(ids) < N:
                r = subprocess.run([binary, "sandbox", "create", "--no-pool"], env=env, capture_output=True, text=True)
                if r.returncode != 0 or not r.stdout.strip().startswith("sbx_"):
                    out["fill_stopped_at"] = len(ids)
                    out["fill_error"] = r.stderr[-300:]
                    break
                ids.append(r.stdout.strip())
                if len(ids) % 200 == 0:
                    print(f"bench(web): {len(ids)} sandboxes", file=sys.stderr)
            out["fill_seconds"] = round(time.perf_counter() - t, 1)
            out["listed"] = len(ids)
            ln, un = _measure(pw, url, binary, env, len(ids))
        out.update({
            "first_load_empty": _row(l0),
            "first_load_listed": _row(ln),
            "live_update_empty": _row(u0),
            "live_update_listed": _row(un),
            "first_load_p50_ratio": round(statistics.median(ln) / statistics.median(l0), 2),
            "live_update_p50_ratio": round(statistics.median(un) / statistics.median(u0), 2),
        })
        for i in range(0, len(ids), 64):
            subprocess.run([binary, "sandbox", "rm", *ids[i:i + 64]], env=env, capture_output=True)
    finally:
        server.send_signal(2)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    import json
    print(json.dumps(web_bench(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/release/cleanroom"))))
