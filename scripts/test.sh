#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit and end-to-end tests (real server, real
# sandboxes). Installs what it needs first. Must run as root (namespaces, mounts).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/deps.sh
echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== tests" >&2
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi
