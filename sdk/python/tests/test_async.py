"""The asyncio API: same surface, concurrent commands."""

import asyncio

import pytest

from cleanroom import AsyncSandbox, errors


async def test_async_run_concurrent_and_errors(host):
    async with AsyncSandbox.create(host=host) as sbx:
        r = await sbx.run("sh", "-c", "echo a; echo b >&2; exit 2")
        assert (r.exit_code, r.stdout, r.stderr) == (2, "a\n", "b\n")
        handles = [await sbx.start("sh", "-c", f"sleep 0.3; echo {i}") for i in range(5)]
        results = await asyncio.gather(*(h.wait() for h in handles))
        assert [x.stdout for x in results] == [f"{i}\n" for i in range(5)]
        got = []
        r = await sbx.run("cat", stdin=b"streamed", on_stdout=got.append)
        assert "".join(got) == "streamed"
        long = await sbx.start("sleep", "300")
        again = await sbx.attach(long.id)
        await again.kill()
        assert (await long.wait()).status == "canceled"
        with pytest.raises(errors.ExecutionNotFoundError):
            await sbx.attach("exe_missing")
        sid = sbx.id
    with pytest.raises(errors.SandboxNotFoundError):
        await AsyncSandbox.connect("sbx_missing", host=host)
    # Awaiting (without `async with`) gives a sandbox the caller terminates.
    other = await AsyncSandbox.connect(sid, host=host)
    assert other.id == sid
    await other.aclose()


async def test_async_surface(host):
    """The asyncio twins of the new calls: labels, shell, pause/resume, snapshot + fork,
    events, attestation, pools through AsyncClient, approvals by an async callback and
    unknown options."""
    import os
    import time

    from cleanroom import AsyncClient, Decision, UnknownOptionError

    tag = f"a{time.monotonic_ns()}"
    async with AsyncClient(host) as c:
        async with AsyncSandbox.create(client=c, labels={"suite": tag}) as sbx:
            assert await sbx.labels() == {"suite": tag}
            assert [s.sandbox_id for s in await c.list_sandboxes(labels={"suite": tag})] == [sbx.id]
            assert (await sbx.run_shell("echo $((2+3))")).stdout == "5\n"
            assert (await sbx.run("echo x | tr x y", shell=True)).stdout == "y\n"
            await sbx.pause()
            with pytest.raises(errors.SandboxPausedError):
                await sbx.run("true")
            await sbx.resume()
            await sbx.run_shell("echo snap > /workspace/f")
            snap = await sbx.snapshot()
            async with AsyncSandbox.fork(snap.snapshot_id, client=c) as f:
                assert (await f.run("cat", "/workspace/f")).stdout == "snap\n"
            types = [e.sandbox_status async for e in sbx.events() if e.type == "sandbox.status"]
            assert ["paused", "ready"] == types[-2:], types
            a = await sbx.attestation()
            assert a.statement["sandbox_id"] == sbx.id
            assert a.key_id == (await c.attestation_public_key()).key_id
            with pytest.raises(UnknownOptionError):
                await sbx.run("true", cwdd="/")
            h = await sbx.start("trap 'echo int; exit 5' INT; echo up; while :; do sleep 0.05; done", shell=True)
            while "up" not in (await h.inspect()).stdout:
                await asyncio.sleep(0.05)
            await h.interrupt()
            assert ((r := await h.wait()).exit_code, r.stdout) == (5, "up\nint\n")
            assert (await h.inspect()).execution.exit_code == 5
        await c.remove_snapshot(snap.snapshot_id)
        pool = await c.create_pool("async", min_ready=1, policy={"version": 1})
        try:
            deadline = time.monotonic() + 60
            while (await c.pool_stats(pool.pool_id)).stats.ready < 1:
                assert time.monotonic() < deadline, "the pool did not warm"
                await asyncio.sleep(0.1)
            claimed = await AsyncSandbox.claim(pool.pool_id, client=c)
            assert claimed.claim_latency_us > 0
            assert (await claimed.run_shell("echo c")).stdout == "c\n"
            await claimed.release()
        finally:
            await c.destroy_pool(pool.pool_id)
    with pytest.raises(UnknownOptionError):
        AsyncSandbox.create(host=host, limits={"memoryMb": 512})

    name = os.environ.get("CLEANROOM_TEST_EGRESS_NAME") or pytest.fail("no egress name")
    policy = {"version": 1, "sandbox": {"network": {"unknown": "ask"}}}
    async with AsyncSandbox.create(policy, host=host) as sbx:

        async def deny(req):
            await asyncio.sleep(0)
            return Decision(False)

        async with sbx.answer_egress(deny) as w:
            r = await sbx.run_shell(f"curl -sS -m 100 --noproxy '*' http://{name}:9/")
        assert r.exit_code != 0 and len(w.answered) == 1 and w.answered[0][0].host == name
