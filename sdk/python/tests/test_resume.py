"""Interrupted transfers resume: a real TCP proxy between the SDK and the server resets the
connection in the middle of an upload or a download; the SDK asks the server where the
upload stands (or re-opens the download at the offset reached) and continues. The bytes
on the wire show it resumed rather than started over; the content is byte-exact."""

import hashlib
import io
import os

import pytest

from cleanroom import AsyncSandbox, Sandbox, errors

from proxy import BreakingProxy

MiB = 1 << 20
SIZE = 12 * MiB


@pytest.fixture
def tcp_sbx(tcp_host, token):
    with Sandbox.create(host=tcp_host, token=token) as s:
        yield s


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def test_upload_resumes_after_connections_drop(tcp_sbx, tcp_host, token):
    data = os.urandom(SIZE)
    # Two resets mid-upload: after 5 MiB and after 9 MiB went up.
    p = BreakingProxy(tcp_host.removeprefix("http://"), cut_up=[5 * MiB, 9 * MiB])
    try:
        via = Sandbox.connect(tcp_sbx.id, host=p.host, token=token)
        try:
            info = via.files.write("/workspace/big.bin", data)
        finally:
            via.close()  # the connection only: the sandbox stays
        assert p.cuts == 2, "the proxy did not interrupt the upload"
        # Resumed, not restarted: at most the two chunks in flight went up twice
        # (a restart would resend 14 MiB more).
        assert p.up < SIZE + 2 * 2 * MiB + MiB, p.up
    finally:
        p.close()
    assert info.size == SIZE
    got = tcp_sbx.run("sha256sum", "/workspace/big.bin").stdout.split()[0]
    assert got == sha(data)


def test_upload_from_an_unseekable_stream_resumes(tcp_sbx, tcp_host, token):
    data = os.urandom(6 * MiB + 7)

    class Pipe(io.RawIOBase):
        """A source that can only be read forward (like stdin)."""

        def __init__(self):
            self._b = io.BytesIO(data)

        def readable(self):
            return True

        def seekable(self):
            return False

        def read(self, n=-1):
            return self._b.read(n)

    p = BreakingProxy(tcp_host.removeprefix("http://"), cut_up=[3 * MiB])
    try:
        via = Sandbox.connect(tcp_sbx.id, host=p.host, token=token)
        try:
            via.files.write("/workspace/piped.bin", Pipe())
        finally:
            via.close()
        assert p.cuts == 1
    finally:
        p.close()
    assert tcp_sbx.files.read("/workspace/piped.bin") == data


def test_download_resumes_at_the_offset_reached(tcp_sbx, tcp_host, token):
    data = os.urandom(SIZE)
    tcp_sbx.files.write("/workspace/dl.bin", data)
    p = BreakingProxy(tcp_host.removeprefix("http://"), cut_down=[4 * MiB, 8 * MiB])
    try:
        via = Sandbox.connect(tcp_sbx.id, host=p.host, token=token)
        # Record where each ReadSandboxFile call starts (what was lost in socket buffers at
        # a cut varies, so the bytes on the wire do not tell resume from restart here).
        starts = []
        svc = via.files._svc
        real = svc.read_sandbox_file

        def spy(req, *a, **kw):
            starts.append((req.offset, req.length))
            return real(req, *a, **kw)

        svc.read_sandbox_file = spy
        try:
            got = via.files.read("/workspace/dl.bin")
            assert p.cuts == 2, "the proxy did not interrupt the download"
            assert sha(got) == sha(data) and len(got) == SIZE
            # Resumed at the offsets reached (what the client had read before the reset:
            # a reset drops what was still in its socket buffer, so never less than before).
            assert len(starts) == 3 and starts[0] == (0, 0), starts
            assert starts[1][0] <= starts[2][0] < SIZE and starts[2][0] > 0, starts
            # A slice resumes inside its bounds (the end stays where it was).
            starts.clear()
            p.cut_down.append(p.down + 1 * MiB)
            part = via.files.read("/workspace/dl.bin", offset=MiB + 3, length=5 * MiB)
            assert part == data[MiB + 3 : 6 * MiB + 3]
            assert p.cuts == 3
            assert len(starts) == 2 and starts[0] == (MiB + 3, 5 * MiB), starts
            assert sum(starts[1]) == 6 * MiB + 3 and starts[1][0] >= MiB + 3, starts
        finally:
            via.close()
    finally:
        p.close()


