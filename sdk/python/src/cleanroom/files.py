"""``sbx.files``: move files in and out of a sandbox through the FileService.

Every operation runs on the server with the sandbox's own identity (what the sandbox's own
processes could read or write, nothing more). Uploads are chunked unary calls with offsets;
the file appears atomically when the last one commits.

Transfers survive interruptions. An upload whose call failed in transit (connection
dropped, server unreachable for a moment) asks the server where the upload stands
(``GetSandboxUpload``) and continues from that offset; a chunk the server did not take
(``upload_offset_mismatch``) likewise. A download that broke off re-opens the stream at the
offset it reached. Both give up after :data:`RETRIES` interruptions in a row without
progress (``ServerUnreachableError``). A server restart reclaims its sandboxes (and their
uploads): that surfaces as the server's own typed error, not as a retry loop.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import os
import tarfile
import tempfile
import time
from dataclasses import dataclass
from typing import BinaryIO, Iterator, List, Optional, Union

from . import _extract, errors
from .options import checked
from .v1 import files_pb2 as fpb

Data = Union[str, bytes, bytearray, memoryview, BinaryIO]
#: Chunk size used before the server has said its maximum.
FIRST_CHUNK = 1 << 20
#: Interruptions in a row (no byte of progress between them) before a transfer gives up.
RETRIES = 5


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): 0.2, 0.4 … capped at 3."""
    return min(0.2 * (2 ** (attempt - 1)), 3.0)
_TYPES = {
    fpb.SANDBOX_FILE_TYPE_REGULAR: "file",
    fpb.SANDBOX_FILE_TYPE_DIRECTORY: "dir",
    fpb.SANDBOX_FILE_TYPE_SYMLINK: "symlink",
    fpb.SANDBOX_FILE_TYPE_OTHER: "other",
}


@dataclass(frozen=True)
class FileInfo:
    """One filesystem entry as the sandbox sees it. ``type`` is ``file``, ``dir``,
    ``symlink`` or ``other``; ``uid``/``gid`` are the sandbox's own ids."""

    path: str
    name: str
    type: str
    size: int
    mode: int
    uid: int
    gid: int
    modified_at: Optional[_dt.datetime]
    symlink_target: str

    @staticmethod
    def from_proto(m: "fpb.SandboxFileInfo") -> "FileInfo":
        return FileInfo(
            path=m.path,
            name=m.name,
            type=_TYPES.get(m.type, "unspecified"),
            size=m.size,
            mode=m.mode,
            uid=m.uid,
            gid=m.gid,
            modified_at=m.modified_at.ToDatetime(_dt.timezone.utc)
            if m.HasField("modified_at")
            else None,
            symlink_target=m.symlink_target,
        )


def _reader(data: Data) -> BinaryIO:
    if isinstance(data, str):
        return io.BytesIO(data.encode())
    if isinstance(data, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(data))
    return data


def _options(
    mode, uid, gid, create_parents, overwrite, size, fmt=fpb.SANDBOX_UPLOAD_FORMAT_FILE
) -> "fpb.SandboxFileWriteOptions":
    o = fpb.SandboxFileWriteOptions(
        format=fmt,
        mode=mode or 0,
        create_parents=create_parents,
        no_overwrite=not overwrite,
    )
    if uid is not None:
        o.uid = uid
    if gid is not None:
        o.gid = gid
    if size is not None:
        o.expected_size = size
    return o


def _size_of(data: Data) -> Optional[int]:
    if isinstance(data, str):
        return len(data.encode())
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(data)
    return None


