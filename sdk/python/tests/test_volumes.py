"""Named volumes through the SDK (docs/volumes.md): create, mount read-write into one
sandbox, read-only into the next, refused writes and removals, and mount specs checked
before any request. The suite's servers run as root, so volumes really mount."""

import time
import uuid

import pytest

from cleanroom import AsyncClient, AsyncSandbox, Client, Sandbox, errors

MiB = 1 << 20


def fresh_name() -> str:
    return f"py-{uuid.uuid4().hex[:12]}"


def remove_when_released(c, name, seconds=15.0):
    """``remove_volume`` once the one-shot sandboxes that mounted it have finished stopping
    (``Sandbox.exec`` tears its sandbox down in the background)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return c.remove_volume(name)
        except errors.VolumeInUseError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_volume_outlives_a_writer_and_reads_back_read_only(host):
    name = fresh_name()
    with Client(host) as c:
        v = c.create_volume(name, size_mib=32)
        assert (v.name, v.size_bytes) == (name, 32 * MiB)
        assert v.volume_id.startswith("vol_")
        with pytest.raises(errors.VolumeExistsError):
            c.create_volume(name)

        # A: read-write (the mapping form); its file stays after A is gone.
        with Sandbox.create(
            volumes=[{"name": name, "path": "/workspace/cache"}], client=c
        ) as a:
            r = a.run("sh", "-c", "echo kept > /workspace/cache/f && cat /workspace/cache/f")
            assert (r.exit_code, r.stdout) == (0, "kept\n"), r.stderr
            got = c.get_volume(name)
            assert list(got.mounted_by) == [a.id] and got.mounted_rw
            assert [m.name for m in a.info().volumes] == [name]

        # B: read-only (the CLI's grammar): reads A's file, cannot write.
        with Sandbox.create(volumes=[f"{name}:/mnt/data:ro"], client=c) as b:
            r = b.run("cat", "/mnt/data/f")
            assert (r.exit_code, r.stdout) == (0, "kept\n"), r.stderr
            w = b.run("sh", "-c", "echo x > /mnt/data/g")
            assert w.exit_code != 0 and "Read-only file system" in w.stderr, w
            got = c.get_volume(v.volume_id)
            assert list(got.mounted_by) == [b.id] and not got.mounted_rw
            # One call: a second reader beside B, torn down after the command.
            e = Sandbox.exec("cat", "/mnt/data/f", volumes=[f"{name}:/mnt/data:ro"], client=c)
            assert (e.exit_code, e.stdout) == (0, "kept\n"), e.stderr
            # Read-write beside a read-only mount is refused.
            with pytest.raises(errors.VolumeBusyError):
                Sandbox.create(volumes=[f"{name}:/workspace/cache"], client=c)
            with pytest.raises(errors.VolumeInUseError):
                c.remove_volume(name)
            assert name in [x.name for x in c.list_volumes()]

        gone = remove_when_released(c, name)
        assert gone.volume_id == v.volume_id
        assert name not in [x.name for x in c.list_volumes()]
        with pytest.raises(errors.VolumeNotFoundError):
            c.get_volume(name)


@pytest.mark.parametrize(
    "spec",
    [
        "nocolon",
        "cache:relative/path",
        "cache:/mnt/data:rx",
        "Bad Name:/mnt/data",
        ":/mnt/data",
        {"name": "cache"},
        {"name": "cache", "path": "/mnt/data", "readonly": True},
        42,
    ],
)
def test_malformed_mounts_are_typed_before_any_request(spec):
    # No host: a request would fail with server_unreachable, not volume_mount_invalid.
    with pytest.raises(errors.VolumeMountInvalidError) as e:
        Sandbox.create(volumes=[spec], host="unix:///nonexistent/cleanroom.sock")
    assert e.value.code == "volume_mount_invalid"
    with pytest.raises(errors.VolumeMountInvalidError):
        Sandbox.exec("true", volumes=[spec], host="unix:///nonexistent/cleanroom.sock")


def test_server_rules_and_option_checks(host):
    with Client(host) as c:
        # Well-formed but on a system path: the server refuses with the same code.
        with pytest.raises(errors.VolumeMountInvalidError):
            Sandbox.create(volumes=["anyvol:/etc/x"], client=c)
        with pytest.raises(errors.VolumeNotFoundError):
            Sandbox.create(volumes=[f"{fresh_name()}:/mnt/x"], client=c)
        with pytest.raises(errors.InvalidArgumentError):
            Sandbox.exec("true", in_sandbox="sbx_x", volumes=["v:/mnt/x"], client=c)
        with pytest.raises(errors.InvalidArgumentError):
            c.create_volume(fresh_name(), size_mib=32, size_bytes=32 * MiB)
        with pytest.raises(errors.UnknownOptionError):
            c.create_volume(fresh_name(), size_mb=32)


async def test_async_volume_calls(host):
    name = fresh_name()
    async with AsyncClient(host) as c:
        v = await c.create_volume(name, size_bytes=16 * MiB)
        assert v.size_bytes == 16 * MiB
        async with AsyncSandbox.create(volumes=[f"{name}:/mnt/v"], client=c) as s:
            r = await s.run("sh", "-c", "echo async > /mnt/v/f && cat /mnt/v/f")
            assert (r.exit_code, r.stdout) == (0, "async\n"), r.stderr
            with pytest.raises(errors.VolumeInUseError):
                await c.remove_volume(name)
        assert (await c.get_volume(name)).name == name
        await c.remove_volume(name)
        assert name not in [x.name for x in await c.list_volumes()]
