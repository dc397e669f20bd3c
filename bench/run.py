#!/usr/bin/env python3
"""Cleanroom benchmark: one command, JSON on stdout.

Measures, in the same run and on the same machine:
  * `cleanroom exec -n -- true` end to end through a real server (p50/p99, N runs)
    next to `bwrap --unshare-all ... true` (the reference), and their ratio;
  * sandbox create->READY (CreateSandbox RPC through the CLI) p50;
  * `cleanroom exec --in ID -- true` in an existing sandbox over the unix socket and over
    an authenticated TCP listener (bearer token) of a second server, and their p50 gap;
  * stdout throughput of `head -c 1G /dev/zero` streamed through `cleanroom exec`
    next to the same bytes through a raw pipe, and through a pipe into a file (the floor
    of what a durable output log costs);
  * HTTP through the egress gateway (curl inside a sandbox, transparent mode) next to the
    same curl on the host straight to the loopback server: download throughput of a
    64 MiB body and per-request latency (curl's own timings, so exec overhead is excluded);
  * HTTPS with secret injection (the gateway terminates TLS with the sandbox CA, writes the
    secret into the header, redacts the response, and speaks verified TLS upstream) next to
    the same HTTPS request made on the host: latency and 64 MiB download throughput.
Progress goes to stderr. BENCH_BINARY=path skips the release build and uses that binary.
BENCH_RUNS=N (default 200) samples per latency series.

Rows come in groups; BENCH_ONLY=group[,group...] runs only those (a full run: every group but
scale, memory and web):
  sdk         the SDK round trips (bench/sdk.py)
  api         exec-in-existing-sandbox (unix vs TCP) and the in-process API round trip (bench/api.py)
  exec        exec vs bwrap, create->READY, exec in an existing sandbox
  stream      stdout throughput (BENCH_BYTES, default 1 GiB)
  gateway     the egress gateway rows (HTTP, HTTPS with secret injection)
  approvals   egress approval / learn mode rows (bench/approvals.py)
  registries  first vs cached `npm ci` through the registry mediation (bench/registries.py)
  snapshots   snapshot/restore/fork/pause rows, plus the api rows (bench/snapshots.py)
  console     the console's keystroke echo (bench/console.py)
  files       the files API rows (bench/files.py)
  pools       warm pools, attestation (bench/pools.py)
  scale       BENCH_SCALE_N (default 5000) idle sandboxes on one server (bench/scale.py)
  memory      host memory per idle sandbox, whole and broken down (bench/memory.py)
  web         the web console's first load and live-update delay with BENCH_WEB_N (default
              1000) sandboxes listed, in headless Chromium (bench/web.py)
  cluster     a 3-member etcd and three `serve --cluster` hosts on loopback: create->READY and
              `exec --in` through the owner vs another member, creates/s with 1 vs 3 hosts,
              etcd operations per create (bench/cluster.py)

A row that cannot run does not lose the others: it becomes {"error": "..."} in the JSON, its
name is listed in "failed", the JSON is printed anyway and the exit status is 1 (0 when every
row ran; a row reporting {"skipped": ...} is not a failure). bench/rows.py; its self-test is
crates/cli/tests/bench.rs.

A run refuses to start while another server's sandboxes are alive on the host
(BENCH_ALLOW_BUSY_HOST=1 measures anyway, with a warning); an idle server (its zygote) is not
counted.
"""
import hashlib, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

# One module per area (bench/<area>.py), each with a same-run reference of its own.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import api  # noqa: E402  the in-process API round-trip rows (BENCH_ONLY=api)
import approvals as approvals_bench  # noqa: E402  ask / learn rows (BENCH_ONLY=approvals)
import registries  # noqa: E402  first vs cached npm ci (BENCH_ONLY=registries)
import snapshots  # noqa: E402  snapshot / restore / fork / pause (BENCH_ONLY=snapshots)
from console import console_bench  # noqa: E402  keystroke echo (BENCH_ONLY=console)
from files import files_bench  # noqa: E402  upload/download rows (BENCH_ONLY=files)
from pools import pools_bench  # noqa: E402  warm pools, attestation, scale (BENCH_ONLY=pools)
from rows import Rows, live_sandboxes  # noqa: E402  row failures -> {"error"}, the busy-host check

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


