"""``sbx.files``: move files in and out of a sandbox through the FileService.

Every operation runs on the server with the sandbox's own identity (what the sandbox's own
processes could read or write, nothing more). Uploads are chunked unary calls with offsets:
a chunk the server did not take (``upload_offset_mismatch``) is resent from the offset the
server reports, so a write survives a dropped connection; the file appears atomically.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from typing import BinaryIO, Iterator, List, Optional, Union

from . import errors
from .v1 import files_pb2 as fpb

Data = Union[str, bytes, bytearray, memoryview, BinaryIO]
#: Chunk size used before the server has said its maximum.
FIRST_CHUNK = 1 << 20
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
    request to send next and digests each response."""

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
        self._base = src.tell() if hasattr(src, "tell") and src.seekable() else None
        self.done: Optional[FileInfo] = None

    def next_request(self) -> "fpb.WriteSandboxFileRequest":
        if self._pending is None:
            self._pending = self.src.read(self.chunk) or b""
        data = self._pending
        peek_eof = len(data) < self.chunk
        req = fpb.WriteSandboxFileRequest(
            sandbox_id=self.sandbox_id,
            path=self.path,
            upload_id=self.upload_id,
            offset=self.offset,
            data=data,
            finish=peek_eof,
        )
        if not self.upload_id:
            req.options.CopyFrom(self.options)
        return req

    def took(self, resp: "fpb.WriteSandboxFileResponse") -> None:
        data = self._pending or b""
        self._pending = None
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

    def mismatch(self, e: errors.CleanroomError) -> None:
        """The server stands at another offset (a chunk lost in transit): resume there if
        the source can seek, else re-raise."""
        try:
            at = int(e.details.get("offset", ""))
        except ValueError:
            raise e from None
        if self._base is None or at > self.offset:
            raise e
        # Resend from where the server stands; the digest covers exactly those bytes.
        self.src.seek(self._base)
        self.sha = hashlib.sha256(self.src.read(at))
        self.offset = at
        self._pending = None


def _list_request(sandbox_id: str, path: str, after: str) -> "fpb.ListSandboxFilesRequest":
    return fpb.ListSandboxFilesRequest(sandbox_id=sandbox_id, path=path, start_after=after)


class Files:
    """File operations of one :class:`~cleanroom.Sandbox` (``sbx.files``)."""

    def __init__(self, sandbox) -> None:
        self._sbx = sandbox
        self._svc = sandbox.client.files

    def _call(self, method, req):
        return self._sbx.client.call(method, req)

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
        while up.done is None:
            try:
                up.took(self._call(self._svc.write_sandbox_file, up.next_request()))
            except errors.UploadOffsetMismatchError as e:
                up.mismatch(e)
        return up.done

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
            while up.done is None:
                try:
                    up.took(self._call(self._svc.write_sandbox_file, up.next_request()))
                except errors.UploadOffsetMismatchError as e:
                    up.mismatch(e)
            return up.done

    def iter_archive(self, path: str) -> Iterator[bytes]:
        """A file or directory tree as a tar stream (entries named ``<basename>/…``)."""
        req = fpb.ReadSandboxArchiveRequest(sandbox_id=self._sbx.id, path=path)
        for m in self._sbx.client.stream(self._svc.read_sandbox_archive, req):
            if m.data:
                yield m.data

    def download_dir(self, path: str, local_dir: str) -> List[str]:
        """Copy ``path`` (a file or directory tree of the sandbox) into ``local_dir`` as
        ``local_dir/<basename>``; returns the member names. The archive comes from the
        sandbox, so it is extracted with tarfile's ``data`` filter: no absolute or ``..``
        names, no links out of ``local_dir``, no devices, no setuid bits."""
        with tempfile.TemporaryFile() as buf:
            for chunk in self.iter_archive(path):
                buf.write(chunk)
            buf.seek(0)
            with tarfile.open(fileobj=buf, mode="r") as tar:
                tar.extractall(local_dir, filter="data")
                return tar.getnames()

    def iter_read(self, path: str, offset: int = 0, length: int = 0) -> Iterator[bytes]:
        """Stream a file's bytes from ``offset`` (at most ``length``; 0 = to the end)."""
        req = fpb.ReadSandboxFileRequest(
            sandbox_id=self._sbx.id, path=path, offset=offset, length=length
        )
        for m in self._sbx.client.stream(self._svc.read_sandbox_file, req):
            if m.data:
                yield m.data

    def read(self, path: str, offset: int = 0, length: int = 0) -> bytes:
        """A file's bytes (or the slice ``offset``..``offset+length``)."""
        return b"".join(self.iter_read(path, offset, length))

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

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

    def stat(self, path: str, follow_symlinks: bool = False) -> FileInfo:
        r = self._call(
            self._svc.stat_sandbox_file,
            fpb.StatSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, follow_symlinks=follow_symlinks
            ),
        )
        return FileInfo.from_proto(r.file)

    def exists(self, path: str) -> bool:
        try:
            self.stat(path)
            return True
        except errors.SandboxFileNotFoundError:
            return False

    def mkdir(self, path: str, mode: int = 0, parents: bool = True) -> FileInfo:
        r = self._call(
            self._svc.make_sandbox_directory,
            fpb.MakeSandboxDirectoryRequest(
                sandbox_id=self._sbx.id, path=path, mode=mode, parents=parents
            ),
        )
        return FileInfo.from_proto(r.directory)

    def remove(self, path: str, recursive: bool = False, missing_ok: bool = False) -> bool:
        r = self._call(
            self._svc.remove_sandbox_file,
            fpb.RemoveSandboxFileRequest(
                sandbox_id=self._sbx.id, path=path, recursive=recursive, missing_ok=missing_ok
            ),
        )
        return r.removed
