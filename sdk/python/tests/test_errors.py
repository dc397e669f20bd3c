"""Errors surface as typed exceptions with the stable code of the server's ErrorDetail."""

import re

import pytest

from cleanroom import CleanroomError, Sandbox, errors

from conftest import REPO


def test_not_found_codes(sbx, host):
    with pytest.raises(errors.SandboxNotFoundError) as e:
        Sandbox.connect("sbx_missing", host=host)
    assert (e.value.code, e.value.connect_code) == ("sandbox_not_found", "not_found")
    assert e.value.details.get("sandbox_id") == "sbx_missing"
    assert isinstance(e.value, CleanroomError)
    with pytest.raises(errors.ExecutionNotFoundError) as e:
        sbx.attach("exe_missing")
    assert e.value.code == "execution_not_found"


def test_bad_policy_is_policy_invalid(host):
    with pytest.raises(CleanroomError) as e:
        Sandbox.create("version: 1\nsandbox: [not, a, map]\n", host=host)
    assert e.value.code == "policy_invalid", e.value
    assert isinstance(e.value, errors.PolicyInvalidError)


def test_unreachable_server(tmp_path, monkeypatch):
    sock = f"{tmp_path}/nothing.sock"
    with pytest.raises(errors.ServerUnreachableError) as e:
        Sandbox.create(host=f"unix://{sock}")
    assert e.value.code == "server_unreachable"
    # The message names the socket that was tried and the fix, not only "[Errno 2]".
    msg = str(e.value)
    assert f"no cleanroom server socket at {sock}" in msg, msg
    assert "`cleanroom serve`" in msg and "CLEANROOM_HOST" in msg, msg
    assert "Errno" not in msg, msg
    assert e.value.details["endpoint"] == f"unix://{sock}"
    # The same from the environment (no host argument), and from the asyncio client.
    monkeypatch.setenv("CLEANROOM_HOST", f"unix://{sock}")
    with pytest.raises(errors.ServerUnreachableError) as e:
        Sandbox.list()
    assert sock in str(e.value)
    # A socket file nobody listens on: the cause, with the address and the fix.
    import socket

    dead = tmp_path / "dead.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(dead))
    s.close()
    with pytest.raises(errors.ServerUnreachableError) as e:
        Sandbox.create(host=f"unix://{dead}")
    assert f"cannot reach the cleanroom server at unix://{dead}" in str(e.value)
    assert "`cleanroom serve`" in str(e.value)
    with pytest.raises(errors.InvalidArgumentError):
        Sandbox.create(host="ftp://x")


def test_every_vocab_code_has_a_class():
    text = (REPO / "crates/vocab/src/error_code.rs").read_text()
    codes = set(re.findall(r'=>\s*"([a-z_]+)"', text))
    assert "sandbox_not_found" in codes
    # The CLI's own client-side codes (not things an SDK call can produce).
    cli_only = {
        "server_start_failed",
        "auth_config_invalid",
        "repository_unavailable",
        "repository_checkout_failed",
        "dependencies_failed",
        "repository_dirty",
        "workdir_copy_failed",
    }
    missing = codes - cli_only - errors.KNOWN_CODES
    assert not missing, f"add typed errors for {sorted(missing)} to cleanroom/errors.py"
    # An unknown code (a newer server) still gives a CleanroomError with that code.
    e = errors.error("brand_new_code", "m")
    assert type(e) is CleanroomError and e.code == "brand_new_code"