class Uploader:
    """The chunked-upload state machine, shared by the sync and async layers: it says what
    request to send next, digests each response, and after an interruption re-aligns with
    the offset the server reports (:meth:`resync`)."""

    def __init__(self, sandbox_id: str, path: str, src: BinaryIO, options) -> None:
        self.sandbox_id = sandbox_id
        self.path = path
        self.src = src
        self.options = options
        self.upload_id = ""
        self.offset = 0
        self.chunk = FIRST_CHUNK
        self.sha = hashlib.sha256()
        self._pending: Optional[bytes] = None
        self._pending_finish = False
        try:
            self._base: Optional[int] = src.tell() if src.seekable() else None
        except (AttributeError, OSError):
            self._base = None
        self.done: Optional[FileInfo] = None
        #: Interruptions since the last progress.
        self.failures = 0
        #: A one-call upload whose answer was lost may already be at the target.
        self.maybe_committed = False

    def next_request(self) -> "fpb.WriteSandboxFileRequest":
        if self._pending is None:
            self._pending = self.src.read(self.chunk) or b""
            self._pending_finish = len(self._pending) < self.chunk
        req = fpb.WriteSandboxFileRequest(
            sandbox_id=self.sandbox_id,
            path=self.path,
            upload_id=self.upload_id,
            offset=self.offset,
            data=self._pending,
            finish=self._pending_finish,
        )
        if not self.upload_id:
            req.options.CopyFrom(self.options)
        return req

    @property
    def finishing(self) -> bool:
        """The request in flight commits the upload."""
        return self._pending is not None and self._pending_finish

    def took(self, resp: "fpb.WriteSandboxFileResponse") -> None:
        data = self._pending or b""
        self._pending = None
        self.failures = 0
        self.sha.update(data)
        self.upload_id = resp.upload_id or self.upload_id
        self.offset = resp.offset
        if resp.max_chunk_bytes:
            self.chunk = int(resp.max_chunk_bytes)
        if resp.finished:
            if resp.sha256 and resp.sha256 != self.sha.hexdigest():
                raise errors.error(
                    "internal", f"upload of {self.path}: server digest differs from ours"
                )
            self.done = FileInfo.from_proto(resp.file)

    def interrupted(self, e: errors.CleanroomError) -> float:
        """A call failed in transit: how long to wait before asking the server where the
        upload stands (re-raises ``e`` once :data:`RETRIES` interruptions in a row)."""
        self.failures += 1
        if self.failures > RETRIES:
            raise e
        return backoff(self.failures)

    def status_request(self) -> Optional["fpb.GetSandboxUploadRequest"]:
        """What to ask the server after an interruption; ``None`` when no call has been
        answered yet (no upload id): then the upload starts over with the same bytes."""
        if not self.upload_id:
            return None
        return fpb.GetSandboxUploadRequest(sandbox_id=self.sandbox_id, upload_id=self.upload_id)

    def resync(self, at: int) -> None:
        """Continue from ``at``, the offset the server stands at. Bytes of the chunk in
        flight the server already holds are not resent; an offset behind ours (a server that
        lost bytes) needs a seekable source."""
        pending = self._pending or b""
        if self.offset <= at <= self.offset + len(pending):
            took = at - self.offset
            self.sha.update(pending[:took])
            self._pending = pending[took:] if self._pending is not None else None
            self.offset = at
            if took:
                self.failures = 0
            return
        if at > self.offset or self._base is None:
            raise errors.error(
                "upload_offset_mismatch",
                f"upload of {self.path}: the server stands at offset {at}, this client at "
                f"{self.offset}; cannot resume from a source that cannot seek",
                details={"offset": str(at)},
            )
        # Resend from where the server stands; the digest covers exactly those bytes.
        self.src.seek(self._base)
        self.sha = hashlib.sha256(self.src.read(at))
        self.offset = at
        self._pending = None

    def mismatch(self, e: errors.CleanroomError) -> None:
        """The server stands at another offset (``upload_offset_mismatch``): resume there."""
        try:
            at = int(e.details.get("offset", ""))
        except ValueError:
            raise e from None
        self.resync(at)

    def restart(self) -> None:
        """No call was answered (no upload id): send the chunk in flight again as a new
        upload (the pending bytes are kept, so any source works). If that chunk was the
        whole file (a one-call upload), the lost call may have committed it: remember, so
        that a ``file_exists`` (``overwrite=False``) is checked against our bytes."""
        self.offset = 0
        self.sha = hashlib.sha256()
        self.maybe_committed = self.finishing

    def verify_commit(
        self,
        info: FileInfo,
        content_sha: Optional[str],
        otherwise: Optional[errors.CleanroomError] = None,
    ) -> None:
        """The call that committed broke off (the upload is gone, or a retry of a one-call
        upload found the file there): accept the file at the target only if it is a regular
        file holding exactly our bytes (``content_sha`` read back from the sandbox), else
        raise ``otherwise`` (default ``upload_not_found``)."""
        want = self.sha.copy()
        want.update(self._pending or b"")
        if info.type != "file" or content_sha != want.hexdigest():
            raise otherwise or errors.error(
                "upload_not_found",
                f"upload of {self.path}: the connection broke during the commit and the "
                "file at the target does not hold this upload's bytes",
                details={"upload_id": self.upload_id},
            )
        self._pending = None
        self.done = info


def sha256_of(chunks: Iterator[bytes]) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.hexdigest()


