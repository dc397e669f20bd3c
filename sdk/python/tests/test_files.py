"""sbx.files against the real FileService: write/read/list/stat/mkdir/remove, multi-chunk
uploads byte-exact, offsets, and the sandbox's own view (a symlink it planted cannot send a
write outside it)."""

import hashlib
import os

import pytest

from cleanroom import AsyncSandbox, errors


def test_write_read_list_stat(sbx):
    info = sbx.files.write("/workspace/dir/hello.txt", "hello\n", mode=0o600)
    assert (info.path, info.name, info.type, info.size, info.mode) == (
        "/workspace/dir/hello.txt",
        "hello.txt",
        "file",
        6,
        0o600,
    )
    assert sbx.files.read("/workspace/dir/hello.txt") == b"hello\n"
    assert sbx.files.read_text("/workspace/dir/hello.txt") == "hello\n"
    # The sandbox sees what the API wrote, and the API sees what the sandbox wrote.
    assert sbx.run("cat", "/workspace/dir/hello.txt").stdout == "hello\n"
    sbx.run("sh", "-c", "printf made-inside > /workspace/dir/inside.txt")
    assert sbx.files.read("/workspace/dir/inside.txt") == b"made-inside"
    names = [(e.name, e.type) for e in sbx.files.list("/workspace/dir")]
    assert names == [("hello.txt", "file"), ("inside.txt", "file")]
    assert sbx.files.stat("/workspace/dir").type == "dir"
    assert sbx.files.read("/workspace/dir/hello.txt", offset=2, length=3) == b"llo"


def test_large_upload_is_chunked_and_exact(sbx):
    data = os.urandom(5 * 1024 * 1024 + 123)  # several chunks
    info = sbx.files.write("/workspace/big.bin", data)
    assert info.size == len(data)
    assert sbx.run("sha256sum", "/workspace/big.bin").stdout.split()[0] == hashlib.sha256(
        data
    ).hexdigest()
    assert sbx.files.read("/workspace/big.bin") == data
    with open(os.devnull, "rb") as empty:
        assert sbx.files.write("/workspace/empty", empty).size == 0


def test_mkdir_remove_and_codes(sbx):
    sbx.files.mkdir("/workspace/a/b/c")
    assert sbx.files.exists("/workspace/a/b/c")
    with pytest.raises(errors.DirectoryNotEmptyError):
        sbx.files.remove("/workspace/a")
    assert sbx.files.remove("/workspace/a", recursive=True)
    assert not sbx.files.exists("/workspace/a")
    with pytest.raises(errors.SandboxFileNotFoundError) as e:
        sbx.files.read("/workspace/nope")
    assert e.value.code == "file_not_found"
    sbx.files.write("/workspace/once", "1")
    with pytest.raises(errors.SandboxFileExistsError):
        sbx.files.write("/workspace/once", "2", overwrite=False)
    assert sbx.files.read("/workspace/once") == b"1"


def test_planted_symlink_stays_inside_the_sandbox(sbx, tmp_path):
    """The sandbox points a link at a host path; writing through it lands inside the
    sandbox's own root (or is refused), never on the host."""
    victim = tmp_path / "host-file"
    victim.write_text("host")
    sbx.run("ln", "-s", str(victim), "/workspace/link")
    try:
        sbx.files.write("/workspace/link", "evil")
    except errors.CleanroomError:
        pass
    assert victim.read_text() == "host"


async def test_async_files(host):
    async with AsyncSandbox.create(host=host) as sbx:
        await sbx.files.write("/workspace/x.txt", b"async bytes")
        assert await sbx.files.read("/workspace/x.txt") == b"async bytes"
        assert [e.name for e in await sbx.files.list("/workspace")] == ["x.txt"]
        assert (await sbx.files.stat("/workspace/x.txt")).size == 11
        await sbx.files.mkdir("/workspace/d")
        assert await sbx.files.remove("/workspace/d")


def test_directories_as_tar_streams(sbx, tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("A")
    (src / "sub/b.bin").write_bytes(os.urandom(70000))
    os.chmod(src / "a.txt", 0o640)
    sbx.files.upload_dir(str(src), "/workspace/up/dir")
    assert sbx.files.read("/workspace/up/dir/a.txt") == b"A"
    assert sbx.files.stat("/workspace/up/dir/a.txt").mode == 0o640
    assert sbx.files.read("/workspace/up/dir/sub/b.bin") == (src / "sub/b.bin").read_bytes()
    # And back out: docker cp layout, <basename>/...
    sbx.run("sh", "-c", "echo made > /workspace/up/dir/sub/made.txt")
    out = tmp_path / "out"
    out.mkdir()
    names = sbx.files.download_dir("/workspace/up/dir", str(out))
    assert "dir/sub/made.txt" in names
    assert (out / "dir/sub/made.txt").read_text() == "made\n"
    assert (out / "dir/sub/b.bin").read_bytes() == (src / "sub/b.bin").read_bytes()


def test_download_of_hostile_links_stays_in_the_target(sbx, tmp_path):
    """A sandbox plants an absolute symlink and a link pointing up and out: they are created
    as links, never followed; when the next download has real directories with bytes where
    those links are, nothing is written through them (``destination_is_link``)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    sbx.run(
        "sh",
        "-c",
        f"mkdir -p /workspace/evil && ln -s {outside} /workspace/evil/abs && "
        "ln -s ../../../../../../tmp /workspace/evil/up && echo ok > /workspace/evil/fine",
    )
    out = tmp_path / "out"
    out.mkdir()
    sbx.files.download_dir("/workspace/evil", str(out))
    assert os.readlink(out / "evil/abs") == str(outside)
    assert os.readlink(out / "evil/up") == "../../../../../../tmp"
    assert (out / "evil/fine").read_text() == "ok\n"
    sbx.run(
        "sh",
        "-c",
        "cd /workspace/evil && rm abs up && mkdir abs up && echo pwned > abs/pwned "
        "&& echo pwned > up/pwned && chmod 4755 fine",
    )
    with pytest.raises(errors.CleanroomError) as e:
        sbx.files.download_dir("/workspace/evil", str(out))
    assert e.value.code == "destination_is_link"
    with pytest.raises(errors.CleanroomError) as e:
        sbx.files.download_dir("/workspace/evil/abs", str(out / "evil"))
    assert e.value.code == "destination_is_link"
    assert list(outside.iterdir()) == []
    # A fresh destination: links as links, no setuid bit.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    sbx.files.download_dir("/workspace/evil", str(fresh))
    assert (fresh / "evil/abs/pwned").read_text() == "pwned\n"
    assert (fresh / "evil/fine").stat().st_mode & 0o7777 == 0o755
