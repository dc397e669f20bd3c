#!/usr/bin/env bash
# Regenerate the SDKs' protobuf code from proto/cleanroom/v1/*.proto with the project-local
# tools that scripts/deps.sh installs (no network, no global installs):
#   Python: grpcio-tools' protoc (message classes, *_pb2.py) + protoc-gen-connectrpc
#           (Connect stubs, *_connect.py), from .tools/venv;
#   TypeScript: buf (.tools) with the local protoc-gen-es plugin (sdk/typescript/node_modules).
# The output is committed (pip/npm installs need no code generator); `sdk/gen.sh --check`
# regenerates into a scratch dir and fails if the committed code is stale (run by the
# sdk test in crates/e2e/tests/suites/sdk.rs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
py="$root/.tools/venv/bin/python"
buf="$root/.tools/node_modules/.bin/buf"
for t in "$py" "$buf" "$root/.tools/venv/bin/protoc-gen-connectrpc" \
  "$root/sdk/typescript/node_modules/.bin/protoc-gen-es"; do
  [ -x "$t" ] || { echo "gen.sh: $t missing - run scripts/deps.sh" >&2; exit 2; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/py" "$scratch/ts"

# Python: package `cleanroom.v1` inside the SDK's `cleanroom` package.
(cd proto && "$py" -m grpc_tools.protoc -I. \
  --python_out="$scratch/py" --pyi_out="$scratch/py" \
  --plugin=protoc-gen-connectrpc="$root/.tools/venv/bin/protoc-gen-connectrpc" \
  --connectrpc_out=protobuf=google:"$scratch/py" \
  cleanroom/v1/*.proto)
touch "$scratch/py/cleanroom/v1/__init__.py"

# TypeScript: buf runs the local plugin; output paths in buf.gen.yaml are relative to the
# working directory, so run from a scratch copy of the package layout.
mkdir -p "$scratch/ts/node_modules/.bin"
ln -s "$root/sdk/typescript/node_modules/.bin/protoc-gen-es" "$scratch/ts/node_modules/.bin/protoc-gen-es"
# Only cleanroom.v1: proto/hostagent/v1 (seed 001, docs/hostagent.md) is for control planes
# that generate their own clients, not part of the SDKs.
(cd "$scratch/ts" && BUF_CACHE_DIR="$scratch/bufcache" "$buf" generate "$root/proto" \
  --path "$root/proto/cleanroom/v1" --template "$root/sdk/typescript/buf.gen.yaml")

py_dst="sdk/python/src/cleanroom/v1"
ts_dst="sdk/typescript/src/gen"
if [ "${1:-}" = "--check" ]; then
  ok=1
  diff -r "$scratch/py/cleanroom/v1" "$py_dst" -x __pycache__ >/dev/null || ok=0
  diff -r "$scratch/ts/src/gen" "$ts_dst" >/dev/null || ok=0
  if [ $ok = 0 ]; then
    echo "gen.sh: generated SDK code is stale - run sdk/gen.sh and commit" >&2
    diff -r "$scratch/py/cleanroom/v1" "$py_dst" -x __pycache__ >&2 || true
    diff -r "$scratch/ts/src/gen" "$ts_dst" >&2 || true
    exit 1
  fi
  echo "gen.sh: generated SDK code is fresh"
  exit 0
fi
rm -rf "$py_dst" "$ts_dst"
mkdir -p "$(dirname "$ts_dst")"
cp -r "$scratch/py/cleanroom/v1" "$py_dst"
cp -r "$scratch/ts/src/gen" "$ts_dst"
# The committed, installable TypeScript package (sdk/typescript/lib: compiled SDK + vendored
# runtime deps) includes the generated code: rebuild it too (its freshness is tested).
node sdk/typescript/tools/build-lib.mjs
echo "gen.sh: regenerated $py_dst, $ts_dst and sdk/typescript/lib"