class Download:
    """The resumable-download state machine, shared by the sync and async layers: where
    the next ``ReadSandboxFile`` starts, whether the stream that ended delivered everything,
    and that a resumed stream reads the same file (size and mtime unchanged)."""

    def __init__(self, sandbox_id: str, path: str, offset: int, length: int) -> None:
        self.sandbox_id = sandbox_id
        self.path = path
        self.pos = offset
        self.end: Optional[int] = offset + length if length else None
        self._ident = None
        self.failures = 0

    def request(self) -> "fpb.ReadSandboxFileRequest":
        return fpb.ReadSandboxFileRequest(
            sandbox_id=self.sandbox_id,
            path=self.path,
            offset=self.pos,
            length=(self.end - self.pos) if self.end is not None else 0,
        )

    def feed(self, m: "fpb.ReadSandboxFileResponse") -> bytes:
        """A message of the stream: its data (the position advances past it)."""
        if m.HasField("file"):
            ident = (m.file.size, m.file.modified_at.seconds, m.file.modified_at.nanos)
            if self._ident is None:
                self._ident = ident
                self.end = m.file.size if self.end is None else min(self.end, m.file.size)
            elif ident != self._ident:
                raise errors.error(
                    "stream_ended",
                    f"{self.path} changed while it was being downloaded; start over",
                )
        if m.data:
            self.pos += len(m.data)
            self.failures = 0
        return m.data

    @property
    def complete(self) -> bool:
        return self.end is not None and self.pos >= self.end

    def interrupted(self, e: errors.CleanroomError) -> float:
        """The stream broke off (or ended short): seconds to wait before resuming."""
        self.failures += 1
        if self.failures > RETRIES:
            raise e
        return backoff(self.failures)

    def short(self) -> errors.CleanroomError:
        return errors.error(
            "stream_ended",
            f"the download of {self.path} ended at byte {self.pos} of {self.end}",
        )


def _list_request(sandbox_id: str, path: str, after: str) -> "fpb.ListSandboxFilesRequest":
    return fpb.ListSandboxFilesRequest(sandbox_id=sandbox_id, path=path, start_after=after)


