"""The whole API through the SDK, against the real server: listing by label, pause/resume,
snapshots and forks, warm pools, the event stream, attestation, shell strings, resource
limits in MiB, policies from a path or a mapping, and unknown options as typed errors."""

import base64
import json
import threading
import time
from pathlib import Path

import pytest

from cleanroom import Client, Event, Sandbox, UnknownOptionError, errors

#: Bounded waits (never asserted as durations).
WAIT = 60.0

MIB = 1 << 20


def eventually(what, probe, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = probe()
        if v:
            return v
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout}s")


def test_list_filters_by_label(host):
    tag = f"t{time.monotonic_ns()}"
    with Sandbox.create(host=host, labels={"suite": tag, "role": "a"}) as a, Sandbox.create(
        host=host, labels={"suite": tag, "role": "b"}
    ) as b:
        assert a.labels == {"suite": tag, "role": "a"}
        ids = {s.sandbox_id for s in Sandbox.list(host=host, labels={"suite": tag})}
        assert ids == {a.id, b.id}
        only_b = Sandbox.list(host=host, labels={"suite": tag, "role": "b"})
        assert [s.sandbox_id for s in only_b] == [b.id]
        assert dict(only_b[0].labels) == {"suite": tag, "role": "b"}
        assert Sandbox.list(host=host, labels={"suite": "nothing-has-this"}) == []
    # Stopped ones only when asked for.
    assert Sandbox.list(host=host, labels={"suite": tag}) == []
    with Client(host) as c:
        stopped = c.list_sandboxes(labels={"suite": tag}, include_stopped=True)
    assert {s.sandbox_id for s in stopped} == {a.id, b.id}


def test_other_principal_lists_nothing_of_ours(tcp_host, token):
    import os

    other = os.environ["CLEANROOM_TEST_OTHER_TOKEN"]
    tag = f"t{time.monotonic_ns()}"
    with Sandbox.create(host=tcp_host, token=token, labels={"suite": tag}) as s:
        assert [x.sandbox_id for x in Sandbox.list(host=tcp_host, token=token, labels={"suite": tag})] == [s.id]
        assert Sandbox.list(host=tcp_host, token=other, labels={"suite": tag}) == []
        with pytest.raises(errors.SandboxNotFoundError):
            Sandbox.connect(s.id, host=tcp_host, token=other).pause()


def test_pause_and_resume(sbx):
    h = sbx.start("sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.05; done")
    eventually("the counter", lambda: sbx.run("cat", "/tmp/n").stdout.strip())
    sbx.pause()
    assert sbx.status == "paused" and sbx.info().status == 40
    with pytest.raises(errors.SandboxPausedError):
        sbx.run("true")
    sbx.pause()  # idempotent
    sbx.resume()
    assert sbx.status == "ready"
    first = int(sbx.run("cat", "/tmp/n").stdout)
    eventually("the counter to move after resume", lambda: int(sbx.run("cat", "/tmp/n").stdout) > first)
    h.kill()


def test_snapshot_fork_inspect_and_remove(host):
    with Client(host) as c:
        with Sandbox.create(client=c, limits={"memory_mb": 300, "pids": 77}) as src:
            src.run_shell("echo original > /workspace/f")
            snap = src.snapshot()
        assert snap.snapshot_id.startswith("snap_") and snap.source_sandbox_id == src.id
        assert snap.limits.memory_bytes == 300 * MIB and snap.limits.pids == 77
        assert c.get_snapshot(snap.snapshot_id).content_digest == snap.content_digest
        assert snap.snapshot_id in {s.snapshot_id for s in c.list_snapshots()}
        with Sandbox.fork(snap.snapshot_id, client=c) as f1, Sandbox.create(
            from_snapshot=snap.snapshot_id, client=c
        ) as f2:
            assert f1.run("cat", "/workspace/f").stdout == "original\n"
            f1.run_shell("echo changed > /workspace/f")
            assert f2.run("cat", "/workspace/f").stdout == "original\n"  # forks diverge
            with pytest.raises(errors.SnapshotInUseError):
                c.remove_snapshot(snap.snapshot_id)
        assert c.remove_snapshot(snap.snapshot_id).snapshot_id == snap.snapshot_id
        with pytest.raises(errors.SnapshotNotFoundError):
            c.get_snapshot(snap.snapshot_id)
        with pytest.raises(errors.SnapshotNotFoundError):
            Sandbox.fork(snap.snapshot_id, client=c)


def test_checkpoint_is_typed(sbx):
    # The linux backend has no CRIU: the call is answered with the capability error.
    with pytest.raises(errors.BackendCapabilityMismatchError):
        sbx.checkpoint()


