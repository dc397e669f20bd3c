#!/usr/bin/env bash
# The end-to-end suite alone (crates/e2e, one test binary), with any `cargo nextest run`
# arguments given (e.g. -E 'test(/^egress::/)'). Builds the `cleanroom` binary under test
# first: cargo builds another package's binary only when that package is in the build, and
# the harness refuses a stale one (docs/testing.md). Must run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -p cleanroom-cli --bin cleanroom
exec cargo nextest run -p cleanroom-e2e "$@"
