#!/usr/bin/env bash
# Install what building and testing Cleanroom needs on a fresh Debian 12 machine.
# Idempotent: quick when everything is already present.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v curl >/dev/null || need_apt+=(curl)
# `cleanroom exec` checks out the repository's committed HEAD with git (repository.path).
command -v git >/dev/null || need_apt+=(git)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need_apt+=(ca-certificates)
# Building: the etcd client (crates/cluster) compiles etcd's protos with protoc.
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/descriptor.proto ] || need_apt+=(libprotobuf-dev)
if [ "${1:-}" != "--runtime" ]; then
  # Egress tests: TLS upstreams and raw-socket probes inside sandboxes.
  command -v openssl >/dev/null || need_apt+=(openssl)
  command -v python3 >/dev/null || need_apt+=(python3)
  command -v npm >/dev/null || need_apt+=(npm)
  # Image tests: a real OCI registry on loopback and a static busybox for the test image.
  [ -x /usr/bin/docker-registry ] || need_apt+=(docker-registry)
  dpkg -s busybox-static >/dev/null 2>&1 || need_apt+=(busybox-static)
  # Web console tests and bench (crates/e2e/tests/suites/web, bench/web.py): Debian's
  # Chromium, driven headless by Playwright (crates/e2e/requirements.txt) — Playwright's
  # own browser download is never used.
  command -v chromium >/dev/null || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "deps: apt-get install ${need_apt[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Runtime only (install.sh): no test tools.
[ "${1:-}" = "--runtime" ] && exit 0

# `buf` (third-party Connect client for interop tests), pinned, installed project-locally.
BUF_VERSION=1.75.0
if [ ! -x .tools/node_modules/.bin/buf ] || [ "$(.tools/node_modules/.bin/buf --version 2>/dev/null)" != "$BUF_VERSION" ]; then
  echo "deps: npm install @bufbuild/buf@$BUF_VERSION" >&2
  mkdir -p .tools
  (cd .tools && { [ -f package.json ] || echo '{"name":"cleanroom-tools","private":true}' > package.json; } \
    && npm install --silent --no-audit --no-fund "@bufbuild/buf@$BUF_VERSION" >/dev/null)
fi

# --- registries (issue 14): a real npm registry for the registry mediation tests and bench
# (crates/e2e/tests/suites/registries/mod.rs, bench/registries.py). verdaccio, pinned, project-local,
# started by the tests on loopback with no uplinks. 6.2.x runs on Debian's Node 20 (later
# 6.x need Node 22). Its audit plugin asks for a `node-fetch` dist-tag some registries do
# not carry: pin that dependency instead.
VERDACCIO_VERSION=6.2.9
if [ "$(node -p "require('./.tools/node_modules/verdaccio/package.json').version" 2>/dev/null)" != "$VERDACCIO_VERSION" ]; then
  echo "deps: npm install verdaccio@$VERDACCIO_VERSION" >&2
  mkdir -p .tools
  (cd .tools && { [ -f package.json ] || echo '{"name":"cleanroom-tools","private":true}' > package.json; } \
    && npm pkg set overrides.node-fetch=2.7.0 \
    && npm install --silent --no-audit --no-fund "verdaccio@$VERDACCIO_VERSION" >/dev/null)
fi
# pypiserver (registries tests: pip --require-hashes through the gateway), pinned, in a
# project-local venv; the tests run it with --disable-fallback (no other index is consulted).
PYPISERVER_VERSION=2.4.2
if [ "$(.tools/pypi-venv/bin/python -c 'import importlib.metadata as m; print(m.version("pypiserver"))' 2>/dev/null)" != "$PYPISERVER_VERSION" ]; then
  echo "deps: pip install pypiserver==$PYPISERVER_VERSION (.tools/pypi-venv)" >&2
  mkdir -p .tools
  python3 -m venv .tools/pypi-venv
  .tools/pypi-venv/bin/pip install -q --disable-pip-version-check "pypiserver==$PYPISERVER_VERSION"