class Files:
    """File operations of one :class:`~cleanroom.Sandbox` (``sbx.files``)."""

    def __init__(self, sandbox) -> None:
        self._sbx = sandbox
        self._svc = sandbox.client.files

    def _call(self, method, req):
        return self._sbx.client.call(method, req)

    @checked
    def write(
        self,
        path: str,
        data: Data,
        *,
        mode: Optional[int] = None,
        uid: Optional[int] = None,
        gid: Optional[int] = None,
        create_parents: bool = True,
        overwrite: bool = True,
    ) -> FileInfo:
        """Write ``data`` (str, bytes or a binary file object, streamed in chunks) to
        ``path`` atomically. ``mode`` defaults to 0644."""
        up = Uploader(
            self._sbx.id,
            path,
            _reader(data),
            _options(mode, uid, gid, create_parents, overwrite, _size_of(data)),
        )
        return self._upload(up)

    def _upload(self, up: Uploader) -> FileInfo:
        while up.done is None:
            try:
                up.took(self._call(self._svc.write_sandbox_file, up.next_request()))
            except errors.UploadOffsetMismatchError as e:
                up.mismatch(e)
            except errors.ServerUnreachableError as e:
                self._resume(up, e)
            except errors.SandboxFileExistsError as e:
                if not up.maybe_committed:
                    raise
                # Our own lost first attempt put it there? Only if it holds our bytes.
                up.verify_commit(self.stat(up.path), sha256_of(self.iter_read(up.path)), e)
        return up.done

    def _resume(self, up: Uploader, e: errors.CleanroomError) -> None:
        """After an interrupted call: ask the server where the upload stands, continue."""
        finishing = up.finishing
        while True:
            time.sleep(up.interrupted(e))
            req = up.status_request()
            if req is None:
                up.restart()
                return
            try:
                r = self._call(self._svc.get_sandbox_upload, req)
            except errors.ServerUnreachableError as again:
                e = again
                continue
            except errors.UploadNotFoundError:
                if not finishing or up.options.format == fpb.SANDBOX_UPLOAD_FORMAT_TAR:
                    raise
                # The commit ran (the upload is gone): accept the file only if it holds
                # exactly the bytes sent.
                info = self.stat(up.path)
                up.verify_commit(info, sha256_of(self.iter_read(up.path)))
                return
            up.resync(r.upload.offset)
            return

    @checked
    def upload_dir(self, local_dir: str, remote_dir: str) -> FileInfo:
        """Copy the contents of ``local_dir`` into ``remote_dir`` (created with its parents)
        as one tar stream, extracted in the sandbox with the sandbox's own identity."""
        with tempfile.TemporaryFile() as buf:
            with tarfile.open(fileobj=buf, mode="w") as tar:
                for name in sorted(os.listdir(local_dir)):
                    tar.add(os.path.join(local_dir, name), arcname=name)
            size = buf.tell()
            buf.seek(0)
            self.mkdir(remote_dir, parents=True)
            up = Uploader(
                self._sbx.id,
                remote_dir,
                buf,
                _options(None, None, None, False, True, size, fpb.SANDBOX_UPLOAD_FORMAT_TAR),
            )
            return self._upload(up)

    @checked
    def iter_archive(self, path: str) -> Iterator[bytes]:
        """A file or directory tree as a tar stream (entries named ``<basename>/…``)."""
        req = fpb.ReadSandboxArchiveRequest(sandbox_id=self._sbx.id, path=path)
        for m in self._sbx.client.stream(self._svc.read_sandbox_archive, req):
            if m.data:
                yield m.data

    @checked
    def download_dir(self, path: str, local_dir: str) -> List[str]:
        """Copy ``path`` (a file or directory tree of the sandbox) into ``local_dir`` as
        ``local_dir/<basename>``; returns the member names. The archive comes from the
        sandbox, so it is hostile data (:mod:`cleanroom._extract`): nothing beneath
        ``local_dir`` is followed (a link where a directory or the destination would be is
        ``destination_is_link``), links are created as links, files go to ``O_EXCL``
        temporary names first, no setuid bits or devices; a ``..`` or absolute name is
        ``unsafe_archive_entry``."""
        base: Optional[str] = path.rstrip("/").rsplit("/", 1)[-1]
        if base in ("", "."):
            base = None
        with tempfile.TemporaryFile() as buf:
            for chunk in self.iter_archive(path):
                buf.write(chunk)
            buf.seek(0)
            with tarfile.open(fileobj=buf, mode="r") as tar:
                return _extract.extract(tar, local_dir, base)

    @checked
    def iter_read(self, path: str, offset: int = 0, length: int = 0) -> Iterator[bytes]:
        """Stream a file's bytes from ``offset`` (at most ``length``; 0 = to the end). A
        stream that breaks off or ends short is re-opened at the offset reached."""
        dl = Download(self._sbx.id, path, offset, length)
        while True:
            events = self._sbx.client.stream(self._svc.read_sandbox_file, dl.request())
            try:
                for m in events:
                    data = dl.feed(m)
                    if data:
                        yield data
            except errors.ServerUnreachableError as e:
                time.sleep(dl.interrupted(e))
                continue
            finally:
                events.close()
            if dl.complete or dl.end is None:
                return
            time.sleep(dl.interrupted(dl.short()))

    @checked
    def read(self, path: str, offset: int = 0, length: int = 0) -> bytes:
        """A file's bytes (or the slice ``offset``..``offset+length``)."""
        return b"".join(self.iter_read(path, offset, length))

    @checked
    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

    @checked
    def list(self, path: str) -> List[FileInfo]:
        """The entries of a directory, sorted by name (all pages)."""
        out: List[FileInfo] = []
        after = ""
        while True:
            r = self._call(self._svc.list_sandbox_files, _list_request(self._sbx.id, path, after))
            out.extend(FileInfo.from_proto(e) for e in r.entries)
            if not r.truncated or not r.entries:
                return out
            after = r.entries[-1].name

    @checked
    def stat(self, path: str, follow_symlinks: bool = False) -> FileInfo:
        r = self._call(
            self._svc.stat_sandbox_file,
            fpb.StatSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, follow_symlinks=follow_symlinks
            ),
        )
        return FileInfo.from_proto(r.file)

    @checked
    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except errors.SandboxFileNotFoundError:
            return False

    @checked
    def mkdir(self, path: str, mode: int = 0, parents: bool = True) -> FileInfo:
        r = self._call(
            self._svc.make_sandbox_directory,
            fpb.MakeSandboxDirectoryRequest(
                sandbox_id=self._sbx.id, path=path, mode=mode, parents=parents
            ),
        )
        return FileInfo.from_proto(r.directory)

    @checked
    def remove(self, path: str, recursive: bool = False, missing_ok: bool = False) -> bool:
        r = self._call(
            self._svc.remove_sandbox_file,
            fpb.RemoveSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, recursive=recursive, missing_ok=missing_ok
            ),
        )
        return r.removed
