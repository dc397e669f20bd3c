#!/usr/bin/env bash
# Install Cleanroom on Debian 12 and start the server (as root: system socket
# /var/run/cleanroom/cleanroom.sock, state in /var/lib/cleanroom).
# Usage: ./install.sh && cleanroom exec -- echo hello
set -euo pipefail
cd "$(dirname "$0")"

./scripts/deps.sh --runtime
echo "install: building cleanroom (release)..." >&2
cargo build --release --locked -p cleanroom-cli
prefix=${PREFIX:-/usr/local}
install -D -m 0755 target/x86_64-unknown-linux-gnu/release/cleanroom "$prefix/bin/cleanroom"
echo "install: installed $prefix/bin/cleanroom" >&2

# Start the server unless one already answers on the default endpoint.
if "$prefix/bin/cleanroom" sandbox ls >/dev/null 2>&1; then
  echo "install: a cleanroom server is already running" >&2
  exit 0
fi
if [ "$(id -u)" = 0 ]; then log_dir=/var/log/cleanroom; else log_dir="${XDG_STATE_HOME:-$HOME/.local/state}/cleanroom"; fi
mkdir -p "$log_dir"
setsid nohup "$prefix/bin/cleanroom" serve >>"$log_dir/server.log" 2>&1 </dev/null &
for _ in $(seq 1 100); do
  if "$prefix/bin/cleanroom" sandbox ls >/dev/null 2>&1; then
    echo "install: server started (log: $log_dir/server.log)" >&2
    exit 0
  fi
  sleep 0.1
done
echo "install: the server did not start; see $log_dir/server.log" >&2
exit 1
