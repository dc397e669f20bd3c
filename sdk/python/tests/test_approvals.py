"""Egress approvals answered by SDK code, against the real server and gateway: a policy that
asks holds the sandbox's connection to a loopback upstream (reached through the server's
``--egress-resolve`` name) until the callback answers — allow, deny, remember, a callback
that raises — or the program answers by hand with ``pending_egress``/``decide_egress``."""

import http.server
import os
import threading
import time

import pytest

from cleanroom import Decision, Sandbox, errors

WAIT = 60.0


class _Hello(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self):
        type(self).hits += 1
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def upstream():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    _Hello.hits = 0
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1]
    srv.shutdown()


def ask_policy(timeout=120):
    # A mapping: sent as JSON (YAML's subset).
    return {"version": 1, "sandbox": {"network": {"unknown": "ask", "approval_timeout_seconds": timeout}}}


def curl(sbx, port, path="/"):
    name = os.environ.get("CLEANROOM_TEST_EGRESS_NAME") or pytest.fail("no egress name")
    return sbx.run_shell(
        f"curl -sS -m 100 --noproxy '*' http://{name}:{port}{path}",
    )


def test_callback_allows_and_remembers(host, upstream):
    with Sandbox.create(ask_policy(), host=host) as sbx:
        asked = []

        def approve(req):
            asked.append((req.host, req.port, req.protocol, req.request_id))
            return Decision(True, remember=True)

        with sbx.answer_egress(approve) as w:
            r = curl(sbx, upstream, "/one")
            assert (r.exit_code, r.stdout) == (0, "hello"), r.stderr
            r = curl(sbx, upstream, "/two")  # remembered: not asked again
            assert (r.exit_code, r.stdout) == (0, "hello"), r.stderr
        assert len(asked) == 1, asked
        name = os.environ["CLEANROOM_TEST_EGRESS_NAME"]
        assert asked[0][:2] == (name, upstream)
        assert [d for _, d in w.answered] == [Decision(True, True)] and w.failures == []
        assert f"{name}:{upstream}" in sbx.info().egress_approved
        types = [e.type for e in sbx.events() if e.type.startswith("egress.")]
        assert "egress.pending" in types and "egress.decision" in types
        assert _Hello.hits == 2


def test_callback_denies_and_a_raising_callback_denies(host, upstream):
    with Sandbox.create(ask_policy(), host=host) as sbx:
        with sbx.answer_egress(lambda req: "deny"):
            r = curl(sbx, upstream)
        assert r.exit_code != 0
        with sbx.answer_egress(lambda req: 1 / 0) as w:
            r = curl(sbx, upstream)
        assert r.exit_code != 0
        assert len(w.failures) == 1 and isinstance(w.failures[0], ZeroDivisionError)
        denies = [e for e in sbx.events() if e.type == "egress.decision"]
        assert [e.attributes.get("verdict") for e in denies] == ["deny", "deny"], denies
        assert _Hello.hits == 0  # a refused connection never reaches the upstream


def test_answer_by_hand(host, upstream):
    with Sandbox.create(ask_policy(), host=host) as sbx:
        job = sbx.start(
            "sh", "-c", f"curl -sS -m 100 --noproxy '*' http://{os.environ['CLEANROOM_TEST_EGRESS_NAME']}:{upstream}/"
        )
        deadline = time.monotonic() + WAIT
        pending = []
        while not pending and time.monotonic() < deadline:
            pending = sbx.pending_egress()
            time.sleep(0.1)
        assert len(pending) == 1 and pending[0].port == upstream
        sbx.decide_egress(pending[0].request_id, True)
        assert job.wait().stdout == "hello"
        with pytest.raises(errors.ApprovalNotFoundError):
            sbx.decide_egress(pending[0].request_id, False)
        assert sbx.pending_egress() == []
