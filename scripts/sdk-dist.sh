#!/usr/bin/env bash
# The SDKs' distributable artifacts, into OUT (created if missing):
#   Python: the wheel and the sdist of sdk/python (cleanroom_sdk-<version>-py3-none-any.whl,
#           cleanroom_sdk-<version>.tar.gz), built by its in-tree PEP 517 backend with
#           Python's standard library only (no download; nothing written into sdk/python);
#   TypeScript: the `npm pack` tarball, by sdk/typescript/pack.sh when it exists.
# Usage: scripts/sdk-dist.sh OUT_DIR     (checked by crates/e2e/tests/suites/sdk.rs)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
py="${PYTHON:-python3}"
# The PEP 517 hooks, called directly (what pip/build would call); -B: no bytecode cache
# written next to the backend.
"$py" -B - "$root/sdk/python/_backend" "$out" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import cleanroom_build as b
for f in (b.build_wheel(sys.argv[2]), b.build_sdist(sys.argv[2])):
    print(f"sdk-dist: {sys.argv[2]}/{f}")
PY
if [ -x "$root/sdk/typescript/pack.sh" ]; then
  "$root/sdk/typescript/pack.sh" "$out"
elif [ -e "$root/sdk/typescript/pack.sh" ]; then
  bash "$root/sdk/typescript/pack.sh" "$out"
fi
