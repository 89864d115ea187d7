#!/usr/bin/env bash
# run.sh [cargo test args...]: run the end-to-end suites against the local
# control plane. Starts it if it is not running and stops it afterwards (also on
# failure); a control plane that was already running is left running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
BIN_DIR=$("$here/build-controlplane.sh")
export BIN_DIR PATH="$BIN_DIR:$PATH"
if "$here/cluster.sh" status >/dev/null 2>&1; then
  echo "run.sh: using the running control plane" >&2
else
  trap '"$here/cluster.sh" down' EXIT
fi
eval "$("$here/cluster.sh" up)"
cargo test -p randomsecret-e2e "$@"
