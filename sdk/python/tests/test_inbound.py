"""Exposed ports from SDK code, against the real server: ``expose`` serves a port of the
sandbox at a URL of the server (reached here over its unix socket), ``get_url`` finds it
again, ``unexpose`` revokes it (the URL then answers ``exposure_revoked``)."""

import http.client
import json
import socket

import pytest

from cleanroom import Sandbox, errors


def _get(host: str, url: str):
    """GET ``url`` (``http://localhost/…``) over the server's unix socket → (status, body)."""
    path = url.removeprefix("http://localhost")

    class Unix(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(host.removeprefix("unix://"))

    c = Unix("localhost", timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def test_expose_get_url_and_unexpose(host):
    assert host.startswith("unix://")
    with Sandbox.create(host=host) as sbx:
        r = sbx.run_shell(
            "echo hi > /tmp/x; cd /tmp; setsid python3 -m http.server 8000 </dev/null "
            ">/dev/null 2>&1 & for i in $(seq 100); do curl -fsS --noproxy '*' -m 1 "
            "http://127.0.0.1:8000/x >/dev/null 2>&1 && exit 0; sleep 0.1; done; exit 1"
        )
        assert r.exit_code == 0, r.stderr
        url = sbx.expose(8000, ttl=60)
        assert url.startswith("http://localhost/_sandbox/exp_")
        assert sbx.get_url(8000) == url
        assert _get(host, url.replace("/?", "/x?")) == (200, b"hi\n")
        assert len(sbx.unexpose(8000)) == 1
        status, body = _get(host, url)
        assert status == 401 and json.loads(body)["error"]["code"] == "exposure_revoked"
        with pytest.raises(errors.ExposureNotFoundError):
            sbx.get_url(8000)
        with pytest.raises(errors.InvalidArgumentError):
            sbx.expose(0)
