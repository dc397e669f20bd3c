"""Endpoint and credential resolution mirrors the CLI (crates/client/src/endpoint.rs), and a
token authenticates over TCP."""

import json
import os

import pytest

from cleanroom import Sandbox, errors
from cleanroom.config import Endpoint, resolve, resolve_target, user_socket


def test_parse_forms():
    assert Endpoint.parse("unix:///a/b.sock") == Endpoint("unix", "/a/b.sock")
    assert Endpoint.parse("/a/b.sock") == Endpoint("unix", "/a/b.sock")
    assert Endpoint.parse("http://127.0.0.1:7777") == Endpoint("http", "127.0.0.1:7777")
    assert Endpoint.parse("https://h:1/") == Endpoint("https", "h:1")
    for bad in ["", "unix://rel", "ftp://x", "http://", "http://a/b", "tcp://1.2.3.4:5"]:
        with pytest.raises(errors.InvalidArgumentError):
            Endpoint.parse(bad)


def test_resolution_order(monkeypatch, tmp_path):
    cfg = tmp_path / "cleanroom"
    cfg.mkdir()
    (cfg / "config.json").write_text(
        json.dumps({"control_host": "http://10.0.0.1:1", "token": " cfgtok\n", "ca_cert": "/c.pem"})
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CLEANROOM_HOST", raising=False)
    monkeypatch.delenv("CLEANROOM_TOKEN", raising=False)
    monkeypatch.delenv("CLEANROOM_CA_CERT", raising=False)
    t = resolve_target()
    assert (t.endpoint, t.token, t.ca_cert) == (Endpoint("http", "10.0.0.1:1"), "cfgtok", "/c.pem")
    monkeypatch.setenv("CLEANROOM_HOST", "unix:///env.sock")
    monkeypatch.setenv("CLEANROOM_TOKEN", "envtok")
    t = resolve_target()
    assert (t.endpoint, t.token) == (Endpoint("unix", "/env.sock"), "envtok")
    t = resolve_target("https://arg:2", token="argtok", ca_cert="/a.pem")
    assert (t.endpoint, t.token, t.ca_cert) == (Endpoint("https", "arg:2"), "argtok", "/a.pem")
    # Nothing configured: the per-user socket (no system socket on a test machine is
    # assumed only when it does not exist).
    monkeypatch.delenv("CLEANROOM_HOST")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    if not os.path.exists("/var/run/cleanroom/cleanroom.sock"):
        assert resolve() == Endpoint("unix", "/run/user/4242/cleanroom/cleanroom.sock")
    assert user_socket() == "/run/user/4242/cleanroom/cleanroom.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert user_socket() == f"/tmp/cleanroom-{os.getuid()}/cleanroom.sock"


def test_token_over_tcp(tcp_host, token, monkeypatch, tmp_path):
    monkeypatch.delenv("CLEANROOM_TOKEN", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for bad in [None, "not-the-token"]:
        with pytest.raises(errors.UnauthenticatedError) as e:
            Sandbox.create(host=tcp_host, token=bad)
        assert e.value.code == "unauthenticated"
    with Sandbox.create(host=tcp_host, token=token) as sbx:
        assert sbx.run("echo", "over tcp").stdout == "over tcp\n"
        job = sbx.start("sleep", "30")
        # Another principal's token: the sandbox and its execution do not exist for it.
        other = os.environ.get("CLEANROOM_TEST_OTHER_TOKEN") or pytest.fail("no other token")
        with pytest.raises(errors.SandboxNotFoundError):
            Sandbox.connect(sbx.id, host=tcp_host, token=other)
        from cleanroom import Client
        from cleanroom.v1 import cleanroom_pb2 as pb

        with Client(tcp_host, token=other) as c:
            with pytest.raises(errors.ExecutionNotFoundError):
                c.call(
                    c.executions.cancel_execution,
                    pb.CancelExecutionRequest(sandbox_id=sbx.id, execution_id=job.id),
                )
            with pytest.raises(errors.SandboxNotFoundError):
                c.call(c.sandboxes.terminate_sandbox, pb.TerminateSandboxRequest(sandbox_id=sbx.id))
        assert job.info().status == pb.EXECUTION_STATUS_RUNNING
        job.kill()
    # The same credentials from the environment, then from the config file, as the CLI.
    monkeypatch.setenv("CLEANROOM_HOST", tcp_host)
    monkeypatch.setenv("CLEANROOM_TOKEN", token)
    with Sandbox.create() as sbx:
        assert sbx.run("true").exit_code == 0
    monkeypatch.delenv("CLEANROOM_HOST")
    monkeypatch.delenv("CLEANROOM_TOKEN")
    (tmp_path / "cleanroom").mkdir()
    (tmp_path / "cleanroom/config.json").write_text(
        json.dumps({"control_host": tcp_host, "token": token})
    )
    with Sandbox.create() as sbx:
        assert sbx.run("true").exit_code == 0


def test_https_with_ca_cert(token, monkeypatch, tmp_path):
    tls_host = os.environ.get("CLEANROOM_TEST_TLS_HOST") or pytest.fail("CLEANROOM_TEST_TLS_HOST unset")
    ca = os.environ.get("CLEANROOM_TEST_CA_CERT") or pytest.fail("CLEANROOM_TEST_CA_CERT unset")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CLEANROOM_CA_CERT", raising=False)
    # Without the private CA the server's certificate is not trusted: no connection.
    with pytest.raises(errors.ServerUnreachableError):
        Sandbox.create(host=tls_host, token=token)
    with Sandbox.create(host=tls_host, token=token, ca_cert=ca) as sbx:
        assert sbx.run("echo", "over tls").stdout == "over tls\n"
    monkeypatch.setenv("CLEANROOM_CA_CERT", ca)
    with pytest.raises(errors.UnauthenticatedError):
        Sandbox.create(host=tls_host, token="wrong")
    with Sandbox.create(host=tls_host, token=token) as sbx:
        assert sbx.run("true").exit_code == 0


def test_https_with_certificate_pin(token, monkeypatch, tmp_path):
    """`server_cert_sha256` accepts exactly the server's certificate, without a CA, from the
    argument, CLEANROOM_SERVER_CERT_SHA256 or the config file, as the CLI; any other pin
    (the CA's, one digit off) refuses the connection before a request is sent."""
    import hashlib
    import ssl

    tls_host = os.environ.get("CLEANROOM_TEST_TLS_HOST") or pytest.fail("no TLS host")
    pin = os.environ.get("CLEANROOM_TEST_TLS_CERT_SHA256") or pytest.fail("no cert pin")
    ca = os.environ.get("CLEANROOM_TEST_CA_CERT") or pytest.fail("no CA")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("CLEANROOM_CA_CERT", raising=False)
    monkeypatch.delenv("CLEANROOM_SERVER_CERT_SHA256", raising=False)
    for good in [pin, pin.upper(), f"sha256:{pin}"]:
        with Sandbox.create(host=tls_host, token=token, server_cert_sha256=good) as sbx:
            assert sbx.run("echo", "pinned").stdout == "pinned\n"
    ca_der = ssl.PEM_cert_to_DER_cert(open(ca).read())
    wrong_digit = pin[:-1] + ("0" if pin[-1] != "0" else "1")
    for bad in [hashlib.sha256(ca_der).hexdigest(), wrong_digit]:
        with pytest.raises(errors.ServerUnreachableError) as e:
            Sandbox.create(host=tls_host, token=token, server_cert_sha256=bad)
        assert "server_cert_sha256" in str(e.value), e.value
        # A pin wins over a CA that would accept the server (exactly that certificate).
        with pytest.raises(errors.ServerUnreachableError):
            Sandbox.create(host=tls_host, token=token, ca_cert=ca, server_cert_sha256=bad)
    for malformed in ["abc", pin[:-2], "g" * 64, f"md5:{pin}"]:
        with pytest.raises(errors.InvalidArgumentError):
            Sandbox.create(host=tls_host, token=token, server_cert_sha256=malformed)
    # From the environment, then from the config file (with the CA there too).
    monkeypatch.setenv("CLEANROOM_SERVER_CERT_SHA256", pin)
    with Sandbox.create(host=tls_host, token=token) as sbx:
        assert sbx.run("true").exit_code == 0
    monkeypatch.delenv("CLEANROOM_SERVER_CERT_SHA256")
    (tmp_path / "cleanroom").mkdir()
    cfg = tmp_path / "cleanroom/config.json"
    cfg.write_text(json.dumps({"control_host": tls_host, "token": token, "server_cert_sha256": pin}))
    with Sandbox.create() as sbx:
        assert sbx.run("true").exit_code == 0
    cfg.write_text(json.dumps({"control_host": tls_host, "token": token, "ca_cert": ca}))
    with Sandbox.create() as sbx:
        assert sbx.run("true").exit_code == 0


async def test_async_https_with_certificate_pin(token):
    from cleanroom import AsyncSandbox

    tls_host = os.environ.get("CLEANROOM_TEST_TLS_HOST") or pytest.fail("no TLS host")
    pin = os.environ.get("CLEANROOM_TEST_TLS_CERT_SHA256") or pytest.fail("no cert pin")
    async with AsyncSandbox.create(host=tls_host, token=token, server_cert_sha256=pin) as sbx:
        assert (await sbx.run("echo", "async pinned")).stdout == "async pinned\n"
    with pytest.raises(errors.ServerUnreachableError):
        await AsyncSandbox.create(host=tls_host, token=token, server_cert_sha256="0" * 64)