def test_pool_create_claim_stats_release(host):
    policy = {"version": 1, "sandbox": {"resources": {"pids": 321}}}
    with Client(host) as c:
        pool = c.create_pool("sdk-pool", policy=policy, min_ready=1, limits={"memory_mb": 200})
        try:
            assert pool.pool_id.startswith("pool_") and pool.min_ready == 1
            assert pool.template.limits.memory_bytes == 200 * MIB
            eventually("a READY pool sandbox", lambda: c.pool_stats(pool.pool_id).stats.ready >= 1)
            assert pool.pool_id in {p.id for p in c.list_pools()}
            sbx = Sandbox.claim(pool.pool_id, client=c)
            try:
                assert sbx.claim_latency_us > 0
                assert sbx.info().pool_id == pool.pool_id
                assert sbx.run_shell("echo claimed").stdout == "claimed\n"
                st = c.pool_stats(pool.pool_id).stats
                assert st.claims_total == 1 and st.claimed == 1
            finally:
                sbx.release()
            # Released: destroyed (its slot is re-warmed).
            eventually("the released sandbox to stop", lambda: sbx.info() and sbx.status == "stopped")
            with pytest.raises(errors.SandboxNotReadyError):
                sbx.run("true")
        finally:
            c.destroy_pool(pool.pool_id)
        with pytest.raises(errors.PoolNotFoundError):
            c.pool_stats(pool.pool_id)
        with pytest.raises(errors.PoolNotFoundError):
            Sandbox.claim(pool.pool_id, client=c)


def test_events_list_and_follow(host):
    sbx = Sandbox.create(host=host)
    try:
        sbx.run("true")
        sbx.pause()
        sbx.resume()
        evs = list(sbx.events())
        assert all(isinstance(e, Event) for e in evs)
        statuses = [e.sandbox_status for e in evs if e.type == "sandbox.status"]
        assert statuses[-2:] == ["paused", "ready"], statuses
        assert any(e.type == "execution.status" for e in evs)
        seqs = [e.sequence for e in evs]
        assert seqs == sorted(seqs)
        # Resume point: only what came after.
        assert [e.sequence for e in sbx.events(after_sequence=seqs[-2])] == seqs[-1:]
        # follow: the iterator tails until the sandbox stops.
        got = []

        def tail():
            for e in sbx.events(after_sequence=seqs[-1], follow=True):
                got.append(e)

        t = threading.Thread(target=tail)
        t.start()
        time.sleep(0.3)
        sbx.run("true")
        sbx.terminate()
        t.join(WAIT)
        assert not t.is_alive(), "the followed stream did not end with the sandbox"
        assert any(e.type == "execution.status" for e in got)
        assert got[-1].sandbox_status == "stopped", got[-3:]
    finally:
        sbx.close()


def test_attestation_and_public_key(host):
    with Client(host) as c, Sandbox.create(client=c) as sbx:
        a = sbx.attestation()
        key = c.attestation_public_key()
        assert key.pem.startswith("-----BEGIN PUBLIC KEY-----")
        assert a.key_id == key.key_id and key.key_id.startswith("sha256:")
        assert a.statement["sandbox_id"] == sbx.id
        assert a.statement["policy_hash"] == sbx.info().policy_hash
        env = json.loads(a.envelope_json)
        assert json.loads(base64.b64decode(env["payload"])) == a.statement
        assert [s["keyid"] for s in env["signatures"]] == [key.key_id]


def test_usage_through_get(sbx, host):
    sbx.run_shell("head -c 3000000 /dev/zero > /tmp/z")
    u = sbx.usage()
    assert u is not None and u.filesystem("/tmp").used_bytes >= 3_000_000
    with Client(host) as c:
        assert c.get_sandbox(sbx.id).usage.pids >= 1


def test_run_shell_and_shell_true(sbx):
    r = sbx.run_shell("echo a b | tr ' ' '\\n' | wc -l; exit 3")
    assert (r.stdout.strip(), r.exit_code) == ("2", 3)
    assert sbx.run("echo $((6*7)) > /tmp/x && cat /tmp/x", shell=True).stdout == "42\n"
    assert sbx.run_shell("cat", stdin="piped").stdout == "piped"
    assert sbx.start("echo bg", shell=True).wait().stdout == "bg\n"
    with pytest.raises(errors.InvalidArgumentError):
        sbx.run("echo", "two", shell=True)


def test_unknown_options_are_typed_errors(sbx, host):
    cases = [
        lambda: Sandbox.create(host=host, limits={"memory_mib": 512}),
        lambda: Sandbox.create(host=host, polcy="version: 1\n"),
        lambda: Sandbox.connect(sbx.id, hots=host),
        lambda: sbx.run("true", cwdd="/tmp"),
        lambda: sbx.start("true", timout=3),
        lambda: sbx.run_shell("true", shell=False),
        lambda: Client(host).create_pool("x", min_redy=1),
        lambda: Client(host).list_sandboxes(label={"a": "b"}),
        lambda: sbx.files.write("/tmp/x", b"", mod=0o644),
        lambda: sbx.files.remove("/tmp/x", recursiv=True),
        lambda: sbx.set_timeout(tll=5),
        lambda: sbx.events(folow=True),
    ]
    for call in cases:
        with pytest.raises(UnknownOptionError) as e:
            call()
        assert e.value.code == "unknown_option"
        assert isinstance(e.value, TypeError) and isinstance(e.value, errors.CleanroomError)
    with pytest.raises(UnknownOptionError) as e:
        Sandbox.create(host=host, limits={"memory_mib": 512})
    assert "'memory_mb'" in str(e.value) and e.value.details["option"] == "memory_mib"
    with pytest.raises(errors.InvalidArgumentError):
        Sandbox.create(host=host, limits={"memory_mb": "lots"})
    with pytest.raises(errors.InvalidArgumentError):
        Sandbox.create(host=host, limits={"memory_mb": 1, "memory_bytes": 2})


