"""Unit tests of bench/rows.py (run by crates/cli/tests/bench.rs: `python3 bench/selftest.py`):
the busy-host check against a fake /proc, and the JSON a run prints when rows fail."""
import io, json, os, sys, tempfile, unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rows import Rows, live_sandboxes  # noqa: E402


def fake_proc(root, procs):
    """procs: pid -> (argv list, NSpid entries)."""
    for pid, (argv, nspid) in procs.items():
        d = os.path.join(root, str(pid))
        os.makedirs(d)
        with open(os.path.join(d, "cmdline"), "wb") as f:
            f.write(b"".join(a.encode() + b"\0" for a in argv))
        with open(os.path.join(d, "status"), "w") as f:
            f.write(f"Name:\texe\nPPid:\t1\nNSpid:\t{chr(9).join(nspid)}\n")
    os.makedirs(os.path.join(root, "self"), exist_ok=True)  # not a pid: ignored


SANDBOX = ["cleanroom-init", "__sandbox-init", ""]


class LiveSandboxes(unittest.TestCase):
    def test_an_idle_servers_zygote_is_not_a_sandbox(self):
        with tempfile.TemporaryDirectory() as proc:
            fake_proc(proc, {
                100: (["/usr/local/bin/cleanroom", "serve"], ["100"]),
                101: (SANDBOX, ["101"]),  # the zygote: the server's pid namespace
                200: (["bash"], ["200"]),
            })
            self.assertEqual(live_sandboxes(proc), 0)

    def test_another_servers_sandboxes_are_counted(self):
        with tempfile.TemporaryDirectory() as proc:
            fake_proc(proc, {
                101: (SANDBOX, ["101"]),        # zygote
                102: (SANDBOX, ["102"]),        # shim of sandbox A
                103: (SANDBOX, ["103", "1"]),   # pid 1 of sandbox A
                104: (SANDBOX, ["104"]),        # shim of sandbox B
                105: (SANDBOX, ["105", "1"]),   # pid 1 of sandbox B
                106: (["sh"], ["106", "7"]),    # a workload process: not pid 1
                107: (["init"], ["107", "1"]),  # another runtime's container: not ours
            })
            self.assertEqual(live_sandboxes(proc), 2)


class Assembly(unittest.TestCase):
    def run_rows(self, forced=""):
        os.environ["BENCH_FAIL"] = forced
        try:
            rows = Rows({"machine": {}})
        finally:
            del os.environ["BENCH_FAIL"]
        rows.measure("good", lambda: {"p50_ms": 1.0})

        def broken():
            raise SystemExit("bench: tool missing: run scripts/deps.sh")
        rows.measure("broken", broken)
        rows.measure("crash", lambda: 1 / 0)
        rows.measure("skipped", lambda: {"skipped": "toolchain missing"})
        rows.measure("later", lambda x: {"x": x}, 3)
        out = io.StringIO()
        return rows.finish(out), json.loads(out.getvalue())

    def test_failed_rows_become_errors_and_the_rest_is_kept(self):
        status, j = self.run_rows()
        self.assertEqual(status, 1)
        self.assertEqual(j["good"], {"p50_ms": 1.0})
        self.assertEqual(j["broken"], {"error": "bench: tool missing: run scripts/deps.sh"})
        self.assertIn("ZeroDivisionError", j["crash"]["error"])
        self.assertEqual(j["skipped"], {"skipped": "toolchain missing"})
        self.assertEqual(j["later"], {"x": 3})
        self.assertEqual(j["failed"], ["broken", "crash"])
        self.assertEqual(list(j), ["machine", "good", "broken", "crash", "skipped", "later", "failed"])

    def test_forced_failures_and_a_clean_run(self):
        status, j = self.run_rows("good")
        self.assertEqual(j["failed"], ["good", "broken", "crash"])
        self.assertIn("BENCH_FAIL", j["good"]["error"])
        rows = Rows()
        rows.measure("only", lambda: 1)
        out = io.StringIO()
        self.assertEqual(rows.finish(out), 0)
        self.assertEqual(json.loads(out.getvalue()), {"only": 1})

    def test_a_row_that_hangs_times_out_and_its_child_is_killed(self):
        import subprocess, time
        rows = Rows(timeout=0.5)
        started = time.monotonic()
        rows.measure("hangs", subprocess.run, ["sleep", "30"])
        rows.measure("after", lambda: 2)
        self.assertLess(time.monotonic() - started, 20)
        self.assertIn("timed out after 0.5 s", rows.result["hangs"]["error"])
        self.assertEqual(rows.result["after"], 2)
        self.assertEqual(rows.failed, ["hangs"])
        alive = subprocess.run(["pgrep", "-x", "-f", "sleep 30"], capture_output=True)
        self.assertNotEqual(alive.returncode, 0, "the row's child outlived its timeout")


if __name__ == "__main__":
    unittest.main()