WEB = r'''
import http.server, socketserver, sys
BIG = b"x" * (64 << 20)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = BIG if self.path == "/big" else b"ok"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S(("127.0.0.1", int(sys.argv[1])), H)
if len(sys.argv) > 3:  # cert, key: serve HTTPS
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
'''

SECRET_VALUE = "bench-secret-value-0123456789"


def make_pki(tmp):
    """A throwaway CA and a certificate for secret.test signed by it (openssl CLI)."""
    ca_key, ca, key, csr, crt, ext = (os.path.join(tmp, n) for n in
                                      ("ca.key", "ca.pem", "leaf.key", "leaf.csr", "leaf.pem", "leaf.ext"))
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=cleanroom bench CA", "-keyout", ca_key, "-out", ca], **q)
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", "/CN=secret.test", "-keyout", key, "-out", csr], **q)
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:secret.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                    "-days", "1", "-extfile", ext, "-out", crt], **q)
    return ca, crt, key


def shell_curl_times(prefix, url, n, env=None, extra=""):
    """Like curl_times, through `sh -c` so a placeholder in the sandbox env can be used."""
    outs = " ".join(f"-o /dev/null '{url}'" for _ in range(n))
    script = f"curl -s --noproxy '*' {extra} -w '%{{time_total}} %{{speed_download}}\\n' {outs}"
    r = subprocess.run(prefix + ["sh", "-c", script], env=env, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"bench: {script[:200]} failed ({r.returncode}): {r.stderr.decode()[-600:]}")
    out = r.stdout.decode().split()
    return [float(t) for t in out[0::2]], [float(v) for v in out[1::2]]


def secret_bench(binary, env, tmp, port, ca):
    print("bench: HTTPS with secret injection through the gateway", file=sys.stderr)
    policy = os.path.join(tmp, "secret.yaml")
    with open(policy, "w") as f:
        f.write(f"version: 1\nsandbox:\n  network:\n    allow:\n      - host: secret.test\n        ports: [{port}]\n"
                "  secrets:\n    BENCH_TOKEN:\n      hosts: [secret.test]\n")
    sbx = subprocess.run([binary, "sandbox", "create", "--policy", policy], env=env, check=True,
                         capture_output=True).stdout.decode().strip()
    inside = [binary, "exec", "-n", "--in", sbx, "--"]
    url = f"https://secret.test:{port}"
    header = "-H \"Authorization: Bearer $BENCH_TOKEN\""
    # The host-side client trusts a bundle of the same shape as the sandbox's (system CAs +
    # one extra): OpenSSL 3 spends ~25 ms parsing a full bundle per process, on both sides.
    bundle = os.path.join(tmp, "host-bundle.pem")
    with open(bundle, "w") as out:
        for part in ("/etc/ssl/certs/ca-certificates.crt", ca):
            with open(part) as f:
                out.write(f.read().rstrip("\n") + "\n")
    direct = f"--cacert {bundle} --resolve secret.test:{port}:127.0.0.1 -H 'Authorization: Bearer {SECRET_VALUE}'"
    try:
        n = min(RUNS, 200)
        lat_gw, _ = shell_curl_times(inside, f"{url}/small", n, env, header)
        lat_direct, _ = shell_curl_times([], f"{url}/small", n, None, direct)
        _, bw_gw = shell_curl_times(inside, f"{url}/big", 3, env, header)
        _, bw_direct = shell_curl_times([], f"{url}/big", 3, None, direct)
    finally:
        subprocess.run([binary, "sandbox", "rm", sbx], env=env, stdout=subprocess.DEVNULL)
    result = gateway_vs_direct(n, lat_gw, lat_direct, bw_gw, bw_direct)
    result["note"] = ("each request: a new curl process and TLS connection, trusting system CAs + one; "
                      "the gateway adds a second handshake and redaction")
    return result


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def curl_times(prefix, url, n, env=None):
    """curl's own total time per request (s) for n sequential requests, and bytes/s of the last."""
    cmd = prefix + ["curl", "-s", "--noproxy", "*", "-w", "%{time_total} %{speed_download}\\n"]
    for _ in range(n):
        cmd += ["-o", "/dev/null", url]
    r = subprocess.run(cmd, env=env, capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"bench: curl{' in a sandbox' if prefix else ''} failed ({r.returncode}): "
                         f"{r.stderr.decode()[-600:]}")
    out = r.stdout.decode().split()
    return [float(t) for t in out[0::2]], [float(v) for v in out[1::2]]


