"""Live egress rules from SDK code, against the real server and gateway: ``update_network``
lets a sandbox reach a loopback upstream (the server's ``--egress-resolve`` name) that its
policy denies, and ``reset`` takes it away again; malformed hosts are typed errors."""

import http.server
import os
import threading

import pytest

from cleanroom import Sandbox, errors


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
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
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def curl(sbx, port):
    name = os.environ.get("CLEANROOM_TEST_EGRESS_NAME") or pytest.fail("no egress name")
    return sbx.run_shell(f"curl -fsS -m 20 --noproxy '*' http://{name}:{port}/")


def test_update_network_allows_then_resets(host, upstream):
    name = os.environ["CLEANROOM_TEST_EGRESS_NAME"]
    with Sandbox.create(host=host) as sbx:
        before = sbx.info().effective_rules_hash
        assert before.startswith("sha256:")
        assert curl(sbx, upstream).exit_code != 0
        r = sbx.update_network(allow=[f"{name}:{upstream}"])
        assert list(r.live_allow) == [f"{name}:{upstream}"]
        assert r.effective_rules_hash != before
        assert r.policy_hash == sbx.info().policy_hash
        got = curl(sbx, upstream)
        assert (got.exit_code, got.stdout) == (0, "hello"), got.stderr
        assert sbx.info().effective_rules_hash == r.effective_rules_hash
        assert any(e.type == "network.rules" for e in sbx.events())
        r = sbx.update_network(reset=True, cut=True)
        assert r.effective_rules_hash == before and list(r.live_allow) == []
        assert curl(sbx, upstream).exit_code != 0
        with pytest.raises(errors.PolicyInvalidError):
            sbx.update_network(allow=["10.0.0.1"])
        with pytest.raises(errors.InvalidArgumentError):
            sbx.update_network()
