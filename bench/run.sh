#!/usr/bin/env bash
# One command, JSON out: see bench/run.py.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh --runtime >&2
exec python3 bench/run.py "$@"