def gateway_vs_direct(n, lat_gw, lat_direct, bw_gw, bw_direct):
    """Per-request latency (s) and download speeds (bytes/s) through the gateway and direct."""
    ms = lambda xs, p: round(pct(xs, p) * 1000, 3)
    mibs = lambda xs: round(statistics.median(xs) / (1 << 20), 1)
    return {
        "requests": n,
        "latency_p50_ms_gateway": ms(lat_gw, 50),
        "latency_p50_ms_direct": ms(lat_direct, 50),
        "latency_p50_ratio": round(pct(lat_gw, 50) / pct(lat_direct, 50), 2),
        "latency_p99_ms_gateway": ms(lat_gw, 99),
        "latency_p99_ms_direct": ms(lat_direct, 99),
        "download_64mib_mib_s_gateway": mibs(bw_gw),
        "download_64mib_mib_s_direct": mibs(bw_direct),
        "throughput_ratio_gateway_vs_direct": round(statistics.median(bw_gw) / statistics.median(bw_direct), 3),
        # Two shared cores: a number means little without the load it was taken under.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def egress_bench(binary, env, tmp, port):
    print("bench: HTTP through the egress gateway", file=sys.stderr)
    policy = os.path.join(tmp, "egress.yaml")
    with open(policy, "w") as f:
        f.write(f"version: 1\nsandbox:\n  network:\n    allow:\n      - host: bench.test\n        ports: [{port}]\n")
    sbx = subprocess.run([binary, "sandbox", "create", "--policy", policy], env=env, check=True,
                         capture_output=True).stdout.decode().strip()
    inside = [binary, "exec", "-n", "--in", sbx, "--"]
    try:
        n = min(RUNS, 200)
        lat_gw, _ = curl_times(inside, f"http://bench.test:{port}/small", n, env)
        lat_direct, _ = curl_times([], f"http://127.0.0.1:{port}/small", n)
        _, bw_gw = curl_times(inside, f"http://bench.test:{port}/big", 3, env)
        _, bw_direct = curl_times([], f"http://127.0.0.1:{port}/big", 3)
    finally:
        subprocess.run([binary, "sandbox", "rm", sbx], env=env, stdout=subprocess.DEVNULL)
    return gateway_vs_direct(n, lat_gw, lat_direct, bw_gw, bw_direct)


def tcp_server(binary, tmp):
    """A second server on an authenticated loopback TCP listener: (process, env for the CLI)."""
    token = os.urandom(32).hex()
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write(f"sha256:{hashlib.sha256(token.encode()).hexdigest()} bench admin\n")
    os.chmod(tokens, 0o600)
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "--listen", f"http://127.0.0.1:{port}", "--tokens-file", tokens,
                             "--state-dir", os.path.join(tmp, "state-tcp")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "server-tcp.log"), "w"))
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    return proc, dict(os.environ, CLEANROOM_HOST=f"http://127.0.0.1:{port}", CLEANROOM_TOKEN=token)


BWRAP = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
         "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
         "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"]


def exec_existing(binary, env, label):
    out = subprocess.run([binary, "sandbox", "create"], env=env, check=True, capture_output=True).stdout
    sid = out.decode().strip()
    r = series(f"cleanroom exec --in ID -- true ({label})", [binary, "exec", "-n", "--in", sid, "--", "true"], env)
    subprocess.run([binary, "sandbox", "rm", sid], env=env, check=True, stdout=subprocess.DEVNULL)
    return r


GROUPS = ["sdk", "api", "exec", "stream", "gateway", "approvals", "registries", "snapshots", "console",
          "files", "gvisor", "checkpoint", "pools", "scale", "memory", "inbound", "web", "cluster"]
# Groups that start servers of their own (run.py's servers are not needed for them alone).
STANDALONE = {"registries", "pools", "scale", "memory", "web", "cluster"}
ONLY = {g for g in os.environ.get("BENCH_ONLY", "").split(",") if g}


def want(group):
    if not ONLY:
        return group not in ("scale", "memory", "web")  # those run only when named
    return group in ONLY or (group == "api" and "snapshots" in ONLY)  # snapshots: API rows too


