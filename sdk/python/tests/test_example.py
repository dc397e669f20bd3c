"""examples/agent_loop.py runs end to end against the real server."""

import os
import subprocess
import sys

from conftest import REPO


def test_agent_loop_example(host):
    env = dict(os.environ, CLEANROOM_HOST=host)
    p = subprocess.run(
        [sys.executable, str(REPO / "examples/agent_loop.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ran 50 commands" in p.stdout and ", 0 failed" in p.stdout, p.stdout
    assert "read back 50 results" in p.stdout, p.stdout
    assert "results.jsonl" in p.stdout and "tool.py" in p.stdout, p.stdout