def test_limits_in_mib_reach_the_sandbox(host):
    with Sandbox.create(host=host, limits={"memory_mb": 256, "disk_mb": 64}) as s:
        snap = s.snapshot()
    with Client(host) as c:
        c.remove_snapshot(snap.snapshot_id)
    lim = snap.limits
    assert (lim.memory_bytes, lim.disk_bytes) == (256 * MIB, 64 * MIB)


def test_policy_from_text_path_and_mapping(host, tmp_path):
    text = "version: 1\nsandbox:\n  resources:\n    pids: 123\n"
    mapping = {"version": 1, "sandbox": {"resources": {"pids": 123}}}
    f = tmp_path / "cleanroom.yaml"
    f.write_text(text)
    hashes = []
    for policy in (text, f, str(f), mapping):
        with Sandbox.create(policy, host=host) as s:
            hashes.append(s.info().policy_hash)
    with Sandbox.create(host=host) as s:
        default = s.info().policy_hash
    assert len(set(hashes)) == 1 and hashes[0] != default, hashes
    with pytest.raises(errors.PolicyInvalidError):
        Sandbox.create({"version": 1, "sandbox": {"no_such_key": 1}}, host=host)
    with pytest.raises(errors.PolicyInvalidError):
        Sandbox.create(Path(tmp_path / "missing.yaml"), host=host)


def test_exec_one_call(host):
    tag = f"x{time.monotonic_ns()}"
    got = []
    r = Sandbox.exec(
        "sh", "-c", "cat; echo err >&2; exit 4", host=host, stdin="in", labels={"suite": tag},
        limits={"memory_mb": 128}, on_stdout=got.append,
    )
    assert (r.exit_code, r.stdout, r.stderr, "".join(got)) == (4, "in", "err\n", "in")
    assert r.sandbox_id.startswith("sbx_")
    # Torn down after the exit (in the background): it is not live any more.
    eventually("the exec sandbox to stop", lambda: Sandbox.list(host=host, labels={"suite": tag}) == [])
    kept = Sandbox.exec("echo kept", shell=True, keep=True, host=host)
    with Sandbox.connect(kept.sandbox_id, host=host) as s:
        assert kept.stdout == "kept\n" and s.status == "ready"
        again = Sandbox.exec("echo", "in", "it", in_sandbox=s.id, host=host)
        assert (again.stdout, again.sandbox_id) == ("in it\n", s.id)
        with pytest.raises(errors.InvalidArgumentError):
            Sandbox.exec("true", in_sandbox=s.id, policy="version: 1\n", host=host)
    with pytest.raises(UnknownOptionError):
        Sandbox.exec("true", host=host, in_sandbx="sbx_x")


def test_interrupt_inspect_and_background_terminate(host):
    sbx = Sandbox.create(host=host)
    try:
        h = sbx.start("sh", "-c", "trap 'echo got-int; exit 7' INT; echo ready; while :; do sleep 0.05; done")
        eventually("the trap to be set", lambda: "ready" in h.inspect().stdout)
        h.interrupt()
        r = h.wait()
        assert (r.exit_code, r.stdout) == (7, "ready\ngot-int\n"), r
        rec = h.inspect()
        assert rec.execution.execution_id == h.id and rec.stdout == "ready\ngot-int\n"
        assert rec.policy_hash == sbx.info().policy_hash
        sbx.terminate(background=True)
        eventually("the sandbox to stop", lambda: sbx.info() and sbx.status == "stopped")
    finally:
        sbx.close()


def test_lockfiles_and_learn(host):
    policy = {
        "version": 1,
        "sandbox": {"registries": [{"kind": "npm", "lockfile": "package-lock.json", "upstream": "registry.invalid"}]},
    }

    def lock(v):
        return json.dumps({"name": "x", "version": v, "lockfileVersion": 3, "requires": True,
                           "packages": {"": {"name": "x", "version": v}}})

    with pytest.raises(errors.PolicyInvalidError) as e:
        Sandbox.create(policy, host=host)
    assert "package-lock.json" in str(e.value)
    with Sandbox.create(policy, host=host, lockfiles={"package-lock.json": lock("1.0.0")}) as a, \
            Sandbox.create(policy, host=host, lockfiles={"package-lock.json": lock("2.0.0").encode()}) as b:
        assert a.info().policy_hash != b.info().policy_hash
    with Sandbox.create(host=host) as plain, Sandbox.create(host=host, learn=True) as learning:
        assert plain.info().policy_hash != learning.info().policy_hash