def refuse_a_busy_host():
    """Another server's live sandboxes skew every row (CPU, the kernel's per-host walks,
    host-wide id blocks, memory cgroup costs): a run that started among them measured
    create->READY 3x too slow. Refuse to start unless BENCH_ALLOW_BUSY_HOST=1. Idle servers
    (the system server's zygote) do not count: bench/rows.py, live_sandboxes."""
    n = live_sandboxes()
    if n and os.environ.get("BENCH_ALLOW_BUSY_HOST") != "1":
        raise SystemExit(f"bench: {n} sandboxes of other servers are alive on this host; "
                         "stop those servers (or set BENCH_ALLOW_BUSY_HOST=1 to measure anyway)")
    if n:
        print(f"bench: warning: measuring with {n} other sandboxes alive", file=sys.stderr)


def stdout_throughput(binary, env, tmp):
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
    return {
        "bytes": BYTES,
        "cleanroom_exec_mib_s": round(mib / statistics.median(via), 1),
        "raw_pipe_mib_s": round(mib / statistics.median(raw), 1),
        "pipe_to_file_mib_s": round(mib / statistics.median(to_file), 1),
        "ratio_vs_raw_pipe": round(statistics.median(raw) / statistics.median(via), 3),
        "ratio_vs_pipe_to_file": round(statistics.median(to_file) / statistics.median(via), 3),
    }


def exec_rows(rows, binary, env):
    """exec vs bwrap, create->READY, then reuse: exec in an existing sandbox."""
    rows.measure("exec_true", series, "cleanroom exec -- true", [binary, "exec", "-n", "--", "true"], env)
    rows.measure("bwrap_true", series, "bwrap --unshare-all true", BWRAP)
    if rows.ok("exec_true", "bwrap_true"):
        rows.result["exec_true_vs_bwrap_p50_ratio"] = round(
            rows.result["exec_true"]["p50_ms"] / rows.result["bwrap_true"]["p50_ms"], 2)
    ids = []

    def create_ready():
        create = []
        for _ in range(min(RUNS, 50)):
            t = time.perf_counter()
            out = subprocess.run([binary, "sandbox", "create"], env=env, check=True, capture_output=True).stdout
            create.append((time.perf_counter() - t) * 1000)
            ids.append(out.decode().strip())
        return {"runs": len(create), "p50_ms": round(pct(create, 50), 3), "p99_ms": round(pct(create, 99), 3)}

    def in_existing():
        if not ids:
            raise SystemExit("bench: no sandbox (sandbox_create_ready failed)")
        return series("cleanroom exec --in ID -- true", [binary, "exec", "-n", "--in", ids[0], "--", "true"], env)

    rows.measure("sandbox_create_ready", create_ready)
    rows.measure("exec_true_in_existing_sandbox", in_existing)
    if ids:
        subprocess.run([binary, "sandbox", "rm", *ids], env=env, stdout=subprocess.DEVNULL)


def api_exec_in_existing_sandbox(binary, env, tcp_env):
    """The API's own round trip: unix socket vs authenticated TCP (TCP_NODELAY on both ends)."""
    unix_row = exec_existing(binary, env, "unix socket")
    tcp_row = exec_existing(binary, tcp_env, "tcp")
    return {"unix": unix_row, "tcp": tcp_row,
            "tcp_minus_unix_p50_ms": round(tcp_row["p50_ms"] - unix_row["p50_ms"], 3)}


