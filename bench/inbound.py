"""Inbound rows of the Cleanroom benchmark (BENCH_ONLY=inbound runs only these): a request to
an HTTP server in a sandbox through `sandbox expose` (the server's unix socket,
/_sandbox/<exposure>/…, token in the query) next to, in the same run, the same request made
directly to the sandbox's port from inside the sandbox (its loopback). Both with a fresh
connection per request (Python's http.client, so the client costs are alike); p50/p99 of
BENCH_INBOUND_RUNS (default: BENCH_RUNS, at most 500) requests, and the added p50.
Then resume on request: a sandbox with --suspend-after 1 is left to be suspended, and one
request through its exposure is timed (that request resumes it), BENCH_INBOUND_RESUMES
(default 5) times: median and max. The same rows again under "gvisor" (at most 100
requests: each connection is a relay `runsc exec`'d in the sandbox) when runsc is installed.
"""
import json, os, shutil, statistics, subprocess, sys, time

APP = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
http.server.ThreadingHTTPServer(("0.0.0.0", int(sys.argv[1])), H).serve_forever()
'''

# Requests in a loop; latencies in ms on stdout as JSON (after `warm` untimed ones).
# argv: host port path n warm [unix socket]
CLIENT = r'''
import http.client, json, socket, sys, time
host, port, path, n, warm = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sock = sys.argv[6] if len(sys.argv) > 6 else None
class U(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sock)
out = []
for i in range(n + warm):
    t = time.perf_counter()
    c = U("localhost") if sock else http.client.HTTPConnection(host, port)
    c.request("GET", path); r = c.getresponse(); body = r.read(); c.close()
    if r.status != 200: raise SystemExit(f"status {r.status}: {body[:200]!r}")
    if i >= warm: out.append((time.perf_counter() - t) * 1e3)
print(json.dumps(out))
'''


def _run(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"bench: {cmd[:4]} failed: {r.stderr.decode()[-400:]}")
    return r.stdout.decode()


def _pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _stats(xs):
    return {"n": len(xs), "p50_ms": round(_pct(xs, 50), 3), "p99_ms": round(_pct(xs, 99), 3)}


def _start(binary, env, sid, port):
    script = (f"cat > /tmp/app.py <<'EOF'\n{APP}\nEOF\n"
              f"setsid python3 /tmp/app.py {port} </dev/null >/dev/null 2>&1 &\n"
              f"for i in $(seq 100); do curl -fsS --noproxy '*' -m 1 http://127.0.0.1:{port}/ >/dev/null 2>&1 "
              f"&& exit 0; sleep 0.1; done; exit 1")
    _run([binary, "exec", "-n", "--in", sid, "--", "sh", "-c", script], env)


def _expose(binary, env, sid, port):
    return json.loads(_run([binary, "sandbox", "expose", sid, str(port), "--json"], env))["path"]


def _rows(binary, env, n, resumes, sock, rt):
    """The rows for one runtime (`rt`: the `--runtime` arguments)."""
    sid = _run([binary, "sandbox", "create", *rt], env).strip()
    try:
        _start(binary, env, sid, 8000)
        path = _expose(binary, env, sid, 8000)
        print(f"bench: inbound {n} requests direct and through expose {rt}", file=sys.stderr)
        direct = json.loads(_run([binary, "exec", "-n", "--in", sid, "--", "python3", "-c", CLIENT,
                                  "127.0.0.1", "8000", "/", str(n), "5"], env))
        exposed = json.loads(_run([sys.executable, "-c", CLIENT, "localhost", "0", path, str(n), "5", sock], env))
    finally:
        subprocess.run([binary, "sandbox", "rm", sid], env=env, capture_output=True)
    d, e = _stats(direct), _stats(exposed)
    result = {"direct_in_sandbox": d, "through_expose": e,
              "added_p50_ms": round(e["p50_ms"] - d["p50_ms"], 3)}

    sid = _run([binary, "sandbox", "create", *rt, "--suspend-after", "1"], env).strip()
    times = []
    try:
        _start(binary, env, sid, 8000)
        path = _expose(binary, env, sid, 8000)
        for i in range(resumes):
            deadline = time.time() + 60
            while json.loads(_run([binary, "sandbox", "inspect", "--json", sid], env))["status"] != \
                    "SANDBOX_STATUS_PAUSED":
                if time.time() > deadline:
                    raise SystemExit("bench: the sandbox was not suspended")
                time.sleep(0.2)
            print(f"bench: inbound resume {i + 1}/{resumes} {rt}", file=sys.stderr)
            times += json.loads(_run([sys.executable, "-c", CLIENT, "localhost", "0", path, "1", "0", sock], env))
    finally:
        subprocess.run([binary, "sandbox", "rm", sid], env=env, capture_output=True)
    result["resume_on_request"] = {"n": len(times), "median_ms": round(statistics.median(times), 3),
                                   "max_ms": round(max(times), 3)}
    return result


def run(binary, env, runs):
    """The linux runtime's rows at the top level; gvisor's (a relay per connection, and a
    resume that restores released memory) under "gvisor" when runsc is installed."""
    n = int(os.environ.get("BENCH_INBOUND_RUNS", str(min(runs, 500))))
    resumes = int(os.environ.get("BENCH_INBOUND_RESUMES", "5"))
    sock = env["CLEANROOM_HOST"].removeprefix("unix://")
    result = _rows(binary, env, n, resumes, sock, [])
    if shutil.which("runsc"):
        try:
            result["gvisor"] = _rows(binary, env, min(n, 100), resumes, sock, ["--runtime", "gvisor"])
        except SystemExit as e:
            result["gvisor"] = {"error": str(e)}
    else:
        result["gvisor"] = {"skipped": "runsc is not installed (scripts/deps.sh installs it)"}
    return result
