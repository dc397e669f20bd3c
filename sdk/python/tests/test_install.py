"""Installing the SDK as a user does, offline: ``pip install <repo>/sdk/python`` from a fresh
directory into a fresh venv (Python's own tools only: venv, its bundled pip, no index) leaves
the source tree as it was (no ``build/``, no ``*.egg-info``) and gives a working package; and
``scripts/sdk-dist.sh`` produces a wheel and an sdist that install the same way.

The SDK's runtime dependencies are not downloaded: the fresh venv sees those of the test venv
through a ``.pth`` line (only their directory: the editable SDK there is not on the path)."""

import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import REPO

SDK = REPO / "sdk" / "python"

PROBE = """
import os, sys, cleanroom
from cleanroom import Sandbox
assert cleanroom.__file__.startswith(sys.prefix), cleanroom.__file__
with Sandbox.create(host=os.environ["CLEANROOM_HOST"]) as s:
    print(s.run_shell("echo installed-$((40+2))").stdout, end="")
"""


def tree(root: Path) -> set:
    """Every path under root except bytecode caches."""
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if "__pycache__" not in p.parts
    }


def sh(*cmd, cwd, env=None):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


def fresh_venv(where: Path) -> Path:
    sh(sys.executable, "-m", "venv", str(where), cwd=where.parent)
    py = where / "bin" / "python"
    purelib = sh(str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=where).strip()
    Path(purelib, "cleanroom-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py


def pip_install(py: Path, target: str, cwd: Path) -> None:
    sh(
        str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
        "--no-deps", target, cwd=cwd,
    )


def probe(py: Path, cwd: Path, host: str) -> None:
    env = dict(os.environ, CLEANROOM_HOST=host, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    assert sh(str(py), "-c", PROBE, cwd=cwd, env=env) == "installed-42\n"


def test_pip_install_from_the_repo_path(tmp_path, host):
    before = tree(SDK)
    work = tmp_path / "project"  # a fresh directory, not the repository
    work.mkdir()
    py = fresh_venv(work / "venv")
    pip_install(py, str(SDK), work)
    probe(py, work, host)
    after = tree(SDK)
    assert after == before, f"pip install wrote into sdk/python: {sorted(after - before)}"
    assert not (SDK / "build").exists()
    assert not list(SDK.rglob("*.egg-info"))


def check_record(wheel: Path) -> None:
    """Every file of the wheel is in RECORD with its sha256 and size."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(z.read(record).decode())))
        assert {r[0] for r in rows} == names
        for name, digest, size in rows:
            if name == record:
                continue
            data = z.read(name)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (f"sha256={want}", len(data)), name
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert "Name: cleanroom-sdk" in meta and "Requires-Dist: connectrpc" in meta
        assert "cleanroom/v1/cleanroom_pb2.py" in names and "cleanroom/py.typed" in names


def test_sdk_dist_artifacts_install_offline(tmp_path, host):
    before = tree(SDK)
    out = tmp_path / "dist"
    sh(str(REPO / "scripts" / "sdk-dist.sh"), str(out), cwd=tmp_path)
    wheels = sorted(out.glob("cleanroom_sdk-*-py3-none-any.whl"))
    sdists = sorted(out.glob("cleanroom_sdk-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(os.listdir(out))
    if (REPO / "sdk" / "typescript" / "pack.sh").exists():
        assert list(out.glob("*.tgz")), sorted(os.listdir(out))
    check_record(wheels[0])
    for kind, artifact in (("wheel", wheels[0]), ("sdist", sdists[0])):
        work = tmp_path / kind
        work.mkdir()
        py = fresh_venv(work / "venv")
        pip_install(py, str(artifact), work)
        probe(py, work, host)
    assert tree(SDK) == before