def server_rows(rows, binary, env, tcp_env, tmp, web_port, tls_port, ca):
    """Every selected row that uses run.py's servers (and, in a full run, the others in their
    place in the order)."""
    if want("sdk"):
        rows.measure("sdk_exec_round_trip", __import__("sdk").sdk_rows, RUNS, env, tcp_env)
    if want("api"):
        rows.measure("api_exec_in_existing_sandbox", api_exec_in_existing_sandbox, binary, env, tcp_env)
        rows.measure("api_exec_round_trip", api.api_rows, env["CLEANROOM_HOST"], tcp_env["CLEANROOM_HOST"],
                     tcp_env["CLEANROOM_TOKEN"], RUNS)
    if want("exec"):
        exec_rows(rows, binary, env)
    if want("stream"):
        rows.measure("stdout_throughput", stdout_throughput, binary, env, tmp)
    if want("gateway"):
        rows.measure("egress_http", egress_bench, binary, env, tmp, web_port)
        rows.measure("egress_https_secret_injection", secret_bench, binary, env, tmp, tls_port, ca)
    if want("approvals"):
        rows.measure("egress_approvals", approvals_bench.run, binary, env, tmp, web_port)
    if want("registries"):
        rows.measure("registries", registries.run, binary)
    if want("snapshots"):
        rows.measure("snapshots", snapshots.run, binary, env, os.path.join(tmp, "state"), min(RUNS, 20))
    if want("console"):
        rows.measure("console", console_bench, binary, env)
    if want("files"):
        rows.measure("files", files_bench, binary, env, tmp)
    if want("inbound"):  # requests through `sandbox expose` vs direct, resume on request (bench/inbound.py)
        rows.measure("inbound", __import__("inbound").run, binary, env, RUNS)
    if want("gvisor"):  # the gvisor runtime vs bare runsc (bench/gvisor.py)
        rows.measure("gvisor", __import__("gvisor").run, binary, env, RUNS)
    if want("checkpoint"):  # memory checkpoints vs bare runsc (bench/checkpoint.py)
        rows.measure("checkpoint", __import__("checkpoint").run, binary, env,
                     os.path.join(tmp, "state"), RUNS)
    standalone_rows(rows, binary, skip_registries=True)


def standalone_rows(rows, binary, skip_registries=False):
    if want("registries") and not skip_registries:
        rows.measure("registries", registries.run, binary)
    if want("pools"):
        rows.measure("pools", pools_bench, binary, BWRAP)
    if want("scale"):  # many idle sandboxes on one server (bench/scale.py)
        rows.measure("scale", __import__("scale").scale_bench, binary)
    if want("memory"):  # host memory per idle sandbox (bench/memory.py)
        rows.measure("memory", __import__("memory").memory_bench, binary)
    if want("web"):  # the web console with many sandboxes listed (bench/web.py)
        rows.measure("web", __import__("web").web_bench, binary)
    if want("cluster"):  # etcd + three cluster hosts on loopback (bench/cluster.py)
        rows.measure("cluster", __import__("cluster").cluster_bench, binary)


def main():
    unknown = ONLY - set(GROUPS)
    if unknown:
        raise SystemExit(f"bench: unknown BENCH_ONLY {sorted(unknown)}; groups: {', '.join(GROUPS)}")
    refuse_a_busy_host()
    binary = os.environ.get("BENCH_BINARY")
    if not binary:
        subprocess.run(["cargo", "build", "--release", "--locked", "-p", "cleanroom-cli"], cwd=ROOT, check=True,
                       stdout=sys.stderr)
        binary = os.path.join(ROOT, "target/x86_64-unknown-linux-gnu/release/cleanroom")
    rows = Rows({"machine": {"cpus": os.cpu_count(), "kernel": os.uname().release}})
    if ONLY and ONLY <= STANDALONE:
        standalone_rows(rows, binary)
        sys.exit(rows.finish())
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-")
    sock = os.path.join(tmp, "s.sock")
    web_port = free_port()
    web = subprocess.Popen([sys.executable, "-c", WEB, str(web_port)], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ca, crt, key = make_pki(tmp)
    tls_port = free_port()
    tls_web = subprocess.Popen([sys.executable, "-c", WEB, str(tls_port), crt, key], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", os.path.join(tmp, "state"),
                               "--egress-resolve", "bench.test=127.0.0.1", "--egress-resolve", "secret.test=127.0.0.1",
                               "--upstream-ca", ca],
                              env=dict(os.environ, CLEANROOM_SECRET_BENCH_TOKEN=SECRET_VALUE),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(tmp, "server.log"), "w"))
    tcp, tcp_env = tcp_server(binary, tmp)
    try:
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
        server_rows(rows, binary, env, tcp_env, tmp, web_port, tls_port, ca)
    finally:
        tcp.send_signal(signal.SIGTERM)
        web.kill()
        tls_web.kill()
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        try:
            tcp.wait(timeout=20)
        except subprocess.TimeoutExpired:
            tcp.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(rows.finish())


if __name__ == "__main__":
    main()
