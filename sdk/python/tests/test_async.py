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
