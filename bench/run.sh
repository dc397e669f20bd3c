#!/usr/bin/env bash
# One command, JSON out: see bench/run.py.
# Installs everything the rows use first (idempotent, quick when present): the full
# scripts/deps.sh, not `--runtime` — the bench needs the test-side tools too (openssl for its
# TLS rows, npm and verdaccio for the registries row, the SDK venv and node modules for the
# SDK rows); `--runtime` is what install.sh needs to *run* the server and skips all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh >&2
exec python3 bench/run.py "$@"
