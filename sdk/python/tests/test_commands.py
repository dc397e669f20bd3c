"""Commands through the sync API: exit codes, output, live callbacks, stdin, background
commands, kill, re-attach by id."""

import os

import pytest

from cleanroom import Sandbox, errors


def test_run_exit_code_stdout_stderr(sbx):
    r = sbx.run("sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.exit_code, r.status, r.stdout, r.stderr) == (3, "failed", "out\n", "err\n")
    assert not r.ok
    r = sbx.run("python3", "-c", "print(1)")
    assert (r.exit_code, r.stdout, r.ok) == (0, "1\n", True)
    assert r.execution_id.startswith("exe_")


def test_output_is_exact_bytes(sbx):
    r = sbx.run("sh", "-c", r"printf '\377\000a\n'; printf 'é' >&2")
    assert r.stdout_bytes == b"\xff\x00a\n"
    assert r.stderr == "é"


def test_env_cwd_and_timeout(sbx):
    r = sbx.run("sh", "-c", 'echo "$GREETING"; pwd', env={"GREETING": "hello"}, cwd="/tmp")
    assert r.stdout == "hello\n/tmp\n"
    r = sbx.run("sleep", "60", timeout=1)
    assert r.status == "timed_out", r


def test_callbacks_are_live(sbx):
    """The command waits until a file exists, which the on_stdout callback creates after
    seeing "ready": it can only finish if output reaches the callback while it runs."""
    seen = []

    def on_out(text):
        seen.append(text)
        if "ready" in text:
            # A nested call from inside the callback, while the stream is open.
            assert sbx.run("touch", "/tmp/go").exit_code == 0

    err = []
    r = sbx.run(
        "sh",
        "-c",
        "echo ready; i=0; while [ ! -f /tmp/go ]; do i=$((i+1)); [ $i -gt 600 ] && exit 9; "
        "sleep 0.1; done; echo done; echo e >&2",
        on_stdout=on_out,
        on_stderr=err.append,
    )
    assert r.exit_code == 0, r
    assert "".join(seen) == "ready\ndone\n"
    assert "".join(err) == "e\n"


def test_stdin_bytes_multi_chunk(sbx):
    data = os.urandom(3 * 1024 * 1024 + 17)  # > the 1 MiB chunk the SDK sends per call
    r = sbx.run("sha256sum", stdin=data)
    import hashlib

    assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    assert sbx.run("cat", stdin="text in").stdout == "text in"


def test_interactive_stdin(sbx):
    h = sbx.start("sh", "-c", "read a; read b; echo \"$b $a\"", stdin=True)
    h.send_stdin("world\n")
    h.send_stdin(b"hello\n")
    h.close_stdin()
    assert h.wait().stdout == "hello world\n"
    # Without stdin=True the pipe is not there: a typed error.
    h2 = sbx.start("sleep", "30")
    with pytest.raises(errors.StdinNotAttachedError) as e:
        h2.send_stdin("x")
    assert e.value.code == "stdin_not_attached"
    h2.kill()


def test_background_wait_and_kill(sbx):
    h = sbx.start("sh", "-c", "echo started; exit 7")
    assert h.id.startswith("exe_")
    r = h.wait()
    assert (r.exit_code, r.stdout) == (7, "started\n")
    long = sbx.start("sleep", "300")
    long.kill()
    r = long.wait()
    assert r.status == "canceled", r
    assert long.info().status != 0


def test_reattach_by_id_from_another_client(sbx, host):
    h = sbx.start("sh", "-c", "for i in 1 2 3 4 5; do echo $i; sleep 0.2; done; exit 4")
    # Another program: a new client, the sandbox by id, the execution by id.
    other = Sandbox.connect(sbx.id, host=host)
    try:
        again = other.attach(h.id)
        chunks = []
        r = again.wait(on_stdout=chunks.append)
        out = "1\n2\n3\n4\n5\n"
        assert (r.exit_code, r.stdout, "".join(chunks)) == (4, out, out)
        # A finished execution replays in full too.
        assert other.attach(h.id).wait().stdout == out
    finally:
        other.close()  # the connection only: the sandbox is the fixture's


def test_create_with_policy_file_labels_and_limits(host, tmp_path):
    pol = tmp_path / "cleanroom.yaml"
    pol.write_text("version: 1\nsandbox: {env: {FROM_POLICY: 'yes'}}\n")
    with Sandbox.create(pol, host=host, labels={"team": "sdk"}, limits={"pids": 64}) as sbx:
        assert sbx.run("sh", "-c", "echo $FROM_POLICY").stdout == "yes\n"
        info = sbx.info()
        assert info.status == 2  # SANDBOX_STATUS_READY
        assert info.policy_hash