def test_a_server_gone_for_good_ends_in_a_typed_error(tcp_sbx, tcp_host, token):
    """After the cut every connection dies at once: a bounded number of retries, then
    ServerUnreachableError (no endless loop, no partial file at the target)."""
    p = BreakingProxy(tcp_host.removeprefix("http://"), cut_up=[3 * MiB], die_after_cut=True)
    try:
        via = Sandbox.connect(tcp_sbx.id, host=p.host, token=token)
        try:
            with pytest.raises(errors.ServerUnreachableError):
                via.files.write("/workspace/never.bin", os.urandom(6 * MiB))
        finally:
            via.close()
        assert p.cuts == 1 and p.refused >= 1
    finally:
        p.close()
    assert not tcp_sbx.files.exists("/workspace/never.bin")


async def test_async_transfers_resume(tcp_host, token):
    data = os.urandom(7 * MiB)
    async with AsyncSandbox.create(host=tcp_host, token=token) as sbx:
        await sbx.files.write("/workspace/seed", b"x")
        p = BreakingProxy(tcp_host.removeprefix("http://"), cut_up=[3 * MiB])
        try:
            via = await AsyncSandbox.connect(sbx.id, host=p.host, token=token)
            try:
                info = await via.files.write("/workspace/a.bin", data)
                assert info.size == len(data) and p.cuts == 1
                p.cut_down.append(p.down + 2 * MiB)
                assert await via.files.read("/workspace/a.bin") == data
                assert p.cuts == 2
            finally:
                await via.aclose()
        finally:
            p.close()


class LoseAnswer:
    """Wraps the FileService stub: the call that commits goes to the real server (which
    commits), then its answer is lost — raised as the unreachable server an SDK sees when
    a connection dies after the request was processed. (A proxy cannot aim a reset at that
    exact moment; everything else here is real.) ``meanwhile`` runs between the two, as a
    sandbox process could."""

    def __init__(self, svc, meanwhile=None):
        self._svc = svc
        self.meanwhile = meanwhile
        self.lost = 0

    def __getattr__(self, name):
        return getattr(self._svc, name)

    def write_sandbox_file(self, req, *a, **kw):
        resp = self._svc.write_sandbox_file(req, *a, **kw)
        if req.finish and not self.lost:
            self.lost += 1
            if self.meanwhile:
                self.meanwhile()
            raise errors.ServerUnreachableError("server_unreachable", "answer lost (test)")
        return resp


@pytest.mark.parametrize("size", [100, 5 * MiB + 1])
def test_commit_whose_answer_was_lost(sbx, size):
    """One-call (no upload id yet) and multi-chunk uploads whose committing answer is lost:
    accepted when the file holds exactly the bytes sent — also with overwrite=False, where
    the retry finds the file its own lost call made — and refused when something else
    replaced the file meanwhile."""
    data = os.urandom(size)
    sbx.files._svc = LoseAnswer(sbx.files._svc)
    info = sbx.files.write("/workspace/c1", data, overwrite=False)
    assert sbx.files._svc.lost == 1 and info.size == size
    assert sbx.files.read("/workspace/c1") == data

    def tamper():
        sbx.run("sh", "-c", "echo tampered > /workspace/c2")

    sbx.files._svc = LoseAnswer(sbx.files._svc._svc, meanwhile=tamper)
    with pytest.raises(errors.CleanroomError) as e:
        sbx.files.write("/workspace/c2", data, overwrite=False)
    assert e.value.code in ("file_exists", "upload_not_found"), e.value
    assert sbx.files.read("/workspace/c2") == b"tampered\n"
