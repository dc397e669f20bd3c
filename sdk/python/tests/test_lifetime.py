"""Lifetimes and usage through the SDK, against the real server: TTL and idle timeout at
create and later (SetSandboxTimeout), expiry with its reason, and live usage numbers that
move when the workload uses CPU, memory, disk, processes and the network."""

import datetime as dt
import http.server
import os
import threading
import time

import pytest

from cleanroom import AsyncSandbox, Lifetime, Sandbox, Usage, errors

#: Bounded waits (never asserted as durations).
WAIT = 60.0


def wait_stopped(sbx, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        life = sbx.lifetime()
        if life.stop_reason:
            return life
        time.sleep(0.2)
    pytest.fail(f"{sbx.id} did not stop within {timeout}s: {sbx.info()}")


def test_ttl_at_create_and_expiry(host):
    sbx = Sandbox.create(host=host, ttl=2)
    try:
        life = sbx.lifetime()
        assert isinstance(life, Lifetime)
        assert life.ttl_seconds == 2 and life.expires_at is not None
        assert life.idle_timeout_seconds == 0 and life.stop_reason == ""
        assert wait_stopped(sbx).stop_reason == "ttl_expired"
        # An expired sandbox runs nothing more; its lifetime says why.
        with pytest.raises(errors.CleanroomError) as e:
            sbx.run("true")
        assert e.value.code in ("sandbox_not_ready", "sandbox_not_found"), e.value
    finally:
        sbx.close()


def test_idle_timeout_at_create_and_expiry(host):
    with Sandbox.create(host=host, idle_timeout=dt.timedelta(seconds=2)) as sbx:
        assert sbx.lifetime().idle_timeout_seconds == 2
        assert wait_stopped(sbx).stop_reason == "idle_timeout"


def test_set_timeout_extends_shortens_and_clears(host):
    with Sandbox.create(host=host, ttl=4, idle_timeout=600) as sbx:
        first = sbx.lifetime().expires_at
        life = sbx.set_timeout(ttl=3600)
        assert life.ttl_seconds == 3600 and life.expires_at > first
        # Past the original TTL the sandbox still runs.
        time.sleep(5)
        assert sbx.run("echo", "still here").stdout == "still here\n"
        life = sbx.set_timeout(idle_timeout=120)
        assert (life.ttl_seconds, life.idle_timeout_seconds) == (3600, 120)
        life = sbx.set_timeout(clear_ttl=True, clear_idle_timeout=True)
        assert (life.ttl_seconds, life.expires_at, life.idle_timeout_seconds) == (0, None, 0)
        # Shorten: it now ends a second from now.
        sbx.set_timeout(ttl=1)
        assert wait_stopped(sbx).stop_reason == "ttl_expired"
        with pytest.raises(errors.SandboxNotReadyError):
            sbx.set_timeout(ttl=60)


def test_timeout_arguments_are_checked(host, sbx):
    for bad in [0, -1, 0.5, "10", True]:
        with pytest.raises(errors.InvalidArgumentError):
            sbx.set_timeout(ttl=bad)
    with pytest.raises(errors.InvalidArgumentError):
        sbx.set_timeout()
    with pytest.raises(errors.InvalidArgumentError):
        sbx.set_timeout(ttl=5, clear_ttl=True)
    # Beyond 366 days: the server refuses, naming the field.
    with pytest.raises(errors.InvalidArgumentError) as e:
        sbx.set_timeout(ttl=400 * 86400)
    assert "ttl" in e.value.message
    with pytest.raises(errors.InvalidArgumentError):
        Sandbox.create(host=host, idle_timeout=400 * 86400)
    # Another principal's view is tested over TCP in test_config; here the sandbox stays.
    assert sbx.run("true").exit_code == 0


class _Big(http.server.BaseHTTPRequestHandler):
    BODY = b"x" * (2 << 20)

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    def log_message(self, *a):
        pass


@pytest.fixture
def upstream():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Big)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_usage_moves_with_the_workload(host, upstream):
    name = os.environ.get("CLEANROOM_TEST_EGRESS_NAME") or pytest.fail("no egress name")
    policy = (
        "version: 1\nsandbox:\n  network:\n    allow:\n"
        f"      - host: {name}\n        ports: [{upstream}]\n"
    )
    with Sandbox.create(policy, host=host) as sbx:
        base = sbx.usage()
        assert isinstance(base, Usage)
        assert base.sampled_at is not None
        assert base.filesystem("/workspace") is not None and base.filesystem("/tmp") is not None
        # CPU.
        sbx.run("sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
        cpu = sbx.usage()
        assert cpu.cpu_usec > base.cpu_usec and cpu.cpu_seconds > 0
        # Memory and disk: 32 MB into /tmp (tmpfs pages are charged to the sandbox).
        sbx.run("sh", "-c", "head -c 32000000 /dev/zero > /tmp/blob")
        full = sbx.usage()
        assert full.filesystem("/tmp").used_bytes >= base.filesystem("/tmp").used_bytes + 32_000_000
        assert full.memory_bytes >= base.memory_bytes + 30_000_000, (base, full)
        assert full.memory_peak_bytes >= full.memory_bytes
        sbx.run("rm", "/tmp/blob")
        freed = sbx.usage()
        assert freed.filesystem("/tmp").used_bytes < full.filesystem("/tmp").used_bytes
        assert freed.memory_peak_bytes >= full.memory_bytes
        # Processes: a background job with two sleepers.
        job = sbx.start("sh", "-c", "sleep 600 & sleep 600 & wait")
        deadline = time.monotonic() + WAIT
        while sbx.usage().pids < base.pids + 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sbx.usage().pids >= base.pids + 3, (base, sbx.usage())
        job.kill()
        # Network: 2 MiB down through the egress gateway, a request up.
        before = sbx.usage()
        r = sbx.run(
            "sh",
            "-c",
            f"curl -fsS -m 30 --noproxy '*' -o /tmp/dl http://{name}:{upstream}/ && wc -c < /tmp/dl",
        )
        assert r.exit_code == 0 and r.stdout.strip() == str(2 << 20), r
        after = sbx.usage()
        assert after.network_rx_bytes >= before.network_rx_bytes + (2 << 20), (before, after)
        assert after.network_tx_bytes > before.network_tx_bytes, (before, after)
        sbx.terminate()
        assert sbx.usage() is None  # a stopped sandbox has none


async def test_async_lifetime_and_usage(host):
    async with AsyncSandbox.create(host=host, ttl=600) as sbx:
        assert (await sbx.lifetime()).ttl_seconds == 600
        life = await sbx.set_timeout(ttl=1200, idle_timeout=300)
        assert (life.ttl_seconds, life.idle_timeout_seconds) == (1200, 300)
        u = await sbx.usage()
        assert u is not None and u.pids >= 1


def test_suspend_after_at_create_and_resume_on_use(host):
    with Sandbox.create(host=host, suspend_after=1) as sbx:
        assert sbx.lifetime().suspend_after_seconds == 1
        sbx.run("sh", "-c", "echo 7 > /tmp/kept")
        deadline = time.monotonic() + WAIT
        while sbx.lifetime().suspended_at is None:
            assert time.monotonic() < deadline, f"{sbx.id} was not suspended"
            time.sleep(0.2)
        # The next command resumes it, with its files as they were.
        assert sbx.run("cat", "/tmp/kept").stdout == "7\n"
        assert sbx.lifetime().suspended_at is None
