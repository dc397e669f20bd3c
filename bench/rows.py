"""How bench/run.py runs its rows and assembles its JSON, apart from what the rows measure.

A full run takes many minutes and touches npm, TLS, pools, consoles...: one row that cannot run
(a tool missing, a server refusing) must not throw away what the others measured. Each row runs
through `Rows.measure`: whatever it raises (the helpers raise SystemExit with the failing
command's stderr) becomes `{"error": "..."}` in its place and its name goes into the top-level
`failed` list; the JSON is printed in any case, and the run exits 1 when `failed` is non-empty
(0 otherwise). A row that decides it cannot apply (e.g. the SDK toolchain absent) reports
`{"skipped": "..."}` itself: that is not a failure.

A row that hangs (a server that never answers, a sandbox that never exits) would hold the whole
run: each row has a deadline, BENCH_ROW_TIMEOUT seconds (default 1800), enforced with SIGALRM in
the main thread. The alarm raises inside whatever the row waits on; `subprocess.run` kills its
child on the way out, and the row becomes `{"error": "timed out after N s"}` like any failure.

BENCH_FAIL=row[,row...] makes those rows fail before they start: the self-test
(crates/cli/tests/bench.rs) uses it to check the above with a real, short run.

Also here: the busy-host check (`live_sandboxes`), which counts other servers' *sandboxes*, not
their infrastructure: an idle server's zygote has the same argv as a sandbox's pid 1
(`cleanroom-init __sandbox-init`, docs/zygote.md) but is not one.
"""
import json, os, signal, sys, traceback

SANDBOX_ARGV = b"cleanroom-init\0__sandbox-init"


def live_sandboxes(proc="/proc"):
    """Sandboxes alive on the host, of any server: processes with the sandbox argv that are the
    pid 1 of a pid namespace below ours (`NSpid: <host pid> ... 1`). A zygote and a shim have
    the argv too but live in the server's pid namespace (one NSpid entry), so an idle server
    (e.g. the system server after install.sh) counts 0."""
    n = 0
    for pid in filter(str.isdigit, os.listdir(proc)):
        try:
            with open(os.path.join(proc, pid, "cmdline"), "rb") as f:
                if not f.read().startswith(SANDBOX_ARGV):
                    continue
            with open(os.path.join(proc, pid, "status")) as f:
                nspid = next((l.split()[1:] for l in f if l.startswith("NSpid:")), [])
        except OSError:
            continue
        n += len(nspid) >= 2 and nspid[-1] == "1"
    return n


class RowTimeout(Exception):
    """A row ran past its deadline (raised by the SIGALRM handler)."""


def _alarm(signum, frame):
    raise RowTimeout()


class Rows:
    def __init__(self, result=None, timeout=None):
        self.result = result if result is not None else {}
        self.failed = []
        self.forced = {r for r in os.environ.get("BENCH_FAIL", "").split(",") if r}
        self.timeout = timeout if timeout is not None else float(
            os.environ.get("BENCH_ROW_TIMEOUT", "1800"))

    def measure(self, name, fn, *args, **kw):
        """result[name] = fn(*args, **kw), or {"error": ...} if it raised. Returns the value
        (None on error)."""
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, self.timeout)
        try:
            if name in self.forced:
                raise SystemExit(f"bench: {name} failed on purpose (BENCH_FAIL)")
            value = fn(*args, **kw)
        except KeyboardInterrupt:
            raise
        except RowTimeout:
            msg = f"timed out after {self.timeout:g} s (BENCH_ROW_TIMEOUT)"
            print(f"bench: row {name} failed: {msg}", file=sys.stderr)
            self.result[name] = {"error": msg}
            self.failed.append(name)
            return None
        except BaseException as e:  # noqa: BLE001  SystemExit from helpers, anything else
            msg = str(e) if isinstance(e, SystemExit) else "".join(
                traceback.format_exception_only(type(e), e)).strip()
            print(f"bench: row {name} failed: {msg}", file=sys.stderr)
            self.result[name] = {"error": msg or type(e).__name__}
            self.failed.append(name)
            return None
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        self.result[name] = value
        return value

    def ok(self, *names):
        """Every named row was measured (for values derived from several rows)."""
        return all(n in self.result and n not in self.failed for n in names)

    def finish(self, out=None):
        """Print the JSON (with `failed` when rows failed); the process exit status."""
        if self.failed:
            self.result["failed"] = list(self.failed)
        print(json.dumps(self.result, indent=2), file=out or sys.stdout)
        return 1 if self.failed else 0