fi
# ---- snapshots (issue 12) -------------------------------------------------------------
# CRIU, for the process checkpoint probe documented in docs/snapshots.md (the Linux backend
# declares checkpoint_restore only where a real dump/restore works; Debian 12's 3.17.1
# cannot initialise on kernels >= 6.13). Idempotent.
command -v criu >/dev/null || {
  echo "deps: apt-get install criu" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq criu >/dev/null
}
# ---- gVisor runtime (issue 33): `runsc`, from bookworm-backports when that suite is
# reachable (its 2024 build has the systrap platform; bookworm's 2022 build only ptrace and
# kvm). Only runsc is taken from backports (apt pins everything else to the release).
if ! command -v runsc >/dev/null; then
  echo "deps: apt-get install runsc" >&2
  export DEBIAN_FRONTEND=noninteractive
  bpo=/etc/apt/sources.list.d/cleanroom-bookworm-backports.list
  if grep -q 'VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The release's own mirror (a `URIs:` or `deb` line, not a comment), not the security one.
    # `|| true`: grep exits 2 when /etc/apt/sources.list does not exist (deb822-only
    # machines), which under pipefail would end the script here.
    mirror=$(grep -rhs -E '^(URIs:|deb) ' /etc/apt/sources.list /etc/apt/sources.list.d/ \
      | grep -o -E 'https?://[^ ]*/debian/?' | grep -v security | head -1 || true)
    [ -n "$mirror" ] && echo "deb ${mirror%/} bookworm-backports main" > "$bpo"
  fi
  apt-get update -qq
  apt-get install -y -qq -t bookworm-backports runsc >/dev/null 2>&1 \
    || apt-get install -y -qq runsc >/dev/null
fi
# ---- cluster (issue 34): the tests run a real etcd (Debian's etcd-server) on loopback. The
# package's own service is not started (no systemd here; policy-rc.d, if any, stops it): the
# tests start their own members with private data directories.
if ! command -v etcd >/dev/null; then
  echo "deps: apt-get install etcd-server" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null; }
  # Where systemd did start the package's member, stop it: nothing of ours uses it.
  systemctl disable --now etcd >/dev/null 2>&1 || true
fi
# The fixture waits for its members with `etcdctl endpoint health` (and the bench reads
# keys with it): Debian ships etcdctl in etcd-client, which --no-install-recommends skips.
if ! command -v etcdctl >/dev/null; then
  echo "deps: apt-get install etcd-client" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-client >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-client >/dev/null; }
fi
# ---- console (issue 13): the real-terminal tests drive `cleanroom console` in tmux ----
if ! command -v tmux >/dev/null; then
  echo "deps: apt-get install tmux" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; }
fi
# ---- SDKs (sdk/python, sdk/typescript) -------------------------------------------------
# Python: a project-local venv (.tools/venv) with the pinned set of sdk/python/requirements-dev.txt
# (the SDK's runtime deps, pytest, and the generators sdk/gen.sh uses: grpcio-tools,
# protoc-gen-connectrpc) plus the SDK itself (editable). TypeScript: `npm ci` in
# sdk/typescript from its committed lock file. Each is redone only when its pins change.
sdk_py_want="$(sha256sum sdk/python/requirements-dev.txt sdk/python/pyproject.toml | sha256sum | cut -c1-64)"
if [ ! -x .tools/venv/bin/python ] || [ "$(cat .tools/venv/.cleanroom-sdk 2>/dev/null)" != "$sdk_py_want" ]; then
  echo "deps: python venv .tools/venv (sdk/python/requirements-dev.txt)" >&2
  mkdir -p .tools
  python3 -m venv .tools/venv
  .tools/venv/bin/pip install -q --disable-pip-version-check -r sdk/python/requirements-dev.txt
  .tools/venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e sdk/python
  echo "$sdk_py_want" > .tools/venv/.cleanroom-sdk
fi
# Test checkers: a project-local venv (.tools/test-venv) with crates/e2e/requirements.txt —
# the Prometheus text parser and the OpenAPI validator the e2e suites `metrics` and `rest` use,
# and Playwright for the web console's browser tests (suite `web`).
test_py_want="$(sha256sum crates/e2e/requirements.txt | cut -c1-64)"
if [ ! -x .tools/test-venv/bin/python ] || [ "$(cat .tools/test-venv/.cleanroom-test 2>/dev/null)" != "$test_py_want" ]; then
  echo "deps: python venv .tools/test-venv (crates/e2e/requirements.txt)" >&2
  mkdir -p .tools
  python3 -m venv .tools/test-venv
  .tools/test-venv/bin/pip install -q --disable-pip-version-check -r crates/e2e/requirements.txt
  echo "$test_py_want" > .tools/test-venv/.cleanroom-test
fi
sdk_ts_want="$(sha256sum sdk/typescript/package-lock.json | cut -c1-64)"
if [ "$(cat sdk/typescript/node_modules/.cleanroom-sdk 2>/dev/null)" != "$sdk_ts_want" ]; then
  echo "deps: npm ci in sdk/typescript" >&2
  (cd sdk/typescript && npm ci --silent --no-audit --no-fund --ignore-scripts >/dev/null)
  echo "$sdk_ts_want" > sdk/typescript/node_modules/.cleanroom-sdk
fi
