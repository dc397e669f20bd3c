"""Registry mediation bench (issue 14): `npm ci` of one lockfile in a fresh sandbox, first
install (the gateway fetches and verifies every artifact from the upstream) vs cached install
(the shared content-addressed cache serves them), with the same `npm ci` run on the host
straight against the registry as the same-run reference.

The registry is a real verdaccio (scripts/deps.sh installs it under .tools/) on loopback,
over HTTPS with a throwaway CA, no uplinks, holding BENCH_REG_PACKAGES packages this bench
publishes (each a tarball of BENCH_REG_KIB KiB of incompressible data). A "first" install
runs after the server's artifact cache directory is emptied; the cache has no in-memory
index, so that is a cold cache. Upstream artifact requests are counted from verdaccio's log.

Run alone with BENCH_ONLY=registries bench/run.sh.
"""
import base64, hashlib, io, json, os, re, shutil, signal, socket, ssl, statistics, subprocess, sys, tarfile
import tempfile, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "registry.test"
PACKAGES = int(os.environ.get("BENCH_REG_PACKAGES", "40"))
KIB = int(os.environ.get("BENCH_REG_KIB", "256"))
ROUNDS = int(os.environ.get("BENCH_REG_ROUNDS", "5"))


def _pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    f, c = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def _free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def _pki(tmp):
    ca_key, ca, key, csr, crt, ext = (os.path.join(tmp, n) for n in
                                      ("ca.key", "ca.pem", "leaf.key", "leaf.csr", "leaf.pem", "leaf.ext"))
    q = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=cleanroom registry bench CA", "-keyout", ca_key, "-out", ca], **q)
    subprocess.run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", f"/CN={HOST}", "-keyout", key, "-out", csr], **q)
    with open(ext, "w") as f:
        f.write(f"subjectAltName=DNS:{HOST},IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                    "-days", "1", "-extfile", ext, "-out", crt], **q)
    return ca, crt, key


def _tarball(name, version):
    files = {"package/package.json": json.dumps({"name": name, "version": version, "main": "index.js"}).encode(),
             "package/index.js": b"module.exports = 1;\n",
             "package/data.bin": os.urandom(KIB << 10)}
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as t:
        for path, body in files.items():
            info = tarfile.TarInfo(path); info.size = len(body); info.mode = 0o644
            t.addfile(info, io.BytesIO(body))
    return raw.getvalue()


def _publish(origin, ctx, name, version):
    tgz = _tarball(name, version)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
    file = f"{name}-{version}.tgz"
    doc = {"_id": name, "name": name, "dist-tags": {"latest": version},
           "versions": {version: {"name": name, "version": version, "_id": f"{name}@{version}",
                                  "dist": {"integrity": integrity, "tarball": f"{origin}/{name}/-/{file}"}}},
           "_attachments": {file: {"content_type": "application/octet-stream",
                                   "data": base64.b64encode(tgz).decode(), "length": len(tgz)}}}
    req = urllib.request.Request(f"{origin}/{name}", data=json.dumps(doc).encode(), method="PUT",
                                 headers={"content-type": "application/json"})
    urllib.request.urlopen(req, context=ctx).read()
    return integrity


def _repo(tmp, origin, deps):
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    dependencies = {n: v for n, v, _ in deps}
    packages = {"": {"name": "app", "version": "1.0.0", "dependencies": dependencies}}
    for n, v, integrity in deps:
        packages[f"node_modules/{n}"] = {"version": v, "resolved": f"{origin}/{n}/-/{n}-{v}.tgz",
                                         "integrity": integrity}
    files = {
        "package.json": json.dumps({"name": "app", "version": "1.0.0", "dependencies": dependencies}),
        "package-lock.json": json.dumps({"name": "app", "version": "1.0.0", "lockfileVersion": 3,
                                         "requires": True, "packages": packages}),
        ".npmrc": f"registry={origin}/\ncache=/tmp/npm-cache\naudit=false\nfund=false\nupdate-notifier=false\n",
        "cleanroom.yaml": ("version: 1\nrepository: {}\nsandbox:\n  registries:\n    - kind: npm\n"
                           f"      lockfile: package-lock.json\n      upstream: '{origin[len('https://'):]}'\n"),
    }
    for name, body in files.items():
        with open(os.path.join(repo, name), "w") as f:
            f.write(body)
    git = ["git", "-C", repo, "-c", "user.email=b@example.invalid", "-c", "user.name=b"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "bench"]):
        subprocess.run(git + args, check=True, stdout=subprocess.DEVNULL)
    return repo


