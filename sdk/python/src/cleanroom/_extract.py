"""Extracting a tar stream that came from a sandbox onto this host.

Everything in it is hostile data (the same rule as ``cleanroom cp``, docs/files.md): the
caller's ``local_dir`` is opened the ordinary way (it existed before the call), and nothing
beneath it is followed. tarfile's ``data`` filter is not enough: it decides with
``os.path.realpath`` and then writes by path, so it follows links already present under the
destination and has had bypasses of its own. Instead:

* every component beneath ``local_dir`` is opened from a directory fd with ``O_NOFOLLOW |
  O_DIRECTORY`` one name at a time (Python has no ``openat2``; a single name without ``/`` or
  ``..``, opened with ``O_NOFOLLOW``, is what ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``
  gives), and a link where a directory or the destination would be is refused with
  ``destination_is_link``;
* files are written to ``O_CREAT | O_EXCL | O_NOFOLLOW`` temporary names with a random suffix
  and renamed within the same directory fd;
* links from the sandbox are created as links and never traversed; hard links only to entries
  this call extracted;
* modes are masked to ``0o777`` (no setuid/setgid/sticky); devices and FIFOs are skipped;
* an entry named with ``..``, an absolute name, or outside the archived ``<basename>/`` is
  refused with its name (``unsafe_archive_entry``).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tarfile
from typing import Dict, List, Optional, Set, Tuple

from . import errors

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _unsafe(name: str, why: str) -> errors.CleanroomError:
    return errors.error("unsafe_archive_entry", f"archive entry {name!r} refused: {why}")


def _is_link(name: str, shown: str) -> errors.CleanroomError:
    return errors.error(
        "destination_is_link",
        f"{shown}: is a symbolic link; a download never writes through links under its destination",
    )


def parts(name: str) -> List[str]:
    """The components of an archive name (``.`` and empty ones dropped); ``..``, an absolute
    name or a NUL are refused."""
    if name.startswith("/"):
        raise _unsafe(name, "absolute names are not extracted")
    out = []
    for c in name.split("/"):
        if c in ("", "."):
            continue
        if c == ".." or "\0" in c:
            raise _unsafe(name, "names with `..` are not extracted")
        out.append(c)
    return out


def _lstat(dir_fd: int, name: str) -> Optional[os.stat_result]:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _temp(name: str) -> str:
    return f".{name[:160]}.cleanroom-partial-{secrets.token_hex(12)}"


def _commit(dir_fd: int, tmp: str, name: str, shown: str) -> None:
    """Rename ``tmp`` over ``name`` within ``dir_fd`` (a link there is replaced, not followed;
    a directory there is refused)."""
    st = _lstat(dir_fd, name)
    try:
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise errors.error("invalid_argument", f"{shown}: a directory is in the way")
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


class _Beneath:
    def __init__(self, root_fd: int, shown: str) -> None:
        self.root = root_fd
        self.shown = shown
        self.cache: Dict[Tuple[str, ...], int] = {}

    def close(self) -> None:
        for fd in self.cache.values():
            os.close(fd)
        self.cache.clear()

    def show(self, comps) -> str:
        return os.path.join(self.shown, *comps)

    def dir(self, comps: Tuple[str, ...]) -> int:
        """The directory ``comps`` beneath root, created where missing, never through a link."""
        if not comps:
            return self.root
        if comps in self.cache:
            return self.cache[comps]
        at = self.dir(comps[:-1])
        c = comps[-1]
        shown = self.show(comps)
        for _ in range(2):
            try:
                fd = os.open(c, _DIR, dir_fd=at)
                break
            except FileNotFoundError:
                try:
                    os.mkdir(c, 0o755, dir_fd=at)
                except FileExistsError:
                    pass
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    st = _lstat(at, c)
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        raise _is_link(c, shown) from None
                    raise errors.error("invalid_argument", f"{shown}: not a directory") from None
                raise
        else:
            raise errors.error("invalid_argument", f"{shown}: could not be created")
        self.cache[comps] = fd
        return fd


def extract(tar: tarfile.TarFile, local_dir: str, base: Optional[str]) -> List[str]:
    """Extract ``tar`` (entries ``<base>/…``; ``base`` None: any names) beneath ``local_dir``.
    Returns the names of the members extracted."""
    root = os.open(local_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    b = _Beneath(root, local_dir)
    done: Set[Tuple[str, ...]] = set()
    names: List[str] = []
    try:
        for m in tar:
            if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                continue  # devices, FIFOs: not recreated
            comps = tuple(parts(m.name))
            if base is not None and (not comps or comps[0] != base):
                raise _unsafe(m.name, "outside the directory that was archived")
            if not comps:
                continue
            parent, name = comps[:-1], comps[-1]
            shown = b.show(comps)
            d = b.dir(parent)
            mode = m.mode & 0o777
            if m.isdir():
                st = _lstat(d, name)
                if st is None:
                    os.mkdir(name, mode | 0o700, dir_fd=d)
                elif stat.S_ISLNK(st.st_mode):
                    raise _is_link(name, shown)
                elif not stat.S_ISDIR(st.st_mode):
                    raise errors.error("invalid_argument", f"{shown}: not a directory")
            elif m.issym():
                tmp = _temp(name)
                os.symlink(m.linkname, tmp, dir_fd=d)
                _commit(d, tmp, name, shown)
            elif m.islnk():
                target = tuple(parts(m.linkname))
                if target not in done:
                    raise _unsafe(m.name, "a hard link to something this download did not extract")
                sd = b.dir(target[:-1])
                tmp = _temp(name)
                os.link(target[-1], tmp, src_dir_fd=sd, dst_dir_fd=d, follow_symlinks=False)
                _commit(d, tmp, name, shown)
            else:
                src = tar.extractfile(m)
                tmp = _temp(name)
                fd = os.open(tmp, _NEW, 0o600, dir_fd=d)
                try:
                    with os.fdopen(fd, "wb", closefd=True) as f:
                        while src is not None:
                            chunk = src.read(1 << 20)
                            if not chunk:
                                break
                            f.write(chunk)
                        os.fchmod(f.fileno(), mode)
                except BaseException:
                    os.unlink(tmp, dir_fd=d)
                    raise
                _commit(d, tmp, name, shown)
            if not m.isdir():
                done.add(comps)
            names.append(m.name)
    finally:
        b.close()
        os.close(root)
    return names
