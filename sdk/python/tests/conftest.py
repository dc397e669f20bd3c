"""Fixtures for the SDK tests. They run against a REAL `cleanroom serve`: the Rust test
crates/e2e/tests/suites/sdk.rs starts one on a unix socket (CLEANROOM_HOST) and one on TCP with a
tokens file (CLEANROOM_TEST_TCP_HOST, CLEANROOM_TEST_TOKEN) and runs pytest. Without a
server the tests fail (they never skip)."""

import os
from pathlib import Path

import pytest

from cleanroom import Sandbox

REPO = Path(__file__).resolve().parents[3]


def _need(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        pytest.fail(f"{name} is not set: run these tests through `cargo nextest run -p cleanroom-cli --test sdk`")
    return v


@pytest.fixture(scope="session")
def host() -> str:
    return _need("CLEANROOM_HOST")


@pytest.fixture(scope="session")
def tcp_host() -> str:
    return _need("CLEANROOM_TEST_TCP_HOST")


@pytest.fixture(scope="session")
def token() -> str:
    return _need("CLEANROOM_TEST_TOKEN")


@pytest.fixture
def sbx(host):
    with Sandbox.create(host=host) as s:
        yield s