def _timed(cmd, env=None, cwd=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        raise SystemExit(f"bench: {cmd} failed ({r.returncode}): {r.stderr.decode()[-800:]}")
    return dt


def _tarball_requests(log):
    """Tarball GETs verdaccio received (its log has one `requested 'GET /….tgz'` line per
    request; the `req: …` status lines come twice per request)."""
    with open(log, errors="replace") as f:
        return len(re.findall(r"requested 'GET [^']*\.tgz'", f.read()))


def _row(xs):
    return {"runs": len(xs), "p50_ms": round(_pct(xs, 50), 1), "p99_ms": round(_pct(xs, 99), 1),
            "mean_ms": round(statistics.mean(xs), 1)}


def run(binary):
    """First vs cached `npm ci` through the gateway, and the host's direct `npm ci`."""
    verdaccio = os.path.join(ROOT, ".tools/node_modules/.bin/verdaccio")
    if not os.path.exists(verdaccio):
        raise SystemExit("bench: verdaccio missing: run scripts/deps.sh")
    print(f"bench: registries: {PACKAGES} packages of {KIB} KiB, {ROUNDS} rounds", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="cleanroom-bench-reg-")
    procs = []
    try:
        ca, crt, key = _pki(tmp)
        port = _free_port()
        vlog = os.path.join(tmp, "verdaccio.log")
        with open(os.path.join(tmp, "verdaccio.yaml"), "w") as f:
            f.write(f"storage: {tmp}/storage\nauth:\n  htpasswd:\n    file: {tmp}/htpasswd\n    max_users: -1\n"
                    "uplinks: {}\npackages:\n  '**':\n    access: $all\n    publish: $all\n"
                    f"https:\n  key: {key}\n  cert: {crt}\n"
                    "logs: { type: stdout, format: json, level: http }\nweb: { enable: false }\n")
        procs.append(subprocess.Popen([verdaccio, "--config", os.path.join(tmp, "verdaccio.yaml"),
                                       "--listen", f"https://127.0.0.1:{port}"],
                                      stdin=subprocess.DEVNULL, stdout=open(vlog, "w"), stderr=subprocess.STDOUT))
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False  # publishing goes to 127.0.0.1; the gateway checks the name
        direct_origin = f"https://127.0.0.1:{port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{direct_origin}/-/ping", context=ctx).read(); break
            except OSError:
                time.sleep(0.1)
        origin = f"https://{HOST}:{port}"
        deps = [(f"bench-pkg-{i}", "1.0.0", _publish(direct_origin, ctx, f"bench-pkg-{i}", "1.0.0"))
                for i in range(PACKAGES)]
        repo = _repo(tmp, origin, deps)

        state = os.path.join(tmp, "state")
        sock = os.path.join(tmp, "s.sock")
        procs.append(subprocess.Popen([binary, "serve", "--listen", "unix://" + sock, "--state-dir", state,
                                       "--egress-resolve", f"{HOST}=127.0.0.1", "--upstream-ca", ca],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(tmp, "server.log"), "w")))
        for _ in range(200):
            try:
                s = socket.socket(socket.AF_UNIX); s.connect(sock); s.close(); break
            except OSError:
                time.sleep(0.05)
        env = dict(os.environ, CLEANROOM_HOST="unix://" + sock)
        policy = os.path.join(repo, "cleanroom.yaml")
        install = [binary, "exec", "-n", "--policy", policy, "--", "npm", "ci"]
        noop = [binary, "exec", "-n", "--policy", policy, "--", "true"]
        cache = os.path.join(state, "registry-cache")
        _timed(install, env)  # warm up (page cache, node startup)
        first, cached, direct, bootstrap = [], [], [], []
        upstream_first, upstream_cached = [], []
        # The host reference: the same npm ci of the same packages straight to the registry,
        # from a copy of the repo whose lockfile and .npmrc name 127.0.0.1 (and trust the CA).
        ref = os.path.join(tmp, "ref")
        shutil.copytree(repo, ref)
        for name in ("package-lock.json", ".npmrc"):
            p = os.path.join(ref, name)
            with open(p) as f:
                body = f.read().replace(origin, direct_origin)
            with open(p, "w") as f:
                f.write(body.replace("cache=/tmp/npm-cache", f"cache={tmp}/ref-npm-cache\ncafile={ca}"))
        ref_env = dict(os.environ, NODE_EXTRA_CA_CERTS=ca)
        for _ in range(ROUNDS):
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache, exist_ok=True)
            before = _tarball_requests(vlog)
            first.append(_timed(install, env))
            mid = _tarball_requests(vlog)
            cached.append(_timed(install, env))
            upstream_first.append(mid - before)
            upstream_cached.append(_tarball_requests(vlog) - mid)
            bootstrap.append(_timed(noop, env))
            shutil.rmtree(os.path.join(ref, "node_modules"), ignore_errors=True)
            shutil.rmtree(os.path.join(tmp, "ref-npm-cache"), ignore_errors=True)
            direct.append(_timed(["npm", "ci"], ref_env, cwd=ref))
        return {
            "packages": PACKAGES, "tarball_kib": KIB,
            "npm_ci_first_install": _row(first),
            "npm_ci_cached_install": _row(cached),
            "npm_ci_host_direct_reference": _row(direct),
            "exec_true_same_policy_bootstrap": _row(bootstrap),
            "cached_vs_first_p50_ratio": round(_pct(cached, 50) / _pct(first, 50), 3),
            "first_vs_host_direct_p50_ratio": round(_pct(first, 50) / _pct(direct, 50), 3),
            "upstream_tarball_requests_first": upstream_first,
            "upstream_tarball_requests_cached": upstream_cached,
            "note": ("each install: a new sandbox, checkout of the committed repo, npm ci with an empty npm "
                     "cache; 'first' after emptying the server's artifact cache; the host reference has no "
                     "sandbox, checkout or gateway"),
        }
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)
