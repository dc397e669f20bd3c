"""The SDK's PEP 517 build backend: Python's standard library only, and nothing written into
the source tree.

Why not setuptools: ``pip install ./sdk/python`` builds in the source directory, and
setuptools writes ``build/`` and ``src/*.egg-info`` there (a checkout that changes when you
install from it, and stale files a later build picks up). The package is pure Python with
committed generated code, so a wheel is only a zip of ``src/cleanroom`` plus the metadata of
``pyproject.toml`` ([project]); this module writes exactly that (and an sdist, and a PEP 660
editable wheel) into the directory the frontend names. No download is needed to build
(``[build-system] requires = []``; Python < 3.11 asks for ``tomli`` to read pyproject.toml).

Archives are reproducible: sorted entries, fixed timestamps (``SOURCE_DATE_EPOCH`` if set).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import sys
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cleanroom"
#: What an sdist carries besides the package (enough to build the wheel from it).
SDIST_FILES = ("pyproject.toml", "README.md", "_backend/cleanroom_build.py")


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli  # get_requires_for_build_* asked the frontend for it

    return tomli


def _project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return _toml().load(f)["project"]


def _dist_name(project: dict) -> str:
    """``cleanroom-sdk`` → ``cleanroom_sdk`` (wheel and sdist file names, dist-info)."""
    return project["name"].replace("-", "_").replace(".", "_").lower()


def _epoch() -> int:
    # Zip timestamps start in 1980.
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _metadata(project: dict) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
    ]
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lic = project.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append(f"License: {lic['text']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in sorted(project.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = project.get("readme")
    body = ""
    if isinstance(readme, str):
        lines.append("Description-Content-Type: text/markdown")
        body = (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + body


def _package_files() -> list:
    """(archive path, source path) of every file of the package, sorted; no caches."""
    out = []
    for p in sorted((ROOT / "src" / PACKAGE).rglob("*")):
        rel = p.relative_to(ROOT / "src")
        if p.is_file() and "__pycache__" not in rel.parts and p.suffix not in (".pyc", ".pyo"):
            out.append((rel.as_posix(), p))
    return out


class _Wheel:
    """A wheel being written: entries with their RECORD lines."""

    def __init__(self, path: Path) -> None:
        self._zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self._record = []
        self._when = time.gmtime(_epoch())[:6]

    def add(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, self._when)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self._record.append(f"{name},sha256={digest},{len(data)}")

    def finish(self, dist_info: str) -> None:
        record = f"{dist_info}/RECORD"
        lines = self._record + [f"{record},,"]
        info = zipfile.ZipInfo(record, self._when)
        info.external_attr = 0o644 << 16
        self._zip.writestr(info, "\n".join(lines) + "\n")
        self._zip.close()


def _build(wheel_directory: str, editable: bool) -> str:
    project = _project()
    name, version = _dist_name(project), project["version"]
    filename = f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    out = Path(wheel_directory) / filename
    w = _Wheel(out)
    if editable:
        # PEP 660: the installed package is the source tree's src/ (a .pth line).
        w.add(f"_{name}_editable.pth", (str(ROOT / "src") + "\n").encode())
    else:
        for arc, src in _package_files():
            w.add(arc, src.read_bytes())
    w.add(f"{dist_info}/METADATA", _metadata(project).encode())
    wheel = "Wheel-Version: 1.0\nGenerator: cleanroom_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    w.add(f"{dist_info}/WHEEL", wheel.encode())
    w.add(f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode())
    w.finish(dist_info)
    return filename


# ---- PEP 517 / PEP 660 hooks --------------------------------------------------------------


def _requires(config_settings=None) -> list:
    return [] if sys.version_info >= (3, 11) else ["tomli>=1.1"]


get_requires_for_build_wheel = _requires
get_requires_for_build_sdist = _requires
get_requires_for_build_editable = _requires


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None) -> str:
    project = _project()
    base = f"{_dist_name(project)}-{project['version']}"
    filename = f"{base}.tar.gz"
    files = [(f, ROOT / f) for f in SDIST_FILES]
    files += [(f"src/{arc}", src) for arc, src in _package_files()]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{base}/{name}")
            info.size, info.mtime, info.mode = len(data), _epoch(), 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))

        add("PKG-INFO", _metadata(project).encode())
        for arc, src in sorted(files):
            add(arc, src.read_bytes())
    with open(Path(sdist_directory) / filename, "wb") as f:
        with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=_epoch()) as gz:
            gz.write(buf.getvalue())
    return filename
