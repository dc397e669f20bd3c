#!/usr/bin/env bash
# Write the npm tarball of the TypeScript SDK (cleanroom-sdk-<version>.tgz) into OUTDIR and
# print its path. It packs the committed package tree as it is (lib/: compiled SDK plus its
# vendored runtime dependencies, see tools/build-lib.mjs), so it needs only npm and no
# network, and installs offline (`npm install --offline <tarball>`): the package has no
# registry dependencies. test/install.test.ts installs and imports what it writes.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: sdk/typescript/pack.sh OUTDIR" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
[ -f "$here/lib/index.js" ] || { echo "pack.sh: $here/lib missing (node tools/build-lib.mjs)" >&2; exit 1; }
name="$(cd "$here" && npm pack --silent --ignore-scripts --pack-destination "$out" | tail -n 1)"
echo "$out/$name"
