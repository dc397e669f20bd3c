#!/usr/bin/env python3
"""An agent loop on Cleanroom, as an AI-agent product would drive it: create a sandbox,
write a file into it, run 50 commands (each one a tool call of the "agent"), then read the
results back.

    pip install ./sdk/python        # or: .tools/venv/bin/python (scripts/deps.sh)
    cleanroom serve &               # or CLEANROOM_HOST=http://host:port CLEANROOM_TOKEN=...
    python3 examples/agent_loop.py

The server is found like the CLI finds it (CLEANROOM_HOST, config file, default socket).
"""

import json
import sys
import time

from cleanroom import Sandbox

TOOL = r'''
import json, sys
n = int(sys.argv[1])
# The "tool": some work on its input, one JSON line of result appended to a log.
result = {"step": n, "square": n * n, "collatz_steps": 0}
x = n + 1
while x != 1:
    x = x // 2 if x % 2 == 0 else 3 * x + 1
    result["collatz_steps"] += 1
with open("/workspace/results.jsonl", "a") as f:
    f.write(json.dumps(result) + "\n")
print(result["square"])
'''


def main() -> int:
    with Sandbox.create() as sbx:
        print(f"sandbox {sbx.id}")
        sbx.files.write("/workspace/tool.py", TOOL)
        started = time.monotonic()
        failures = 0
        for step in range(50):
            r = sbx.run("python3", "/workspace/tool.py", str(step))
            if r.exit_code != 0 or r.stdout.strip() != str(step * step):
                failures += 1
                print(f"step {step} failed: {r.exit_code} {r.stderr.strip()}", file=sys.stderr)
        elapsed = time.monotonic() - started
        lines = sbx.files.read_text("/workspace/results.jsonl").splitlines()
        results = [json.loads(line) for line in lines]
        listing = [f"{e.name} {e.size}" for e in sbx.files.list("/workspace")]
    print(f"ran 50 commands in {elapsed:.2f}s ({elapsed / 50 * 1000:.1f} ms each), {failures} failed")
    print(f"read back {len(results)} results; longest collatz run: "
          f"{max(r['collatz_steps'] for r in results)} steps")
    print("workspace:", ", ".join(listing))
    ok = failures == 0 and [r["step"] for r in results] == list(range(50))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
